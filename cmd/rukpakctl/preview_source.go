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
	"github.com/rukpak/rukpak/internal/source/builtin"
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

// contentRef returns what to render bd from, as fetch reads it: --content;
// else, for a BundleDeployment read from the cluster (onCluster), its
// newest Bundle, downloaded from the manager's content server when a token
// for it was given (--token, --token-for) and fetched from its pinned
// sources here otherwise; else bd's only source
// if it is an image; else bd's sources fetched here. cleanup removes what
// was written.
func (o *previewOptions) contentRef(ctx context.Context, cl *cluster, bd *v1alpha2.BundleDeployment, onCluster bool) (ref string, cleanup func(), err error) {
	if o.content != "" {
		return o.content, func() {}, nil
	}
	if onCluster {
		b, err := newestBundle(ctx, cl.client, bd.Name)
		switch {
		case err != nil:
			return "", nil, err
		case b == nil:
			return unpackHere(ctx, cl, bd.Spec.Sources)
		case o.cf.hasToken():
			return o.download(ctx, cl, b)
		}
		// No token for the content server (the kubeconfig's credentials
		// are never sent to it): fetch the Bundle's pinned sources here.
		return unpackHere(ctx, cl, b.Spec.Sources)
	}
	if srcs := bd.Spec.Sources; len(srcs) == 1 && srcs[0].Type == v1alpha2.SourceTypeImage && srcs[0].Image != nil && srcs[0].Image.Ref != "" {
		return srcs[0].Image.Ref, func() {}, nil
	}
	if cl != nil {
		return unpackHere(ctx, cl, bd.Spec.Sources)
	}
	return "", nil, fmt.Errorf("BundleDeployment %s has no single image source to read without a cluster; pass its content with --content DIR|FILE.tgz|IMAGE", bd.Name)
}

// newestBundle returns the newest Bundle of BundleDeployment name, or nil
// when it has none yet.
func newestBundle(ctx context.Context, c client.Client, name string) (*v1alpha2.Bundle, error) {
	revs, err := listRevisions(ctx, c, name)
	if err != nil || len(revs) == 0 {
		return nil, err
	}
	return &revs[len(revs)-1], nil
}

// unpackHere resolves and unpacks sources on this machine, as the manager
// would, reading the Secrets and ConfigMaps they name from rukpak-system
// with the kubeconfig's credentials; the directory is removed by cleanup.
func unpackHere(ctx context.Context, cl *cluster, sources []v1alpha2.BundleSource) (dir string, cleanup func(), err error) {
	reg, _ := builtin.Registry(cl.client, cl.client, v1alpha2.SystemNamespace)
	pinned, err := reg.Resolve(ctx, sources, nil, false)
	if err != nil {
		return "", nil, fmt.Errorf("resolving the sources: %w", err)
	}
	dir, err = os.MkdirTemp("", "rukpakctl-preview-")
	if err != nil {
		return "", nil, fmt.Errorf("making a temporary directory: %w", err)
	}
	cleanup = func() { _ = os.RemoveAll(dir) }
	if err := reg.Unpack(ctx, pinned, dir); err != nil {
		cleanup()
		return "", nil, fmt.Errorf("unpacking the sources: %w", err)
	}
	return dir, cleanup, nil
}

// download writes the content of Bundle b, from the manager's content
// server, into a temporary .tar.gz. A status.contentURL elsewhere is
// refused before a token is requested.
func (o *previewOptions) download(ctx context.Context, cl *cluster, b *v1alpha2.Bundle) (path string, cleanup func(), err error) {
	base, err := o.cf.base(cl.cfg)
	if err != nil {
		return "", nil, err
	}
	if _, err := trustedContentURL(b, base); err != nil {
		return "", nil, err
	}
	token, err := o.cf.bearer(ctx, cl.cfg, nil)
	if err != nil {
		return "", nil, err
	}
	body, err := openContent(ctx, b, base, token)
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
		return "", nil, fmt.Errorf("downloading %s: %w", b.ContentURL(), err)
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
