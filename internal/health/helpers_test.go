package health

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

// parse decodes a YAML manifest the way objects read from the API server
// are decoded: integers become int64.
func parse(t *testing.T, manifest string) *unstructured.Unstructured {
	t.Helper()
	raw, err := yaml.YAMLToJSON([]byte(strings.ReplaceAll(manifest, "\t", "  ")))
	if err != nil {
		t.Fatalf("YAML to JSON: %v", err)
	}
	u := &unstructured.Unstructured{}
	if err := u.UnmarshalJSON(raw); err != nil {
		t.Fatalf("decoding object: %v", err)
	}
	return u
}

// checkCase is one object and the Result expected for it.
type checkCase struct {
	name     string
	manifest string
	healthy  bool
	// reason must be contained in Result.Reason; empty means Reason must
	// be empty.
	reason string
}

// runCases checks every case with c.
func runCases(t *testing.T, c *Checker, cases []checkCase) {
	t.Helper()
	for _, tt := range cases {
		t.Run(tt.name, func(t *testing.T) {
			got := c.Check(parse(t, tt.manifest))
			if got.Healthy != tt.healthy {
				t.Fatalf("Healthy = %v, want %v (reason %q)", got.Healthy, tt.healthy, got.Reason)
			}
			if tt.reason == "" && got.Reason != "" {
				t.Fatalf("Reason = %q, want empty", got.Reason)
			}
			if !strings.Contains(got.Reason, tt.reason) {
				t.Fatalf("Reason = %q, want it to contain %q", got.Reason, tt.reason)
			}
		})
	}
}
