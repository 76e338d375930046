package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rukpak/rukpak/api/v1alpha2"
	"github.com/rukpak/rukpak/pkg/envtest"
)

// TestPublicHookCharts installs public charts whose hooks belong to more
// than one phase (testdata/charts, see its README), as their users do
// (kube-prometheus-stack: TestKubePrometheusStackHooks).
//
// ingress-nginx and kube-prometheus-stack: their admission ServiceAccount, Role, RoleBinding,
// ClusterRole and ClusterRoleBinding are hooks of pre-install,
// pre-upgrade, post-install and post-upgrade with before-hook-creation and
// hook-succeeded. They are created for the pre phase (the admission-create
// Job), deleted when it succeeds, and created again for the post phase
// (the admission-patch Job, which cannot make its Pod without the
// ServiceAccount). The install becomes Ready with each Job run once; an
// upgrade that changes the patch Job runs both phases again and is Ready.
func TestPublicHookCharts(t *testing.T) {
	t.Parallel()
	host := startRegistry(t)

	t.Run("ingress-nginx", func(t *testing.T) {
		t.Parallel()
		name, ns := envtest.UniqueName("ingress-nginx"), envtest.UniqueName("ingress-nginx")
		ref := host + "/charts/ingress-nginx:4.15.1"
		pushHelmChart(t, ref, filepath.Join("testdata", "charts", "ingress-nginx"))
		// The release name contains the chart's name: the chart's full
		// name is the release name.
		upgradeWithHooks(t, name, ns, ref, name+"-admission", nil,
			`{"controller": {"admissionWebhooks": {"patch": {"podAnnotations": {"example.com/upgrade": "2"}}}}}`)
	})
}

// TestKubePrometheusStackHooks installs kube-prometheus-stack, as
// TestPublicHookCharts does ingress-nginx, but alone: not in parallel with
// the other public content. Its ten CRDs are up to a megabyte each, and
// the local API server Establishes CRDs one at a time, slowly while others
// (Argo CD's, cert-manager's) are created beside them: in make test its
// install took 20 s alone and up to 104 s in parallel, near its deadline.
func TestKubePrometheusStackHooks(t *testing.T) {
	host := startRegistry(t)
	name, ns := envtest.UniqueName("kps"), envtest.UniqueName("kps")
	ref := host + "/charts/kube-prometheus-stack:88.5.3"
	archive, err := os.ReadFile(filepath.Join("testdata", "charts", "kube-prometheus-stack-88.5.3.tgz"))
	if err != nil {
		t.Fatal(err)
	}
	pushHelmChartArchive(t, ref, archive)
	// Its full name is cut to 26 characters: fullnameOverride keeps
	// the hooks' names known. The node exporter's DaemonSet and the
	// kubelet/API server monitors need nothing else of the cluster.
	upgradeWithHooks(t, name, ns, ref, "kps-admission", []byte(`{"fullnameOverride": "kps"}`),
		`{"fullnameOverride": "kps", "prometheusOperator": {"admissionWebhooks": {"patch": {"podAnnotations": {"example.com/upgrade": "2"}}}}}`)
}

// upgradeWithHooks installs the chart at ref with values (nil for none),
// waits until it is Ready with the admission hooks' create and patch Jobs
// (admission+"-create", admission+"-patch") run once each and the hooks
// of both phases (the ServiceAccount admission) deleted; then upgrades it
// with upgrade as values and checks the same with each Job run twice.
func upgradeWithHooks(t *testing.T, name, ns, ref, admission string, values []byte, upgrade string) {
	t.Helper()
	ctx := context.Background()
	creates, patches := jobRuns(t, ns, admission+"-create"), jobRuns(t, ns, admission+"-patch")
	var cfg *v1alpha2.BundleConfig
	if values != nil {
		cfg = &v1alpha2.BundleConfig{Values: &apiextensionsv1.JSON{Raw: values}}
	}
	corpusBD(t, name, v1alpha2.ClassHelm, ns, []v1alpha2.BundleSource{{Type: v1alpha2.SourceTypeImage,
		Image: &v1alpha2.ImageSource{Ref: "oci://" + ref, InsecureSkipTLSVerify: true}}}, cfg)
	start := time.Now()
	waitReady(t, name, ns)
	// How long each phase took, to compare with the deadline: under make
	// test's load an install that takes 20 s alone has taken 90.
	t.Logf("installed and Ready in %s", time.Since(start).Round(time.Second))
	checkRuns := func(want int) {
		t.Helper()
		for job, runs := range map[string][]jobRun{"create": creates(), "patch": patches()} {
			if len(runs) != want {
				t.Fatalf("the %s-%s hook Job ran %d times, want %d", admission, job, len(runs), want)
			}
			for _, r := range runs {
				if r.completed.IsZero() {
					t.Fatalf("a run of the %s-%s hook Job did not complete: %+v", admission, job, runs)
				}
			}
		}
		// hook-succeeded: the hooks are gone once their last phase
		// succeeded, as after helm install.
		err := suite.client.Get(ctx, client.ObjectKey{Namespace: ns, Name: admission}, &corev1.ServiceAccount{})
		if !apierrors.IsNotFound(err) {
			t.Fatalf("the admission ServiceAccount (hook-succeeded) is still there after the post phase: %v", err)
		}
	}
	checkRuns(1)

	start = time.Now()
	updateSpec(t, name, func(s *v1alpha2.BundleDeploymentSpec) {
		s.Config = &v1alpha2.BundleConfig{Values: &apiextensionsv1.JSON{Raw: []byte(upgrade)}}
	})
	envtest.Eventually(t, corpusDeadline, func() error {
		bd := &v1alpha2.BundleDeployment{}
		if err := suite.client.Get(ctx, client.ObjectKey{Name: name}, bd); err != nil {
			return err
		}
		if bd.Status.ObservedGeneration != bd.Generation {
			return fmt.Errorf("generation %d not observed yet", bd.Generation)
		}
		if c := meta.FindStatusCondition(bd.Status.Conditions, v1alpha2.TypeInstalled); c == nil || c.Status != metav1.ConditionTrue || c.ObservedGeneration != bd.Generation {
			return fmt.Errorf("Installed = %+v", c)
		}
		return nil
	})
	waitReady(t, name, ns)
	t.Logf("upgraded and Ready in %s", time.Since(start).Round(time.Second))
	checkRuns(2)
}
