package e2e

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rukpak/rukpak/api/v1alpha2"
	"github.com/rukpak/rukpak/internal/chartrepotest"
	"github.com/rukpak/rukpak/pkg/envtest"
)

// TestHelmRepositoryFollowsARange installs the newest version of a chart
// in a range from a Helm repository, takes a newer version in range
// within an interval of its publication, ignores one out of range, and
// keeps what is installed while the repository is down; rukpakctl
// versions lists the published versions and what each is to it.
func TestHelmRepositoryFollowsARange(t *testing.T) {
	t.Parallel()
	repo := chartrepotest.New(t, "1.0.0", "0.9.0", "2.0.0-rc.1")

	name := envtest.UniqueName("helmrepo")
	bd := &v1alpha2.BundleDeployment{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: v1alpha2.BundleDeploymentSpec{
			ProvisionerClassName: v1alpha2.ClassHelm, InstallNamespace: name,
			PollInterval: &metav1.Duration{Duration: v1alpha2.MinPollInterval},
			Sources: []v1alpha2.BundleSource{{Type: v1alpha2.SourceTypeHelmRepository,
				HelmRepository: &v1alpha2.HelmRepositorySource{URL: repo.URL, Chart: "greeter", Version: "1.x"}}},
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
	if got := resolvedVersion(installed); got != "1.0.0" {
		t.Errorf("status.resolvedSources says %q, want 1.0.0", got)
	}

	// 1.1.0 in range and 2.0.0 out of it are published: 1.1.0 is installed
	// within two poll intervals, and stays.
	repo.Publish(t, "1.0.0", "0.9.0", "2.0.0-rc.1", "1.1.0", "2.0.0")
	envtest.Eventually(t, 3*v1alpha2.MinPollInterval+30*time.Second, func() error {
		if v := configMapValue(t, name, "greeting"); v != "1.1.0" {
			return fmt.Errorf("greeting is %q, want 1.1.0", v)
		}
		return nil
	})
	upgraded := waitStatus(t, name, 30*time.Second, func(bd *v1alpha2.BundleDeployment) error {
		c := meta.FindStatusCondition(bd.Status.Conditions, v1alpha2.TypeInstalled)
		if c == nil || c.Status != metav1.ConditionTrue || bd.Status.ActiveBundle == installed.Status.ActiveBundle {
			return fmt.Errorf("Installed = %+v, active Bundle %s", c, bd.Status.ActiveBundle)
		}
		if got := resolvedVersion(bd); got != "1.1.0" {
			return fmt.Errorf("status.resolvedSources says %q, want 1.1.0", got)
		}
		if bd.Status.InstalledVersion != "1.1.0" || bd.Status.NewestVersion != "1.1.0" {
			return fmt.Errorf("installedVersion %q, newestVersion %q, want 1.1.0", bd.Status.InstalledVersion, bd.Status.NewestVersion)
		}
		return nil
	})

	// rukpakctl versions says what each published version is to it.
	out, err := rukpakctl("versions", name)
	if err != nil {
		t.Fatalf("rukpakctl versions: %v\n%s", err, out)
	}
	for _, want := range []string{"1.1.0       installed, newest in range", "2.0.0       out of range", "1.0.0       in range", "2.0.0-rc.1  out of range"} {
		if !strings.Contains(out, want) {
			t.Errorf("rukpakctl versions does not say %q:\n%s", want, out)
		}
	}

	// The repository goes down: the next resolve fails and says so, and
	// what is installed stays.
	repo.SetDown(true)
	envtest.Eventually(t, 3*v1alpha2.MinPollInterval+30*time.Second, func() error {
		cur := &v1alpha2.BundleDeployment{}
		if err := suite.client.Get(context.Background(), client.ObjectKey{Name: name}, cur); err != nil {
			return err
		}
		c := meta.FindStatusCondition(cur.Status.Conditions, v1alpha2.TypeUnpacked)
		if c == nil || c.Status != metav1.ConditionFalse || !strings.Contains(c.Message, "503") {
			return fmt.Errorf("Unpacked = %+v", c)
		}
		if cur.Status.ActiveBundle != upgraded.Status.ActiveBundle {
			return fmt.Errorf("active Bundle %s, was %s", cur.Status.ActiveBundle, upgraded.Status.ActiveBundle)
		}
		return nil
	})
	if v := configMapValue(t, name, "greeting"); v != "1.1.0" {
		t.Fatalf("with the repository down, greeting is %q", v)
	}
	repo.SetDown(false)
	waitConditionWithin(t, 3*v1alpha2.MinPollInterval+30*time.Second, name, v1alpha2.TypeUnpacked, metav1.ConditionTrue, v1alpha2.ReasonUnpacked)

	// 1.1.0 is taken off the index: it stays installed (never downgraded
	// to 1.0.0 by itself), and the status says it is no longer published.
	repo.Publish(t, "1.0.0", "0.9.0", "2.0.0-rc.1", "2.0.0")
	waitStatus(t, name, 3*v1alpha2.MinPollInterval+30*time.Second, func(bd *v1alpha2.BundleDeployment) error {
		c := meta.FindStatusCondition(bd.Status.Conditions, v1alpha2.TypeUnpacked)
		if c == nil || c.Status != metav1.ConditionTrue || c.Reason != v1alpha2.ReasonNoLongerPublished || !strings.Contains(c.Message, "version 1.1.0 is no longer published") {
			return fmt.Errorf("Unpacked = %+v", c)
		}
		want := []v1alpha2.UnpublishedVersion{{Source: 0, Version: "1.1.0", Newest: "1.0.0"}}
		if !slices.Equal(bd.Status.UnpublishedVersions, want) {
			return fmt.Errorf("status.unpublishedVersions = %v, want %v", bd.Status.UnpublishedVersions, want)
		}
		if bd.Status.ActiveBundle != upgraded.Status.ActiveBundle {
			return fmt.Errorf("active Bundle %s, was %s", bd.Status.ActiveBundle, upgraded.Status.ActiveBundle)
		}
		// The version kept is still the newest selected.
		if bd.Status.InstalledVersion != "1.1.0" || bd.Status.NewestVersion != "1.1.0" {
			return fmt.Errorf("installedVersion %q, newestVersion %q, want 1.1.0", bd.Status.InstalledVersion, bd.Status.NewestVersion)
		}
		return nil
	})
	if v := configMapValue(t, name, "greeting"); v != "1.1.0" {
		t.Fatalf("with 1.1.0 off the index, greeting is %q", v)
	}
}

func resolvedVersion(bd *v1alpha2.BundleDeployment) string {
	for _, s := range bd.Status.ResolvedSources {
		if s.HelmRepository != nil {
			return s.HelmRepository.ResolvedVersion
		}
	}
	return ""
}
