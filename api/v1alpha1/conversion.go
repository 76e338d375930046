package v1alpha1

import (
	"bytes"
	"encoding/json"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/conversion"

	"github.com/rukpak/rukpak/api/v1alpha2"
)

// Annotations that keep, on an object of one version, what the other
// version had and this one cannot express: the spec and status of the
// other version, as JSON. They are set only when a conversion would
// otherwise lose something, and read (and dropped) by the conversion back.
const (
	// AnnotationV1alpha1 is set on a v1alpha2 object written as v1alpha1.
	AnnotationV1alpha1 = "core.rukpak.io/v1alpha1-fields"
	// AnnotationV1alpha2 is set on a v1alpha1 view of a v1alpha2 object.
	AnnotationV1alpha2 = "core.rukpak.io/v1alpha2-fields"
)

// defaultRevisionHistoryLimit is v1alpha2's default spec.revisionHistoryLimit.
const defaultRevisionHistoryLimit int32 = 3

// DefaultInstallNamespace is where a BundleDeployment written as v1alpha1,
// which has no installNamespace, installs namespaced objects that name
// none.
const DefaultInstallNamespace = "default"

// How fields are converted: each field F the two versions share is
// converted by a pair of functions up (v1alpha1 to v1alpha2) and down.
// Converting up, a field takes the value saved in the object's annotation
// (what the v1alpha2 object had before it was read as v1alpha1) when that
// value converts down to the field's current v1alpha1 value, so nothing
// only v1alpha2 can say (a pull Secret's namespace, a Git CA) is lost by
// a round trip; otherwise the v1alpha1 value is converted. Down likewise.
// Fields only one version has come from the saved object, else from
// defaults.

// same reports whether a and b encode to the same JSON.
func same(a, b any) bool {
	x, err1 := json.Marshal(a)
	y, err2 := json.Marshal(b)
	return err1 == nil && err2 == nil && bytes.Equal(x, y)
}

// pick returns saved when it converts (with conv) to current, else the
// conversion of current (with back).
func pick[A, B any](current A, saved *B, conv func(B) A, back func(A) B) B {
	if saved != nil && same(conv(*saved), current) {
		return *saved
	}
	return back(current)
}

// fields is the spec and status of one object, as kept in an annotation.
type fields[S, T any] struct {
	Spec   S `json:"spec"`
	Status T `json:"status"`
}

// takeSaved removes key from meta's annotations and decodes its value,
// nil when absent or unreadable.
func takeSaved[S, T any](meta *metav1.ObjectMeta, key string) *fields[S, T] {
	raw, ok := meta.Annotations[key]
	if !ok {
		return nil
	}
	delete(meta.Annotations, key)
	if len(meta.Annotations) == 0 {
		meta.Annotations = nil
	}
	out := &fields[S, T]{}
	if err := json.Unmarshal([]byte(raw), out); err != nil {
		return nil
	}
	return out
}

// save records spec and status under key in meta's annotations.
func save[S, T any](meta *metav1.ObjectMeta, key string, spec S, status T) error {
	data, err := json.Marshal(fields[S, T]{Spec: spec, Status: status})
	if err != nil {
		return fmt.Errorf("encoding %s: %w", key, err)
	}
	if meta.Annotations == nil {
		meta.Annotations = map[string]string{}
	}
	meta.Annotations[key] = string(data)
	return nil
}

// copyMeta returns a deep copy of meta without the conversion annotations.
func copyMeta(meta *metav1.ObjectMeta) (metav1.ObjectMeta, *metav1.ObjectMeta) {
	out := *meta.DeepCopy()
	saved := *meta.DeepCopy()
	for _, k := range []string{AnnotationV1alpha1, AnnotationV1alpha2} {
		delete(out.Annotations, k)
	}
	if len(out.Annotations) == 0 {
		out.Annotations = nil
	}
	return out, &saved
}

