package registryv1

import (
	"context"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/rukpak/rukpak/api/v1alpha2"
	"github.com/rukpak/rukpak/internal/format/formattest"
	"github.com/rukpak/rukpak/pkg/format"
)

// Regenerate the golden files with: go test ./internal/format/registryv1 -update
var update = flag.Bool("update", false, "rewrite testdata/golden from testdata/bundles")

// TestObjectsGolden converts testdata/bundles/<bundle> with each case's
// config and compares the objects with testdata/golden/<case>/.
func TestObjectsGolden(t *testing.T) {
	tests := []struct {
		name             string
		bundle           string
		installNamespace string
		watchNamespaces  []string
	}{
		{"all-namespaces", "widget-operator", "widgets", nil},
		{"own-namespace", "widget-operator", "widgets", []string{"widgets"}},
		{"single-namespace", "widget-operator", "widgets", []string{"team-a"}},
		{"multi-namespace", "widget-operator", "widgets", []string{"team-b", "team-a", "widgets"}},
		{"cache-operator-all-namespaces", "cache-operator", "cache-system", nil},
		{"cache-operator-single-namespace", "cache-operator", "cache-system", []string{"apps"}},
		{"e2e-operator", "e2e-operator", "e2e-operator", nil},
		{"e2e-operator-v2", "e2e-operator-v2", "e2e-operator", nil},
		{"e2e-operator-own-namespace", "e2e-operator", "e2e-operator", []string{"e2e-operator"}},
		{"webhook-operator", "webhook-operator", "webhooks", nil},
		{"admission-operator-all-namespaces", "admission-operator", "admission", nil},
		{"admission-operator-own-namespace", "admission-operator", "admission", []string{"admission"}},
		{"admission-operator-single-namespace", "admission-operator", "admission", []string{"team-a"}},
		{"admission-operator-multi-namespace", "admission-operator", "admission", []string{"team-b", "team-a"}},
		{"apiservice-operator", "apiservice-operator", "wardle", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := format.Config{InstallNamespace: tt.installNamespace, ReleaseName: "release"}
			if tt.watchNamespaces != nil {
				cfg.Bundle = &v1alpha2.BundleConfig{WatchNamespaces: tt.watchNamespaces}
			}
			objs, err := New().Objects(context.Background(), os.DirFS(filepath.Join("testdata", "bundles", tt.bundle)), cfg)
			if err != nil {
				t.Fatalf("Objects() error = %v", err)
			}
			formattest.CompareGolden(t, filepath.Join("testdata", "golden", tt.name), objs, *update)
		})
	}
}
