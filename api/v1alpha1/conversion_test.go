package v1alpha1

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/randfill"
	"sigs.k8s.io/yaml"

	"github.com/rukpak/rukpak/api/v1alpha2"
)

// filler makes random objects that JSON can carry: times in whole
// seconds, raw JSON that is valid, and none of the conversion annotations.
func filler(data []byte) *randfill.Filler {
	return randfill.NewFromGoFuzz(data).NilChance(0.3).NumElements(0, 2).MaxDepth(6).Funcs(
		func(t *metav1.Time, c randfill.Continue) {
			*t = metav1.Unix(int64(c.Uint32()), 0).Rfc3339Copy()
		},
		func(d *metav1.Duration, c randfill.Continue) {
			d.Duration = time.Duration(uint16(c.Uint32())) * time.Second
		},
		func(r *runtime.RawExtension, c randfill.Continue) {
			if c.Bool() {
				*r = runtime.RawExtension{}
				return
			}
			r.Raw = []byte(fmt.Sprintf(`{"k%d":%q}`, uint8(c.Uint32()), c.String(5)))
		},
		func(j *apiextensionsv1.JSON, c randfill.Continue) {
			j.Raw = []byte(fmt.Sprintf(`{"v":%d}`, uint8(c.Uint32())))
		},
		func(m *metav1.ObjectMeta, c randfill.Continue) {
			m.Name = c.String(8)
			m.Generation = int64(uint16(c.Uint32()))
			if c.Bool() {
				m.Labels = map[string]string{"app": c.String(4)}
			}
			if c.Bool() {
				m.Annotations = map[string]string{"note": c.String(4)}
			}
		},
	)
}

// encode is the JSON a client would see (type meta aside).
func encode(t *testing.T, obj any) string {
	t.Helper()
	data, err := json.Marshal(obj)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// FuzzRoundTrips: v1alpha1 → v1alpha2 → v1alpha1 and v1alpha2 → v1alpha1 →
// v1alpha2 give back the object they started from, for Bundles and
// BundleDeployments.
func FuzzRoundTrips(f *testing.F) {
	for _, seed := range []string{"", "rukpak", strings.Repeat("\x01\xff", 64), strings.Repeat("seed", 100)} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		fill := filler(data)

		bd1 := &BundleDeployment{}
		fill.Fill(bd1)
		bd1.TypeMeta = metav1.TypeMeta{} // set by the API server, not converted
		hub := &v1alpha2.BundleDeployment{}
		if err := bd1.ConvertTo(hub); err != nil {
			t.Fatal(err)
		}
		back := &BundleDeployment{}
		if err := back.ConvertFrom(hub); err != nil {
			t.Fatal(err)
		}
		if a, b := encode(t, bd1), encode(t, back); a != b {
			t.Fatalf("BundleDeployment v1alpha1 round trip:\n%s\n%s", a, b)
		}

		bd2 := &v1alpha2.BundleDeployment{}
		fill.Fill(bd2)
		bd2.TypeMeta = metav1.TypeMeta{} // set by the API server, not converted
		spoke := &BundleDeployment{}
		if err := spoke.ConvertFrom(bd2); err != nil {
			t.Fatal(err)
		}
		hub2 := &v1alpha2.BundleDeployment{}
		if err := spoke.ConvertTo(hub2); err != nil {
			t.Fatal(err)
		}
		if a, b := encode(t, bd2), encode(t, hub2); a != b {
			t.Fatalf("BundleDeployment v1alpha2 round trip:\n%s\n%s", a, b)
		}

		b1 := &Bundle{}
		fill.Fill(b1)
		b1.TypeMeta = metav1.TypeMeta{} // set by the API server, not converted
		bh := &v1alpha2.Bundle{}
		if err := b1.ConvertTo(bh); err != nil {
			t.Fatal(err)
		}
		bb := &Bundle{}
		if err := bb.ConvertFrom(bh); err != nil {
			t.Fatal(err)
		}
		if a, b := encode(t, b1), encode(t, bb); a != b {
			t.Fatalf("Bundle v1alpha1 round trip:\n%s\n%s", a, b)
		}

		b2 := &v1alpha2.Bundle{}
		fill.Fill(b2)
		b2.TypeMeta = metav1.TypeMeta{} // set by the API server, not converted
		bs := &Bundle{}
		if err := bs.ConvertFrom(b2); err != nil {
			t.Fatal(err)
		}
		bh2 := &v1alpha2.Bundle{}
		if err := bs.ConvertTo(bh2); err != nil {
			t.Fatal(err)
		}
		if a, b := encode(t, b2), encode(t, bh2); a != b {
			t.Fatalf("Bundle v1alpha2 round trip:\n%s\n%s", a, b)
		}
	})
}

// readmeBundleDeployment is the original README's example.
const readmeBundleDeployment = `apiVersion: core.rukpak.io/v1alpha1
kind: BundleDeployment
metadata:
  name: my-bundle-deployment
spec:
  provisionerClassName: core-rukpak-io-plain
  template:
    metadata:
      labels:
        app: my-bundle
    spec:
      source:
        type: image
        image:
          ref: my-bundle@sha256:xyz123
      provisionerClassName: core-rukpak-io-plain
`

