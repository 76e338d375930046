package catalog_test

import (
	"errors"
	"os"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/rukpak/rukpak/internal/catalog"
)

func testCatalog(t *testing.T) *catalog.Catalog {
	t.Helper()
	c, err := catalog.Parse(os.DirFS("testdata/catalog"), catalog.DefaultLimits)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestParse(t *testing.T) {
	c := testCatalog(t)
	w := c.Packages["widget"]
	if w == nil || w.DefaultChannel != "stable" || len(w.Bundles) != 6 {
		t.Fatalf("widget = %+v", w)
	}
	if got := strings.Join(w.ChannelNames(), ","); got != "fast,islands,stable" {
		t.Errorf("channels = %s", got)
	}
	b := w.Bundles["widget.v1.3.0"]
	if b.Version.String() != "1.3.0" || b.Image != "registry.example/widget-bundle:v1.3.0" || !strings.Contains(b.Deprecated, "loses data") {
		t.Errorf("widget.v1.3.0 = %+v", b)
	}
	g := c.Packages["gadget"].Bundles["gadget.v0.1.0"]
	if len(g.Requires) != 1 || !strings.HasPrefix(g.Requires[0], "olm.package.required ") {
		t.Errorf("gadget's requirements = %q", g.Requires)
	}
}

func TestParseRefuses(t *testing.T) {
	pkg := "{\"schema\":\"olm.package\",\"name\":\"p\"}\n"
	bundle := func(name, version string) string {
		return `{"schema":"olm.bundle","package":"p","name":"` + name + `","image":"x","properties":[{"type":"olm.package","value":{"packageName":"p","version":"` + version + `"}}]}` + "\n"
	}
	tests := []struct {
		name  string
		files map[string]string
		lim   catalog.Limits
		want  string
		large bool
	}{
		{name: "a blob that does not parse", files: map[string]string{"p/c.json": pkg + "{\"schema\": "}, want: "p/c.json: blob 2"},
		{name: "a bundle without a version", files: map[string]string{"p/c.json": pkg + `{"schema":"olm.bundle","package":"p","name":"b"}`},
			want: `p/c.json: blob 2: bundle "b" has no olm.package property`},
		{name: "a version that is not semver", files: map[string]string{"p/c.json": pkg + bundle("b", "one")}, want: `bundle "b": version "one"`},
		{name: "a bundle of an undeclared package", files: map[string]string{"c.json": bundle("b", "1.0.0")}, want: `c.json: bundle "b" of package "p", which the catalog does not declare`},
		{name: "a package twice", files: map[string]string{"c.json": pkg + pkg}, want: `c.json: blob 2: package "p" declared twice`},
		{name: "a bad skipRange", files: map[string]string{"c.yaml": pkg + "---\nschema: olm.channel\npackage: p\nname: s\nentries:\n- name: b\n  skipRange: '>>1'\n"},
			want: `c.yaml: channel "s", entry "b": skipRange ">>1"`},
		{name: "too many bytes", files: map[string]string{"a.json": pkg + bundle("a", "1.0.0"), "b.json": bundle("b", "1.0.1")},
			lim: catalog.Limits{MaxBytes: 200}, want: "b.json: catalog over its limits: more than 200 bytes", large: true},
		{name: "too many blobs", files: map[string]string{"a.json": pkg + bundle("a", "1.0.0") + bundle("b", "1.0.1")},
			lim: catalog.Limits{MaxBlobs: 2}, want: "a.json: catalog over its limits: more than 2 blobs", large: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fsys := fstest.MapFS{}
			for n, data := range tt.files {
				fsys[n] = &fstest.MapFile{Data: []byte(data)}
			}
			_, err := catalog.Parse(fsys, tt.lim)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error = %v, want one holding %q", err, tt.want)
			}
			if errors.Is(err, catalog.ErrTooLarge) != tt.large {
				t.Errorf("errors.Is(err, ErrTooLarge) = %v, want %v", !tt.large, tt.large)
			}
		})
	}
}

