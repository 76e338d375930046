package helm

import (
	"fmt"
	"path"
	"sort"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"

	chart "helm.sh/helm/v4/pkg/chart/v2"
	release "helm.sh/helm/v4/pkg/release/v1"
	releaseutil "helm.sh/helm/v4/pkg/release/v1/util"

	"github.com/rukpak/rukpak/api/v1alpha2"
	"github.com/rukpak/rukpak/internal/format"
	"github.com/rukpak/rukpak/pkg/failure"
)

// source says where an object comes from.
type source struct {
	// file is the template (chart/templates/x.yaml) or CRD file
	// (chart/crds/x.yaml).
	file string
	// doc is the 1-based index of the document in the file's output.
	doc int
}

// String returns "chart/templates/x.yaml (document 2)".
func (s source) String() string {
	return fmt.Sprintf("%s (document %d)", s.file, s.doc)
}

// object is an object with where it comes from and, for a hook, its weight.
type object struct {
	obj    *unstructured.Unstructured
	src    source
	weight int
}

// collect turns the chart's CRDs and rendered files into the objects to
// install: CRDs of crds/ directories first (root chart, then subcharts, in
// file order), then rendered objects in Helm's install order (by kind,
// then by template path and document), then the hooks rukpak installs,
// by weight and name.
func collect(ch *chart.Chart, files map[string]string, installNamespace string, limits Limits) ([]*unstructured.Unstructured, error) {
	c := &collector{limits: limits, installNamespace: installNamespace, seen: map[format.ObjectKey]source{}}
	crds := map[schema.GroupKind]map[string]*object{}
	for _, crd := range ch.CRDObjects() {
		for i, doc := range splitDocuments(string(crd.File.Data)) {
			src := source{file: crd.Filename, doc: i + 1}
			objs, _, err := decode(src, doc, v1alpha2.ReasonInvalidContent)
			if err != nil {
				return nil, err
			}
			for _, o := range objs {
				kept, err := firstCopy(crds, o)
				if err != nil {
					return nil, err
				}
				if kept {
					c.crds = append(c.crds, o)
				}
			}
		}
	}
	names := make([]string, 0, len(files))
	for name := range files {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		if strings.HasPrefix(path.Base(name), "_") || strings.TrimSpace(files[name]) == "" {
			continue
		}
		for i, doc := range splitDocuments(files[name]) {
			src := source{file: name, doc: i + 1}
			// What helm install sends: the release manifest writes a line
			// break after each document, and a hook is its own document,
			// read by a YAML reader that ends every line with one. A
			// block scalar that ends a document keeps those line breaks.
			objs, hook, err := decode(src, doc+"\n", v1alpha2.ReasonRenderFailed)
			if err == nil && hook != nil && hook.installed {
				objs, hook, err = decode(src, withLineBreak(doc), v1alpha2.ReasonRenderFailed)
			}
			if err != nil {
				return nil, err
			}
			switch {
			case hook == nil:
				c.manifests = append(c.manifests, objs...)
			case hook.installed:
				for _, o := range objs {
					o.weight = hook.weight
				}
				c.hooks = append(c.hooks, objs...)
			}
		}
	}
	return c.ordered()
}

// firstCopy records o, an object of a crds/ directory, in seen and
// reports whether it is the first with its kind and name. The same
// subchart under two aliases (or a parent and its subchart) ships the
// same CRD twice, and helm install installs it once; two copies that
// differ are refused, naming both files, since which one Helm ends up
// with depends on its version.
func firstCopy(seen map[schema.GroupKind]map[string]*object, o *object) (bool, error) {
	gk, name := o.obj.GroupVersionKind().GroupKind(), o.obj.GetName()
	first, ok := seen[gk][name]
	if !ok {
		if seen[gk] == nil {
			seen[gk] = map[string]*object{}
		}
		seen[gk][name] = o
		return true, nil
	}
	if !equality.Semantic.DeepEqual(first.obj.Object, o.obj.Object) {
		return false, failure.New(v1alpha2.ReasonInvalidContent, "%s %s is in %s and, different, in %s", gk.Kind, name, first.src, o.src)
	}
	return false, nil
}

// splitDocuments splits rendered output into YAML documents the way Helm
// does: at lines starting with "---", dropping blank documents (so that
// document numbers in messages count the others).
func splitDocuments(out string) []string {
	docs := releaseutil.SplitManifests(out)
	keys := make([]string, 0, len(docs))
	for k := range docs {
		keys = append(keys, k)
	}
	sort.Sort(releaseutil.BySplitManifestsOrder(keys))
	ordered := make([]string, len(keys))
	for i, k := range keys {
		ordered[i] = docs[k]
	}
	return ordered
}

// withLineBreak is doc ending with a line break.
func withLineBreak(doc string) string {
	if strings.HasSuffix(doc, "\n") {
		return doc
	}
	return doc + "\n"
}

// hookInfo is what rukpak makes of a document's helm.sh/hook annotation.
type hookInfo struct {
	// installed is true for hooks run on install or upgrade.
	installed bool
	// weight is the helm.sh/hook-weight, 0 when unset or not a number.
	weight int
}

