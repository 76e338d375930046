package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/rukpak/rukpak/api/v1alpha2"
	"github.com/rukpak/rukpak/internal/archive"
	"github.com/rukpak/rukpak/internal/builtins"
	"github.com/rukpak/rukpak/internal/controller/provisionerclass"
	"github.com/rukpak/rukpak/internal/format/helm"
	"github.com/rukpak/rukpak/internal/source/image"
	"github.com/rukpak/rukpak/internal/values"
	"github.com/rukpak/rukpak/pkg/format"
	"github.com/rukpak/rukpak/pkg/provisioner"
)

func init() { register(newRenderCmd) }

// renderOptions are the flags of `rukpakctl render`.
type renderOptions struct {
	class           string
	name            string
	namespace       string
	valuesFiles     []string
	watchNamespaces []string
	kubeVersion     string
	apiVersions     []string
}

// classAliases are the short names --class accepts for the built-in classes.
var classAliases = map[string]string{
	"plain":    v1alpha2.ClassPlain,
	"registry": v1alpha2.ClassRegistry,
	"helm":     v1alpha2.ClassHelm,
}

func newRenderCmd() *cobra.Command {
	o := &renderOptions{}
	cmd := &cobra.Command{
		Use:   "render DIR|FILE.tgz|IMAGE",
		Short: "Print the objects a bundle would install, without a cluster",
		Long: `Render a bundle with the format of its class and print its objects as a
YAML stream, in the order rukpak applies them. The bundle is a directory, a
.tar.gz/.tgz archive, or an OCI image reference (a bundle image or a Helm
chart artifact, pulled anonymously). Without --class the class is guessed: a
Chart.yaml makes it helm, a metadata/annotations.yaml registry, anything else
plain.

There is no cluster: a Helm chart renders as a first install (revision 1),
with Helm's default capabilities unless --kube-version or --api-versions say
otherwise, and lookup finds nothing, as in helm template (on a cluster, rukpak
answers lookup as the install identity when it renders a revision). A chart
that calls lookup is told so on stderr.`,
		Example: `  rukpakctl render ./my-bundle
  rukpakctl render ./chart --class helm --values prod.yaml --namespace shop
  rukpakctl render quay.io/example/op-bundle:v1.2.0 --class registry --watch-namespaces team-a`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return o.run(cmd.Context(), cmd.OutOrStdout(), cmd.ErrOrStderr(), args[0])
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.class, "class", "", "class: plain, registry, helm or a class name (default: guessed from the content)")
	f.StringVar(&o.name, "name", "release", "name of the install (the BundleDeployment; Helm's release name)")
	f.StringVar(&o.namespace, "namespace", "default", "installNamespace")
	f.StringArrayVarP(&o.valuesFiles, "values", "f", nil, "Helm values file, merged in order (repeatable)")
	f.StringSliceVar(&o.watchNamespaces, "watch-namespaces", nil, "registry+v1 watch namespaces (install mode)")
	f.StringVar(&o.kubeVersion, "kube-version", "", "Kubernetes version the chart is rendered for (Helm's default when empty)")
	f.StringSliceVar(&o.apiVersions, "api-versions", nil, "extra API versions the chart sees as served (group/version or group/version/Kind)")
	return cmd
}

func (o *renderOptions) run(ctx context.Context, out, stderr io.Writer, ref string) error {
	dir, cleanup, err := fetch(ctx, ref)
	if err != nil {
		return err
	}
	defer cleanup()
	fsys := os.DirFS(dir)
	class := o.class
	if class == "" {
		class = guessClass(fsys)
	}
	if alias, ok := classAliases[class]; ok {
		class = alias
	}
	prov, err := builtinForClass(class)
	if err != nil {
		return err
	}
	cfg, err := o.formatConfig(prov)
	if err != nil {
		return err
	}
	objs, err := renderOffline(ctx, stderr, prov.Format, fsys, cfg)
	if err != nil {
		return fmt.Errorf("rendering %s as %s: %w", ref, class, err)
	}
	return printObjects(out, objs)
}

// maxNotedLookups is how many lookups the note of renderOffline names.
const maxNotedLookups = 3

// renderOffline renders without asking the cluster (render has none;
// preview and diff when the cluster cannot answer lookups,
// renderAnswered): lookup finds nothing, as in helm template. To tell a chart that calls lookup, it first renders
// with an empty set of answers (format.Config.Lookups non-nil), which such
// a chart answers with the lookups it needs; it then notes them on stderr
// and renders offline (nil Lookups). A chart that calls no lookup renders
// once.
func renderOffline(ctx context.Context, stderr io.Writer, f format.Format, fsys fs.FS, cfg format.Config) ([]*unstructured.Unstructured, error) {
	cfg.Lookups = map[string]json.RawMessage{}
	objs, err := f.Objects(ctx, fsys, cfg)
	var needed *format.LookupsNeeded
	if !errors.As(err, &needed) {
		return objs, err
	}
	names := make([]string, 0, maxNotedLookups)
	for _, q := range needed.Queries[:min(len(needed.Queries), maxNotedLookups)] {
		names = append(names, q.String())
	}
	if more := len(needed.Queries) - len(names); more > 0 {
		names = append(names, fmt.Sprintf("%d more", more))
	}
	fmt.Fprintf(stderr, "note: rendered offline, lookup finds nothing, as in helm template: the chart calls %s\n",
		strings.Join(names, ", "))
	cfg.Lookups = nil
	return f.Objects(ctx, fsys, cfg)
}

