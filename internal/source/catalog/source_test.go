//go:build integration

package catalog

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/equality"

	"github.com/rukpak/rukpak/api/v1alpha2"
	"github.com/rukpak/rukpak/internal/archive"
	"github.com/rukpak/rukpak/internal/catalog"
	"github.com/rukpak/rukpak/internal/source"
	"github.com/rukpak/rukpak/internal/source/credentials"
	"github.com/rukpak/rukpak/internal/source/image"
	"github.com/rukpak/rukpak/pkg/envtest"
	"github.com/rukpak/rukpak/pkg/failure"
)

var env *envtest.Env

func TestMain(m *testing.M) { envtest.Run(m, &env) }

// The bundles of the test catalog.
var (
	greeter100 = bundleFix{pkg: "greeter", version: "1.0.0"}
	greeter110 = bundleFix{pkg: "greeter", version: "1.1.0"}
	greeter120 = bundleFix{pkg: "greeter", version: "1.2.0"}
	greeter200 = bundleFix{pkg: "greeter", version: "2.0.0"}
	needy100   = bundleFix{pkg: "needy", version: "1.0.0", requires: "dep"}
	allBundles = []bundleFix{greeter100, greeter110, greeter120, greeter200, needy100}
)

// fixtures are what pushFixtures pushed: bundle image digests by bundle
// name, catalog image digests by repository.
type fixtures struct {
	host     string
	bundles  map[string]string
	catalogs map[string]string
}

// greeterBlobs are the blobs of package greeter: channel stable is
// 1.0.0 ← 1.1.0 ← 1.2.0 by replaces, channel fast has 2.0.0, which skips
// every 1.x by its skipRange.
func greeterBlobs(host string) []any {
	return []any{
		pkgBlob("greeter", "stable"),
		channelBlob("greeter", "stable",
			obj{"name": greeter100.name()},
			obj{"name": greeter110.name(), "replaces": greeter100.name()},
			obj{"name": greeter120.name(), "replaces": greeter110.name()}),
		channelBlob("greeter", "fast", obj{"name": greeter200.name(), "skipRange": ">=1.0.0 <2.0.0"}),
		bundleBlob(host, greeter100), bundleBlob(host, greeter110), bundleBlob(host, greeter120), bundleBlob(host, greeter200),
	}
}

// pushFixtures pushes the bundle images and catalogs/ops (the catalog
// under /configs) and catalogs/labelled (under the directory its label
// names) to r.
func pushFixtures(t *testing.T, r *testRegistry) fixtures {
	t.Helper()
	f := fixtures{host: r.host, bundles: map[string]string{}, catalogs: map[string]string{}}
	for _, b := range allBundles {
		f.bundles[b.name()] = r.push(t, "bundles/"+b.pkg+":v"+b.version, imageOf(t, bundleFiles(b), nil))
	}
	greeter := fbc(t, greeterBlobs(r.host)...)
	needy := fbc(t, pkgBlob("needy", "stable"), channelBlob("needy", "stable", obj{"name": needy100.name()}), bundleBlob(r.host, needy100))
	f.catalogs["ops"] = r.push(t, "catalogs/ops:latest", imageOf(t, map[string]string{
		"configs/greeter/catalog.json": greeter,
		"configs/needy/catalog.json":   needy,
		"bin/opm":                      "not a binary",
	}, nil))
	f.catalogs["labelled"] = r.push(t, "catalogs/labelled:latest", imageOf(t, map[string]string{
		"fbc/catalog.json": greeter,
	}, map[string]string{ConfigsLabel: "/fbc"}))
	f.catalogs["empty"] = r.push(t, "catalogs/empty:latest", imageOf(t, map[string]string{"README": "no catalog"}, nil))
	return f
}

func newSource(opts ...Option) *Source {
	return New(image.New(credentials.NewReader(env.Client, v1alpha2.SystemNamespace)), opts...)
}

func catalogSrc(f fixtures, repo, pkg string) v1alpha2.BundleSource {
	return v1alpha2.BundleSource{Type: v1alpha2.SourceTypeCatalog, Catalog: &v1alpha2.CatalogSource{
		Image: f.host + "/catalogs/" + repo + ":latest", Package: pkg, InsecureSkipTLSVerify: true,
	}}
}

