package review

import (
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/rukpak/rukpak/api/v1alpha2"
)

// Kinds of the API surface.
var (
	apiServiceGK = schema.GroupKind{Group: "apiregistration.k8s.io", Kind: "APIService"}
	namespaceGK  = schema.GroupKind{Kind: "Namespace"}
	secretGK     = schema.GroupKind{Kind: "Secret"}
)

// surfaceFindings are what a revision changes in what the API server
// serves and calls, unbounded.
type surfaceFindings struct {
	webhooks, apiServices, crds []surfaceChange
	// policies are the admission policies and policy bindings.
	policies []surfaceChange
	// unmodeled are the objects added or changed whose power the review
	// does not judge (reviewUnmodeled): each grows power.
	unmodeled []objectChange
	// clusterScoped are the cluster-scoped objects added, Namespaces
	// included.
	clusterScoped []*pair
	// namespaces are the Namespaces added.
	namespaces []string
}

// reviewSurface reviews webhooks, APIServices and CRDs, and lists the
// cluster-scoped objects and Namespaces the revision adds (in neither the
// active revision nor the cluster).
func reviewSurface(ps *pairs) (surfaceFindings, error) {
	var f surfaceFindings
	var err error
	if f.webhooks, err = reviewWebhooks(ps); err != nil {
		return f, err
	}
	if f.crds, err = reviewCRDs(ps); err != nil {
		return f, err
	}
	if f.policies, err = reviewAdmissionPolicies(ps); err != nil {
		return f, err
	}
	f.apiServices = reviewAPIServices(ps)
	for _, p := range ps.list {
		if p.before != nil || p.after == nil || p.placed.namespaced {
			continue
		}
		f.clusterScoped = append(f.clusterScoped, p)
		if p.key.groupKind() == namespaceGK {
			f.namespaces = append(f.namespaces, p.key.name)
		}
	}
	return f, nil
}

// reviewAPIServices compares the APIServices of ps: any change to what an
// APIService serves (its spec, the caBundle aside) is Widened: another
// service, group priority or TLS setting changes who answers for an API.
func reviewAPIServices(ps *pairs) []surfaceChange {
	var out []surfaceChange
	for _, p := range ps.list {
		if p.key.groupKind() != apiServiceGK {
			continue
		}
		c := surfaceChange{kind: apiServiceGK.Kind, name: p.key.name}
		switch {
		case p.after == nil:
			c.change = v1alpha2.ReviewRemoved
		case p.before == nil:
			c.change, c.details = v1alpha2.ReviewAdded, []string{describeAPIService(p.after)}
		default:
			paths := changedPaths(apiServiceSpec(p.before), apiServiceSpec(p.after), p.fromLive)
			if len(paths) == 0 {
				continue
			}
			c.change = v1alpha2.ReviewWidened
			for _, path := range paths {
				c.details = append(c.details, path+" changes")
			}
		}
		out = append(out, c)
	}
	return out
}

// apiServiceSpec returns the spec of an APIService without its caBundle,
// under "spec" so that paths read spec.service.name.
func apiServiceSpec(u *unstructured.Unstructured) map[string]any {
	spec, _, _ := unstructured.NestedMap(u.Object, "spec")
	delete(spec, "caBundle")
	return map[string]any{"spec": spec}
}

// describeAPIService says what an APIService serves and who answers.
func describeAPIService(u *unstructured.Unstructured) string {
	group, _, _ := unstructured.NestedString(u.Object, "spec", "group")
	version, _, _ := unstructured.NestedString(u.Object, "spec", "version")
	ns, _, _ := unstructured.NestedString(u.Object, "spec", "service", "namespace")
	name, hasService, _ := unstructured.NestedString(u.Object, "spec", "service", "name")
	if !hasService {
		return fmt.Sprintf("serves %s/%s locally", group, version)
	}
	return fmt.Sprintf("serves %s/%s from service %s/%s", group, version, ns, name)
}

// grows reports whether f grows power.
func (f surfaceFindings) grows() bool {
	for _, list := range [][]surfaceChange{f.webhooks, f.apiServices, f.crds, f.policies} {
		for _, c := range list {
			if c.grows() {
				return true
			}
		}
	}
	if len(f.unmodeled) > 0 {
		return true
	}
	for _, p := range f.clusterScoped {
		if !assessedElsewhere(p.key.groupKind()) {
			return true
		}
	}
	return false
}

// assessedElsewhere reports whether what a new cluster-scoped object of
// kind gk may do is judged by another part of the review: RBAC objects by
// the effective rules they grant (a ClusterRole renamed with the same
// rules grows nothing), webhook configurations, APIServices and CRDs by
// their own review, admission policies and their bindings by what they
// match and do.
func assessedElsewhere(gk schema.GroupKind) bool {
	switch gk {
	case clusterRoleGK, clusterRoleBindingGK, mutatingGK, validatingGK, apiServiceGK, crdGK, vapGK, vapbGK, mapGK, mapbGK:
		return true
	}
	return false
}

// stored returns f bounded.
func (f surfaceFindings) stored() v1alpha2.ReviewAPISurface {
	out := v1alpha2.ReviewAPISurface{
		WebhookCount:         count(len(f.webhooks)),
		Webhooks:             storedChanges(f.webhooks),
		APIServiceCount:      count(len(f.apiServices)),
		APIServices:          storedChanges(f.apiServices),
		CRDCount:             count(len(f.crds)),
		CRDs:                 storedChanges(f.crds),
		ClusterScopedCount:   count(len(f.clusterScoped)),
		NamespaceCount:       count(len(f.namespaces)),
		Namespaces:           cutAll(first(f.namespaces, MaxEntries), maxShort),
		AdmissionPolicyCount: count(len(f.policies)),
		AdmissionPolicies:    storedChanges(f.policies),
		UnmodeledCount:       count(len(f.unmodeled)),
		Unmodeled:            storedUnmodeled(f.unmodeled),
	}
	for _, p := range first(f.clusterScoped, MaxEntries) {
		out.ClusterScoped = append(out.ClusterScoped, reviewObject(p.placed))
	}
	return out
}

// storedChanges returns the first MaxEntries changes, bounded.
func storedChanges(cs []surfaceChange) []v1alpha2.ReviewSurfaceChange {
	var out []v1alpha2.ReviewSurfaceChange
	for _, c := range first(cs, MaxEntries) {
		out = append(out, v1alpha2.ReviewSurfaceChange{
			Kind:    cut(c.kind, maxShort),
			Name:    cut(c.name, maxName),
			Webhook: cut(c.webhook, maxName),
			Change:  c.change,
			Details: cutAll(firstAndMore(c.details, MaxDetails), maxDetail),
		})
	}
	return out
}
