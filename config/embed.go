// Package config embeds rukpak's Kubernetes manifests so that Go programs
// (the local cluster, tests, the CLI) install exactly the CRDs that
// `make manifests` wrote, the admission policies of config/policy (and the
// optional one of config/shards/default-by-namespace) and the
// ClusterRoles the release ships for users, without reading the source
// tree at run time.
package config

import (
	"bufio"
	"bytes"
	"embed"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"sort"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"
)

//go:embed crd/bases/*.yaml
var crdFS embed.FS

// CRDFiles returns the embedded CRD manifests; their paths are
// crd/bases/<group>_<plural>.yaml.
func CRDFiles() fs.FS { return crdFS }

// CRDs decodes every embedded CRD manifest, sorted by name.
func CRDs() ([]*apiextensionsv1.CustomResourceDefinition, error) {
	files, err := fs.Glob(crdFS, "crd/bases/*.yaml")
	if err != nil {
		return nil, fmt.Errorf("listing embedded CRDs: %w", err)
	}
	crds := make([]*apiextensionsv1.CustomResourceDefinition, 0, len(files))
	for _, name := range files {
		data, err := crdFS.ReadFile(name)
		if err != nil {
			return nil, fmt.Errorf("reading embedded %s: %w", name, err)
		}
		reader := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
		for i := 0; ; i++ {
			doc, err := reader.Read()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				return nil, fmt.Errorf("splitting %s: %w", path.Base(name), err)
			}
			if len(bytes.TrimSpace(doc)) == 0 {
				continue
			}
			crd := &apiextensionsv1.CustomResourceDefinition{}
			if err := yaml.UnmarshalStrict(doc, crd); err != nil {
				return nil, fmt.Errorf("decoding %s (document %d): %w", path.Base(name), i, err)
			}
			if crd.Kind != "CustomResourceDefinition" || crd.Name == "" {
				return nil, fmt.Errorf("%s (document %d) is not a named CustomResourceDefinition", path.Base(name), i)
			}
			crds = append(crds, crd)
		}
	}
	sort.Slice(crds, func(i, j int) bool { return crds[i].Name < crds[j].Name })
	return crds, nil
}

//go:embed policy/*.yaml
var policyFS embed.FS

// policyFiles are the manifests of config/policy in the order Policies
// returns their objects: each policy before its binding, mutating before
// validating (rukpak-install-authorization refuses requests whose
// requested-by annotations rukpak-requested-by has not set).
var policyFiles = []string{
	"policy/mutating-policy.yaml",
	"policy/mutating-binding.yaml",
	"policy/validating-policy.yaml",
	"policy/validating-binding.yaml",
	"policy/finalizer-policy.yaml",
	"policy/finalizer-binding.yaml",
	"policy/approval-mutating-policy.yaml",
	"policy/approval-mutating-binding.yaml",
	"policy/approval-validating-policy.yaml",
	"policy/approval-validating-binding.yaml",
	"policy/approval-lowering-policy.yaml",
	"policy/approval-lowering-binding.yaml",
}

// Policies decodes the admission policies of config/policy: the
// MutatingAdmissionPolicy rukpak-requested-by, its binding, the
// ValidatingAdmissionPolicy rukpak-install-authorization and its binding,
// then the MutatingAdmissionPolicy rukpak-cleanup-finalizer and its binding,
// then rukpak-approved-by and rukpak-approval-authorization (who approved
// a revision, and that they may) and their bindings, then
// rukpak-approval-lowering (who may lower spec.upgrade.approval) and its
// binding, in that order. They are returned as unstructured objects so that callers
// install them as written, with server-side apply or create.
func Policies() ([]*unstructured.Unstructured, error) {
	return decodeObjects(policyFS, policyFiles)
}

//go:embed shards/default-by-namespace/*.yaml
var shardDefaultFS embed.FS

// shardDefaultFiles are the manifests of config/shards/default-by-namespace,
// in the order of its kustomization.
var shardDefaultFiles = []string{
	"shards/default-by-namespace/policy.yaml",
	"shards/default-by-namespace/binding.yaml",
}

// ShardByNamespacePolicy decodes the optional admission policy of
// config/shards/default-by-namespace: the MutatingAdmissionPolicy
// rukpak-shard-by-namespace, which labels a new BundleDeployment with the
// shard its installNamespace maps to in the ConfigMap
// rukpak-system/rukpak-shard-by-namespace, and its binding, in that order.
// Neither Policies nor the release installs it.
func ShardByNamespacePolicy() ([]*unstructured.Unstructured, error) {
	return decodeObjects(shardDefaultFS, shardDefaultFiles)
}

// decodeObjects decodes each of the named files of fsys, one object each,
// as unstructured objects, in order.
func decodeObjects(fsys embed.FS, names []string) ([]*unstructured.Unstructured, error) {
	objs := make([]*unstructured.Unstructured, 0, len(names))
	for _, name := range names {
		data, err := fsys.ReadFile(name)
		if err != nil {
			return nil, fmt.Errorf("reading embedded %s: %w", name, err)
		}
		obj := &unstructured.Unstructured{}
		if err := yaml.Unmarshal(data, &obj.Object); err != nil {
			return nil, fmt.Errorf("decoding %s: %w", path.Base(name), err)
		}
		if obj.GetKind() == "" || obj.GetName() == "" {
			return nil, fmt.Errorf("%s is not one named object", path.Base(name))
		}
		objs = append(objs, obj)
	}
	return objs, nil
}