func TestResolveAndUnpack(t *testing.T) {
	r := newRegistry(t)
	f := pushFixtures(t, r)
	tests := []struct {
		name      string
		repo, pkg string
		channels  []string
		version   string
		edges     v1alpha2.UpgradeEdges
		installed string // the installed bundle's name, if any
		opts      []Option

		want       bundleFix
		wantReason string // reason of a Resolve failure
		wantMsg    string // part of its message
	}{
		{name: "newest of any channel", repo: "ops", pkg: "greeter", want: greeter200},
		{name: "newest of a channel", repo: "ops", pkg: "greeter", channels: []string{"stable"}, want: greeter120},
		{name: "newest in a range", repo: "ops", pkg: "greeter", version: "<1.2", want: greeter110},
		{name: "an exact version", repo: "ops", pkg: "greeter", version: "1.0.0", want: greeter100},
		{name: "replaces edge from the installed bundle", repo: "ops", pkg: "greeter", channels: []string{"stable"},
			installed: greeter100.name(), want: greeter110},
		{name: "skipRange edge from the installed bundle", repo: "ops", pkg: "greeter",
			installed: greeter110.name(), want: greeter200},
		{name: "self-certified: any version in range", repo: "ops", pkg: "greeter", channels: []string{"stable"},
			installed: greeter100.name(), edges: v1alpha2.UpgradeEdgesSelfCertified, want: greeter120},
		{name: "self-certified downgrade", repo: "ops", pkg: "greeter", version: "1.0.0",
			installed: greeter120.name(), edges: v1alpha2.UpgradeEdgesSelfCertified, want: greeter100},
		{name: "no edge leads into the range", repo: "ops", pkg: "greeter", version: "1.0.0", installed: greeter120.name(),
			wantReason: v1alpha2.ReasonSourceNotFound, wantMsg: "greeter.v1.0.0 (1.0.0): NotOnUpgradeEdge"},
		{name: "installed bundle not in the catalog", repo: "ops", pkg: "greeter", installed: "greeter.v0.9.0",
			wantReason: v1alpha2.ReasonSourceNotFound, wantMsg: `the installed bundle "greeter.v0.9.0" is not in package "greeter"`},
		{name: "catalog under the label's directory", repo: "labelled", pkg: "greeter", channels: []string{"stable"}, want: greeter120},
		{name: "refuses a bundle with dependencies", repo: "ops", pkg: "needy",
			wantReason: v1alpha2.ReasonDependenciesUnsupported, wantMsg: "bundle needy.v1.0.0 of package \"needy\" declares dependencies (olm.package.required"},
		{name: "missing package", repo: "ops", pkg: "nope",
			wantReason: v1alpha2.ReasonSourceNotFound, wantMsg: `package "nope" is not in the catalog`},
		{name: "missing channel", repo: "ops", pkg: "greeter", channels: []string{"beta"},
			wantReason: v1alpha2.ReasonSourceNotFound, wantMsg: `package "greeter" has no channel "beta"`},
		{name: "nothing in range", repo: "ops", pkg: "greeter", version: ">=3",
			wantReason: v1alpha2.ReasonSourceNotFound, wantMsg: "no bundle of package \"greeter\" qualifies: greeter.v2.0.0 (2.0.0): OutOfRange"},
		{name: "no configs directory", repo: "empty", pkg: "greeter",
			wantReason: v1alpha2.ReasonUnpackFailed, wantMsg: "has no configs directory /configs"},
		{name: "catalog over its byte limit", repo: "ops", pkg: "greeter", opts: []Option{WithLimits(catalog.Limits{MaxBytes: 100, MaxBlobs: 100})},
			wantReason: v1alpha2.ReasonResourceLimit, wantMsg: "more than 100 bytes"},
		{name: "catalog over its blob limit", repo: "ops", pkg: "greeter", opts: []Option{WithLimits(catalog.Limits{MaxBytes: 1 << 20, MaxBlobs: 3})},
			wantReason: v1alpha2.ReasonResourceLimit, wantMsg: "more than 3 blobs"},
		{name: "catalog image over its layer bytes", repo: "ops", pkg: "greeter",
			opts:       []Option{WithPullLimits(image.PullLimits{Archive: archive.DefaultLimits(), MaxLayerBytes: 64})},
			wantReason: v1alpha2.ReasonResourceLimit, wantMsg: "bytes of layers, more than the limit of 64"},
		{name: "catalog image over its unpacked bytes", repo: "ops", pkg: "greeter",
			opts:       []Option{WithPullLimits(image.PullLimits{Archive: archive.Limits{MaxBytes: 64}})},
			wantReason: v1alpha2.ReasonUnpackFailed, wantMsg: "exceed the limit of 64 bytes"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			s := newSource(tt.opts...)
			src := catalogSrc(f, tt.repo, tt.pkg)
			src.Catalog.Channels, src.Catalog.Version, src.Catalog.UpgradeEdges = tt.channels, tt.version, tt.edges
			var installed []v1alpha2.BundleSource
			if tt.installed != "" {
				installed = []v1alpha2.BundleSource{{Type: v1alpha2.SourceTypeCatalog, Catalog: &v1alpha2.CatalogSource{
					Image: src.Catalog.Image, Package: tt.pkg, ResolvedBundle: tt.installed}}}
			}
			reg := source.Registry{v1alpha2.SourceTypeCatalog: s}.WithDeadline(0)
			if !reg.Floating([]v1alpha2.BundleSource{src}) {
				t.Fatal("an unpinned catalog source is not floating")
			}
			res, err := reg.ResolveFrom(ctx, []v1alpha2.BundleSource{src}, nil, false, installed)
			pinned := res.Pinned
			if tt.wantReason != "" {
				if err == nil {
					t.Fatalf("Resolve = %+v, want a %s failure", pinned, tt.wantReason)
				}
				if got := failure.Reason(err, ""); got != tt.wantReason || !strings.Contains(err.Error(), tt.wantMsg) {
					t.Fatalf("Resolve error = %q (reason %q), want reason %q and %q", err, got, tt.wantReason, tt.wantMsg)
				}
				return
			}
			if err != nil {
				t.Fatalf("Resolve: %v", err)
			}
			checkPinned(t, f, tt.repo, pinned[0], tt.want)
			if reg.Floating(pinned) {
				t.Error("a pinned catalog source is floating")
			}
			// A pinned source resolves to itself without a request.
			before := r.blobs.Load()
			again, err := s.Resolve(ctx, pinned[0])
			if err != nil || !equality.Semantic.DeepEqual(again, pinned[0]) {
				t.Fatalf("resolving the pinned source again = %+v, %v", again.Catalog, err)
			}
			if n := r.blobs.Load() - before; n != 0 {
				t.Errorf("resolving a pinned source fetched %d blobs", n)
			}
			dir := t.TempDir()
			if err := s.Unpack(ctx, pinned[0], dir); err != nil {
				t.Fatalf("Unpack: %v", err)
			}
			checkFiles(t, dir, bundleFiles(tt.want))
		})
	}
}