func TestResolve(t *testing.T) {
	c := testCatalog(t)
	tests := []struct {
		name string
		q    catalog.Query
		want string // the selected bundle; "" for none
		why  map[string]catalog.Why
	}{
		{name: "a channel: the newest not deprecated", q: catalog.Query{Package: "widget", Channels: []string{"stable"}}, want: "widget.v1.2.0",
			why: map[string]catalog.Why{"widget.v2.0.0": catalog.WhyNotInChannel, "widget.v1.3.0": catalog.WhyOlder}},
		{name: "any channel", q: catalog.Query{Package: "widget"}, want: "widget.v2.0.0"},
		{name: "a range", q: catalog.Query{Package: "widget", Range: "1.x"}, want: "widget.v1.2.0",
			why: map[string]catalog.Why{"widget.v2.0.0": catalog.WhyOutOfRange, "widget.v2.0.0-rc.1": catalog.WhyOutOfRange}},
		{name: "only a deprecated one in range", q: catalog.Query{Package: "widget", Range: ">=1.3.0 <2"}, want: "widget.v1.3.0"},
		{name: "a pre-release only when the range names one", q: catalog.Query{Package: "widget", Channels: []string{"fast"}, Range: ">=2.0.0-0 <2.0.0"}, want: "widget.v2.0.0-rc.1"},
		{name: "nothing in range", q: catalog.Query{Package: "widget", Range: "3.x"}, want: ""},
		{name: "upgrades follow replaces and skipRange", q: catalog.Query{Package: "widget", Channels: []string{"stable"}, Installed: "widget.v1.0.0"}, want: "widget.v1.1.0",
			why: map[string]catalog.Why{"widget.v1.2.0": catalog.WhyNotAnEdge, "widget.v1.3.0": catalog.WhyOlder, "widget.v1.0.0": catalog.WhyOlder}},
		{name: "no edge: the installed bundle stays", q: catalog.Query{Package: "widget", Channels: []string{"islands"}, Installed: "widget.v1.0.0"}, want: "widget.v1.0.0",
			why: map[string]catalog.Why{"widget.v1.2.0": catalog.WhyNotAnEdge}},
		{name: "edges not required", q: catalog.Query{Package: "widget", Channels: []string{"islands"}, Installed: "widget.v1.0.0", AnyEdge: true}, want: "widget.v1.2.0"},
		{name: "skips", q: catalog.Query{Package: "widget", Channels: []string{"fast"}, Installed: "widget.v1.2.0"}, want: "widget.v2.0.0"},
		{name: "an edge out of range is not taken", q: catalog.Query{Package: "widget", Channels: []string{"fast"}, Installed: "widget.v1.2.0", Range: "1.x"}, want: "widget.v1.2.0"},
		{name: "the installed bundle is the newest", q: catalog.Query{Package: "widget", Installed: "widget.v2.0.0"}, want: "widget.v2.0.0"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := c.Resolve(tt.q)
			if err != nil {
				t.Fatal(err)
			}
			got := ""
			if res.Selected != nil {
				got = res.Selected.Name
			}
			if got != tt.want {
				t.Errorf("selected %q, want %q", got, tt.want)
			}
			for _, cand := range res.Candidates {
				if w, ok := tt.why[cand.Bundle.Name]; ok && cand.Why != w {
					t.Errorf("%s: %s, want %s", cand.Bundle.Name, cand.Why, w)
				}
				if (cand.Why == catalog.WhySelected) != (cand.Bundle.Name == tt.want) {
					t.Errorf("%s: %s", cand.Bundle.Name, cand.Why)
				}
			}
			if len(res.Candidates) != len(c.Packages[tt.q.Package].Bundles) {
				t.Errorf("%d candidates, want every bundle of the package", len(res.Candidates))
			}
		})
	}
}

func TestResolveErrors(t *testing.T) {
	c := testCatalog(t)
	tests := []struct {
		q    catalog.Query
		want string
	}{
		{catalog.Query{Package: "nope"}, `package "nope" is not in the catalog`},
		{catalog.Query{Package: "widget", Channels: []string{"beta"}}, `package "widget" has no channel "beta" (it has fast, islands, stable)`},
		{catalog.Query{Package: "widget", Installed: "widget.v0.9.0"}, `the installed bundle "widget.v0.9.0" is not in package "widget"`},
		{catalog.Query{Package: "widget", Range: ">>1"}, `version constraint ">>1"`},
	}
	for _, tt := range tests {
		t.Run(tt.want, func(t *testing.T) {
			if _, err := c.Resolve(tt.q); err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error = %v, want %q", err, tt.want)
			}
		})
	}
}
