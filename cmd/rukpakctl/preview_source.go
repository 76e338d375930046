package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/rukpak/rukpak/api/v1alpha2"
	"github.com/rukpak/rukpak/internal/source"
	"github.com/rukpak/rukpak/internal/source/configmaps"
	"github.com/rukpak/rukpak/internal/source/credentials"
	"github.com/rukpak/rukpak/internal/source/git"
	httpsource "github.com/rukpak/rukpak/internal/source/http"
	"github.com/rukpak/rukpak/internal/source/image"
	uploadsource "github.com/rukpak/rukpak/internal/source/upload"
	"github.com/rukpak/rukpak/internal/upload"
)

// readBundleDeployment reads the one BundleDeployment of the YAML (or
// JSON) file path; other documents in the file are skipped.
func readBundleDeployment(path string) (*v1alpha2.BundleDeployment, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", path, err)
	}
	defer f.Close()
	dec := utilyaml.NewYAMLOrJSONDecoder(f, 4096)
	var found []map[string]any
	for {
		var doc map[string]any
		if err := dec.Decode(&doc); err != nil {
			if errors.Is(err, io.EOF) {
				break
			}
			return nil, fmt.Errorf("reading %s: %w", path, err)
		}
		u := unstructured.Unstructured{Object: doc}
		if gvk := u.GroupVersionKind(); doc != nil && gvk.Group == v1alpha2.GroupVersion.Group && gvk.Kind == v1alpha2.BundleDeploymentKind {
			found = append(found, doc)
		}
	}
	switch len(found) {
	case 0:
		return nil, fmt.Errorf("%s holds no BundleDeployment (apiVersion %s)", path, v1alpha2.GroupVersion)
	case 1:
	default:
		return nil, fmt.Errorf("%s holds %d BundleDeployments; preview one at a time", path, len(found))
	}
	data, err := yaml.Marshal(found[0])
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", path, err)
	}
	bd := &v1alpha2.BundleDeployment{}
	if err := yaml.UnmarshalStrict(data, bd); err != nil {
		return nil, fmt.Errorf("reading the BundleDeployment of %s: %w", path, err)
	}
	if bd.Name == "" || bd.Spec.InstallNamespace == "" || bd.Spec.ProvisionerClassName == "" {
		return nil, fmt.Errorf("the BundleDeployment of %s needs metadata.name, spec.installNamespace and spec.provisionerClassName", path)
	}
	return bd, nil
}

// getBundleDeployment reads BundleDeployment name from the cluster.
func getBundleDeployment(ctx context.Context, c client.Client, name string) (*v1alpha2.BundleDeployment, error) {
	bd := &v1alpha2.BundleDeployment{}
	if err := c.Get(ctx, client.ObjectKey{Name: name}, bd); err != nil {
		return nil, fmt.Errorf("getting BundleDeployment %s (not a file either): %w", name, err)
	}
	return bd, nil
}

// contentRef returns what to render bd from, as fetch reads it: --content,
// else, for a BundleDeployment read from the cluster (onCluster), its
// newest Bundle downloaded into a temporary .tar.gz that cleanup removes,
// else bd's only source if it is an image.
func (o *previewOptions) contentRef(ctx context.Context, cl *cluster, bd *v1alpha2.BundleDeployment, onCluster bool) (ref string, cleanup func(), err error) {
	if o.content != "" {
		return o.content, func() {}, nil
	}
	if onCluster {
		if cl.token != "" {
			return downloadNewest(ctx, cl, bd.Name)
		}
		// No token for the content server (e.g. a client-certificate
		// kubeconfig): fetch the newest Bundle's pinned sources here.
		sources, err := newestSources(ctx, cl, bd)
		if err != nil {
			return "", nil, err
		}
		return unpackHere(ctx, cl, sources)
	}
	var refs []string
	for _, src := range bd.Spec.Sources {
		if src.Type == v1alpha2.SourceTypeImage && src.Image != nil && src.Image.Ref != "" {
			refs = append(refs, src.Image.Ref)
		}
	}
	if len(refs) == 1 && len(bd.Spec.Sources) == 1 {
		return refs[0], func() {}, nil
	}
	if cl != nil {
		return unpackHere(ctx, cl, bd.Spec.Sources)
	}
	return "", nil, fmt.Errorf("BundleDeployment %s has no single image source to read without a cluster; pass its content with --content DIR|FILE.tgz|IMAGE", bd.Name)
}

