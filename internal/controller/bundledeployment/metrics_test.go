//go:build integration

package bundledeployment_test

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	promdto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rukpak/rukpak/api/v1alpha2"
	"github.com/rukpak/rukpak/pkg/envtest"
)

// scrape GETs the manager's /metrics with token ("" for none) and returns
// the status code and the parsed families.
func scrape(token string) (int, map[string]*dto, error) {
	c := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
		// The metrics server's certificate is self-signed.
		TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, //nolint:gosec // a test of the server's authn, not its certificate
	}}
	req, err := http.NewRequest(http.MethodGet, "https://"+metricsAddr+"/metrics", nil)
	if err != nil {
		return 0, nil, err
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := c.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		_, _ = io.Copy(io.Discard, resp.Body)
		return resp.StatusCode, nil, nil
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		return 0, nil, fmt.Errorf("parsing metrics: %w", err)
	}
	return resp.StatusCode, fams, nil
}

// dto is a parsed metric family.
type dto = promdto.MetricFamily

// value returns the sum of the family's samples whose labels include
// want (counters and gauges; the sample count for histograms).
func value(fams map[string]*dto, name string, want map[string]string) float64 {
	f, ok := fams[name]
	if !ok {
		return 0
	}
	var sum float64
	for _, m := range f.GetMetric() {
		labels := map[string]string{}
		for _, l := range m.GetLabel() {
			labels[l.GetName()] = l.GetValue()
		}
		match := true
		for k, v := range want {
			match = match && labels[k] == v
		}
		if !match {
			continue
		}
		switch {
		case m.Counter != nil:
			sum += m.GetCounter().GetValue()
		case m.Gauge != nil:
			sum += m.GetGauge().GetValue()
		case m.Histogram != nil:
			sum += float64(m.GetHistogram().GetSampleCount())
		}
	}
	return sum
}

// TestMetrics: metrics are served by default over HTTPS to a client the
// API server authenticates (401 without a token) and authorizes (403
// without GET on /metrics); they count installs, drift corrections, apply
// and source fetches, and report BundleDeployments by class and Ready.
func TestMetrics(t *testing.T) {
	ctx := context.Background()
	ns := env.Namespace(t, "metrics")
	kube := kubernetes.NewForConfigOrDie(env.Config)
	tokenFor := func(name string) string {
		sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}}
		if err := env.Client.Create(ctx, sa); err != nil {
			t.Fatal(err)
		}
		tr, err := kube.CoreV1().ServiceAccounts(ns).CreateToken(ctx, sa.Name, &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return tr.Status.Token
	}
	// The reader is granted before its first request: the server caches
	// the API server's answers (a denial for 30 s).
	token, stranger := tokenFor("prometheus"), tokenFor("stranger")
	role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: envtest.UniqueName("metrics-reader")},
		Rules: []rbacv1.PolicyRule{{NonResourceURLs: []string{"/metrics"}, Verbs: []string{"get"}}}}
	binding := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: role.Name},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: "prometheus", Namespace: ns}}}
	for _, o := range []client.Object{role, binding} {
		if err := env.Client.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}

	envtest.Eventually(t, 10*time.Second, func() error { // the server starts with the manager
		if code, _, err := scrape(""); err != nil || code != http.StatusUnauthorized {
			return fmt.Errorf("without a token: %d (%v), want 401", code, err)
		}
		return nil
	})
	if code, _, err := scrape(stranger); err != nil || code != http.StatusForbidden {
		t.Fatalf("a token without RBAC: %d (%v), want 403", code, err)
	}
	var before map[string]*dto
	envtest.Eventually(t, 10*time.Second, func() error {
		code, fams, err := scrape(token)
		if err != nil || code != http.StatusOK {
			return fmt.Errorf("a token allowed GET /metrics: %d (%v), want 200", code, err)
		}
		before = fams
		return nil
	})

	plain := map[string]string{"class": v1alpha2.ClassPlain}
	bd := newBD(t, ns, manifests(t, map[string]string{"cm.yaml": cmYAML("counted", "1")}))
	waitCondition(t, bd.Name, v1alpha2.TypeReady, metav1.ConditionTrue, v1alpha2.ReasonReady)
	if err := env.Client.Delete(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "counted"}}); err != nil {
		t.Fatal(err)
	}
	envtest.Eventually(t, 15*time.Second, func() error {
		_, after, err := scrape(token)
		if err != nil {
			return err
		}
		var missing []string
		for _, c := range []struct {
			name   string
			labels map[string]string
		}{
			{"rukpak_revisions_installed_total", map[string]string{"class": v1alpha2.ClassPlain, "operation": "install"}},
			{"rukpak_drift_corrections_total", plain},
			{"rukpak_apply_duration_seconds", map[string]string{"class": v1alpha2.ClassPlain, "result": "success"}},
			{"rukpak_source_fetch_duration_seconds", map[string]string{"type": string(v1alpha2.SourceTypeConfigMaps), "result": "success"}},
			{"rukpak_source_fetch_bytes_total", map[string]string{"type": string(v1alpha2.SourceTypeConfigMaps)}},
		} {
			if value(after, c.name, c.labels) <= value(before, c.name, c.labels) {
				missing = append(missing, fmt.Sprintf("%s%v did not grow", c.name, c.labels))
			}
		}
		if value(after, "rukpak_bundledeployments", map[string]string{"class": v1alpha2.ClassPlain, "ready": "True"}) < 1 {
			missing = append(missing, "rukpak_bundledeployments{ready=True} < 1")
		}
		if value(after, "rukpak_content_store_bytes", nil) <= 0 {
			missing = append(missing, "rukpak_content_store_bytes is 0")
		}
		if len(missing) > 0 {
			return fmt.Errorf("%s", strings.Join(missing, "; "))
		}
		return nil
	})
}
