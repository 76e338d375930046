package permissions

import (
	"fmt"
	"strings"
	"testing"
)

func TestMessage(t *testing.T) {
	sa := ServiceAccount("team-a", "installer")
	tests := []struct {
		name    string
		subject Subject
		missing []Rule
		want    string
	}{
		{name: "nothing missing", subject: sa, missing: nil, want: ""},
		{name: "the documented example",
			subject: sa,
			missing: []Rule{
				rule("", "rbac.authorization.k8s.io", []string{"clusterrolebindings"}),
				rule("team-a", "", []string{"secrets"}),
			},
			want: `ServiceAccount team-a/installer lacks 2 rule(s) this revision needs; nothing was applied. ` +
				`Grant them with a Role in namespace team-a: - {apiGroups: [""], resources: [secrets], verbs: [create, delete, get, list, patch, watch]}; ` +
				`and with a ClusterRole: - {apiGroups: [rbac.authorization.k8s.io], resources: [clusterrolebindings], verbs: [create, delete, get, list, patch, watch]}`},
		{name: "only cluster-wide",
			subject: Subject{User: "alice"},
			missing: []Rule{rule("", "apiextensions.k8s.io", []string{"customresourcedefinitions"}, "create", "patch")},
			want: `user alice lacks 1 rule(s) this revision needs; nothing was applied. ` +
				`Grant them with a ClusterRole: - {apiGroups: [apiextensions.k8s.io], resources: [customresourcedefinitions], verbs: [create, patch]}`},
		{name: "several namespaces and rules, in order",
			subject: sa,
			missing: []Rule{
				rule("b", "", []string{"configmaps"}, "get"),
				rule("a", "apps", []string{"deployments"}, "list"),
				rule("a", "", []string{"configmaps"}, "watch"),
				rule("", "", []string{"namespaces"}, "get"),
			},
			want: `ServiceAccount team-a/installer lacks 4 rule(s) this revision needs; nothing was applied. ` +
				`Grant them with a Role in namespace a: - {apiGroups: [""], resources: [configmaps], verbs: [watch]} - {apiGroups: [apps], resources: [deployments], verbs: [list]}; ` +
				`with a Role in namespace b: - {apiGroups: [""], resources: [configmaps], verbs: [get]}; ` +
				`and with a ClusterRole: - {apiGroups: [""], resources: [namespaces], verbs: [get]}`},
		{name: "odd names are quoted",
			subject: sa,
			missing: []Rule{rule("a", "yes", []string{"9lives", "pods/status"}, "get")},
			want: `ServiceAccount team-a/installer lacks 1 rule(s) this revision needs; nothing was applied. ` +
				`Grant them with a Role in namespace a: - {apiGroups: ["yes"], resources: ["9lives", pods/status], verbs: [get]}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Message(tt.subject, tt.missing); got != tt.want {
				t.Fatalf("Message =\n%s\nwant\n%s", got, tt.want)
			}
		})
	}
}

// TestMessageBounded checks that long lists are cut at about 2 KiB with a
// count of what was left out, and that what is shown plus that count is
// every rule.
func TestMessageBounded(t *testing.T) {
	sa := ServiceAccount("team-a", "installer")
	many := func(n int) []Rule {
		var rules []Rule
		for i := range n {
			rules = append(rules, rule(fmt.Sprintf("ns-%03d", i), "example.com", []string{"widgets"}))
		}
		return rules
	}
	tests := []struct {
		name     string
		missing  []Rule
		wantCut  bool
		wantTail string
	}{
		{name: "fits", missing: many(5)},
		{name: "just over", missing: many(20), wantCut: true},
		{name: "far over", missing: many(500), wantCut: true},
		{name: "one rule longer than the bound",
			missing:  []Rule{rule("a", "example.com", strings.Split(strings.Repeat("averyveryverylongresourcename,", 100), ",")[:100])},
			wantCut:  true,
			wantTail: "They are too many to list here; run rukpakctl preview NAME for the full list."},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Message(sa, tt.missing)
			if len(got) > maxMessage {
				t.Fatalf("message is %d bytes, more than %d", len(got), maxMessage)
			}
			if !strings.HasPrefix(got, fmt.Sprintf("ServiceAccount team-a/installer lacks %d rule(s)", len(tt.missing))) {
				t.Fatalf("message does not count every rule: %s", got)
			}
			shown := strings.Count(got, " - {")
			if !tt.wantCut {
				if shown != len(tt.missing) || strings.Contains(got, "more rule(s)") {
					t.Fatalf("shown %d of %d rules: %s", shown, len(tt.missing), got)
				}
				return
			}
			if tt.wantTail != "" {
				if !strings.HasSuffix(got, tt.wantTail) {
					t.Fatalf("message does not end with %q: %s", tt.wantTail, got)
				}
				return
			}
			tail := fmt.Sprintf("; and %d more rule(s); run rukpakctl preview NAME for the full list", len(tt.missing)-shown)
			if shown == 0 || !strings.HasSuffix(got, tail) {
				t.Fatalf("shown %d, want the message to end with %q: %s", shown, tail, got)
			}
			if len(got) < maxMessage-200 {
				t.Errorf("message is only %d bytes; the bound is %d", len(got), maxMessage)
			}
		})
	}
}
