package helmrepository

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	chart "helm.sh/helm/v4/pkg/chart/v2"
	repov1 "helm.sh/helm/v4/pkg/repo/v1"

	"github.com/rukpak/rukpak/internal/helmrepo"
)

// TestTrimBoundsKeptIndexes: over maxKeptBytes, the indexes used least
// recently are dropped with their files, never the one just fetched nor
// one in use.
func TestTrimBoundsKeptIndexes(t *testing.T) {
	dir := t.TempDir()
	c := newCache()
	now := time.Now()
	add := func(key string, age time.Duration, inUse bool) string {
		file := filepath.Join(dir, key)
		if err := os.WriteFile(file, []byte(key), 0o600); err != nil {
			t.Fatal(err)
		}
		e := &entry{lock: make(chan struct{}, 1), file: file, used: now.Add(-age), size: maxKeptBytes / 2}
		if inUse {
			e.lock <- struct{}{}
		}
		c.entries[key] = e
		return file
	}
	oldest := add("oldest", 3*time.Minute, false)
	busy := add("busy", 4*time.Minute, true)
	older := add("older", 2*time.Minute, false)
	fresh := add("fresh", 5*time.Minute, false) // the one just fetched
	c.trim("fresh")
	for file, kept := range map[string]bool{oldest: false, older: false, busy: true, fresh: true} {
		if _, err := os.Stat(file); (err == nil) != kept {
			t.Errorf("%s: kept %v, want %v", filepath.Base(file), err == nil, kept)
		}
	}
	if len(c.entries) != 2 {
		t.Errorf("%d entries left, want 2", len(c.entries))
	}
}

// TestSlimKeepsWhatSelectionReads: what the cache keeps of a chart is
// what selecting and pinning a version reads, not its descriptions.
func TestSlimKeepsWhatSelectionReads(t *testing.T) {
	c := &helmrepo.Chart{Name: "c", Versions: []*repov1.ChartVersion{{
		Metadata: &chart.Metadata{APIVersion: "v2", Name: "c", Version: "1.0.0", Description: strings.Repeat("x", 1<<16),
			Annotations: map[string]string{"a": "b"}},
		URLs: []string{"c-1.0.0.tgz"}, Digest: "abc", Removed: true,
	}}}
	got := slim(c).Versions[0]
	if got.Name != "c" || got.Version != "1.0.0" || got.APIVersion != "v2" || got.URLs[0] != "c-1.0.0.tgz" || got.Digest != "abc" || !got.Removed {
		t.Errorf("slim lost what selection reads: %+v", got)
	}
	if got.Description != "" || got.Annotations != nil {
		t.Errorf("slim kept the description or annotations")
	}
	if v, err := slim(c).Select("1.0.0"); err == nil {
		t.Errorf("a removed version was selected: %v", v.Version)
	}
}
