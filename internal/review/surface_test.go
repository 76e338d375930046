package review

import (
	"fmt"
	"strings"
	"testing"

	"github.com/rukpak/rukpak/api/v1alpha2"
)

// webhookYAML returns a webhook configuration of kind with one webhook
// "w.example.com" whose fields are the YAML lines extra (indented under
// the webhook) and rules.
func webhookYAML(kind, rules string, extra ...string) string {
	s := fmt.Sprintf(`apiVersion: admissionregistration.k8s.io/v1
kind: %s
metadata: {name: op-hooks}
webhooks:
- name: w.example.com
  clientConfig: {service: {namespace: op, name: op-webhook, path: /mutate}}
  sideEffects: None
  admissionReviewVersions: [v1]
  rules: [%s]
`, kind, rules)
	for _, e := range extra {
		s += "  " + e + "\n"
	}
	return s
}

// Admission rules of the tests.
const (
	createPods     = `{operations: [CREATE], apiGroups: [""], apiVersions: [v1], resources: [pods]}`
	createPodsNS   = `{operations: [CREATE], apiGroups: [""], apiVersions: [v1], resources: [pods], scope: Namespaced}`
	createUpdPods  = `{operations: [CREATE, UPDATE], apiGroups: [""], apiVersions: [v1], resources: [pods]}`
	createAllCore  = `{operations: [CREATE], apiGroups: [""], apiVersions: [v1], resources: ["*"]}`
	createPodsExec = `{operations: [CREATE], apiGroups: [""], apiVersions: [v1], resources: [pods/exec]}`
	createPodsSubs = `{operations: [CREATE], apiGroups: [""], apiVersions: [v1], resources: ["pods/*"]}`
	everything     = `{operations: ["*"], apiGroups: ["*"], apiVersions: ["*"], resources: ["*/*"]}`
)

// crdYAML returns the CRD widgets.example.com with scope and versions
// ("name:served", the first one stored).
func crdYAML(scope string, versions ...string) string {
	s := fmt.Sprintf(`apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: widgets.example.com}
spec:
  group: example.com
  names: {kind: Widget, plural: widgets}
  scope: %s
  versions:
`, scope)
	for i, v := range versions {
		name, served, _ := strings.Cut(v, ":")
		s += fmt.Sprintf("  - {name: %s, served: %s, storage: %t, schema: {openAPIV3Schema: {type: object}}}\n", name, served, i == 0)
	}
	return s
}

// apiServiceYAML returns the APIService v1.metrics.example.com served by
// service op/name.
func apiServiceYAML(service string, extra ...string) string {
	s := fmt.Sprintf(`apiVersion: apiregistration.k8s.io/v1
kind: APIService
metadata: {name: v1.metrics.example.com}
spec:
  group: metrics.example.com
  version: v1
  groupPriorityMinimum: 100
  versionPriority: 10
  service: {namespace: op, name: %s}
`, service)
	for _, e := range extra {
		s += "  " + e + "\n"
	}
	return s
}