// sourceUp converts a v1alpha1 source.
func sourceUp(s BundleSource) v1alpha2.BundleSource {
	out := v1alpha2.BundleSource{Type: v1alpha2.SourceType(s.Type)}
	if s.Image != nil {
		out.Image = &v1alpha2.ImageSource{Ref: s.Image.Ref}
		if s.Image.ImagePullSecretName != "" {
			out.Image.PullSecret = &v1alpha2.LocalObjectReference{Name: s.Image.ImagePullSecretName}
		}
	}
	if s.Git != nil {
		out.Git = &v1alpha2.GitSource{Repository: s.Git.Repository, Directory: s.Git.Directory,
			Ref:                   v1alpha2.GitRef{Branch: s.Git.Ref.Branch, Tag: s.Git.Ref.Tag, Commit: s.Git.Ref.Commit},
			InsecureSkipTLSVerify: s.Git.Auth.InsecureSkipVerify}
		if s.Git.Auth.Secret.Name != "" {
			out.Git.Auth = &v1alpha2.GitAuth{Secret: v1alpha2.LocalObjectReference{Name: s.Git.Auth.Secret.Name}}
		}
	}
	for _, c := range s.ConfigMaps {
		out.ConfigMaps = append(out.ConfigMaps, v1alpha2.ConfigMapSource{ConfigMap: v1alpha2.LocalObjectReference{Name: c.ConfigMap.Name}, Path: c.Path})
	}
	if s.HTTP != nil {
		out.HTTP = &v1alpha2.HTTPSource{URL: s.HTTP.URL, InsecureSkipTLSVerify: s.HTTP.Auth.InsecureSkipVerify}
		if s.HTTP.Auth.Secret.Name != "" {
			out.HTTP.Auth = &v1alpha2.HTTPAuth{Secret: v1alpha2.LocalObjectReference{Name: s.HTTP.Auth.Secret.Name}}
		}
	}
	if s.Upload != nil {
		out.Upload = &v1alpha2.UploadSource{}
	}
	return out
}

// sourceDown converts a v1alpha2 source.
func sourceDown(s v1alpha2.BundleSource) BundleSource {
	out := BundleSource{Type: SourceType(s.Type)}
	if s.Image != nil {
		out.Image = &ImageSource{Ref: s.Image.Ref}
		if s.Image.PullSecret != nil {
			out.Image.ImagePullSecretName = s.Image.PullSecret.Name
		}
	}
	if s.Git != nil {
		out.Git = &GitSource{Repository: s.Git.Repository, Directory: s.Git.Directory,
			Ref:  GitRef{Branch: s.Git.Ref.Branch, Tag: s.Git.Ref.Tag, Commit: s.Git.Ref.Commit},
			Auth: Authorization{InsecureSkipVerify: s.Git.InsecureSkipTLSVerify}}
		if s.Git.Auth != nil {
			out.Git.Auth.Secret.Name = s.Git.Auth.Secret.Name
		}
	}
	for _, c := range s.ConfigMaps {
		out.ConfigMaps = append(out.ConfigMaps, ConfigMapSource{ConfigMap: LocalObjectReference{Name: c.ConfigMap.Name}, Path: c.Path})
	}
	if s.HTTP != nil {
		out.HTTP = &HTTPSource{URL: s.HTTP.URL, Auth: Authorization{InsecureSkipVerify: s.HTTP.InsecureSkipTLSVerify}}
		if s.HTTP.Auth != nil {
			out.HTTP.Auth.Secret.Name = s.HTTP.Auth.Secret.Name
		}
	}
	if s.Upload != nil {
		out.Upload = &UploadSource{}
	}
	return out
}

// sourcesUp is one source as the list v1alpha2 has (none for an empty
// one).
func sourcesUp(s BundleSource) []v1alpha2.BundleSource {
	if same(s, BundleSource{}) {
		return nil
	}
	return []v1alpha2.BundleSource{sourceUp(s)}
}

// sourcesDown is the first of v1alpha2's sources.
func sourcesDown(s []v1alpha2.BundleSource) BundleSource {
	if len(s) == 0 {
		return BundleSource{}
	}
	return sourceDown(s[0])
}

