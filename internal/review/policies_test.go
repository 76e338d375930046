package review

import (
	"fmt"
	"strings"
	"testing"
)

// mapYAML returns the MutatingAdmissionPolicy label-cms with rules and
// the YAML lines extra under its spec.
func mapYAML(rules string, extra ...string) string {
	s := fmt.Sprintf(`apiVersion: admissionregistration.k8s.io/v1beta1
kind: MutatingAdmissionPolicy
metadata: {name: label-cms}
spec:
  matchConstraints:
    resourceRules: [%s]
`, rules)
	for _, e := range extra {
		s += "  " + e + "\n"
	}
	return s
}

// bindingYAML returns a policy binding of kind named label-cms with the
// YAML lines of its spec.
func bindingYAML(kind string, spec ...string) string {
	api := "v1"
	if strings.HasPrefix(kind, "Mutating") {
		api = "v1beta1"
	}
	s := fmt.Sprintf("apiVersion: admissionregistration.k8s.io/%s\nkind: %s\nmetadata: {name: label-cms}\nspec:\n", api, kind)
	for _, l := range spec {
		s += "  " + l + "\n"
	}
	return s
}

// vapYAML returns the ValidatingAdmissionPolicy label-cms with rules and
// the YAML lines extra under its spec.
func vapYAML(rules string, extra ...string) string {
	return strings.Replace(strings.Replace(mapYAML(rules, extra...), "v1beta1", "v1", 1), "MutatingAdmissionPolicy", "ValidatingAdmissionPolicy", 1)
}

// Parts of the policies of the tests.
const (
	createUpdCMs  = `{operations: [CREATE, UPDATE], apiGroups: [""], apiVersions: [v1], resources: [configmaps]}`
	createCMs     = `{operations: [CREATE], apiGroups: [""], apiVersions: [v1], resources: [configmaps]}`
	updateCMNamed = `{operations: [UPDATE], apiGroups: [""], apiVersions: [v1], resources: [configmaps], resourceNames: [settings]}`
	updateCMs     = `{operations: [UPDATE], apiGroups: [""], apiVersions: [v1], resources: [configmaps]}`
	mutation      = `mutations: [{patchType: ApplyConfiguration, applyConfiguration: {expression: 'Object{metadata: Object.metadata{labels: {"team": "a"}}}'}}]`
	mutationOther = `mutations: [{patchType: ApplyConfiguration, applyConfiguration: {expression: 'Object{data: {"owned": "by-team-a"}}'}}]`
	ownNamespace  = "matchResources: {namespaceSelector: {matchLabels: {kubernetes.io/metadata.name: op}}}"
	policyName    = "policyName: label-cms"
)