// TestAPISurface checks webhooks, CRDs and APIServices: what is added,
// widened, changed and removed, and whether power grows.
func TestAPISurface(t *testing.T) {
	const mwc, vwc = "MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"
	tests := []struct {
		name               string
		active, next, live []string
		webhooks           []string
		crds               []string
		apiServices        []string
		grows              bool
	}{
		{
			name: "a new webhook",
			next: []string{webhookYAML(mwc, createUpdPods)},
			webhooks: []string{"MutatingWebhookConfiguration op-hooks/w.example.com Added: matches CREATE,UPDATE of pods (v1); failurePolicy Fail; " +
				"in every namespace (no namespaceSelector); for every object (no objectSelector); calls service op/op-webhook:443/mutate"},
			grows: true,
		},
		{
			name:     "rules matching more operations",
			active:   []string{webhookYAML(mwc, createPods)},
			next:     []string{webhookYAML(mwc, createUpdPods)},
			webhooks: []string{"MutatingWebhookConfiguration op-hooks/w.example.com Widened: now matches UPDATE of pods (v1)"},
			grows:    true,
		},
		{
			name:     "rules matching more resources",
			active:   []string{webhookYAML(vwc, createPods)},
			next:     []string{webhookYAML(vwc, createAllCore)},
			webhooks: []string{"ValidatingWebhookConfiguration op-hooks/w.example.com Widened: now matches CREATE of * (v1)"},
			grows:    true,
		},
		{
			name:     "a subresource wildcard covers the subresource",
			active:   []string{webhookYAML(vwc, createPodsSubs)},
			next:     []string{webhookYAML(vwc, createPodsExec)},
			webhooks: []string{"ValidatingWebhookConfiguration op-hooks/w.example.com Changed: no longer matches CREATE of pods/* (v1)"},
		},
		{
			name:     "* does not cover subresources, */* does",
			active:   []string{webhookYAML(vwc, createAllCore)},
			next:     []string{webhookYAML(vwc, createAllCore+", "+createPodsExec)},
			webhooks: []string{"ValidatingWebhookConfiguration op-hooks/w.example.com Widened: now matches CREATE of pods/exec (v1)"},
			grows:    true,
		},
		{
			name:     "every scope is wider than Namespaced",
			active:   []string{webhookYAML(vwc, createPodsNS)},
			next:     []string{webhookYAML(vwc, createPods)},
			webhooks: []string{"ValidatingWebhookConfiguration op-hooks/w.example.com Widened: now matches CREATE of pods (v1)"},
			grows:    true,
		},
		{
			name:     "failurePolicy Ignore to the default Fail",
			active:   []string{webhookYAML(vwc, createPods, "failurePolicy: Ignore")},
			next:     []string{webhookYAML(vwc, createPods)},
			webhooks: []string{"ValidatingWebhookConfiguration op-hooks/w.example.com Widened: failurePolicy Ignore → Fail"},
			grows:    true,
		},
		{
			name:     "namespaceSelector removed, objectSelector changed",
			active:   []string{webhookYAML(vwc, createPods, "namespaceSelector: {matchLabels: {team: a}}", "objectSelector: {matchLabels: {app: one}}")},
			next:     []string{webhookYAML(vwc, createPods, "objectSelector: {matchLabels: {app: two}}")},
			webhooks: []string{"ValidatingWebhookConfiguration op-hooks/w.example.com Widened: namespaceSelector removed; objectSelector changed"},
			grows:    true,
		},
		{
			name:     "a selector added narrows: changed, not grown",
			active:   []string{webhookYAML(vwc, everything)},
			next:     []string{webhookYAML(vwc, everything, "namespaceSelector: {matchLabels: {team: a}}")},
			webhooks: []string{"ValidatingWebhookConfiguration op-hooks/w.example.com Changed: namespaceSelector added"},
		},
		{
			name:     "another service called",
			active:   []string{webhookYAML(mwc, createPods)},
			next:     []string{strings.Replace(webhookYAML(mwc, createPods), "name: op-webhook", "name: elsewhere", 1)},
			webhooks: []string{"MutatingWebhookConfiguration op-hooks/w.example.com Widened: calls service op/elsewhere:443/mutate instead of service op/op-webhook:443/mutate"},
			grows:    true,
		},
		{
			name: "the live webhook with the API server's defaults and an injected caBundle is no change",
			live: []string{strings.Replace(webhookYAML(mwc, `{operations: [CREATE], apiGroups: [""], apiVersions: [v1], resources: [pods], scope: "*"}`,
				"failurePolicy: Fail", "matchPolicy: Equivalent", "namespaceSelector: {}", "objectSelector: {}", "reinvocationPolicy: Never", "timeoutSeconds: 10"),
				"path: /mutate}", "path: /mutate, port: 443}, caBundle: Zm9v", 1)},
			next: []string{webhookYAML(mwc, createPods)},
		},
		{
			name:     "a webhook removed",
			active:   []string{webhookYAML(mwc, createPods)},
			webhooks: []string{"MutatingWebhookConfiguration op-hooks/w.example.com Removed: "},
		},
		{
			name:  "a new CRD",
			next:  []string{crdYAML("Namespaced", "v1:true")},
			crds:  []string{"CustomResourceDefinition widgets.example.com Added: serves Widget (widgets.example.com), Namespaced scope, versions v1; no conversion"},
			grows: true,
		},
		{
			name:   "a CRD serving a new version",
			active: []string{crdYAML("Namespaced", "v1:true", "v2:false")},
			next:   []string{crdYAML("Namespaced", "v1:true", "v2:true")},
			crds:   []string{"CustomResourceDefinition widgets.example.com Widened: serves new versions v2"},
			grows:  true,
		},
		{
			name:   "a CRD changing scope and storage version",
			active: []string{crdYAML("Namespaced", "v1:true", "v2:true")},
			next:   []string{crdYAML("Cluster", "v2:true", "v1:true")},
			crds:   []string{"CustomResourceDefinition widgets.example.com Widened: scope Namespaced → Cluster; storage version v1 → v2"},
			grows:  true,
		},
		{
			name:   "a CRD no longer serving a version",
			active: []string{crdYAML("Namespaced", "v1:true", "v1beta1:true")},
			next:   []string{crdYAML("Namespaced", "v1:true", "v1beta1:false")},
			crds:   []string{"CustomResourceDefinition widgets.example.com Changed: no longer serves versions v1beta1"},
		},
		{
			name:   "a CRD's schema changes only: not surface",
			active: []string{crdYAML("Namespaced", "v1:true")},
			next:   []string{strings.Replace(crdYAML("Namespaced", "v1:true"), "{type: object}", "{type: object, x-kubernetes-preserve-unknown-fields: true}", 1)},
		},
		{
			name:        "a new APIService",
			next:        []string{apiServiceYAML("op-metrics")},
			apiServices: []string{"APIService v1.metrics.example.com Added: serves metrics.example.com/v1 from service op/op-metrics"},
			grows:       true,
		},
		{
			name:        "an APIService served by another service, TLS unchecked",
			active:      []string{apiServiceYAML("op-metrics")},
			next:        []string{apiServiceYAML("other", "insecureSkipTLSVerify: true")},
			apiServices: []string{"APIService v1.metrics.example.com Widened: spec.insecureSkipTLSVerify changes; spec.service.name changes"},
			grows:       true,
		},
		{
			name: "an APIService's injected caBundle is no change",
			live: []string{apiServiceYAML("op-metrics", "caBundle: Zm9v")},
			next: []string{apiServiceYAML("op-metrics")},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := compute(t, objs(t, tt.active...), objs(t, tt.next...), objs(t, tt.live...))
			s := r.APISurface
			diffLines(t, "webhooks", changes(s.Webhooks), tt.webhooks)
			diffLines(t, "crds", changes(s.CRDs), tt.crds)
			diffLines(t, "apiServices", changes(s.APIServices), tt.apiServices)
			if got := surfaceGrows(s); got != tt.grows {
				t.Errorf("surface grows = %v, want %v", got, tt.grows)
			}
			if tt.grows && !r.GrowsPower {
				t.Errorf("GrowsPower = false with the surface grown")
			}
		})
	}
}