func resolvedUp(s *BundleSource) []v1alpha2.BundleSource {
	if s == nil {
		return nil
	}
	return []v1alpha2.BundleSource{sourceUp(*s)}
}

func resolvedDown(s []v1alpha2.BundleSource) *BundleSource {
	if len(s) == 0 {
		return nil
	}
	out := sourceDown(s[0])
	return &out
}

// configUp reads a v1alpha1 config as v1alpha2's, nil when empty or when
// it is not one (then only the annotation keeps it).
func configUp(raw runtime.RawExtension) *v1alpha2.BundleConfig {
	if len(raw.Raw) == 0 {
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw.Raw))
	dec.DisallowUnknownFields()
	cfg := &v1alpha2.BundleConfig{}
	if err := dec.Decode(cfg); err != nil {
		return nil
	}
	return cfg
}

// configDown writes a v1alpha2 config as v1alpha1's.
func configDown(cfg *v1alpha2.BundleConfig) runtime.RawExtension {
	if cfg == nil {
		return runtime.RawExtension{}
	}
	data, err := json.Marshal(cfg)
	if err != nil {
		return runtime.RawExtension{}
	}
	return runtime.RawExtension{Raw: data}
}

// ptrOf returns a pointer to get(*p), or nil when p is nil.
func ptrOf[P, V any](p *P, get func(P) V) *V {
	if p == nil {
		return nil
	}
	v := get(*p)
	return &v
}

// bundleUp converts a v1alpha1 Bundle's spec and status, with what a
// v1alpha2 Bundle had saved (nil for none). v1alpha1's phase,
// resolvedSource and contentURL of a revision born complete show what its
// spec.unpacked implies (bundleDown); each keeps the saved value when it
// still shows as it did.
func bundleUp(spec BundleSpec, status BundleStatus, saved *fields[v1alpha2.BundleSpec, v1alpha2.BundleStatus]) (v1alpha2.BundleSpec, v1alpha2.BundleStatus) {
	var out fields[v1alpha2.BundleSpec, v1alpha2.BundleStatus]
	var sSpec *v1alpha2.BundleSpec
	var shown *BundleStatus
	if saved != nil {
		out = *saved
		sSpec = &saved.Spec
		_, st := bundleDown(saved.Spec, saved.Status, nil)
		shown = &st
	}
	out.Spec.ProvisionerClassName = spec.ProvisionerClassName
	out.Spec.Sources = pick(spec.Source, ptrOf(sSpec, func(s v1alpha2.BundleSpec) []v1alpha2.BundleSource { return s.Sources }), sourcesDown, sourcesUp)
	if shown == nil || shown.Phase != status.Phase {
		out.Status.Phase = v1alpha2.BundlePhase(status.Phase)
	}
	if shown == nil || !same(shown.ResolvedSource, status.ResolvedSource) {
		out.Status.ResolvedSources = resolvedUp(status.ResolvedSource)
	}
	if shown == nil || shown.ContentURL != status.ContentURL {
		out.Status.ContentURL = status.ContentURL
	}
	out.Status.ObservedGeneration = status.ObservedGeneration
	out.Status.Conditions = status.Conditions
	return out.Spec, out.Status
}

