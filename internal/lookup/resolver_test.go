//go:build integration

package lookup

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/rukpak/rukpak/api/v1alpha2"
	"github.com/rukpak/rukpak/pkg/failure"
	"github.com/rukpak/rukpak/pkg/format"
)

// Answer reads what the identity may read, as Helm's lookup: an object,
// a list, nothing, or a failure naming the lookup.
func TestAnswer(t *testing.T) {
	f := newFixture(t, Limits{})
	q := func(apiVersion, kind, namespace, name string) format.LookupQuery {
		return format.LookupQuery{APIVersion: apiVersion, Kind: kind, Namespace: namespace, Name: name}
	}
	tests := []struct {
		name    string
		admin   bool
		paged   bool // read lists 2 objects a request
		query   format.LookupQuery
		want    string   // the answer, as JSON, when it is not an object or list
		names   []string // the names of the object or the list's items
		reason  string   // of a failure
		message []string // the failure's message holds each
	}{
		{name: "found", query: q("v1", "Secret", f.ns, "db"), names: []string{"db"}},
		{name: "not found", query: q("v1", "Secret", f.ns, "missing"), want: `{}`},
		{name: "not found, a kind the identity may list", query: q("v1", "ConfigMap", f.ns, "nope"), want: `{}`},
		{name: "list", query: q("v1", "ConfigMap", f.ns, ""), names: []string{"a", "b", "c"}},
		{name: "list read page by page", paged: true, query: q("v1", "ConfigMap", f.ns, ""), names: []string{"a", "b", "c"}},
		{name: "namespaced object outside any namespace: not found, as from the API server",
			query: q("v1", "ConfigMap", "", "a"), want: `{}`},
		{name: "cluster-scoped: the namespace is ignored", admin: true, query: q("v1", "Namespace", "anything", f.ns), names: []string{f.ns}},
		{name: "a Secret the identity may not read", query: q("v1", "Secret", f.ns, "private"),
			reason: v1alpha2.ReasonRenderFailed,
			message: []string{`lookup "v1" "Secret" "` + f.ns + `" "private"`, "the install identity may not get secrets in namespace " + f.ns,
				"system:serviceaccount:" + f.ns + ":reader"}},
		{name: "a list in all namespaces the identity may not read", query: q("v1", "ConfigMap", "", ""),
			reason:  v1alpha2.ReasonRenderFailed,
			message: []string{`lookup "v1" "ConfigMap" "" ""`, "may not list configmaps in all namespaces"}},
		{name: "a kind not served", query: q("example.com/v1", "Widget", f.ns, "w"),
			reason: v1alpha2.ReasonUnknownKind, message: []string{`lookup "example.com/v1" "Widget"`, "kind Widget of example.com/v1 is not served"}},
		{name: "a version not served", query: q("apps/v1beta1", "Deployment", f.ns, ""),
			reason: v1alpha2.ReasonUnknownKind, message: []string{"kind Deployment of apps/v1beta1 is not served"}},
		{name: "an invalid name", query: q("v1", "Secret", f.ns, "a/b"),
			reason: v1alpha2.ReasonRenderFailed, message: []string{`invalid name "a/b"`}},
		{name: "an invalid apiVersion", query: q("a/b/c", "Secret", f.ns, "db"),
			reason: v1alpha2.ReasonRenderFailed, message: []string{`invalid apiVersion "a/b/c"`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := f.asReader
			if tt.admin {
				r = f.asAdmin
			}
			if tt.paged {
				paged := *r
				paged.pageSize = 2
				r = &paged
			}
			raw, err := r.Answer(context.Background(), tt.query)
			if tt.reason != "" {
				t.Logf("message: %v", err)
				if failure.Reason(err, "") != tt.reason {
					t.Fatalf("error %v (%s), want reason %s", err, failure.Reason(err, "-"), tt.reason)
				}
				for _, m := range tt.message {
					if !strings.Contains(err.Error(), m) {
						t.Errorf("message %q does not hold %q", err, m)
					}
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if tt.want != "" {
				if string(raw) != tt.want {
					t.Fatalf("answer %s, want %s", raw, tt.want)
				}
				return
			}
			if got := answerNames(t, raw); strings.Join(got, ",") != strings.Join(tt.names, ",") {
				t.Fatalf("answer holds %v, want %v: %s", got, tt.names, raw)
			}
			if strings.Contains(string(raw), "managedFields") {
				t.Errorf("answer holds managedFields: %s", raw)
			}
		})
	}
}

// answerNames returns the name of the object of an answer, or those of
// its items.
func answerNames(t *testing.T, raw json.RawMessage) []string {
	t.Helper()
	type named struct {
		Metadata struct{ Name string } `json:"metadata"`
	}
	var a struct {
		named
		Kind  string  `json:"kind"`
		Items []named `json:"items"`
	}
	if err := json.Unmarshal(raw, &a); err != nil {
		t.Fatal(err)
	}
	if !strings.HasSuffix(a.Kind, "List") {
		return []string{a.Metadata.Name}
	}
	names := []string{}
	for _, it := range a.Items {
		names = append(names, it.Metadata.Name)
	}
	return names
}

// A found Secret's answer holds its data: charts read it.
func TestAnswerKeepsSecretData(t *testing.T) {
	f := newFixture(t, Limits{})
	raw, err := f.asReader.Answer(context.Background(), format.LookupQuery{APIVersion: "v1", Kind: "Secret", Namespace: f.ns, Name: "db"})
	if err != nil {
		t.Fatal(err)
	}
	var s struct{ Data map[string]string }
	if err := json.Unmarshal(raw, &s); err != nil {
		t.Fatal(err)
	}
	if s.Data["password"] != "c3RvcmVkLVBhc3N3MHJk" { // stored-Passw0rd
		t.Fatalf("data %v", s.Data)
	}
}
