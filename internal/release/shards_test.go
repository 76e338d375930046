package release

import (
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// TestShardsManifest: rukpak-shards.yaml is one Deployment per shard of
// config/shards, each running the release's image with --shard, a
// leader-elected pair whose pods only its own selector matches, as the
// release's ServiceAccount, without the CRD webhook.
func TestShardsManifest(t *testing.T) {
	img := Image{Repository: "registry.example/rukpak/rukpak", Tag: "v0.3.0", Digest: "sha256:" + strings.Repeat("ab", 32)}
	data, err := ShardsManifest(configDir(t), img, "v0.3.0")
	if err != nil {
		t.Fatal(err)
	}
	objs := decodeAll(t, data)
	var names []string
	for _, o := range objs {
		if o.GetKind() != "Deployment" {
			t.Errorf("%s %s in rukpak-shards.yaml: want only Deployments", o.GetKind(), o.GetName())
			continue
		}
		d := &appsv1.Deployment{}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, d); err != nil {
			t.Fatal(err)
		}
		names = append(names, d.Name)
		shard := strings.TrimPrefix(d.Name, "rukpak-manager-shard-")
		sel := d.Spec.Selector.MatchLabels
		if sel["core.rukpak.io/shard"] != shard || sel["app.kubernetes.io/name"] != "rukpak-shard" {
			t.Errorf("%s selects %v", d.Name, sel)
		}
		c := d.Spec.Template.Spec.Containers[0]
		if c.Image != img.String() {
			t.Errorf("%s runs %s, want %s", d.Name, c.Image, img)
		}
		if !slices.Contains(c.Args, "--shard="+shard) || !slices.Contains(c.Args, "--leader-elect") {
			t.Errorf("%s args %v: want --shard=%s and --leader-elect", d.Name, c.Args, shard)
		}
		if slices.ContainsFunc(c.Args, func(a string) bool { return strings.HasPrefix(a, "--crd-webhook") }) {
			t.Errorf("%s serves the CRD webhook: %v", d.Name, c.Args)
		}
		if d.Spec.Template.Spec.ServiceAccountName != "rukpak-manager" || d.Namespace != "rukpak-system" {
			t.Errorf("%s runs as %s/%s", d.Name, d.Namespace, d.Spec.Template.Spec.ServiceAccountName)
		}
	}
	if want := []string{"rukpak-manager-shard-a", "rukpak-manager-shard-b", "rukpak-manager-shard-c"}; !slices.Equal(names, want) {
		t.Errorf("Deployments %v, want %v", names, want)
	}
}
