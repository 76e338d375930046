package helmrepo_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	chart "helm.sh/helm/v4/pkg/chart/v2"
	repov1 "helm.sh/helm/v4/pkg/repo/v1"
	"sigs.k8s.io/yaml"

	"github.com/rukpak/rukpak/internal/helmrepo"
)

func readTestdata(t *testing.T, chartName string) *helmrepo.Chart {
	t.Helper()
	f, err := os.Open("testdata/index.yaml")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	c, err := helmrepo.ReadIndex(context.Background(), f, chartName, helmrepo.DefaultLimits)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func versions(c *helmrepo.Chart) string {
	var vs []string
	for _, v := range c.Versions {
		vs = append(vs, v.Version)
	}
	return strings.Join(vs, ",")
}

func TestReadIndex(t *testing.T) {
	c := readTestdata(t, "ingress-nginx")
	if got, want := versions(c), "4.11.2,4.11.1,4.12.0-beta.0,4.11.3,3.40.0"; got != want {
		t.Errorf("versions = %s, want %s", got, want)
	}
	if len(c.Skipped) != 2 || !strings.Contains(c.Skipped[0], `entry 4 (version "four")`) || !strings.Contains(c.Skipped[1], "entry 5") {
		t.Errorf("skipped = %q", c.Skipped)
	}
	first := c.Versions[0]
	if first.AppVersion != "1.11.2" || !strings.Contains(first.Annotations["artifacthub.io/changes"], "looks like a key:") || first.Digest == "" {
		t.Errorf("first entry = %+v", first)
	}
	if c.Versions[1].Description != "Ingress controller folded over lines" {
		t.Errorf("a folded scalar read as %q", c.Versions[1].Description)
	}
	if got := versions(readTestdata(t, "cert-manager")); got != "v1.15.3" {
		t.Errorf("a quoted chart key: versions %q", got)
	}
	if got := readTestdata(t, "empty"); len(got.Versions) != 0 {
		t.Errorf("empty = %+v", got)
	}
}

func TestSelect(t *testing.T) {
	c := readTestdata(t, "ingress-nginx")
	tests := []struct {
		constraint, want, url string
	}{
		{"4.x", "4.11.2", "https://github.com/kubernetes/ingress-nginx/releases/download/helm-chart-4.11.2/ingress-nginx-4.11.2.tgz"},
		{"~4.11.0", "4.11.2", ""},
		{"4.11.1", "4.11.1", "https://charts.example/repo/charts/ingress-nginx-4.11.1.tgz"},
		{">=4.12.0-0", "4.12.0-beta.0", "https://charts.example/repo/ingress-nginx-4.12.0-beta.0.tgz"},
		{"<4", "3.40.0", ""},
		{"4.11.3", "", ""}, // removed
		{"5.x", "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.constraint, func(t *testing.T) {
			v, err := c.Select(tt.constraint)
			if tt.want == "" {
				if err == nil {
					t.Fatalf("selected %s, want none", v.Version)
				}
				return
			}
			if err != nil || v.Version != tt.want {
				t.Fatalf("Select = %v, %v; want %s", v, err, tt.want)
			}
			if tt.url != "" {
				u, err := helmrepo.ChartURL("https://charts.example/repo", v)
				if err != nil || u != tt.url {
					t.Errorf("ChartURL = %q, %v; want %q", u, err, tt.url)
				}
			}
		})
	}
	cm := readTestdata(t, "cert-manager")
	if v, err := cm.Select("1.x"); err != nil || v.Version != "v1.15.3" {
		t.Errorf("a v-prefixed chart version: %v, %v", v, err)
	}
}

func TestChartURLRefusesOtherSchemes(t *testing.T) {
	v := &repov1.ChartVersion{Metadata: &chart.Metadata{Name: "x", Version: "1.0.0"}, URLs: []string{"file:///etc/passwd"}}
	if _, err := helmrepo.ChartURL("https://charts.example", v); err == nil {
		t.Fatal("a file URL was accepted")
	}
}

