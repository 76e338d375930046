package ownership_test

import (
	"regexp"
	"strings"
	"testing"

	"github.com/rukpak/rukpak/api/v1alpha2"
	"github.com/rukpak/rukpak/internal/ownership"
)

var fullDigest = regexp.MustCompile(`^sha256:[0-9a-f]{64}$`)

// The name is a prefix of the full spec digest; the digests are full
// length and tell apart what the name may not.
func TestDigests(t *testing.T) {
	spec := v1alpha2.BundleSpec{ProvisionerClassName: v1alpha2.ClassPlain, Sources: []v1alpha2.BundleSource{{
		Type: v1alpha2.SourceTypeHTTP, HTTP: &v1alpha2.HTTPSource{URL: "https://example.com/a.tgz", SHA256: strings.Repeat("a", 64)}}}}
	d := ownership.SpecDigest(spec, "")
	if !fullDigest.MatchString(d) {
		t.Fatalf("SpecDigest = %q, want sha256:<64 hex>", d)
	}
	if name := ownership.RevisionName("team", spec, ""); name != "team-"+d[len("sha256:"):len("sha256:")+10] {
		t.Errorf("RevisionName = %q, want team- and the first 10 hex digits of %s", name, d)
	}
	if ownership.SpecDigest(spec, "sha256:values") == d {
		t.Error("the values digest does not change the spec digest")
	}

	a := map[string]any{"kind": "ConfigMap", "metadata": map[string]any{"name": "a"}}
	b := map[string]any{"kind": "ConfigMap", "metadata": map[string]any{"name": "b"}}
	ab, err := ownership.ObjectsDigest([]map[string]any{a, b})
	if err != nil {
		t.Fatal(err)
	}
	ba, _ := ownership.ObjectsDigest([]map[string]any{b, a})
	again, _ := ownership.ObjectsDigest([]map[string]any{a, b})
	if !fullDigest.MatchString(ab) || ab == ba || ab != again {
		t.Errorf("ObjectsDigest: %s, reordered %s, again %s: want full, order-sensitive and stable", ab, ba, again)
	}

	approval := ownership.ApprovalDigest(d, "sha256:content", ab)
	for _, other := range []string{
		ownership.ApprovalDigest(ownership.SpecDigest(spec, "sha256:values"), "sha256:content", ab),
		ownership.ApprovalDigest(d, "sha256:other", ab),
		ownership.ApprovalDigest(d, "sha256:content", ba),
	} {
		if other == approval {
			t.Errorf("approval digests of different revisions are equal: %s", approval)
		}
	}
	if !fullDigest.MatchString(approval) {
		t.Errorf("ApprovalDigest = %q", approval)
	}
}