// checkPinned checks that p pins bundle want by digest.
func checkPinned(t *testing.T, f fixtures, repo string, p v1alpha2.BundleSource, want bundleFix) {
	t.Helper()
	c := p.Catalog
	wantImage := f.host + "/bundles/" + want.pkg + "@" + f.bundles[want.name()]
	if c.ResolvedBundle != want.name() || c.ResolvedVersion != want.version || c.ResolvedImage != wantImage ||
		c.CatalogDigest != f.catalogs[repo] {
		t.Fatalf("pinned to %s %s %s (catalog %s), want %s %s %s (catalog %s)",
			c.ResolvedBundle, c.ResolvedVersion, c.ResolvedImage, c.CatalogDigest,
			want.name(), want.version, wantImage, f.catalogs[repo])
	}
}

// checkFiles checks that dir holds exactly want (path → content).
func checkFiles(t *testing.T, dir string, want map[string]string) {
	t.Helper()
	got := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		got[filepath.ToSlash(rel)] = string(b)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(want) {
		t.Fatalf("unpacked %v, want %v", got, want)
	}
	for p, w := range want {
		if got[p] != w {
			t.Errorf("%s = %q, want %q", p, got[p], w)
		}
	}
}

// TestCatalogReadOncePerDigest checks that every source following a
// catalog shares its parse, and that a new digest is read again and the
// old one evicted.
func TestCatalogReadOncePerDigest(t *testing.T) {
	ctx := context.Background()
	r := newRegistry(t)
	f := pushFixtures(t, r)
	s := newSource(WithCacheSize(1))
	a, b := catalogSrc(f, "ops", "greeter"), catalogSrc(f, "ops", "greeter")
	b.Catalog.Channels = []string{"stable"}
	if _, err := s.Resolve(ctx, a); err != nil {
		t.Fatal(err)
	}
	first := r.blobs.Load()
	if first == 0 {
		t.Fatal("the catalog image was not read")
	}
	pb, err := s.Resolve(ctx, b)
	if err != nil {
		t.Fatal(err)
	}
	if n := r.blobs.Load() - first; n != 0 {
		t.Errorf("a second follower of the catalog fetched %d blobs, want 0", n)
	}
	checkPinned(t, f, "ops", pb, greeter120)

	// A new catalog at the tag: 1.2.0 leaves channel stable.
	blobs := greeterBlobs(r.host)
	blobs[1] = channelBlob("greeter", "stable", obj{"name": greeter100.name()}, obj{"name": greeter110.name(), "replaces": greeter100.name()})
	f.catalogs["ops"] = r.push(t, "catalogs/ops:latest", imageOf(t, map[string]string{"configs/catalog.json": fbc(t, blobs...)}, nil))
	second := r.blobs.Load()
	pb, err = s.Resolve(ctx, b)
	if err != nil {
		t.Fatal(err)
	}
	if r.blobs.Load() == second {
		t.Error("the new catalog digest was not read")
	}
	checkPinned(t, f, "ops", pb, greeter110)
	if n := s.cache.len(); n != 1 {
		t.Errorf("the cache holds %d digests, want 1", n)
	}
}