// TestReadIndexAsHelm: an index Helm's own writer made, as YAML and as
// JSON, reads as Helm's own reader reads it.
func TestReadIndexAsHelm(t *testing.T) {
	idx := repov1.NewIndexFile()
	for c := range 5 {
		for v := range 7 {
			md := &chart.Metadata{APIVersion: "v2", Name: fmt.Sprintf("chart-%d", c), Version: fmt.Sprintf("1.%d.0", v),
				Description: "line one\nline two: with a colon\n  indented", AppVersion: "2.0", Keywords: []string{"a", "b"}}
			if err := idx.MustAdd(md, fmt.Sprintf("chart-%d-1.%d.0.tgz", c, v), "https://example.com/charts", "sha256:abc"); err != nil {
				t.Fatal(err)
			}
		}
	}
	idx.SortEntries()
	dir := t.TempDir()
	yamlPath, jsonPath := filepath.Join(dir, "index.yaml"), filepath.Join(dir, "index.json")
	if err := idx.WriteFile(yamlPath, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := idx.WriteJSONFile(jsonPath, 0o644); err != nil {
		t.Fatal(err)
	}
	helm, err := repov1.LoadIndexFile(yamlPath)
	if err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{yamlPath, jsonPath} {
		for name, want := range helm.Entries {
			f, err := os.Open(path)
			if err != nil {
				t.Fatal(err)
			}
			got, err := helmrepo.ReadIndex(context.Background(), f, name, helmrepo.DefaultLimits)
			f.Close()
			if err != nil {
				t.Fatalf("%s: %v", filepath.Base(path), err)
			}
			if len(got.Versions) != len(want) {
				t.Fatalf("%s %s: %d versions, Helm reads %d", filepath.Base(path), name, len(got.Versions), len(want))
			}
			for i := range want {
				g, _ := yaml.Marshal(got.Versions[i])
				w, _ := yaml.Marshal(want[i])
				if !bytes.Equal(g, w) {
					t.Errorf("%s %s entry %d:\n%s\nHelm reads:\n%s", filepath.Base(path), name, i, g, w)
				}
			}
		}
	}
}

func TestReadIndexRefuses(t *testing.T) {
	entry := "  - apiVersion: v2\n    name: c\n    urls: [c.tgz]\n    version: 1.0.0\n"
	tests := []struct {
		name  string
		index string
		lim   helmrepo.Limits
		want  string
		large bool
	}{
		{name: "empty", index: "\n\n", want: "empty index.yaml"},
		{name: "no apiVersion", index: "entries:\n  c:\n" + entry, want: "no API version"},
		{name: "no such chart", index: "apiVersion: v1\nentries:\n  d:\n" + entry, want: `no chart name found: "c"`},
		{name: "flow style", index: "apiVersion: v1\nentries: {c: []}\n", want: "flow style"},
		{name: "a chart's entries not a sequence", index: "apiVersion: v1\nentries:\n  c:\n    version: 1\n", want: "not a block sequence"},
		{name: "too many bytes", index: "apiVersion: v1\nentries:\n  c:\n" + strings.Repeat(entry, 100), lim: helmrepo.Limits{MaxBytes: 1000},
			want: "more than 1000 bytes", large: true},
		{name: "too many versions", index: "apiVersion: v1\nentries:\n  c:\n" + strings.Repeat(entry, 4), lim: helmrepo.Limits{MaxVersions: 3},
			want: `chart "c": index over its limits: more than 3 versions`, large: true},
		{name: "a line too long", index: "apiVersion: v1\nentries:\n  c:\n  - description: " + strings.Repeat("x", 200<<10) + "\n",
			lim: helmrepo.Limits{MaxEntryBytes: 100 << 10}, want: "a line longer than", large: true},
		{name: "JSON cut short", index: `{"apiVersion": "v1", "entries": {"c": [{"name": "c", "version": "1.0.0"`, want: "index.yaml"},
		{name: "JSON not an object", index: `["apiVersion"]`, want: "not a key of the index"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := helmrepo.ReadIndex(context.Background(), strings.NewReader(tt.index), "c", tt.lim)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error = %v, want one holding %q", err, tt.want)
			}
			if errors.Is(err, helmrepo.ErrTooLarge) != tt.large {
				t.Errorf("errors.Is(err, ErrTooLarge) = %v, want %v", !tt.large, tt.large)
			}
		})
	}
}

