package review

import (
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/rukpak/rukpak/api/v1alpha2"
)

// powerGroups are the API groups whose objects change what the API
// server or the cluster lets anyone do: an object of theirs that the
// review does not model by kind is unmodeled, added or changed.
var powerGroups = map[string]bool{
	"admissionregistration.k8s.io": true,
	"rbac.authorization.k8s.io":    true,
	"apiregistration.k8s.io":       true,
	"apiextensions.k8s.io":         true,
	"certificates.k8s.io":          true,
	"scheduling.k8s.io":            true,
	"node.k8s.io":                  true,
	"flowcontrol.apiserver.k8s.io": true,
	"storage.k8s.io":               true,
}

// ordinaryGroups are the API groups of ordinary namespaced workloads,
// whose objects the review models as fields only: what they can do is
// what the install identity may do in their namespace, which the
// identity part of the review judges. A namespaced object of any other
// group (a custom resource, an OLM ClusterServiceVersion) may mean
// anything to the controller that reads it, so it is unmodeled.
var ordinaryGroups = map[string]bool{
	"":                    true,
	"apps":                true,
	"batch":               true,
	"autoscaling":         true,
	"policy":              true,
	"networking.k8s.io":   true,
	"discovery.k8s.io":    true,
	"coordination.k8s.io": true,
	"events.k8s.io":       true,
}

// modeled reports whether the review judges the power of objects of kind
// gk by what they mean: RBAC objects by the rules they grant, webhook
// configurations and admission policies by what they match and do,
// APIServices and CRDs by what they serve.
func modeled(gk schema.GroupKind) bool {
	switch gk {
	case roleGK, clusterRoleGK, roleBindingGK, clusterRoleBindingGK,
		mutatingGK, validatingGK, vapGK, vapbGK, mapGK, mapbGK,
		apiServiceGK, crdGK:
		return true
	}
	return false
}

// isUnmodeled reports whether an added (changed false) or changed object
// of kind gk counts as growing power because the review does not model
// it (fail closed): a cluster-scoped object changed (one added counts as
// a new cluster-scoped object already), an object of a power group of a
// kind not modeled, or an object of a group that is not ordinary.
// Removed objects never count.
func isUnmodeled(gk schema.GroupKind, namespaced, changed bool) bool {
	switch {
	case modeled(gk):
		return false
	case !namespaced:
		return changed
	}
	return powerGroups[gk.Group] || !ordinaryGroups[gk.Group]
}

// reviewUnmodeled returns the objects of f that the review does not
// model, with the fields that change (every field an added one sets).
func reviewUnmodeled(f objectFindings) []objectChange {
	var out []objectChange
	for _, p := range f.added {
		if isUnmodeled(p.key.groupKind(), p.placed.namespaced, false) {
			out = append(out, objectChange{pair: p, paths: changedPaths(map[string]any{}, comparedFields(p.after, p.key.namespace), false)})
		}
	}
	for _, c := range f.changed {
		if isUnmodeled(c.pair.key.groupKind(), c.pair.placed.namespaced, true) {
			out = append(out, c)
		}
	}
	return out
}

// storedUnmodeled returns the first MaxEntries of cs, bounded.
func storedUnmodeled(cs []objectChange) []v1alpha2.ReviewObjectChange {
	var out []v1alpha2.ReviewObjectChange
	for _, c := range first(cs, MaxEntries) {
		to := v1alpha2.ReviewComparedToRevision
		switch {
		case c.pair.before == nil:
			to = v1alpha2.ReviewComparedToNone
		case c.pair.fromLive:
			to = v1alpha2.ReviewComparedToLive
		}
		out = append(out, v1alpha2.ReviewObjectChange{
			Object:     reviewObject(c.pair.placed),
			ComparedTo: to,
			PathCount:  count(len(c.paths)),
			Paths:      cutAll(first(c.paths, MaxPaths), maxPath),
		})
	}
	return out
}

// describeUnmodeled says how an unmodeled object changes, with its first
// paths: "changes cluster-scoped StorageClass fast (parameters.type)".
func describeUnmodeled(c objectChange) string {
	verb := "changes"
	if c.pair.before == nil {
		verb = "adds"
	}
	k := c.pair.key
	what := k.kind
	if k.group != "" {
		what += "." + k.group
	}
	if k.namespace == "" {
		what = "cluster-scoped " + what + " " + k.name
	} else {
		what += " " + k.namespace + "/" + k.name
	}
	s := verb + " " + what + " (not modeled by the review)"
	if c.pair.before != nil && len(c.paths) > 0 {
		s += ": " + joinBounded(firstAndMore(c.paths, 3), maxDetail)
	}
	return s
}