// bundleDown converts a v1alpha2 Bundle's spec and status, with what a
// v1alpha1 Bundle had saved (nil for none). A revision born complete
// (spec.unpacked) shows as unpacked, with its pinned sources and content
// URL, as v1alpha1 reported it in status; each saved value is kept when
// it still converts to what v1alpha2 has.
func bundleDown(spec v1alpha2.BundleSpec, status v1alpha2.BundleStatus, saved *fields[BundleSpec, BundleStatus]) (BundleSpec, BundleStatus) {
	var out fields[BundleSpec, BundleStatus]
	var sSpec *BundleSpec
	var up *v1alpha2.BundleStatus
	if saved != nil {
		out = *saved
		sSpec = &saved.Spec
		_, st := bundleUp(saved.Spec, saved.Status, nil)
		up = &st
	}
	view := &v1alpha2.Bundle{Spec: spec, Status: status}
	out.Spec.ProvisionerClassName = spec.ProvisionerClassName
	out.Spec.Source = pick(spec.Sources, ptrOf(sSpec, func(s BundleSpec) BundleSource { return s.Source }), sourcesUp, sourcesDown)
	if up == nil || up.Phase != status.Phase {
		out.Status.Phase = string(view.UnpackPhase())
	}
	if up == nil || !same(up.ResolvedSources, status.ResolvedSources) {
		out.Status.ResolvedSource = resolvedDown(view.ResolvedSources())
	}
	if up == nil || up.ContentURL != status.ContentURL {
		out.Status.ContentURL = view.ContentURL()
	}
	out.Status.ObservedGeneration = status.ObservedGeneration
	out.Status.Conditions = status.Conditions
	return out.Spec, out.Status
}

// ConvertTo converts this v1alpha1 Bundle to the hub (v1alpha2).
func (b *Bundle) ConvertTo(hub conversion.Hub) error {
	dst, ok := hub.(*v1alpha2.Bundle)
	if !ok {
		return fmt.Errorf("converting Bundle to %T", hub)
	}
	meta, raw := copyMeta(&b.ObjectMeta)
	dst.ObjectMeta = meta
	dst.Spec, dst.Status = bundleUp(b.Spec, b.Status, takeSaved[v1alpha2.BundleSpec, v1alpha2.BundleStatus](raw, AnnotationV1alpha2))
	if spec, status := bundleDown(dst.Spec, dst.Status, nil); !same(spec, b.Spec) || !same(status, b.Status) {
		return save(&dst.ObjectMeta, AnnotationV1alpha1, b.Spec, b.Status)
	}
	return nil
}

// ConvertFrom converts the hub (v1alpha2) to this v1alpha1 Bundle.
func (b *Bundle) ConvertFrom(hub conversion.Hub) error {
	src, ok := hub.(*v1alpha2.Bundle)
	if !ok {
		return fmt.Errorf("converting Bundle from %T", hub)
	}
	meta, raw := copyMeta(&src.ObjectMeta)
	b.ObjectMeta = meta
	b.Spec, b.Status = bundleDown(src.Spec, src.Status, takeSaved[BundleSpec, BundleStatus](raw, AnnotationV1alpha1))
	if spec, status := bundleUp(b.Spec, b.Status, nil); !same(spec, src.Spec) || !same(status, src.Status) {
		return save(&b.ObjectMeta, AnnotationV1alpha2, src.Spec, src.Status)
	}
	return nil
}

// bundleDeploymentUp converts a v1alpha1 BundleDeployment's spec and
// status, with what a v1alpha2 one had saved (nil for none).
func bundleDeploymentUp(spec BundleDeploymentSpec, status BundleDeploymentStatus, saved *fields[v1alpha2.BundleDeploymentSpec, v1alpha2.BundleDeploymentStatus]) (v1alpha2.BundleDeploymentSpec, v1alpha2.BundleDeploymentStatus) {
	// Without a saved v1alpha2 object: v1alpha2's defaults, as the API
	// server would set them.
	out := fields[v1alpha2.BundleDeploymentSpec, v1alpha2.BundleDeploymentStatus]{Spec: v1alpha2.BundleDeploymentSpec{
		InstallNamespace:     DefaultInstallNamespace,
		CollisionProtection:  v1alpha2.CollisionProtectionPrevent,
		RevisionHistoryLimit: ptr.To(defaultRevisionHistoryLimit),
	}}
	var sSpec *v1alpha2.BundleDeploymentSpec
	if saved != nil {
		out = *saved
		sSpec = &saved.Spec
	}
	out.Spec.ProvisionerClassName = spec.ProvisionerClassName
	out.Spec.Sources = pick(spec.Template.Spec.Source, ptrOf(sSpec, func(s v1alpha2.BundleDeploymentSpec) []v1alpha2.BundleSource { return s.Sources }), sourcesDown, sourcesUp)
	out.Spec.Config = pick(spec.Config, ptrOf(sSpec, func(s v1alpha2.BundleDeploymentSpec) *v1alpha2.BundleConfig { return s.Config }), configDown, configUp)
	out.Status.Conditions = status.Conditions
	out.Status.ActiveBundle = status.ActiveBundle
	out.Status.ObservedGeneration = status.ObservedGeneration
	return out.Spec, out.Status
}

