package review

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"

	"github.com/rukpak/rukpak/api/v1alpha2"
)

// testMapper maps the kinds the tests use.
func testMapper() meta.RESTMapper {
	m := meta.NewDefaultRESTMapper(nil)
	add := func(group, version, kind, resource string, namespaced bool) {
		scope := meta.RESTScopeRoot
		if namespaced {
			scope = meta.RESTScopeNamespace
		}
		gvk := schema.GroupVersionKind{Group: group, Version: version, Kind: kind}
		m.AddSpecific(gvk, gvk.GroupVersion().WithResource(resource), gvk.GroupVersion().WithResource(strings.ToLower(kind)), scope)
	}
	add("", "v1", "ConfigMap", "configmaps", true)
	add("", "v1", "Secret", "secrets", true)
	add("", "v1", "Service", "services", true)
	add("", "v1", "ServiceAccount", "serviceaccounts", true)
	add("", "v1", "Namespace", "namespaces", false)
	add("apps", "v1", "Deployment", "deployments", true)
	add("rbac.authorization.k8s.io", "v1", "Role", "roles", true)
	add("rbac.authorization.k8s.io", "v1", "RoleBinding", "rolebindings", true)
	add("rbac.authorization.k8s.io", "v1", "ClusterRole", "clusterroles", false)
	add("rbac.authorization.k8s.io", "v1", "ClusterRoleBinding", "clusterrolebindings", false)
	add("admissionregistration.k8s.io", "v1", "MutatingWebhookConfiguration", "mutatingwebhookconfigurations", false)
	add("admissionregistration.k8s.io", "v1", "ValidatingWebhookConfiguration", "validatingwebhookconfigurations", false)
	add("apiextensions.k8s.io", "v1", "CustomResourceDefinition", "customresourcedefinitions", false)
	add("apiregistration.k8s.io", "v1", "APIService", "apiservices", false)
	add("operators.coreos.com", "v1alpha1", "ClusterServiceVersion", "clusterserviceversions", true)
	add("storage.k8s.io", "v1", "StorageClass", "storageclasses", false)
	add("storage.k8s.io", "v1", "CSIStorageCapacity", "csistoragecapacities", true)
	add("scheduling.k8s.io", "v1", "PriorityClass", "priorityclasses", false)
	add("flowcontrol.apiserver.k8s.io", "v1", "FlowSchema", "flowschemas", false)
	add("example.com", "v1", "Widget", "widgets", true)
	add("admissionregistration.k8s.io", "v1", "ValidatingAdmissionPolicy", "validatingadmissionpolicies", false)
	add("admissionregistration.k8s.io", "v1", "ValidatingAdmissionPolicyBinding", "validatingadmissionpolicybindings", false)
	add("admissionregistration.k8s.io", "v1beta1", "MutatingAdmissionPolicy", "mutatingadmissionpolicies", false)
	add("admissionregistration.k8s.io", "v1beta1", "MutatingAdmissionPolicyBinding", "mutatingadmissionpolicybindings", false)
	return m
}

// fakeLive is a cluster of objects.
type fakeLive struct {
	objs []*unstructured.Unstructured
}

var _ Live = (*fakeLive)(nil)

// Get implements Live.
func (f *fakeLive) Get(_ context.Context, gvk schema.GroupVersionKind, namespace, name string) (*unstructured.Unstructured, error) {
	for _, u := range f.objs {
		if u.GroupVersionKind().GroupKind() == gvk.GroupKind() && u.GetNamespace() == namespace && u.GetName() == name {
			return u.DeepCopy(), nil
		}
	}
	return nil, nil
}

// List implements Live.
func (f *fakeLive) List(_ context.Context, gvk schema.GroupVersionKind) ([]*unstructured.Unstructured, error) {
	var out []*unstructured.Unstructured
	for _, u := range f.objs {
		if u.GroupVersionKind().GroupKind() == gvk.GroupKind() {
			out = append(out, u.DeepCopy())
		}
	}
	return out, nil
}

// objs decodes YAML documents separated by "---".
func objs(t *testing.T, docs ...string) []*unstructured.Unstructured {
	t.Helper()
	var out []*unstructured.Unstructured
	for _, doc := range docs {
		for _, part := range strings.Split(doc, "\n---\n") {
			if strings.TrimSpace(part) == "" {
				continue
			}
			u := &unstructured.Unstructured{}
			if err := yaml.Unmarshal([]byte(part), &u.Object); err != nil {
				t.Fatalf("decoding %q: %v", part, err)
			}
			out = append(out, u)
		}
	}
	return out
}

// readDir decodes every YAML file of dir, in name order; none if dir
// does not exist.
func readDir(t *testing.T, dir string) []*unstructured.Unstructured {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	var out []*unstructured.Unstructured
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, objs(t, string(b))...)
	}
	return out
}

