//go:build integration

package bundledeployment_test

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rukpak/rukpak/api/v1alpha2"
	"github.com/rukpak/rukpak/pkg/envtest"
)

// chartRepo is a Helm chart repository of the chart greeter, whose
// ConfigMap greeting holds its version.
type chartRepo struct {
	mu       sync.Mutex
	index    string
	archives map[string][]byte
}

func (c *chartRepo) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case r.URL.Path == "/index.yaml":
		_, _ = w.Write([]byte(c.index))
	case c.archives[r.URL.Path] != nil:
		_, _ = w.Write(c.archives[r.URL.Path])
	default:
		http.NotFound(w, r)
	}
}

// publish makes versions the published versions of greeter.
func (c *chartRepo) publish(t *testing.T, versions ...string) {
	t.Helper()
	var b strings.Builder
	b.WriteString("apiVersion: v1\nentries:\n  greeter:\n")
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, v := range versions {
		path := "/greeter-" + v + ".tgz"
		if c.archives[path] == nil {
			c.archives[path] = tarGz(t, map[string]string{
				"greeter/Chart.yaml":        "apiVersion: v2\nname: greeter\nversion: " + v + "\n",
				"greeter/templates/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: greeting\ndata:\n  value: {{ .Chart.Version | quote }}\n",
			})
		}
		sum := sha256.Sum256(c.archives[path])
		fmt.Fprintf(&b, "  - apiVersion: v2\n    name: greeter\n    version: %s\n    digest: %s\n    urls:\n    - %s\n", v, hex.EncodeToString(sum[:]), path[1:])
	}
	c.index = b.String()
}

// tarGz is a gzipped tar archive of files.
func tarGz(t *testing.T, files map[string]string) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	for name, body := range files {
		if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: int64(len(body)), ModTime: time.Unix(1700000000, 0)}); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write([]byte(body)); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// TestVersionsFollowed installs the newest chart version of a range, then
// of a wider one: status.installedVersion and newestVersion say which,
// and the upgrade is announced once as available and once as applied.
func TestVersionsFollowed(t *testing.T) {
	t.Parallel()
	repo := &chartRepo{archives: map[string][]byte{}}
	repo.publish(t, "1.0.0", "1.1.0", "2.0.0")
	srv := httptest.NewServer(repo)
	defer srv.Close()
	ns := env.Namespace(t, "versions")
	bd := &v1alpha2.BundleDeployment{
		ObjectMeta: metav1.ObjectMeta{Name: envtest.UniqueName("versions")},
		Spec: v1alpha2.BundleDeploymentSpec{
			ProvisionerClassName: v1alpha2.ClassHelm, InstallNamespace: ns,
			Sources: []v1alpha2.BundleSource{{Type: v1alpha2.SourceTypeHelmRepository,
				HelmRepository: &v1alpha2.HelmRepositorySource{URL: srv.URL, Chart: "greeter", Version: "1.0.x"}}},
		},
	}
	if err := env.Client.Create(context.Background(), bd); err != nil {
		t.Fatal(err)
	}
	versions := func(installed, newest string) {
		t.Helper()
		envtest.Eventually(t, 30*time.Second, func() error {
			got := &v1alpha2.BundleDeployment{}
			if err := env.Client.Get(context.Background(), client.ObjectKey{Name: bd.Name}, got); err != nil {
				return err
			}
			if got.Status.InstalledVersion != installed || got.Status.NewestVersion != newest || got.Status.ObservedGeneration != got.Generation {
				return fmt.Errorf("installedVersion %q, newestVersion %q (generation %d of %d), want %q and %q",
					got.Status.InstalledVersion, got.Status.NewestVersion, got.Status.ObservedGeneration, got.Generation, installed, newest)
			}
			return nil
		})
		if data, err := configMapData(t, ns, "greeting"); err != nil || data["value"] != installed {
			t.Fatalf("greeting = %v, %v; want %s installed", data, err, installed)
		}
	}
	versions("1.0.0", "1.0.0")

	updateBD(t, bd.Name, func(bd *v1alpha2.BundleDeployment) { bd.Spec.Sources[0].HelmRepository.Version = "1.x" })
	versions("1.1.0", "1.1.0")
	for reason, note := range map[string]string{
		v1alpha2.ReasonUpgradeAvailable: "Version 1.1.0 is available; version 1.0.0 is installed",
		v1alpha2.ReasonUpgradeApplied:   "Version 1.1.0 installed, replacing version 1.0.0",
	} {
		envtest.Eventually(t, 10*time.Second, func() error {
			list := &eventsv1.EventList{}
			if err := env.Client.List(context.Background(), list, client.MatchingFields{"regarding.name": bd.Name}); err != nil {
				return err
			}
			var found []string
			for _, e := range list.Items {
				if e.Reason == reason {
					found = append(found, e.Note)
				}
			}
			if len(found) != 1 || found[0] != note {
				return fmt.Errorf("%s events %q, want one: %q", reason, found, note)
			}
			return nil
		})
	}
}
