package registryv1

import (
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/rukpak/rukpak/api/v1alpha2"
	"github.com/rukpak/rukpak/internal/format"
	"github.com/rukpak/rukpak/pkg/failure"
)

// keyOf returns the key of o, with the install namespace for an object
// without a namespace: whatever the kind's scope, both name the same
// object.
func keyOf(o *unstructured.Unstructured, installNamespace string) format.ObjectKey {
	ns := o.GetNamespace()
	if ns == "" {
		ns = installNamespace
	}
	return format.ObjectKey{Group: o.GroupVersionKind().Group, Kind: o.GetKind(), Namespace: ns, Name: o.GetName()}
}

// order returns the objects in apply order: CRDs, ServiceAccounts,
// ClusterRoles, ClusterRoleBindings, Roles, RoleBindings, the other
// manifests, the Services (and their certificate Secrets) of webhooks and
// APIs, the CSV's Deployments, then the webhook configurations and
// APIServices that call them. Manifests of the kinds of the
// first groups come before the generated ones of that kind, and manifests
// keep file order within a group. A generated Service or certificate
// Secret replaces a manifest of the same name, as OLM replaces it when it
// installs the CSV (bundles built with kubebuilder often ship the webhook
// Service under the name OLM generates); any other generated object that a
// manifest also defines is an InvalidContent failure.
func order(manifests []*unstructured.Unstructured, gen *generated, dir, csvName, installNamespace string) ([]*unstructured.Unstructured, error) {
	groups := [][]*unstructured.Unstructured{
		nil, gen.serviceAccounts, gen.clusterRoles, gen.clusterRoleBindings, gen.roles, gen.roleBindings, gen.services, gen.deployments, gen.callers,
	}
	replaced := map[format.ObjectKey]bool{}
	for _, o := range gen.services {
		replaced[keyOf(o, installNamespace)] = true
	}
	fromManifests := map[format.ObjectKey]bool{}
	for _, o := range manifests {
		fromManifests[keyOf(o, installNamespace)] = true
	}
	for _, group := range groups {
		for _, o := range group {
			if key := keyOf(o, installNamespace); fromManifests[key] && !replaced[key] {
				return nil, failure.New(v1alpha2.ReasonInvalidContent,
					"object %s is defined twice: in %s/ and by %s %s", key, dir, csvKind, csvName)
			}
		}
	}
	byGroup := make([][]*unstructured.Unstructured, len(groups))
	for _, o := range manifests {
		if replaced[keyOf(o, installNamespace)] {
			continue
		}
		g := rank(o)
		byGroup[g] = append(byGroup[g], o)
	}
	var out []*unstructured.Unstructured
	for i, group := range groups {
		out = append(out, byGroup[i]...)
		out = append(out, group...)
	}
	return out, nil
}

// rank returns the group of a manifest in apply order.
func rank(o *unstructured.Unstructured) int {
	gvk := o.GroupVersionKind()
	switch {
	case gvk.Group == "apiextensions.k8s.io" && gvk.Kind == "CustomResourceDefinition":
		return 0
	case gvk.Group == "" && gvk.Kind == "ServiceAccount":
		return 1
	case gvk.Group == "rbac.authorization.k8s.io":
		switch gvk.Kind {
		case "ClusterRole":
			return 2
		case "ClusterRoleBinding":
			return 3
		case "Role":
			return 4
		case "RoleBinding":
			return 5
		}
	}
	return 6
}
