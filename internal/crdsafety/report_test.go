package crdsafety

import (
	"fmt"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// TestReport checks the condition message, including truncation.
func TestReport(t *testing.T) {
	sizeChanged := Finding{Version: "v1", Path: ".spec.size", Rule: RuleTypeChanged, Message: "type changed from integer to string"}
	scope := Finding{Rule: RuleScopeChanged, Message: "scope changed from Namespaced to Cluster"}
	modeFails := ObjectFailure{Namespace: "ns", Name: "w1", Version: "v1", Reason: FailureSchemaInvalid,
		Message: `spec.mode: Unsupported value: "fast"`}
	many := func(n int) []Finding {
		out := make([]Finding, n)
		for i := range out {
			out[i] = Finding{Version: "v1", Path: fmt.Sprintf(".spec.f%d", i), Rule: RuleFieldRemoved, Message: "removed"}
		}
		return out
	}
	tests := []struct {
		name     string
		findings []Finding
		failures []ObjectFailure
		want     string
	}{
		{name: "nothing", want: ""},
		{
			name:     "one finding",
			findings: []Finding{sizeChanged},
			want:     "CRD widgets.example.com: version v1 field .spec.size: type changed from integer to string",
		},
		{
			name:     "findings then failures",
			findings: []Finding{scope, sizeChanged},
			failures: []ObjectFailure{modeFails},
			want: "CRD widgets.example.com: scope changed from Namespaced to Cluster; " +
				"version v1 field .spec.size: type changed from integer to string; " +
				`existing object ns/w1 (v1) fails the new schema: spec.mode: Unsupported value: "fast"`,
		},
		{
			name:     "exactly the limit",
			findings: many(maxReportEntries),
			want: "CRD widgets.example.com: version v1 field .spec.f0: removed; version v1 field .spec.f1: removed; " +
				"version v1 field .spec.f2: removed; version v1 field .spec.f3: removed; version v1 field .spec.f4: removed",
		},
		{
			name:     "truncated",
			findings: many(4),
			failures: []ObjectFailure{modeFails, modeFails, modeFails},
			want: "CRD widgets.example.com: version v1 field .spec.f0: removed; version v1 field .spec.f1: removed; " +
				"version v1 field .spec.f2: removed; version v1 field .spec.f3: removed; " +
				`existing object ns/w1 (v1) fails the new schema: spec.mode: Unsupported value: "fast"; and 2 more`,
		},
		{
			name:     "only failures, truncated",
			failures: []ObjectFailure{modeFails, modeFails, modeFails, modeFails, modeFails, modeFails, modeFails},
			want: "CRD widgets.example.com: " +
				`existing object ns/w1 (v1) fails the new schema: spec.mode: Unsupported value: "fast"; ` +
				`existing object ns/w1 (v1) fails the new schema: spec.mode: Unsupported value: "fast"; ` +
				`existing object ns/w1 (v1) fails the new schema: spec.mode: Unsupported value: "fast"; ` +
				`existing object ns/w1 (v1) fails the new schema: spec.mode: Unsupported value: "fast"; ` +
				`existing object ns/w1 (v1) fails the new schema: spec.mode: Unsupported value: "fast"; and 2 more`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Report("widgets.example.com", tt.findings, tt.failures); got != tt.want {
				t.Errorf("Report() =\n%s\nwant\n%s", got, tt.want)
			}
		})
	}
}

// TestEndToEnd runs the three steps on one CRD change.
func TestEndToEnd(t *testing.T) {
	oldCRD := newCRD(version("v1", object(props{"size": integer(), "mode": enum(`"fast"`, `"slow"`)})))
	newCRD := newCRD(version("v1", object(props{"size": str(), "mode": enum(`"slow"`)})))
	objs := []unstructured.Unstructured{
		widget("example.com/v1", "ns", "w0", `{"mode": "slow"}`),
		widget("example.com/v1", "ns", "w1", `{"mode": "fast"}`),
	}
	failures, err := ValidateExisting(newCRD, objs, 10)
	if err != nil {
		t.Fatal(err)
	}
	got := Report(newCRD.Name, Compare(oldCRD, newCRD), failures)
	want := "CRD widgets.example.com: version v1 field .spec.mode: enum no longer allows \"fast\"; " +
		"version v1 field .spec.size: type changed from integer to string; " +
		`existing object ns/w1 (v1) fails the new schema: spec.mode: Unsupported value: "fast": supported values: "slow"`
	if got != want {
		t.Errorf("Report() =\n%s\nwant\n%s", got, want)
	}
}