// newestSources are the pinned sources of bd's newest Bundle, or bd's own
// sources when it has none yet.
func newestSources(ctx context.Context, cl *cluster, bd *v1alpha2.BundleDeployment) ([]v1alpha2.BundleSource, error) {
	list := &v1alpha2.BundleList{}
	if err := cl.client.List(ctx, list, client.MatchingLabels{v1alpha2.LabelBundleDeployment: bd.Name}); err != nil {
		return nil, fmt.Errorf("listing Bundles of BundleDeployment %s: %w", bd.Name, err)
	}
	if len(list.Items) == 0 {
		return bd.Spec.Sources, nil
	}
	sortRevisions(list.Items)
	return list.Items[len(list.Items)-1].Spec.Sources, nil
}

// unpackHere resolves and unpacks sources on this machine, as the manager
// would, reading the Secrets and ConfigMaps they name from rukpak-system
// with the kubeconfig's credentials; the directory is removed by cleanup.
func unpackHere(ctx context.Context, cl *cluster, sources []v1alpha2.BundleSource) (dir string, cleanup func(), err error) {
	creds := credentials.NewReader(cl.client, v1alpha2.SystemNamespace)
	reg := source.Registry{
		v1alpha2.SourceTypeConfigMaps: configmaps.New(cl.client, v1alpha2.SystemNamespace),
		v1alpha2.SourceTypeImage:      image.New(creds),
		v1alpha2.SourceTypeGit:        git.New(creds),
		v1alpha2.SourceTypeHTTP:       httpsource.New(creds),
		v1alpha2.SourceTypeUpload:     uploadsource.New(upload.NewStore(cl.client, cl.client, v1alpha2.SystemNamespace)),
	}
	pinned, err := reg.Resolve(ctx, sources, nil, false)
	if err != nil {
		return "", nil, fmt.Errorf("resolving the sources: %w", err)
	}
	dir, err = os.MkdirTemp("", "rukpakctl-preview-")
	if err != nil {
		return "", nil, fmt.Errorf("making a temporary directory: %w", err)
	}
	cleanup = func() { _ = os.RemoveAll(dir) }
	content := filepath.Join(dir, "content")
	if err := os.MkdirAll(content, 0o755); err != nil {
		cleanup()
		return "", nil, fmt.Errorf("making a temporary directory: %w", err)
	}
	if err := reg.Unpack(ctx, pinned, content); err != nil {
		cleanup()
		return "", nil, fmt.Errorf("unpacking the sources: %w", err)
	}
	return content, cleanup, nil
}

// downloadNewest downloads the content of the newest Bundle of
// BundleDeployment name into a temporary .tar.gz.
func downloadNewest(ctx context.Context, cl *cluster, name string) (path string, cleanup func(), err error) {
	list := &v1alpha2.BundleList{}
	if err := cl.client.List(ctx, list, client.MatchingLabels{v1alpha2.LabelBundleDeployment: name}); err != nil {
		return "", nil, fmt.Errorf("listing Bundles of BundleDeployment %s: %w", name, err)
	}
	if len(list.Items) == 0 {
		return "", nil, fmt.Errorf("BundleDeployment %s has no Bundle yet; pass its content with --content DIR|FILE.tgz|IMAGE", name)
	}
	sortRevisions(list.Items)
	b := &list.Items[len(list.Items)-1]
	if cl.token == "" {
		return "", nil, fmt.Errorf("the content server authenticates bearer tokens: pass --token (e.g. from `kubectl create token`) or --content")
	}
	body, err := openContent(ctx, b, cl.token)
	if err != nil {
		return "", nil, err
	}
	defer body.Close()
	dir, err := os.MkdirTemp("", "rukpakctl-preview-")
	if err != nil {
		return "", nil, fmt.Errorf("making a temporary directory: %w", err)
	}
	cleanup = func() { _ = os.RemoveAll(dir) }
	path = filepath.Join(dir, "content.tar.gz")
	if err := writeFileFrom(path, body); err != nil {
		cleanup()
		return "", nil, fmt.Errorf("downloading %s: %w", b.Status.ContentURL, err)
	}
	return path, cleanup, nil
}

// writeFileFrom writes r to a new file path.
func writeFileFrom(path string, r io.Reader) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, r); err != nil {
		_ = f.Close()
		return err
	}
	return f.Close()
}
