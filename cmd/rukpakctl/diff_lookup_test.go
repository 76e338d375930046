//go:build integration

package main

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/rukpak/rukpak/api/v1alpha2"
)

// keepingChart is a chart that generates a password once and keeps it
// with lookup, as charts of databases do.
var keepingChart = map[string]string{
	"Chart.yaml": "apiVersion: v2\nname: keeper\nversion: 0.1.0\n",
	"templates/secret.yaml": `{{- $live := lookup "v1" "Secret" .Release.Namespace "creds" }}
apiVersion: v1
kind: Secret
metadata:
  name: creds
data:
  password: {{ if $live }}{{ index $live.data "password" }}{{ else }}{{ randAlphaNum 24 | b64enc }}{{ end }}
`,
}

// TestDiffAnswersLookups: a Secret a chart keeps with lookup is rendered
// with its live value, as the manager renders it, so diff shows no
// difference where an offline render would show a new password.
func TestDiffAnswersLookups(t *testing.T) {
	live := &unstructured.Unstructured{}
	if err := yaml.Unmarshal([]byte("apiVersion: v1\nkind: Secret\nmetadata: {name: creds}\ndata: {password: bGl2ZS1wYXNzd29yZA==}\n"), &live.Object); err != nil {
		t.Fatal(err)
	}
	ns := testEnv.Namespace(t, "lookup")
	inst := installObjects(t, ns, v1alpha2.ClassHelm, []*unstructured.Unstructured{live})
	chart := t.TempDir()
	for name, doc := range keepingChart {
		writeFile(t, chart, name, doc)
	}
	stdout, stderr, status, err := diff(t, inst.file, "--content", chart, "--kubeconfig", kubeconfig(t))
	if status != 0 || err != nil {
		t.Fatalf("exit status %d (%v), want 0: the kept password shows changed\nstdout:\n%s\nstderr:\n%s", status, err, stdout, stderr)
	}
	if strings.Contains(stderr, "lookup finds nothing") {
		t.Fatalf("rendered offline although the cluster answers lookups:\n%s", stderr)
	}
}