func TestReadIndexSkipsALargeEntry(t *testing.T) {
	index := "apiVersion: v1\nentries:\n  c:\n  - apiVersion: v2\n    name: c\n    description: |\n" +
		strings.Repeat("      a line of a long description\n", 200) + "    urls: [c.tgz]\n    version: 1.0.0\n" +
		"  - apiVersion: v2\n    name: c\n    urls: [c.tgz]\n    version: 1.0.1\n"
	c, err := helmrepo.ReadIndex(context.Background(), strings.NewReader(index), "c", helmrepo.Limits{MaxEntryBytes: 1024})
	if err != nil {
		t.Fatal(err)
	}
	if versions(c) != "1.0.1" || len(c.Skipped) != 1 || !strings.Contains(c.Skipped[0], "entry 1: larger than 1024 bytes") {
		t.Errorf("versions %s, skipped %q", versions(c), c.Skipped)
	}
}

func TestReadIndexStopsWithItsContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	index := "apiVersion: v1\nentries:\n" + strings.Repeat("  other:\n  - name: other\n    version: 1.0.0\n", 5000)
	if _, err := helmrepo.ReadIndex(ctx, strings.NewReader(index), "c", helmrepo.DefaultLimits); !errors.Is(err, context.Canceled) {
		t.Fatalf("error = %v, want the context's", err)
	}
}

// TestReadIndexOfPublicSize: an index of the size of the largest public
// ones is read in bounded memory: what is allocated is a small multiple
// of the one chart's entries, not of the index (here about 1 MiB for a
// 50 MiB index, in a quarter of a second).
func TestReadIndexOfPublicSize(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a 50 MB index")
	}
	var b bytes.Buffer
	b.WriteString("apiVersion: v1\nentries:\n")
	for c := 0; b.Len() < 50<<20; c++ {
		fmt.Fprintf(&b, "  chart-%d:\n", c)
		for v := range 100 {
			fmt.Fprintf(&b, "  - annotations:\n      category: Infrastructure\n    apiVersion: v2\n    appVersion: 1.%d.0\n"+
				"    created: \"2024-01-01T10:00:00.123456789Z\"\n    description: A chart that does things, with a description as long as real ones have\n"+
				"    digest: 0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef\n    home: https://example.com\n"+
				"    name: chart-%d\n    urls:\n    - https://example.com/charts/chart-%d-1.%d.0.tgz\n    version: 1.%d.0\n", v, c, c, v, v)
		}
	}
	b.WriteString("generated: \"2024-01-01T00:00:00Z\"\n")
	size := b.Len()
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	start := time.Now()
	c, err := helmrepo.ReadIndex(context.Background(), bytes.NewReader(b.Bytes()), "chart-7", helmrepo.DefaultLimits)
	took := time.Since(start)
	runtime.ReadMemStats(&after)
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Versions) != 100 {
		t.Fatalf("%d versions, want 100", len(c.Versions))
	}
	alloc := after.TotalAlloc - before.TotalAlloc
	t.Logf("read %d MiB of index in %v, allocating %d MiB", size>>20, took, alloc>>20)
	if alloc > uint64(size/10) {
		t.Errorf("allocated %d MiB reading a %d MiB index: more than a tenth of it", alloc>>20, size>>20)
	}
}
