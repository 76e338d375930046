package format_test

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/rukpak/rukpak/pkg/format"
)

// Key tells queries apart whatever their fields hold.
func TestLookupQueryKey(t *testing.T) {
	queries := []format.LookupQuery{
		{APIVersion: "v1", Kind: "Secret", Namespace: "ns", Name: "db"},
		{APIVersion: "v1", Kind: "Secret", Namespace: "", Name: "db"},
		{APIVersion: "v1", Kind: "Secret", Namespace: "ns", Name: ""},
		{APIVersion: "v1", Kind: "Secret", Namespace: "ns/db", Name: ""},
		{APIVersion: "v1/Secret", Kind: "ns", Namespace: "db", Name: ""},
		{APIVersion: "v1", Kind: `Secret","ns`, Namespace: "db", Name: ""},
		{APIVersion: "apps/v1", Kind: "Deployment", Namespace: "ns", Name: "db"},
	}
	seen := map[string]format.LookupQuery{}
	for _, q := range queries {
		k := q.Key()
		if other, ok := seen[k]; ok {
			t.Errorf("%v and %v have the same key %s", q, other, k)
		}
		seen[k] = q
		if again := q; again.Key() != k {
			t.Errorf("%v: key not stable", q)
		}
	}
}

// Lookups cross to a sandboxed child as JSON: nil (offline) stays nil, an
// empty map (answered by the caller) stays an empty map, and the release
// comes through.
func TestConfigJSON(t *testing.T) {
	tests := []struct {
		name string
		cfg  format.Config
	}{
		{"offline", format.Config{ReleaseName: "rel"}},
		{"no answers yet", format.Config{Lookups: map[string]json.RawMessage{}}},
		{"answers and an upgrade", format.Config{
			Lookups: map[string]json.RawMessage{format.LookupQuery{APIVersion: "v1", Kind: "Secret"}.Key(): format.LookupNotFound},
			Release: format.Release{IsUpgrade: true, Revision: 3},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			data, err := json.Marshal(tt.cfg)
			if err != nil {
				t.Fatal(err)
			}
			var got format.Config
			if err := json.Unmarshal(data, &got); err != nil {
				t.Fatal(err)
			}
			if (got.Lookups == nil) != (tt.cfg.Lookups == nil) || len(got.Lookups) != len(tt.cfg.Lookups) {
				t.Errorf("Lookups %v came back as %v (%s)", tt.cfg.Lookups, got.Lookups, data)
			}
			for k, v := range tt.cfg.Lookups {
				if string(got.Lookups[k]) != string(v) {
					t.Errorf("answer %s: %s, want %s", k, got.Lookups[k], v)
				}
			}
			if got.Release != tt.cfg.Release {
				t.Errorf("Release %+v came back as %+v", tt.cfg.Release, got.Release)
			}
		})
	}
}

func TestReleaseRevisionOrFirst(t *testing.T) {
	for _, tt := range []struct {
		r    format.Release
		want int
	}{
		{format.Release{}, 1},
		{format.Release{Revision: 1}, 1},
		{format.Release{IsUpgrade: true, Revision: 7}, 7},
		{format.Release{Revision: -2}, 1},
	} {
		if got := tt.r.RevisionOrFirst(); got != tt.want {
			t.Errorf("%+v: %d, want %d", tt.r, got, tt.want)
		}
	}
}

// A format whose content reads the cluster names the queries it lacks
// answers to; the caller answers them and renders again.
func ExampleLookupsNeeded() {
	q := format.LookupQuery{APIVersion: "v1", Kind: "Secret", Namespace: "shop", Name: "db"}
	cfg := format.Config{Lookups: map[string]json.RawMessage{}}
	var err error = &format.LookupsNeeded{Queries: []format.LookupQuery{q}}
	fmt.Println(err)
	// The caller reads the Secret as the install identity; here it does
	// not exist.
	cfg.Lookups[q.Key()] = format.LookupNotFound
	fmt.Println(q.Key(), string(cfg.Lookups[q.Key()]))
	// Output:
	// the render needs the answers of lookup "v1" "Secret" "shop" "db"
	// ["v1","Secret","shop","db"] {}
}
