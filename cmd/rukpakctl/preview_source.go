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
		return downloadNewest(ctx, cl, bd.Name)
	}
	var refs []string
	for _, src := range bd.Spec.Sources {
		if src.Type == v1alpha2.SourceTypeImage && src.Image != nil && src.Image.Ref != "" {
			refs = append(refs, src.Image.Ref)
		}
	}
	if len(refs) != 1 || len(bd.Spec.Sources) != 1 {
		return "", nil, fmt.Errorf("BundleDeployment %s has no single image source to read; pass its content with --content DIR|FILE.tgz|IMAGE", bd.Name)
	}
	return refs[0], func() {}, nil
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
