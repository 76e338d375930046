package main

// Preview and diff take the same input, a BundleDeployment by NAME (on the
// cluster) or in a FILE, and render it as rukpak would: this file reads
// it, fetches its content and renders it.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/rukpak/rukpak/api/v1alpha2"
	"github.com/rukpak/rukpak/internal/builtins"
	"github.com/rukpak/rukpak/internal/clusterinfo"
	"github.com/rukpak/rukpak/internal/source/builtin"
	"github.com/rukpak/rukpak/internal/values"
	"github.com/rukpak/rukpak/pkg/format"
	"github.com/rukpak/rukpak/pkg/provisioner"
)

// inputFlags are the flags by which preview and diff reach the cluster
// and the content of the BundleDeployment they are given.
type inputFlags struct {
	kubeconfig string
	context    string
	content    string
	cf         contentFlags
}

// add registers the flags on fs.
func (f *inputFlags) add(fs *pflag.FlagSet) {
	fs.StringVar(&f.kubeconfig, "kubeconfig", "", "kubeconfig file (default $KUBECONFIG or ~/.kube/config)")
	fs.StringVar(&f.context, "context", "", "kubeconfig context (default the current one)")
	fs.StringVar(&f.content, "content", "", "the bundle: DIR, FILE.tgz or IMAGE (default: the newest Bundle of NAME, or FILE's only image source)")
	f.cf.add(fs)
}

// cluster is the API server preview and diff talk to.
type cluster struct {
	client    client.Client
	clientset kubernetes.Interface
	cfg       *rest.Config
}

// input is a BundleDeployment to render, and where it was read from.
type input struct {
	bd *v1alpha2.BundleDeployment
	// onCluster says bd was read from the cluster by name (and has its
	// Bundles there), not from a file.
	onCluster bool
}

// isFile reports whether arg names a file (rather than a BundleDeployment).
func isFile(arg string) bool {
	info, err := os.Stat(arg)
	return err == nil && !info.IsDir()
}

// read reads the BundleDeployment arg names: the file arg, else the
// BundleDeployment of that name on cl.
func read(ctx context.Context, cl *cluster, arg string) (input, error) {
	if isFile(arg) {
		bd, err := readBundleDeployment(arg)
		return input{bd: bd}, err
	}
	if cl == nil {
		return input{}, fmt.Errorf("%s is not a file, and there is no cluster to read BundleDeployment %s from", arg, arg)
	}
	bd, err := getBundleDeployment(ctx, cl.client, arg)
	return input{bd: bd, onCluster: true}, err
}

// connect reaches the cluster of the kubeconfig. Without need, a cluster
// that cannot be reached is noted on stderr and nil is returned.
func (f *inputFlags) connect(stderr io.Writer, need bool) (*cluster, error) {
	cl, err := f.dial()
	if err == nil {
		return cl, nil
	}
	if need {
		return nil, err
	}
	fmt.Fprintf(stderr, "note: working without a cluster: %v\n", err)
	return nil, nil
}

// dial builds clients from the kubeconfig and checks that the API server
// answers.
func (f *inputFlags) dial() (*cluster, error) {
	cfg, err := loadConfig(f.kubeconfig, f.context)
	if err != nil {
		return nil, err
	}
	// One request per object (or per resource and verb): do not throttle
	// them.
	cfg.QPS, cfg.Burst = 50, 100
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("creating clientset for %s: %w", cfg.Host, err)
	}
	if _, err := cs.Discovery().ServerVersion(); err != nil {
		return nil, fmt.Errorf("reaching %s: %w", cfg.Host, err)
	}
	c, err := client.New(cfg, client.Options{Scheme: scheme()})
	if err != nil {
		return nil, fmt.Errorf("creating client for %s: %w", cfg.Host, err)
	}
	return &cluster{client: c, clientset: cs, cfg: cfg}, nil
}

