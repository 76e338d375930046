package registryv1

import (
	"context"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rukpak/rukpak/api/v1alpha2"
	"github.com/rukpak/rukpak/internal/format/formattest"
	"github.com/rukpak/rukpak/pkg/format"
)

// Regenerate the golden files with: go test ./internal/format/registryv1 -update
var update = flag.Bool("update", false, "rewrite testdata/golden from testdata/bundles")

// realBundle prefixes a bundle of the e2e tests' real operators
// (test/e2e/testdata/operators/<name>/<version>) in TestObjectsGolden.
const realBundle = "real:"

// TestObjectsGolden converts testdata/bundles/<bundle> (or a real
// operator's bundle) with each case's config and compares the objects with
// testdata/golden/<case>/.
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
		// What catalogs publish beyond the install strategy (relatedImages,
		// properties, olm.maxOpenShiftVersion, a template's own
		// olm.targetNamespaces) changes nothing but what it should.
		{"catalog-operator-own-namespace", "catalog-operator", "catalog-system", []string{"catalog-system"}},
		{"catalog-operator-multi-namespace", "catalog-operator", "catalog-system", []string{"team-b", "catalog-system", "team-a"}},
		// Real bundles from the public catalog (test/e2e/testdata/operators).
		{"real-node-maintenance-operator", realBundle + "node-maintenance-operator/0.21.0", "nmo", nil},
		{"real-kepler-operator", realBundle + "kepler-operator/0.22.0", "kepler", nil},
		{"real-microcks-own-namespace", realBundle + "microcks/1.10.0", "microcks", []string{"microcks"}},
		{"real-microcks-single-namespace", realBundle + "microcks/1.10.0", "microcks", []string{"apps"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := format.Config{InstallNamespace: tt.installNamespace, ReleaseName: "release"}
			if tt.watchNamespaces != nil {
				cfg.Bundle = &v1alpha2.BundleConfig{WatchNamespaces: tt.watchNamespaces}
			}
			dir := filepath.Join("testdata", "bundles", tt.bundle)
			if rest, ok := strings.CutPrefix(tt.bundle, realBundle); ok {
				dir = filepath.Join("..", "..", "..", "test", "e2e", "testdata", "operators", filepath.FromSlash(rest))
			}
			objs, err := New().Objects(context.Background(), os.DirFS(dir), cfg)
			if err != nil {
				t.Fatalf("Objects() error = %v", err)
			}
			formattest.CompareGolden(t, filepath.Join("testdata", "golden", tt.name), objs, *update)
		})
	}
}
