package e2e

import (
	"context"
	"fmt"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/registry"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/rukpak/rukpak/api/v1alpha2"
	"github.com/rukpak/rukpak/pkg/envtest"
)

// TestImageFollowsATagRange installs the newest tag of an image
// repository that is a version in a range, takes a newer tag in range
// within an interval of its push, and ignores the tags pushed with it
// that are out of range (a newer major, a pre-release the range does not
// name, a tag that is not a version); rukpakctl versions says what each
// tag is to it.
func TestImageFollowsATagRange(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(registry.New())
	defer srv.Close()
	repo := strings.TrimPrefix(srv.URL, "http://") + "/bundles/tagged"
	push := func(tag string) string {
		return pushImage(t, repo+":"+tag, map[string]string{"manifests/cm.yaml": configMapYAML("from-tags", tag)})
	}
	digests := map[string]string{}
	for _, tag := range []string{"v0.9.0", "v1.0.0", "v2.0.0-rc.1"} {
		digests[tag] = push(tag)
	}

	name := envtest.UniqueName("tagrange")
	bd := &v1alpha2.BundleDeployment{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: v1alpha2.BundleDeploymentSpec{
			ProvisionerClassName: v1alpha2.ClassPlain, InstallNamespace: name,
			PollInterval: &metav1.Duration{Duration: v1alpha2.MinPollInterval},
			Sources: []v1alpha2.BundleSource{{Type: v1alpha2.SourceTypeImage,
				Image: &v1alpha2.ImageSource{Ref: repo, Versions: ">=1.0.0 <2", InsecureSkipTLSVerify: true}}},
		},
	}
	if err := suite.client.Create(context.Background(), bd); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = suite.client.Delete(context.Background(), bd) })
	installed := waitInstalled(t, name)
	if v := configMapValue(t, name, "from-tags"); v != "v1.0.0" {
		t.Fatalf("installed %q, want v1.0.0", v)
	}
	if tag, d := resolvedTag(installed); tag != "v1.0.0" || d != digests["v1.0.0"] {
		t.Errorf("status.resolvedSources says %s %s, want v1.0.0 %s", tag, d, digests["v1.0.0"])
	}

	// v1.1.0 in range is pushed with v2.0.0 and v1.2.0-rc.1 out of it and
	// latest: v1.1.0 is installed within an interval or two, by digest.
	for _, tag := range []string{"v2.0.0", "v1.1.0", "v1.2.0-rc.1", "latest"} {
		digests[tag] = push(tag)
	}
	envtest.Eventually(t, 3*v1alpha2.MinPollInterval+30*time.Second, func() error {
		if v := configMapValue(t, name, "from-tags"); v != "v1.1.0" {
			return fmt.Errorf("from-tags is %q, want v1.1.0", v)
		}
		return nil
	})
	upgraded := waitStatus(t, name, 30*time.Second, func(bd *v1alpha2.BundleDeployment) error {
		c := meta.FindStatusCondition(bd.Status.Conditions, v1alpha2.TypeInstalled)
		if c == nil || c.Status != metav1.ConditionTrue || bd.Status.ActiveBundle == installed.Status.ActiveBundle {
			return fmt.Errorf("Installed = %+v, active Bundle %s", c, bd.Status.ActiveBundle)
		}
		if tag, d := resolvedTag(bd); tag != "v1.1.0" || d != digests["v1.1.0"] {
			return fmt.Errorf("status.resolvedSources says %s %s, want v1.1.0 %s", tag, d, digests["v1.1.0"])
		}
		return nil
	})

	// Another interval and more: the tags out of range are never taken.
	time.Sleep(2 * v1alpha2.MinPollInterval)
	if v := configMapValue(t, name, "from-tags"); v != "v1.1.0" {
		t.Fatalf("after two more intervals from-tags is %q, want v1.1.0", v)
	}
	waitStatus(t, name, 30*time.Second, func(bd *v1alpha2.BundleDeployment) error {
		if bd.Status.ActiveBundle != upgraded.Status.ActiveBundle {
			return fmt.Errorf("active Bundle %s, was %s", bd.Status.ActiveBundle, upgraded.Status.ActiveBundle)
		}
		return nil
	})

	// rukpakctl versions says what each tag is to it.
	out, err := rukpakctl("versions", name)
	if err != nil {
		t.Fatalf("rukpakctl versions: %v\n%s", err, out)
	}
	for _, want := range []string{
		`image ` + repo + `, versions ">=1.0.0 <2"`,
		"v2.0.0       out of range",
		"v2.0.0-rc.1  out of range",
		"v1.2.0-rc.1  out of range",
		"v1.1.0       installed, newest in range",
		"v1.0.0       in range",
		"v0.9.0       out of range",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("rukpakctl versions does not say %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "latest") {
		t.Errorf("rukpakctl versions lists a tag that is not a version:\n%s", out)
	}
}

// resolvedTag is the tag and digest the image source of bd's status was
// resolved to.
func resolvedTag(bd *v1alpha2.BundleDeployment) (tag, digest string) {
	for _, s := range bd.Status.ResolvedSources {
		if s.Image != nil {
			return s.Image.ResolvedTag, s.Image.Digest
		}
	}
	return "", ""
}
