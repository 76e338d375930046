package release

import (
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"

	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/api/types"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/yaml"
)

// ManagerImageName is the image name config/manager's Deployment uses;
// Manifest replaces it with the release's image.
const ManagerImageName = "rukpak"

// Image is the manager's image reference in the release manifest.
type Image struct {
	// Repository is where the image lives, such as ghcr.io/rukpak/rukpak.
	Repository string
	// Tag is the release's tag, such as v0.3.0.
	Tag string
	// Digest pins the image index, such as sha256:…; with it the manifest
	// names repository:tag@digest.
	Digest string
}

// String returns the reference the manifest names.
func (i Image) String() string {
	s := i.Repository
	if i.Tag != "" {
		s += ":" + i.Tag
	}
	if i.Digest != "" {
		s += "@" + i.Digest
	}
	return s
}

// Manifest builds the release manifest, rukpak.yaml: the kustomization
// config/default of configDir, built with kustomize in memory (no plugins,
// no remote bases), with the manager's image set to img and every object
// labelled app.kubernetes.io/part-of=rukpak and app.kubernetes.io/version
// (not selectors or pod templates).
func Manifest(configDir string, img Image, release string) ([]byte, error) {
	return build(configDir, "default", img, release,
		fmt.Sprintf("# rukpak %s: kubectl apply --server-side -f rukpak.yaml (docs/release.md)\n", release))
}

// ShardsManifest builds rukpak-shards.yaml, the Deployments of three shards'
// managers (config/shards) as Manifest builds rukpak.yaml: applied after
// it, they reconcile the BundleDeployments labelled core.rukpak.io/shard
// a, b and c (docs/ha.md, Shards).
func ShardsManifest(configDir string, img Image, release string) ([]byte, error) {
	return build(configDir, "shards", img, release,
		fmt.Sprintf("# rukpak %s: three shards' managers; kubectl apply --server-side -f rukpak-shards.yaml after rukpak.yaml (docs/ha.md)\n", release))
}

// build builds the kustomization dir of configDir as Manifest describes,
// under header.
func build(configDir, dir string, img Image, release, header string) ([]byte, error) {
	fsys := filesys.MakeFsInMemory()
	if err := copyInto(fsys, configDir, "/config"); err != nil {
		return nil, fmt.Errorf("reading %s: %w", configDir, err)
	}
	k := types.Kustomization{
		TypeMeta:  types.TypeMeta{APIVersion: types.KustomizationVersion, Kind: types.KustomizationKind},
		Resources: []string{"../config/" + dir},
		Images: []types.Image{{
			Name:    ManagerImageName,
			NewName: img.Repository,
			NewTag:  img.Tag,
			Digest:  img.Digest,
		}},
		Labels: []types.Label{{Pairs: map[string]string{
			"app.kubernetes.io/part-of": "rukpak",
			"app.kubernetes.io/version": release,
		}}},
	}
	data, err := yaml.Marshal(k)
	if err != nil {
		return nil, fmt.Errorf("writing the release kustomization: %w", err)
	}
	if err := fsys.WriteFile("/release/kustomization.yaml", data); err != nil {
		return nil, fmt.Errorf("writing the release kustomization: %w", err)
	}
	opts := krusty.MakeDefaultOptions()
	opts.PluginConfig = types.DisabledPluginConfig()
	// Namespaces, CRDs and RBAC before what needs them.
	opts.Reorder = krusty.ReorderOptionLegacy
	resources, err := krusty.MakeKustomizer(opts).Run(fsys, "/release")
	if err != nil {
		return nil, fmt.Errorf("building %s/%s with kustomize: %w", configDir, dir, err)
	}
	out, err := resources.AsYaml()
	if err != nil {
		return nil, fmt.Errorf("writing the release manifest: %w", err)
	}
	return append([]byte(header), out...), nil
}

// copyInto copies the YAML files of the directory tree src on disk to dst in
// fsys.
func copyInto(fsys filesys.FileSystem, src, dst string) error {
	return filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, p)
		if err != nil {
			return err
		}
		target := path.Join(dst, filepath.ToSlash(rel))
		if d.IsDir() {
			return fsys.MkdirAll(target)
		}
		if !strings.HasSuffix(p, ".yaml") && !strings.HasSuffix(p, ".yml") {
			return nil
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return fsys.WriteFile(target, data)
	})
}