// render renders in.bd's content with its class and spec.config, as the
// revision rel (the zero value: a first install). Helm's lookups are
// answered from the cluster as the user rukpakctl runs as; without a
// cluster to answer them they find nothing, and a note on stderr says so
// when the chart calls lookup (see renderAnswered).
func (f *inputFlags) render(ctx context.Context, stderr io.Writer, cl *cluster, in input, rel format.Release) ([]*unstructured.Unstructured, error) {
	bd := in.bd
	prov, err := provisionerFor(ctx, cl, bd.Spec.ProvisionerClassName)
	if err != nil {
		return nil, err
	}
	if err := prov.CheckConfig(bd.Spec.Config); err != nil {
		return nil, err
	}
	var reader client.Reader
	var info *clusterinfo.Reader
	if cl != nil {
		reader = cl.client
		info = clusterinfo.New(cl.clientset.Discovery(), 0)
	} else if bd.Spec.Config != nil && len(bd.Spec.Config.ValuesFrom) > 0 {
		return nil, errors.New("spec.config.valuesFrom is read from the cluster, which cannot be reached")
	}
	vals, err := values.Resolve(ctx, reader, v1alpha2.SystemNamespace, bd.Spec.Config)
	if err != nil {
		return nil, err
	}
	cfg, err := builtins.FormatConfig(prov, bd.Name, bd.Spec.InstallNamespace, bd.Spec.Config, vals, info)
	if err != nil {
		return nil, err
	}
	cfg.Release = rel

	ref, cleanupRef, err := f.contentRef(ctx, cl, in)
	if err != nil {
		return nil, err
	}
	defer cleanupRef()
	dir, cleanup, err := fetch(ctx, ref)
	if err != nil {
		return nil, err
	}
	defer cleanup()
	objs, err := renderAnswered(ctx, stderr, cl, prov.Format, os.DirFS(dir), cfg)
	if err != nil {
		return nil, fmt.Errorf("rendering %s as %s: %w", ref, bd.Spec.ProvisionerClassName, err)
	}
	return objs, nil
}

// provisionerFor returns the built-in provisioner of class, looking the
// class up on the cluster when it is not one of the built-in names.
func provisionerFor(ctx context.Context, cl *cluster, class string) (provisioner.Provisioner, error) {
	prov, err := builtinForClass(class)
	if err == nil || cl == nil {
		return prov, err
	}
	prov, ok, lookupErr := builtins.Builtin().ForClass(ctx, cl.client, class)
	if lookupErr != nil {
		return prov, lookupErr
	}
	if !ok {
		return prov, fmt.Errorf("ProvisionerClass %q does not exist or is not served by a built-in provisioner", class)
	}
	return prov, nil
}

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
		return nil, fmt.Errorf("%s holds %d BundleDeployments; give one at a time", path, len(found))
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

// contentRef returns what to render in.bd from, as fetch reads it: --content;
// else, for a BundleDeployment read from the cluster (in.onCluster), its
// newest Bundle, downloaded from the manager's content server when a token
// for it was given (--token, --token-for) and fetched from its pinned
// sources here otherwise; else bd's only source
// if it is an image; else bd's sources fetched here. cleanup removes what
// was written.
func (f *inputFlags) contentRef(ctx context.Context, cl *cluster, in input) (ref string, cleanup func(), err error) {
	bd := in.bd
	if f.content != "" {
		return f.content, func() {}, nil
	}
	if in.onCluster {
		b, err := newestBundle(ctx, cl.client, bd.Name)
		switch {
		case err != nil:
			return "", nil, err
		case b == nil:
			return unpackHere(ctx, cl, bd.Spec.Sources)
		case f.cf.hasToken():
			return f.download(ctx, cl, b)
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
	dir, err = os.MkdirTemp("", "rukpakctl-content-")
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
func (f *inputFlags) download(ctx context.Context, cl *cluster, b *v1alpha2.Bundle) (path string, cleanup func(), err error) {
	base, err := f.cf.base(cl.cfg)
	if err != nil {
		return "", nil, err
	}
	if _, err := trustedContentURL(b, base); err != nil {
		return "", nil, err
	}
	token, err := f.cf.bearer(ctx, cl.cfg, nil)
	if err != nil {
		return "", nil, err
	}
	body, err := openContent(ctx, b, base, token)
	if err != nil {
		return "", nil, err
	}
	defer body.Close()
	dir, err := os.MkdirTemp("", "rukpakctl-content-")
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
