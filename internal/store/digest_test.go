package store

import (
	"path/filepath"
	"testing"
)

func TestDigest(t *testing.T) {
	base := []node{{path: "manifests/a.yaml", content: "a"}, {path: "manifests/b.yaml", content: "b"}}
	tests := []struct {
		name  string
		a, b  []node
		equal bool
	}{
		{"identical content", base, base, true},
		{"written in another order", base, []node{base[1], base[0]}, true},
		{"other non-executable permissions", []node{{path: "f", content: "x", mode: 0o600}}, []node{{path: "f", content: "x", mode: 0o644}}, true},
		{"empty trees", nil, nil, true},
		{"different content", base, []node{base[0], {path: "manifests/b.yaml", content: "B"}}, false},
		{"different path", base, []node{base[0], {path: "manifests/c.yaml", content: "b"}}, false},
		{"executable bit", []node{{path: "f", content: "x", mode: 0o644}}, []node{{path: "f", content: "x", mode: 0o755}}, false},
		{"extra empty directory", base, append([]node{{path: "empty", dir: true}}, base...), false},
		{"empty tree and empty file", nil, []node{{path: "f"}}, false},
		{"empty file and empty directory", []node{{path: "f"}}, []node{{path: "f", dir: true}}, false},
		{"path and content boundary", []node{{path: "ab", content: "c"}}, []node{{path: "a", content: "bc"}}, false},
		{"file moved into directory", []node{{path: "a/b", content: "x"}}, []node{{path: "a.b", content: "x"}, {path: "a", dir: true}}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newStore(t)
			da := commit(t, s, tt.a)
			db := commit(t, s, tt.b)
			for _, d := range []string{da, db} {
				if !ValidDigest(d) {
					t.Fatalf("digest %q is not valid", d)
				}
				if !s.Has(d) {
					t.Fatalf("Has(%s) = false after Commit", d)
				}
			}
			if (da == db) != tt.equal {
				t.Fatalf("digests %s and %s: equal = %v, want %v", da, db, da == db, tt.equal)
			}
			want := 2
			if tt.equal {
				want = 1
			}
			if got := entries(t, filepath.Join(s.Dir(), "sha256")); len(got) != want {
				t.Fatalf("store holds %v, want %d trees", got, want)
			}
			// The digest does not depend on the store.
			if d := commit(t, newStore(t), tt.a); d != da {
				t.Fatalf("same tree in another store: %s, want %s", d, da)
			}
		})
	}
}

// TestTreeDigestGolden pins the encoding: digests are recorded in Bundle
// statuses, so the same tree must keep its digest across releases. The
// value was computed independently of this package.
func TestTreeDigestGolden(t *testing.T) {
	root := t.TempDir()
	writeTree(t, root, []node{{path: "bin/run", content: "#!", mode: 0o755}, {path: "a.yaml", content: "x"}})
	const want = "sha256:9549e6e0dba78b4a6c013bbe3127bb839577532d946a79d08f5ded3bd56201f8"
	if got, err := TreeDigest(root); err != nil || got != want {
		t.Fatalf("TreeDigest = %s, %v; want %s", got, err, want)
	}
}
