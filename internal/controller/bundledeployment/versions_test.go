//go:build integration

package bundledeployment_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rukpak/rukpak/api/v1alpha2"
	"github.com/rukpak/rukpak/internal/chartrepotest"
	"github.com/rukpak/rukpak/pkg/envtest"
)

// TestVersionsFollowed installs the newest chart version of a range, then
// of a wider one: status.installedVersion and newestVersion say which,
// and the upgrade is announced once as available and once as applied.
func TestVersionsFollowed(t *testing.T) {
	t.Parallel()
	repo := chartrepotest.New(t, "1.0.0", "1.1.0", "2.0.0")
	ns := env.Namespace(t, "versions")
	bd := &v1alpha2.BundleDeployment{
		ObjectMeta: metav1.ObjectMeta{Name: envtest.UniqueName("versions")},
		Spec: v1alpha2.BundleDeploymentSpec{
			ProvisionerClassName: v1alpha2.ClassHelm, InstallNamespace: ns,
			Sources: []v1alpha2.BundleSource{{Type: v1alpha2.SourceTypeHelmRepository,
				HelmRepository: &v1alpha2.HelmRepositorySource{URL: repo.URL, Chart: "greeter", Version: "1.0.x"}}},
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