// TestConversions: what each version's fields become in the other, and
// which annotation keeps what the other cannot say.
func TestConversions(t *testing.T) {
	bd := &BundleDeployment{}
	if err := yaml.UnmarshalStrict([]byte(readmeBundleDeployment), bd); err != nil {
		t.Fatal(err)
	}
	hub := &v1alpha2.BundleDeployment{}
	if err := bd.ConvertTo(hub); err != nil {
		t.Fatal(err)
	}
	if hub.Spec.ProvisionerClassName != "core-rukpak-io-plain" || hub.Spec.InstallNamespace != DefaultInstallNamespace ||
		len(hub.Spec.Sources) != 1 || hub.Spec.Sources[0].Image == nil || hub.Spec.Sources[0].Image.Ref != "my-bundle@sha256:xyz123" {
		t.Fatalf("v1alpha2 spec = %+v", hub.Spec)
	}
	// The template's labels have no place in v1alpha2: kept.
	if !strings.Contains(hub.Annotations[AnnotationV1alpha1], `"app":"my-bundle"`) {
		t.Fatalf("annotations %v do not keep the template's labels", hub.Annotations)
	}

	// A v1alpha2 object with fields v1alpha1 lacks: its view keeps them in
	// an annotation; an edit of a shared field through v1alpha1 wins over
	// the kept value, and the rest is kept.
	v2 := &v1alpha2.BundleDeployment{Spec: v1alpha2.BundleDeploymentSpec{ProvisionerClassName: "core-rukpak-io-plain", InstallNamespace: "apps",
		Sources: []v1alpha2.BundleSource{{Type: v1alpha2.SourceTypeImage, Image: &v1alpha2.ImageSource{Ref: "a:1", PullSecret: &v1alpha2.LocalObjectReference{Name: "creds", Namespace: "team"}}}}}}
	view := &BundleDeployment{}
	if err := view.ConvertFrom(v2); err != nil {
		t.Fatal(err)
	}
	if view.Spec.Template.Spec.Source.Image.ImagePullSecretName != "creds" || view.Annotations[AnnotationV1alpha2] == "" {
		t.Fatalf("v1alpha1 view = %+v, annotations %v", view.Spec, view.Annotations)
	}
	view.Spec.Template.Spec.Source.Image.Ref = "a:2"
	edited := &v1alpha2.BundleDeployment{}
	if err := view.ConvertTo(edited); err != nil {
		t.Fatal(err)
	}
	if edited.Spec.InstallNamespace != "apps" || edited.Spec.Sources[0].Image.Ref != "a:2" {
		t.Fatalf("after an edit through v1alpha1: %+v", edited.Spec)
	}
	if _, kept := edited.Annotations[AnnotationV1alpha2]; kept {
		t.Fatal("the conversion annotation of the view leaked into the stored object")
	}

	// Accepted CRD upgrade findings, which v1alpha1 cannot express, survive
	// a round trip through it.
	accepting := v2.DeepCopy()
	accepting.Spec.Upgrade = &v1alpha2.UpgradePolicy{AcceptedCRDFindings: []v1alpha2.AcceptedCRDFinding{
		{CRD: "widgets.example.com", Finding: "Invalid:v1:.status.conditions[*].reason"},
	}}
	view = &BundleDeployment{}
	if err := view.ConvertFrom(accepting); err != nil {
		t.Fatal(err)
	}
	back := &v1alpha2.BundleDeployment{}
	if err := view.ConvertTo(back); err != nil {
		t.Fatal(err)
	}
	if a, b := encode(t, accepting), encode(t, back); a != b {
		t.Fatalf("acceptedCRDFindings round trip through v1alpha1:\n%s\n%s", a, b)
	}
}

// A revision born complete (spec.unpacked, status not written) shows in
// v1alpha1 as v1alpha1 reported it in status: Unpacked, its pinned source,
// its content URL; a round trip through v1alpha1 gives it back as it was,
// with nothing added to its status.
func TestBornCompleteBundle(t *testing.T) {
	src := v1alpha2.BundleSource{Type: v1alpha2.SourceTypeImage, Image: &v1alpha2.ImageSource{Ref: "a@sha256:" + strings.Repeat("a", 64)}}
	born := &v1alpha2.Bundle{
		ObjectMeta: metav1.ObjectMeta{Name: "app-0123456789"},
		Spec: v1alpha2.BundleSpec{ProvisionerClassName: "core-rukpak-io-plain", Sources: []v1alpha2.BundleSource{src},
			Unpacked: &v1alpha2.UnpackRecord{ContentDigest: "sha256:" + strings.Repeat("b", 64), ContentURL: "https://rukpak/bundles/app-0123456789", ObjectCount: 3}},
	}
	view := &Bundle{}
	if err := view.ConvertFrom(born); err != nil {
		t.Fatal(err)
	}
	if view.Status.Phase != string(v1alpha2.BundlePhaseUnpacked) || view.Status.ContentURL != born.Spec.Unpacked.ContentURL ||
		view.Status.ResolvedSource == nil || view.Status.ResolvedSource.Image.Ref != src.Image.Ref {
		t.Fatalf("v1alpha1 view status = %+v", view.Status)
	}
	back := &v1alpha2.Bundle{}
	if err := view.ConvertTo(back); err != nil {
		t.Fatal(err)
	}
	if a, b := encode(t, born), encode(t, back); a != b {
		t.Fatalf("round trip through v1alpha1:\n%s\n%s", a, b)
	}

	// Once reported (outcome written, say), status wins where it speaks.
	reported := born.DeepCopy()
	reported.Status.Phase = v1alpha2.BundlePhaseFailed
	view = &Bundle{}
	if err := view.ConvertFrom(reported); err != nil {
		t.Fatal(err)
	}
	if view.Status.Phase != string(v1alpha2.BundlePhaseFailed) {
		t.Fatalf("v1alpha1 phase %q, want status's Failed", view.Status.Phase)
	}
	back = &v1alpha2.Bundle{}
	if err := view.ConvertTo(back); err != nil {
		t.Fatal(err)
	}
	if a, b := encode(t, reported), encode(t, back); a != b {
		t.Fatalf("round trip through v1alpha1:\n%s\n%s", a, b)
	}
}
