//go:build integration

package main

import (
	"bytes"
	"context"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/crane"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/static"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/rukpak/rukpak/api/v1alpha2"
	"github.com/rukpak/rukpak/pkg/envtest"
)

// TestListVersionsOfTagsAndOCICharts: versions lists the tags of an image
// source with versions and the chart versions of an oci:// Helm
// repository, read from a registry on loopback, with their states.
func TestListVersionsOfTagsAndOCICharts(t *testing.T) {
	ctx := context.Background()
	srv := httptest.NewServer(registry.New())
	t.Cleanup(srv.Close)
	host := strings.TrimPrefix(srv.URL, "http://")
	push := func(ref string, img v1.Image) string {
		t.Helper()
		if err := crane.Push(img, host+"/"+ref, crane.Insecure); err != nil {
			t.Fatal(err)
		}
		d, err := img.Digest()
		if err != nil {
			t.Fatal(err)
		}
		return d.String()
	}
	digests := map[string]string{}
	for _, tag := range []string{"v1.0.0", "v1.1.0", "v2.0.0", "latest"} {
		img, err := random.Image(64, 1)
		if err != nil {
			t.Fatal(err)
		}
		digests[tag] = push("app:"+tag, img)
	}
	for _, tag := range []string{"1.0.0", "1.1.0_build.1", "2.0.0-rc.1"} {
		chart, err := mutate.Append(empty.Image, mutate.Addendum{Layer: static.NewLayer([]byte(tag), "application/vnd.cncf.helm.chart.content.v1.tar+gzip")})
		if err != nil {
			t.Fatal(err)
		}
		digests["chart:"+tag] = push("charts/greeter:"+tag, mutate.ConfigMediaType(chart, "application/vnd.cncf.helm.config.v1+json"))
	}

	bd := &v1alpha2.BundleDeployment{
		ObjectMeta: metav1.ObjectMeta{Name: envtest.UniqueName("follows")},
		Spec: v1alpha2.BundleDeploymentSpec{
			ProvisionerClassName: v1alpha2.ClassPlain,
			InstallNamespace:     "default",
			Sources: []v1alpha2.BundleSource{
				{Type: v1alpha2.SourceTypeImage, Destination: "app",
					Image: &v1alpha2.ImageSource{Ref: host + "/app", Versions: ">=1 <2", InsecureSkipTLSVerify: true}},
				{Type: v1alpha2.SourceTypeHelmRepository, Destination: "chart",
					HelmRepository: &v1alpha2.HelmRepositorySource{URL: "oci://" + host + "/charts", Chart: "greeter", Version: "1.x", InsecureSkipTLSVerify: true}},
			},
		},
	}
	if err := testEnv.Client.Create(ctx, bd); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = testEnv.Client.Delete(context.Background(), bd) })
	resolved := []v1alpha2.BundleSource{*bd.Spec.Sources[0].DeepCopy(), *bd.Spec.Sources[1].DeepCopy()}
	resolved[0].Image.ResolvedTag, resolved[0].Image.Digest = "v1.1.0", digests["v1.1.0"]
	h := resolved[1].HelmRepository
	h.ResolvedVersion, h.ResolvedURL = "1.1.0+build.1", "oci://"+host+"/charts/greeter:1.1.0_build.1"
	h.SHA256 = strings.TrimPrefix(digests["chart:1.1.0_build.1"], "sha256:")
	bd.Status.ResolvedSources = resolved
	if err := testEnv.Client.Status().Update(ctx, bd); err != nil {
		t.Fatal(err)
	}

	var out bytes.Buffer
	if err := listVersions(ctx, testEnv.Client, &out, bd.Name); err != nil {
		t.Fatal(err)
	}
	want := []string{
		`spec.sources[0]: image ` + host + `/app, versions ">=1 <2"`,
		"v2.0.0   out of range",
		"v1.1.0   newest in range",
		"v1.0.0   in range",
		`spec.sources[1]: chart greeter of oci://` + host + `/charts, version "1.x"`,
		"2.0.0-rc.1     out of range",
		"1.1.0+build.1  newest in range",
		"1.0.0          in range",
	}
	for _, w := range want {
		if !strings.Contains(out.String(), w) {
			t.Errorf("output lacks %q:\n%s", w, out.String())
		}
	}
	if strings.Contains(out.String(), "latest") {
		t.Errorf("a tag that is not a version is listed:\n%s", out.String())
	}
}