// compute reviews next against active with live objects (namespaced ones
// without a namespace are in namespace op) and fails the test on error.
func compute(t *testing.T, active, next, live []*unstructured.Unstructured) *v1alpha2.RevisionReview {
	t.Helper()
	mapper := testMapper()
	for _, u := range live {
		m, err := mapper.RESTMapping(u.GroupVersionKind().GroupKind(), u.GroupVersionKind().Version)
		if err != nil {
			t.Fatal(err)
		}
		if m.Scope.Name() == meta.RESTScopeNameNamespace && u.GetNamespace() == "" {
			u.SetNamespace("op")
		}
	}
	r, err := Compute(context.Background(), Input{Active: active, New: next, InstallNamespace: "op", Mapper: mapper, Live: &fakeLive{objs: live}})
	if err != nil {
		t.Fatalf("Compute() error = %v", err)
	}
	return r
}

// grants renders grants as "SUBJECT: RULE" lines, sorted.
func grants(gs []v1alpha2.ReviewGrant) []string {
	out := []string{}
	for _, g := range gs {
		s := subjectKey{kind: g.Subject.Kind, namespace: g.Subject.Namespace, name: g.Subject.Name}
		out = append(out, describeSubject(s)+": "+describeStored(g.Rule))
	}
	slices.Sort(out)
	return out
}

// describeStored describes a stored rule as describeRule does.
func describeStored(r v1alpha2.ReviewRule) string {
	s := describeRule(scopedRule{namespace: r.Namespace, PolicyRule: rbacRule(r)})
	if r.Truncated {
		s += " (truncated)"
	}
	return s
}

// rules renders stored rules as describeRule does.
func rules(rs []v1alpha2.ReviewRule) []string {
	out := []string{}
	for _, r := range rs {
		out = append(out, describeStored(r))
	}
	return out
}

// changes renders surface changes as "KIND NAME[/WEBHOOK] CHANGE: DETAILS".
func changes(cs []v1alpha2.ReviewSurfaceChange) []string {
	out := []string{}
	for _, c := range cs {
		name := c.Name
		if c.Webhook != "" {
			name += "/" + c.Webhook
		}
		out = append(out, fmt.Sprintf("%s %s %s: %s", c.Kind, name, c.Change, strings.Join(c.Details, "; ")))
	}
	return out
}

// diffLines fails the test when got and want differ, listing both.
func diffLines(t *testing.T, what string, got, want []string) {
	t.Helper()
	if want == nil {
		want = []string{}
	}
	if !slices.Equal(got, want) {
		t.Errorf("%s:\n got  %q\n want %q", what, got, want)
	}
}

// rbacRule returns the PolicyRule of a stored rule.
func rbacRule(r v1alpha2.ReviewRule) rbacv1.PolicyRule {
	return rbacv1.PolicyRule{Verbs: r.Verbs, APIGroups: r.APIGroups, Resources: r.Resources, ResourceNames: r.ResourceNames, NonResourceURLs: r.NonResourceURLs}
}

// clusterRole returns a ClusterRole with labels ("k=v,...") and rules
// (YAML flow sequences).
func clusterRole(name, labels string, rules ...string) string {
	return "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata:\n  name: " + name + labelsYAML(labels) + "\nrules: [" + strings.Join(rules, ", ") + "]\n"
}

// aggregating returns a ClusterRole aggregating those labelled label
// ("k=v").
func aggregating(name, label string) string {
	k, v, _ := strings.Cut(label, "=")
	return fmt.Sprintf("apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata:\n  name: %s\naggregationRule:\n  clusterRoleSelectors: [{matchLabels: {%q: %q}}]\nrules: []\n", name, k, v)
}

// role returns a Role in namespace with rules.
func role(namespace, name string, rules ...string) string {
	return "apiVersion: rbac.authorization.k8s.io/v1\nkind: Role\nmetadata:\n  name: " + name + "\n  namespace: " + namespace + "\nrules: [" + strings.Join(rules, ", ") + "]\n"
}

// clusterBinding binds ClusterRole roleName to subjects (YAML flow maps).
func clusterBinding(name, roleName string, subjects ...string) string {
	return fmt.Sprintf("apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRoleBinding\nmetadata:\n  name: %s\nroleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: %s}\nsubjects: [%s]\n", name, roleName, strings.Join(subjects, ", "))
}

// binding binds roleKind roleName in namespace to subjects.
func binding(namespace, name, roleKind, roleName string, subjects ...string) string {
	return fmt.Sprintf("apiVersion: rbac.authorization.k8s.io/v1\nkind: RoleBinding\nmetadata:\n  name: %s\n  namespace: %s\nroleRef: {apiGroup: rbac.authorization.k8s.io, kind: %s, name: %s}\nsubjects: [%s]\n", name, namespace, roleKind, roleName, strings.Join(subjects, ", "))
}

// labelsYAML returns "k=v,..." as a metadata.labels block, or "".
func labelsYAML(labels string) string {
	if labels == "" {
		return ""
	}
	s := "\n  labels:"
	for _, kv := range strings.Split(labels, ",") {
		k, v, _ := strings.Cut(kv, "=")
		s += fmt.Sprintf("\n    %q: %q", k, v)
	}
	return s
}

// Subjects of the tests.
const (
	saOp    = "{kind: ServiceAccount, name: op, namespace: op}"
	saOther = "{kind: ServiceAccount, name: other, namespace: op}"
	alice   = "{kind: User, name: alice, apiGroup: rbac.authorization.k8s.io}"
)
