package main

import (
	"fmt"
	"slices"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/rukpak/rukpak/internal/apply"
	"github.com/rukpak/rukpak/internal/permissions"
)

// clusterScopedKinds are the built-in kinds that are not namespaced, for
// working without a cluster.
var clusterScopedKinds = map[schema.GroupKind]bool{
	{Kind: "Namespace"}:        true,
	{Kind: "Node"}:             true,
	{Kind: "PersistentVolume"}: true,
	{Kind: "ComponentStatus"}:  true,
	{Group: "rbac.authorization.k8s.io", Kind: "ClusterRole"}:                         true,
	{Group: "rbac.authorization.k8s.io", Kind: "ClusterRoleBinding"}:                  true,
	{Group: "apiextensions.k8s.io", Kind: "CustomResourceDefinition"}:                 true,
	{Group: "apiregistration.k8s.io", Kind: "APIService"}:                             true,
	{Group: "admissionregistration.k8s.io", Kind: "MutatingWebhookConfiguration"}:     true,
	{Group: "admissionregistration.k8s.io", Kind: "ValidatingWebhookConfiguration"}:   true,
	{Group: "admissionregistration.k8s.io", Kind: "ValidatingAdmissionPolicy"}:        true,
	{Group: "admissionregistration.k8s.io", Kind: "ValidatingAdmissionPolicyBinding"}: true,
	{Group: "admissionregistration.k8s.io", Kind: "MutatingAdmissionPolicy"}:          true,
	{Group: "admissionregistration.k8s.io", Kind: "MutatingAdmissionPolicyBinding"}:   true,
	{Group: "storage.k8s.io", Kind: "StorageClass"}:                                   true,
	{Group: "storage.k8s.io", Kind: "CSIDriver"}:                                      true,
	{Group: "storage.k8s.io", Kind: "CSINode"}:                                        true,
	{Group: "storage.k8s.io", Kind: "VolumeAttachment"}:                               true,
	{Group: "storage.k8s.io", Kind: "VolumeAttributesClass"}:                          true,
	{Group: "scheduling.k8s.io", Kind: "PriorityClass"}:                               true,
	{Group: "networking.k8s.io", Kind: "IngressClass"}:                                true,
	{Group: "networking.k8s.io", Kind: "IPAddress"}:                                   true,
	{Group: "networking.k8s.io", Kind: "ServiceCIDR"}:                                 true,
	{Group: "node.k8s.io", Kind: "RuntimeClass"}:                                      true,
	{Group: "certificates.k8s.io", Kind: "CertificateSigningRequest"}:                 true,
	{Group: "certificates.k8s.io", Kind: "ClusterTrustBundle"}:                        true,
	{Group: "flowcontrol.apiserver.k8s.io", Kind: "FlowSchema"}:                       true,
	{Group: "flowcontrol.apiserver.k8s.io", Kind: "PriorityLevelConfiguration"}:       true,
	{Group: "resource.k8s.io", Kind: "DeviceClass"}:                                   true,
	{Group: "resource.k8s.io", Kind: "ResourceSlice"}:                                 true,
	{Group: "core.rukpak.io", Kind: "BundleDeployment"}:                               true,
	{Group: "core.rukpak.io", Kind: "Bundle"}:                                         true,
	{Group: "core.rukpak.io", Kind: "ProvisionerClass"}:                               true,
}

// resourceInfo is a kind's resource and scope.
type resourceInfo struct {
	resource   string
	namespaced bool
}

// toTargets maps rendered objects to the targets of the permission check.
// A kind's resource and scope come from mapper (the cluster; nil without
// one), else from a CustomResourceDefinition among objs, else from a guess
// (a lower-case plural): the kinds guessed are returned. Namespaced objects
// without a namespace go to installNamespace, as the apply engine places
// them.
func toTargets(objs []*unstructured.Unstructured, mapper meta.RESTMapper, installNamespace string) (targets []permissions.Target, guessed []string, err error) {
	crds, err := apply.BundleKinds(objs)
	if err != nil {
		return nil, nil, err
	}
	for _, obj := range objs {
		gvk := obj.GroupVersionKind()
		info, fromGuess, err := lookup(gvk, mapper, crds)
		if err != nil {
			return nil, nil, err
		}
		if fromGuess {
			desc := gvk.Kind
			if gvk.Group != "" {
				desc += "." + gvk.Group
			}
			desc += " → " + info.resource
			if !slices.Contains(guessed, desc) {
				guessed = append(guessed, desc)
			}
		}
		ns := ""
		if info.namespaced {
			ns = obj.GetNamespace()
			if ns == "" {
				ns = installNamespace
			}
		}
		targets = append(targets, permissions.Target{
			Resource:  gvk.GroupVersion().WithResource(info.resource),
			Namespace: ns,
			Name:      obj.GetName(),
		})
	}
	return targets, guessed, nil
}

// lookup finds the resource and scope of gvk; guessed says neither the
// cluster nor a CRD of the bundle knew it.
func lookup(gvk schema.GroupVersionKind, mapper meta.RESTMapper, crds map[schema.GroupKind]apply.BundleKind) (info resourceInfo, guessed bool, err error) {
	if mapper != nil {
		m, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
		if err == nil {
			return resourceInfo{resource: m.Resource.Resource, namespaced: m.Scope.Name() == meta.RESTScopeNameNamespace}, false, nil
		}
		if !meta.IsNoMatchError(err) {
			return resourceInfo{}, false, fmt.Errorf("looking up kind %s: %w", gvk, err)
		}
	}
	if def, ok := crds[gvk.GroupKind()]; ok && def.Plural != "" {
		return resourceInfo{resource: def.Plural, namespaced: def.Namespaced}, false, nil
	}
	plural, _ := meta.UnsafeGuessKindToResource(gvk)
	return resourceInfo{resource: plural.Resource, namespaced: !clusterScopedKinds[gvk.GroupKind()]}, true, nil
}