// TestAdmissionPolicies checks that admission policies and their bindings
// are reviewed like webhooks: added, widened, changed, removed, and
// whether power grows.
func TestAdmissionPolicies(t *testing.T) {
	const mapb, vapb = "MutatingAdmissionPolicyBinding", "ValidatingAdmissionPolicyBinding"
	tests := []struct {
		name         string
		active, next []string
		policies     []string
		grows        bool
		summary      string
	}{
		{
			name:   "a binding widened from its own namespace to every namespace",
			active: []string{mapYAML(createUpdCMs, mutation), bindingYAML(mapb, policyName, ownNamespace)},
			next:   []string{mapYAML(createUpdCMs, mutation), bindingYAML(mapb, policyName)},
			policies: []string{"MutatingAdmissionPolicyBinding label-cms Widened: now matches * of */* (*/*); " +
				"namespaceSelector removed"},
			grows:   true,
			summary: "widens MutatingAdmissionPolicyBinding label-cms: now matches * of */* (*/*)",
		},
		{
			name:     "a binding's namespaceSelector changed",
			active:   []string{bindingYAML(mapb, policyName, ownNamespace)},
			next:     []string{bindingYAML(mapb, policyName, "matchResources: {namespaceSelector: {matchLabels: {kubernetes.io/metadata.name: other}}}")},
			policies: []string{"MutatingAdmissionPolicyBinding label-cms Widened: namespaceSelector changed"},
			grows:    true,
		},
		{
			name: "a new policy and binding",
			next: []string{mapYAML(createUpdCMs, mutation), bindingYAML(mapb, policyName)},
			policies: []string{
				"MutatingAdmissionPolicy label-cms Added: matches CREATE,UPDATE of configmaps (v1); in every namespace (no namespaceSelector); failurePolicy Fail; 1 mutations",
				"MutatingAdmissionPolicyBinding label-cms Added: binds policy label-cms; matches everything its policy matches (no matchResources)",
			},
			grows: true,
		},
		{
			name:     "a mutation rewritten",
			active:   []string{mapYAML(createUpdCMs, mutation)},
			next:     []string{mapYAML(createUpdCMs, mutationOther)},
			policies: []string{"MutatingAdmissionPolicy label-cms Widened: spec.mutations[0].applyConfiguration.expression changes"},
			grows:    true,
		},
		{
			name:     "a policy matching more operations",
			active:   []string{mapYAML(createCMs, mutation)},
			next:     []string{mapYAML(createUpdCMs, mutation)},
			policies: []string{"MutatingAdmissionPolicy label-cms Widened: now matches UPDATE of configmaps (v1)"},
			grows:    true,
		},
		{
			name:     "resourceNames dropped match every name",
			active:   []string{vapYAML(updateCMNamed)},
			next:     []string{vapYAML(updateCMs)},
			policies: []string{"ValidatingAdmissionPolicy label-cms Widened: now matches UPDATE of configmaps (v1)"},
			grows:    true,
		},
		{
			name:     "a policy matching less",
			active:   []string{vapYAML(createUpdCMs)},
			next:     []string{vapYAML(createCMs)},
			policies: []string{"ValidatingAdmissionPolicy label-cms Changed: no longer matches UPDATE of configmaps (v1)"},
		},
		{
			name:     "excludeResourceRules removed",
			active:   []string{vapYAML(createUpdCMs, "  excludeResourceRules: ["+updateCMNamed+"]")},
			next:     []string{vapYAML(createUpdCMs)},
			policies: []string{"ValidatingAdmissionPolicy label-cms Widened: no longer excludes UPDATE of configmaps (v1), named settings"},
			grows:    true,
		},
		{
			name:     "failurePolicy Ignore to Fail",
			active:   []string{vapYAML(createCMs, "failurePolicy: Ignore")},
			next:     []string{vapYAML(createCMs, "failurePolicy: Fail")},
			policies: []string{"ValidatingAdmissionPolicy label-cms Widened: failurePolicy Ignore → Fail"},
			grows:    true,
		},
		{
			name:     "validationActions Warn to Deny",
			active:   []string{bindingYAML(vapb, policyName, "validationActions: [Warn]", ownNamespace)},
			next:     []string{bindingYAML(vapb, policyName, "validationActions: [Deny]", ownNamespace)},
			policies: []string{"ValidatingAdmissionPolicyBinding label-cms Widened: spec.validationActions[0] changes"},
			grows:    true,
		},
		{
			name:     "a binding bound to another policy",
			active:   []string{bindingYAML(vapb, policyName, ownNamespace)},
			next:     []string{bindingYAML(vapb, "policyName: other", ownNamespace)},
			policies: []string{"ValidatingAdmissionPolicyBinding label-cms Widened: binds policy other instead of label-cms"},
			grows:    true,
		},
		{
			name:   "unchanged, with the defaults written out or not",
			active: []string{mapYAML(createCMs, mutation), bindingYAML(mapb, policyName, ownNamespace)},
			next: []string{mapYAML(createCMs, mutation, "failurePolicy: Fail", "reinvocationPolicy: Never"),
				bindingYAML(mapb, policyName, "matchResources: {namespaceSelector: {matchLabels: {kubernetes.io/metadata.name: op}}, matchPolicy: Equivalent}")},
		},
		{
			name:     "removed",
			active:   []string{mapYAML(createCMs, mutation)},
			policies: []string{"MutatingAdmissionPolicy label-cms Removed: "},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := compute(t, objs(t, tt.active...), objs(t, tt.next...), nil)
			diffLines(t, "admission policies", changes(r.APISurface.AdmissionPolicies), tt.policies)
			if int(r.APISurface.AdmissionPolicyCount) != len(tt.policies) {
				t.Errorf("AdmissionPolicyCount = %d, want %d", r.APISurface.AdmissionPolicyCount, len(tt.policies))
			}
			if r.GrowsPower != tt.grows {
				t.Errorf("GrowsPower = %v, want %v (summary %q)", r.GrowsPower, tt.grows, r.Summary)
			}
			if !strings.Contains(r.Summary, tt.summary) {
				t.Errorf("summary %q does not hold %q", r.Summary, tt.summary)
			}
		})
	}
}