// surfaceGrows reports whether a webhook, CRD or APIService is added or
// widened.
func surfaceGrows(s v1alpha2.ReviewAPISurface) bool {
	for _, list := range [][]v1alpha2.ReviewSurfaceChange{s.Webhooks, s.CRDs, s.APIServices} {
		for _, c := range list {
			if c.Change == v1alpha2.ReviewAdded || c.Change == v1alpha2.ReviewWidened {
				return true
			}
		}
	}
	return false
}

// TestWebhookTooManyToCompare checks that rules expanding past
// maxAdmissionAtoms are not compared atom by atom: any change is wider.
func TestWebhookTooManyToCompare(t *testing.T) {
	var groups, resources []string
	for i := range 70 {
		groups = append(groups, fmt.Sprintf("g%d.example.com", i))
		resources = append(resources, fmt.Sprintf("r%d", i))
	}
	rule := func(op string) string {
		return fmt.Sprintf("{operations: [%s], apiGroups: [%s], apiVersions: [v1], resources: [%s]}", op, strings.Join(groups, ","), strings.Join(resources, ","))
	}
	const vwc = "ValidatingWebhookConfiguration"
	same := compute(t, objs(t, webhookYAML(vwc, rule("CREATE"))), objs(t, webhookYAML(vwc, rule("CREATE"))), nil)
	diffLines(t, "unchanged", changes(same.APISurface.Webhooks), nil)
	r := compute(t, objs(t, webhookYAML(vwc, rule("CREATE"))), objs(t, webhookYAML(vwc, rule("DELETE"))), nil)
	diffLines(t, "changed", changes(r.APISurface.Webhooks), []string{
		"ValidatingWebhookConfiguration op-hooks/w.example.com Widened: rules change (more than 4096 operation × resource combinations, not compared)",
	})
}
