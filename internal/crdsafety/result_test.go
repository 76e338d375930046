package crdsafety

import (
	"fmt"
	"testing"
)

// TestFindingIDAndString checks finding IDs and their rendering,
// including the "and N more" of bounded object lists.
func TestFindingIDAndString(t *testing.T) {
	w1 := ObjectFailure{Namespace: "ns", Name: "w1", Detail: "status.conditions[0].reason: Required value"}
	tests := []struct {
		name    string
		finding Finding
		wantID  string
		want    string
	}{
		{
			name:    "invalid, every object named",
			finding: Finding{Kind: KindInvalid, Version: "v1", Path: ".status.conditions[*].reason", Message: "optional field became required", Objects: []ObjectFailure{w1}, Count: 1},
			wantID:  "Invalid:v1:.status.conditions[*].reason",
			want:    "[Invalid:v1:.status.conditions[*].reason] optional field became required; existing objects failing it: ns/w1 (status.conditions[0].reason: Required value)",
		},
		{
			name:    "pruned, more objects than named",
			finding: Finding{Kind: KindPruned, Version: "v1", Path: ".spec.size", Message: "field removed", Objects: []ObjectFailure{{Name: "c1", Detail: "spec.size: value would be pruned"}}, Count: 4},
			wantID:  "Pruned:v1:.spec.size",
			want:    "[Pruned:v1:.spec.size] field removed; existing objects holding a value there: c1 (spec.size: value would be pruned), and 3 more",
		},
		{
			name:    "bounded check",
			finding: Finding{Kind: KindInvalid, Version: "v1", Path: ".spec.a", Message: "m", Objects: []ObjectFailure{w1}, Count: 2, More: true},
			wantID:  "Invalid:v1:.spec.a",
			want:    "[Invalid:v1:.spec.a] m; existing objects failing it: ns/w1 (status.conditions[0].reason: Required value), and at least 1 more",
		},
		{
			name:    "bounded check, every counted object named",
			finding: Finding{Kind: KindServedVersionDropped, Version: "v1beta1", Message: "version no longer served", Objects: []ObjectFailure{{Namespace: "ns", Name: "a"}}, Count: 1, More: true},
			wantID:  "ServedVersionDropped:v1beta1",
			want:    "[ServedVersionDropped:v1beta1] version no longer served; existing objects: ns/a, and maybe more",
		},
		{
			name:    "stored version removed, no objects",
			finding: Finding{Kind: KindStoredVersionRemoved, Version: "v1alpha1", Message: "version is listed in status.storedVersions but removed from spec.versions"},
			wantID:  "StoredVersionRemoved:v1alpha1",
			want:    "[StoredVersionRemoved:v1alpha1] version is listed in status.storedVersions but removed from spec.versions",
		},
		{
			name:    "scope",
			finding: Finding{Kind: KindScopeChanged, Message: "scope changed from Namespaced to Cluster", Objects: []ObjectFailure{{Namespace: "ns", Name: "a"}}, Count: 1},
			wantID:  "ScopeChanged",
			want:    "[ScopeChanged] scope changed from Namespaced to Cluster; existing objects: ns/a",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.finding.ID(); got != tt.wantID {
				t.Errorf("ID() = %q, want %q", got, tt.wantID)
			}
			if got := tt.finding.String(); got != tt.want {
				t.Errorf("String() =\n%s\nwant\n%s", got, tt.want)
			}
		})
	}
}

// TestResultMessage checks the condition message of a Result.
func TestResultMessage(t *testing.T) {
	many := func(n int) []Finding {
		out := make([]Finding, n)
		for i := range out {
			out[i] = Finding{Kind: KindPruned, Version: "v1", Path: fmt.Sprintf(".spec.f%d", i), Message: "field removed", Objects: []ObjectFailure{{Name: "c"}}, Count: 1}
		}
		return out
	}
	tests := []struct {
		name   string
		result Result
		want   string
	}{
		{name: "safe", result: Result{CRD: "widgets.example.com"}, want: ""},
		{name: "only accepted findings", result: Result{CRD: "widgets.example.com", Accepted: many(1)}, want: ""},
		{
			name:   "one finding",
			result: Result{CRD: "widgets.example.com", Findings: many(1)},
			want:   "CRD widgets.example.com: [Pruned:v1:.spec.f0] field removed; existing objects holding a value there: c",
		},
		{
			name:   "findings past the bound, partial check",
			result: Result{CRD: "widgets.example.com", Findings: many(7), Partial: []string{"only the first 1000 objects at version v1 were checked"}},
			want: "CRD widgets.example.com: " +
				"[Pruned:v1:.spec.f0] field removed; existing objects holding a value there: c; " +
				"[Pruned:v1:.spec.f1] field removed; existing objects holding a value there: c; " +
				"[Pruned:v1:.spec.f2] field removed; existing objects holding a value there: c; " +
				"[Pruned:v1:.spec.f3] field removed; existing objects holding a value there: c; " +
				"[Pruned:v1:.spec.f4] field removed; existing objects holding a value there: c; " +
				"and 2 more findings (only the first 1000 objects at version v1 were checked)",
		},
		{
			name:   "one more finding",
			result: Result{CRD: "widgets.example.com", Findings: many(6)},
			want: "CRD widgets.example.com: " +
				"[Pruned:v1:.spec.f0] field removed; existing objects holding a value there: c; " +
				"[Pruned:v1:.spec.f1] field removed; existing objects holding a value there: c; " +
				"[Pruned:v1:.spec.f2] field removed; existing objects holding a value there: c; " +
				"[Pruned:v1:.spec.f3] field removed; existing objects holding a value there: c; " +
				"[Pruned:v1:.spec.f4] field removed; existing objects holding a value there: c; " +
				"and 1 more finding",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.result.Message(); got != tt.want {
				t.Errorf("Message() =\n%s\nwant\n%s", got, tt.want)
			}
			if got, want := tt.result.Safe(), tt.want == ""; got != want {
				t.Errorf("Safe() = %v, want %v", got, want)
			}
		})
	}
}