// bundleDeploymentDown converts a v1alpha2 BundleDeployment's spec and
// status, with what a v1alpha1 one had saved (nil for none). Without one,
// the template's class is the BundleDeployment's.
func bundleDeploymentDown(spec v1alpha2.BundleDeploymentSpec, status v1alpha2.BundleDeploymentStatus, saved *fields[BundleDeploymentSpec, BundleDeploymentStatus]) (BundleDeploymentSpec, BundleDeploymentStatus) {
	out := fields[BundleDeploymentSpec, BundleDeploymentStatus]{Spec: BundleDeploymentSpec{Template: BundleTemplate{Spec: BundleSpec{ProvisionerClassName: spec.ProvisionerClassName}}}}
	var sSpec *BundleDeploymentSpec
	if saved != nil {
		out = *saved
		sSpec = &saved.Spec
	}
	out.Spec.ProvisionerClassName = spec.ProvisionerClassName
	out.Spec.Template.Spec.Source = pick(spec.Sources, ptrOf(sSpec, func(s BundleDeploymentSpec) BundleSource { return s.Template.Spec.Source }), sourcesUp, sourcesDown)
	out.Spec.Config = pick(spec.Config, ptrOf(sSpec, func(s BundleDeploymentSpec) runtime.RawExtension { return s.Config }), configUp, configDown)
	out.Status.Conditions = status.Conditions
	out.Status.ActiveBundle = status.ActiveBundle
	out.Status.ObservedGeneration = status.ObservedGeneration
	return out.Spec, out.Status
}

// ConvertTo converts this v1alpha1 BundleDeployment to the hub (v1alpha2).
func (b *BundleDeployment) ConvertTo(hub conversion.Hub) error {
	dst, ok := hub.(*v1alpha2.BundleDeployment)
	if !ok {
		return fmt.Errorf("converting BundleDeployment to %T", hub)
	}
	meta, raw := copyMeta(&b.ObjectMeta)
	dst.ObjectMeta = meta
	dst.Spec, dst.Status = bundleDeploymentUp(b.Spec, b.Status, takeSaved[v1alpha2.BundleDeploymentSpec, v1alpha2.BundleDeploymentStatus](raw, AnnotationV1alpha2))
	if spec, status := bundleDeploymentDown(dst.Spec, dst.Status, nil); !same(spec, b.Spec) || !same(status, b.Status) {
		return save(&dst.ObjectMeta, AnnotationV1alpha1, b.Spec, b.Status)
	}
	return nil
}

// ConvertFrom converts the hub (v1alpha2) to this v1alpha1
// BundleDeployment.
func (b *BundleDeployment) ConvertFrom(hub conversion.Hub) error {
	src, ok := hub.(*v1alpha2.BundleDeployment)
	if !ok {
		return fmt.Errorf("converting BundleDeployment from %T", hub)
	}
	meta, raw := copyMeta(&src.ObjectMeta)
	b.ObjectMeta = meta
	b.Spec, b.Status = bundleDeploymentDown(src.Spec, src.Status, takeSaved[BundleDeploymentSpec, BundleDeploymentStatus](raw, AnnotationV1alpha1))
	if spec, status := bundleDeploymentUp(b.Spec, b.Status, nil); !same(spec, src.Spec) || !same(status, src.Status) {
		return save(&b.ObjectMeta, AnnotationV1alpha2, src.Spec, src.Status)
	}
	return nil
}