// hookEvents are the events of helm.sh/hook, with whether rukpak installs
// a hook of that event.
var hookEvents = map[string]bool{
	string(release.HookPreInstall):   true,
	string(release.HookPostInstall):  true,
	string(release.HookPreUpgrade):   true,
	string(release.HookPostUpgrade):  true,
	string(release.HookPreDelete):    false,
	string(release.HookPostDelete):   false,
	string(release.HookPreRollback):  false,
	string(release.HookPostRollback): false,
	string(release.HookTest):         false,
	"test-success":                   false,
}

// hookOf returns the hook info of obj, or nil when it is not a hook. A
// hook naming an unknown event is not installed, as Helm skips it.
func hookOf(obj map[string]any) *hookInfo {
	annotations, _ := nested(obj, "metadata", "annotations").(map[string]any)
	events, ok := annotations[release.HookAnnotation].(string)
	if !ok {
		return nil
	}
	h := &hookInfo{}
	for e := range strings.SplitSeq(events, ",") {
		install, known := hookEvents[strings.ToLower(strings.TrimSpace(e))]
		if !known {
			return &hookInfo{}
		}
		h.installed = h.installed || install
	}
	if w, ok := annotations[release.HookWeightAnnotation].(string); ok {
		h.weight, _ = strconv.Atoi(w) // as Helm reads it: " 5" is 0
	}
	return h
}

// nested returns the value at keys of obj, or nil.
func nested(obj map[string]any, keys ...string) any {
	var v any = obj
	for _, k := range keys {
		m, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = m[k]
	}
	return v
}

// decode parses one document: nothing for an empty (or comment-only)
// document, the items of a List, or one object. Problems are failures
// with reason naming src.
func decode(src source, doc, reason string) (objs []*object, hook *hookInfo, err error) {
	v, err := parseYAML([]byte(doc))
	if err != nil {
		return nil, nil, failure.New(reason, "%s: invalid YAML: %v", src, err)
	}
	if v == nil {
		return nil, nil, nil
	}
	obj, ok := v.(map[string]any)
	if !ok {
		return nil, nil, failure.New(reason, "%s: not a Kubernetes object but %s", src, format.Describe(v))
	}
	if !isList(obj) {
		if err := check(src, obj, reason, ""); err != nil {
			return nil, nil, err
		}
		return []*object{{obj: &unstructured.Unstructured{Object: obj}, src: src}}, hookOf(obj), nil
	}
	items, ok := obj["items"].([]any)
	if !ok && obj["items"] != nil {
		return nil, nil, failure.New(reason, "%s: items of %v is %s, not a list", src, obj["kind"], format.Describe(obj["items"]))
	}
	for i, item := range items {
		m, ok := item.(map[string]any)
		if !ok {
			return nil, nil, failure.New(reason, "%s: items[%d] is not a Kubernetes object but %s", src, i, format.Describe(item))
		}
		if err := check(src, m, reason, fmt.Sprintf("items[%d]: ", i)); err != nil {
			return nil, nil, err
		}
		objs = append(objs, &object{obj: &unstructured.Unstructured{Object: m}, src: src})
	}
	return objs, hookOf(obj), nil
}

// parseYAML decodes one YAML document, keeping integers int64. A panic of
// the parser on hostile input is returned as an error.
func parseYAML(data []byte) (v any, err error) {
	defer func() {
		if r := recover(); r != nil {
			v, err = nil, fmt.Errorf("parser failed: %v", r)
		}
	}()
	if err := utilyaml.Unmarshal(data, &v); err != nil {
		return nil, err
	}
	return v, nil
}

// isList reports whether obj is a List whose items are the objects.
func isList(obj map[string]any) bool {
	kind, _ := obj["kind"].(string)
	_, hasItems := obj["items"]
	return kind == "List" || (strings.HasSuffix(kind, "List") && hasItems)
}

// check refuses an object without a valid apiVersion, a kind or a name.
func check(src source, obj map[string]any, reason, prefix string) error {
	apiVersion, _ := obj["apiVersion"].(string)
	if _, err := schema.ParseGroupVersion(apiVersion); err != nil || apiVersion == "" {
		return failure.New(reason, "%s: %snot a Kubernetes object: apiVersion is %s", src, prefix, quoted(obj["apiVersion"]))
	}
	if kind, _ := obj["kind"].(string); kind == "" {
		return failure.New(reason, "%s: %snot a Kubernetes object: kind is %s", src, prefix, quoted(obj["kind"]))
	}
	if m, ok := obj["metadata"]; ok && m != nil {
		if _, ok := m.(map[string]any); !ok {
			return failure.New(reason, "%s: %smetadata is %s, not an object", src, prefix, format.Describe(m))
		}
	}
	if name, _ := nested(obj, "metadata", "name").(string); name == "" {
		return failure.New(reason, "%s: %sobject has no metadata.name (it is %s)", src, prefix, quoted(nested(obj, "metadata", "name")))
	}
	if ns := nested(obj, "metadata", "namespace"); ns != nil {
		if _, ok := ns.(string); !ok {
			return failure.New(reason, "%s: %smetadata.namespace is %s, not a string", src, prefix, format.Describe(ns))
		}
	}
	return nil
}

// quoted shows a field's value for a message: "missing", or the value.
func quoted(v any) string {
	switch v := v.(type) {
	case nil:
		return "missing"
	case string:
		return strconv.Quote(v)
	}
	return format.Describe(v)
}