// formatConfig builds what the format renders with from the flags.
func (o *renderOptions) formatConfig(prov provisioner.Provisioner) (format.Config, error) {
	bc := &v1alpha2.BundleConfig{WatchNamespaces: o.watchNamespaces}
	var vals map[string]any
	for _, path := range o.valuesFiles {
		doc, err := values.ReadFile(path)
		if err != nil {
			return format.Config{}, err
		}
		vals = values.Merge(vals, doc)
	}
	if len(o.valuesFiles) > 0 && !prov.Takes.Values {
		return format.Config{}, fmt.Errorf("--values is for Helm charts; controller %s does not read values", prov.ControllerName)
	}
	if err := prov.CheckConfig(bc); err != nil {
		return format.Config{}, err
	}
	cfg, err := builtins.FormatConfig(prov, o.name, o.namespace, bc, values.Resolved{Values: vals}, nil)
	if err != nil {
		return format.Config{}, err
	}
	if o.kubeVersion != "" || len(o.apiVersions) > 0 {
		// --api-versions adds to what Helm assumes without a cluster.
		apis := o.apiVersions
		if len(apis) > 0 {
			apis = append(helm.DefaultAPIVersions(), apis...)
		}
		cfg.Capabilities = &format.Capabilities{KubeVersion: o.kubeVersion, APIVersions: apis}
	}
	return cfg, nil
}

// builtinForClass returns the built-in provisioner serving class.
func builtinForClass(class string) (provisioner.Provisioner, error) {
	set := builtins.Builtin()
	var known []string
	for _, pc := range provisionerclass.Builtin {
		if pc.Name == class {
			return set[pc.Spec.ControllerName], nil
		}
		known = append(known, pc.Name)
	}
	return provisioner.Provisioner{}, fmt.Errorf("class %q is not built in; use plain, registry, helm or one of %s", class, strings.Join(known, ", "))
}

// guessClass picks the class a bundle most likely is.
func guessClass(fsys fs.FS) string {
	if exists(fsys, "Chart.yaml") {
		return v1alpha2.ClassHelm
	}
	if exists(fsys, "metadata/annotations.yaml") {
		return v1alpha2.ClassRegistry
	}
	entries, _ := fs.ReadDir(fsys, ".")
	if len(entries) == 1 {
		e := entries[0]
		if (e.IsDir() && exists(fsys, e.Name()+"/Chart.yaml")) || strings.HasSuffix(e.Name(), ".tgz") {
			return v1alpha2.ClassHelm
		}
	}
	return v1alpha2.ClassPlain
}

func exists(fsys fs.FS, name string) bool {
	_, err := fs.Stat(fsys, name)
	return err == nil
}

// fetch returns a directory holding the bundle ref names: ref itself when
// it is a directory, an archive unpacked into a temporary directory, or an
// image pulled into one. cleanup removes what fetch made.
func fetch(ctx context.Context, ref string) (dir string, cleanup func(), err error) {
	info, statErr := os.Stat(ref)
	if statErr == nil && info.IsDir() {
		return ref, func() {}, nil
	}
	tmp, err := os.MkdirTemp("", "rukpakctl-render-")
	if err != nil {
		return "", nil, fmt.Errorf("making a temporary directory: %w", err)
	}
	cleanup = func() { _ = os.RemoveAll(tmp) }
	if statErr == nil {
		err = unpackArchive(ctx, ref, tmp)
	} else if errors.Is(statErr, fs.ErrNotExist) && !strings.ContainsAny(filepath.Base(ref), `\`) {
		err = pullImage(ctx, strings.TrimPrefix(ref, "oci://"), tmp)
	} else {
		err = fmt.Errorf("reading %s: %w", ref, statErr)
	}
	if err != nil {
		cleanup()
		return "", nil, err
	}
	return tmp, cleanup, nil
}

// unpackArchive extracts the .tar.gz (or .tar) file path into dir with the
// same limits as the sources.
func unpackArchive(ctx context.Context, path, dir string) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("opening %s: %w", path, err)
	}
	defer f.Close()
	if strings.HasSuffix(path, ".tar") {
		err = archive.Untar(ctx, f, dir, archive.Options{})
	} else {
		err = archive.UntarGzip(ctx, f, dir, archive.Options{})
	}
	if err != nil {
		return fmt.Errorf("unpacking %s: %w", path, err)
	}
	return nil
}

// pullImage unpacks image ref into dir, anonymously.
func pullImage(ctx context.Context, ref, dir string) error {
	src := image.New(nil)
	spec := v1alpha2.BundleSource{Type: v1alpha2.SourceTypeImage, Image: &v1alpha2.ImageSource{Ref: ref}}
	pinned, err := src.Resolve(ctx, spec)
	if err != nil {
		return fmt.Errorf("resolving %s (not a file or directory, so read as an image): %w", ref, err)
	}
	if err := src.Unpack(ctx, pinned, dir); err != nil {
		return fmt.Errorf("pulling %s: %w", ref, err)
	}
	return nil
}

// printObjects writes objs as a YAML stream.
func printObjects(out io.Writer, objs []*unstructured.Unstructured) error {
	for _, obj := range objs {
		data, err := yaml.Marshal(obj.Object)
		if err != nil {
			return fmt.Errorf("printing %s %s: %w", obj.GetKind(), obj.GetName(), err)
		}
		if _, err := fmt.Fprintf(out, "---\n%s", data); err != nil {
			return fmt.Errorf("writing output: %w", err)
		}
	}
	return nil
}
