package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/rukpak/rukpak/api/v1alpha2"
	"github.com/rukpak/rukpak/internal/chartrepotest"
	"github.com/rukpak/rukpak/pkg/envtest"
)

// TestOCIHelmRepositoryFollowsARange installs the newest version in a
// range of a chart pushed to an OCI registry (helm push's layout, the
// chart appended to an oci:// repository URL), pinned to its manifest's
// digest, and takes a newer version in range (with build metadata, tagged
// with "_" for "+") within an interval of its push, ignoring one out of
// range pushed with it.
func TestOCIHelmRepositoryFollowsARange(t *testing.T) {
	t.Parallel()
	host := startRegistry(t)
	push := func(version string) string {
		return pushHelmChartArchive(t, host+"/charts/greeter:"+strings.ReplaceAll(version, "+", "_"), chartrepotest.TarGz(t, map[string]string{
			"greeter/Chart.yaml":        "apiVersion: v2\nname: greeter\nversion: " + version + "\n",
			"greeter/templates/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: greeting\ndata:\n  value: {{ .Chart.Version | quote }}\n",
		}))
	}
	digests := map[string]string{}
	for _, v := range []string{"0.9.0", "1.0.0", "2.0.0-rc.1"} {
		digests[v] = push(v)
	}

	name := envtest.UniqueName("helmoci")
	bd := &v1alpha2.BundleDeployment{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: v1alpha2.BundleDeploymentSpec{
			ProvisionerClassName: v1alpha2.ClassHelm, InstallNamespace: name,
			PollInterval: &metav1.Duration{Duration: v1alpha2.MinPollInterval},
			Sources: []v1alpha2.BundleSource{{Type: v1alpha2.SourceTypeHelmRepository,
				HelmRepository: &v1alpha2.HelmRepositorySource{URL: "oci://" + host + "/charts", Chart: "greeter", Version: "1.x",
					InsecureSkipTLSVerify: true}}},
		},
	}
	if err := suite.client.Create(context.Background(), bd); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = suite.client.Delete(context.Background(), bd) })
	installed := waitInstalled(t, name)
	if v := configMapValue(t, name, "greeting"); v != "1.0.0" {
		t.Fatalf("installed %q, want 1.0.0", v)
	}
	if err := ociPin(installed, host, "1.0.0", digests); err != nil {
		t.Error(err)
	}

	for _, v := range []string{"1.1.0+build.1", "2.0.0"} {
		digests[v] = push(v)
	}
	envtest.Eventually(t, 3*v1alpha2.MinPollInterval+30*time.Second, func() error {
		if v := configMapValue(t, name, "greeting"); v != "1.1.0+build.1" {
			return fmt.Errorf("greeting is %q, want 1.1.0+build.1", v)
		}
		return nil
	})
	waitStatus(t, name, 30*time.Second, func(bd *v1alpha2.BundleDeployment) error {
		c := meta.FindStatusCondition(bd.Status.Conditions, v1alpha2.TypeInstalled)
		if c == nil || c.Status != metav1.ConditionTrue || bd.Status.ActiveBundle == installed.Status.ActiveBundle {
			return fmt.Errorf("Installed = %+v, active Bundle %s", c, bd.Status.ActiveBundle)
		}
		return ociPin(bd, host, "1.1.0+build.1", digests)
	})
}

// ociPin checks that bd's status pins its oci:// Helm repository source to
// version, by its tag and manifest digest.
func ociPin(bd *v1alpha2.BundleDeployment, host, version string, digests map[string]string) error {
	for _, s := range bd.Status.ResolvedSources {
		h := s.HelmRepository
		if h == nil {
			continue
		}
		wantURL := "oci://" + host + "/charts/greeter:" + strings.ReplaceAll(version, "+", "_")
		if h.ResolvedVersion != version || h.ResolvedURL != wantURL || "sha256:"+h.SHA256 != digests[version] {
			return fmt.Errorf("status.resolvedSources pins %s %s %s, want %s %s %s",
				h.ResolvedVersion, h.ResolvedURL, h.SHA256, version, wantURL, digests[version])
		}
		return nil
	}
	return fmt.Errorf("status.resolvedSources has no helmRepository source")
}
