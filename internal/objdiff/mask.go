package objdiff

import (
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// The masks of a Secret's values.
const (
	// Masked stands for a value that is the same on both sides, or is on
	// one side only.
	Masked = "***"
	// MaskedBefore and MaskedAfter stand for a value that changes: the
	// old one and the new one.
	MaskedBefore = "*** (before)"
	MaskedAfter  = "*** (after)"
)

// lastApplied is the annotation kubectl apply (client-side) keeps the
// whole object in, Secret values included.
const lastApplied = "kubectl.kubernetes.io/last-applied-configuration"

var secretGK = schema.GroupKind{Kind: "Secret"}

// isSecret reports whether obj is a core Secret.
func isSecret(obj *unstructured.Unstructured) bool {
	return obj != nil && obj.GroupVersionKind().GroupKind() == secretGK
}

// MaskSecrets returns copies of live and merged (either may be nil) in
// which, when they are Secrets, every value of data and stringData (and
// the annotation kubectl apply keeps the whole object in) is replaced by
// a mask: Masked where it is equal on both sides or present on one side
// only, MaskedBefore and MaskedAfter where it changes. Keys are kept, so
// a diff still shows which keys are added, removed or changed. Other
// objects are returned as they are.
func MaskSecrets(live, merged *unstructured.Unstructured) (*unstructured.Unstructured, *unstructured.Unstructured) {
	if !isSecret(live) && !isSecret(merged) {
		return live, merged
	}
	if live != nil {
		live = live.DeepCopy()
	}
	if merged != nil {
		merged = merged.DeepCopy()
	}
	every := func(string) bool { return true }
	for _, field := range []string{"data", "stringData"} {
		maskMap(mapOf(live, field), mapOf(merged, field), every)
	}
	maskMap(annotationsOf(live), annotationsOf(merged), func(k string) bool { return k == lastApplied })
	return live, merged
}

// mapOf returns obj's map field (nil when obj or the field is absent).
func mapOf(obj *unstructured.Unstructured, field string) map[string]any {
	if obj == nil {
		return nil
	}
	m, _ := obj.Object[field].(map[string]any)
	return m
}

// annotationsOf returns obj's metadata.annotations map itself.
func annotationsOf(obj *unstructured.Unstructured) map[string]any {
	if obj == nil {
		return nil
	}
	md, _ := obj.Object["metadata"].(map[string]any)
	ann, _ := md["annotations"].(map[string]any)
	return ann
}

// maskMap masks, in place, the values of before and after under the keys
// masked selects.
func maskMap(before, after map[string]any, masked func(key string) bool) {
	for k, b := range before {
		if !masked(k) {
			continue
		}
		a, both := after[k]
		switch {
		case !both:
			before[k] = Masked
		case equal(a, b):
			before[k], after[k] = Masked, Masked
		default:
			before[k], after[k] = MaskedBefore, MaskedAfter
		}
	}
	for k := range after {
		if _, both := before[k]; !both && masked(k) {
			after[k] = Masked
		}
	}
}

// equal compares two values of a Secret's maps (strings, or whatever a
// malformed object holds).
func equal(a, b any) bool {
	as, aok := a.(string)
	bs, bok := b.(string)
	if aok && bok {
		return as == bs
	}
	return false
}