// TestFailClosed checks that what the review does not model counts as
// growing power, with its diff: cluster-scoped objects changed, objects
// of the power groups, custom resources; and that ordinary namespaced
// objects and removals do not.
func TestFailClosed(t *testing.T) {
	storageClass := func(typ string) string {
		return "apiVersion: storage.k8s.io/v1\nkind: StorageClass\nmetadata: {name: fast}\nprovisioner: example.com/disk\nparameters: {type: " + typ + "}\n"
	}
	namespace := func(level string) string {
		return "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: op-extra\n  labels: {pod-security.kubernetes.io/enforce: " + level + "}\n"
	}
	widget := func(size string) string {
		return "apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w, namespace: op}\nspec: {size: " + size + "}\n"
	}
	capacity := func(n string) string {
		return "apiVersion: storage.k8s.io/v1\nkind: CSIStorageCapacity\nmetadata: {name: cap, namespace: op}\nstorageClassName: fast\ncapacity: " + n + "\n"
	}
	priority := func(v string) string {
		return "apiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\nmetadata: {name: urgent}\nvalue: " + v + "\n"
	}
	configMap := func(v string) string {
		return "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: settings}\ndata: {v: " + v + "}\n"
	}
	tests := []struct {
		name         string
		active, next []string
		unmodeled    []string
		grows        bool
		summary      string
	}{
		{
			name:      "a cluster-scoped object changed",
			active:    []string{storageClass("ssd")},
			next:      []string{storageClass("nvme")},
			unmodeled: []string{"StorageClass fast Revision: parameters.type"},
			grows:     true,
			summary:   "changes cluster-scoped StorageClass.storage.k8s.io fast (not modeled by the review): parameters.type",
		},
		{
			name:  "a cluster-scoped object added counts as one (not twice)",
			next:  []string{storageClass("ssd")},
			grows: true,
		},
		{
			name:      "a Namespace's labels changed",
			active:    []string{namespace("restricted")},
			next:      []string{namespace("privileged")},
			unmodeled: []string{"Namespace op-extra Revision: metadata.labels['pod-security.kubernetes.io/enforce']"},
			grows:     true,
		},
		{
			name:      "a PriorityClass changed",
			active:    []string{priority("1000")},
			next:      []string{priority("1000000000")},
			unmodeled: []string{"PriorityClass urgent Revision: value"},
			grows:     true,
		},
		{
			name:      "a namespaced object of a power group changed",
			active:    []string{capacity("1Gi")},
			next:      []string{capacity("1Ti")},
			unmodeled: []string{"CSIStorageCapacity op/cap Revision: capacity"},
			grows:     true,
		},
		{
			name:      "a custom resource added",
			next:      []string{widget("1")},
			unmodeled: []string{"Widget op/w None: apiVersion,kind,metadata,spec"},
			grows:     true,
			summary:   "adds Widget.example.com op/w (not modeled by the review)",
		},
		{
			name:      "a custom resource changed",
			active:    []string{widget("1")},
			next:      []string{widget("2")},
			unmodeled: []string{"Widget op/w Revision: spec.size"},
			grows:     true,
		},
		{
			name:   "an ordinary namespaced object changed",
			active: []string{configMap("a")},
			next:   []string{configMap("b")},
		},
		{
			name:   "removals",
			active: []string{storageClass("ssd"), widget("1"), priority("1")},
		},
		{
			name:   "nothing changed",
			active: []string{storageClass("ssd"), widget("1")},
			next:   []string{storageClass("ssd"), widget("1")},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := compute(t, objs(t, tt.active...), objs(t, tt.next...), nil)
			got := []string{}
			for _, c := range r.APISurface.Unmodeled {
				name := c.Object.Name
				if c.Object.Namespace != "" {
					name = c.Object.Namespace + "/" + name
				}
				got = append(got, fmt.Sprintf("%s %s %s: %s", c.Object.Kind, name, c.ComparedTo, strings.Join(c.Paths, ",")))
			}
			diffLines(t, "unmodeled", got, tt.unmodeled)
			if int(r.APISurface.UnmodeledCount) != len(tt.unmodeled) {
				t.Errorf("UnmodeledCount = %d, want %d", r.APISurface.UnmodeledCount, len(tt.unmodeled))
			}
			if r.GrowsPower != tt.grows {
				t.Errorf("GrowsPower = %v, want %v (summary %q)", r.GrowsPower, tt.grows, r.Summary)
			}
			if !strings.Contains(r.Summary, tt.summary) {
				t.Errorf("summary %q does not hold %q", r.Summary, tt.summary)
			}
		})
	}
}
