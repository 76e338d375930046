//go:build integration

package git

import (
	"context"
	"fmt"
	"maps"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/rukpak/rukpak/api/v1alpha2"
	"github.com/rukpak/rukpak/internal/source"
	"github.com/rukpak/rukpak/internal/source/credentials"
)

// versionFixture is a fixture whose repository also has one commit per
// version, tagged with it (annotated or lightweight), its file "version"
// holding the tag, and two tags that are not versions ("latest", "1.5")
// on the newest commit.
type versionFixture struct {
	*fixture
	commits map[string]plumbing.Hash // by tag
	last    plumbing.Hash
}

func newVersionFixture(t *testing.T, opts serverOpts) *versionFixture {
	t.Helper()
	f := &versionFixture{fixture: newFixture(t, opts), commits: map[string]plumbing.Hash{}, last: plumbing.ZeroHash}
	for i, tg := range []string{"v1.0.0", "1.2.0", "v1.3.0", "1.4.0-rc.1", "2.0.0"} {
		f.tagVersion(tg, i%2 == 0)
	}
	newest := f.repo.commit("newest", files(map[string]string{"version": "latest"}), f.last)
	f.repo.lightweightTag("latest", newest)
	f.repo.annotatedTag("1.5", newest)
	f.syncRepo()
	return f
}

// tagVersion commits a version and tags it.
func (f *versionFixture) tagVersion(tg string, annotated bool) {
	parents := []plumbing.Hash{}
	if !f.last.IsZero() {
		parents = append(parents, f.last)
	}
	c := f.repo.commit(tg, files(map[string]string{"version": tg}), parents...)
	if annotated {
		f.repo.annotatedTag(tg, c)
	} else {
		f.repo.lightweightTag(tg, c)
	}
	f.commits[tg], f.last = c, c
}

// syncRepo copies the repository to a real git server's disk.
func (f *versionFixture) syncRepo() {
	if f.sync != nil {
		f.sync()
	}
}

// source is a source of the repository with ref.semver.
func (f *versionFixture) source(constraint string) v1alpha2.BundleSource {
	return v1alpha2.BundleSource{Type: v1alpha2.SourceTypeGit, Git: &v1alpha2.GitSource{
		Repository: f.url, Ref: v1alpha2.GitRef{Semver: constraint},
	}}
}

func TestSemver(t *testing.T) {
	servers := map[string]serverOpts{"peeled": {}, "not peeled": {noPeel: true}, "real git": {realGit: true}}
	for server, opts := range servers {
		t.Run(server, func(t *testing.T) {
			f := newVersionFixture(t, opts)
			s := New(credentials.NewReader(env.Client, v1alpha2.SystemNamespace), WithWorkDir(t.TempDir()))
			for _, tt := range []struct{ constraint, want string }{
				{">=1.2 <2", "v1.3.0"},
				{"1.x", "v1.3.0"},
				{"~1.2.0", "1.2.0"},
				{"1.0.0", "v1.0.0"},
				{">=1.4.0-0 <2", "1.4.0-rc.1"}, // a pre-release only when the range names one
				{"*", "2.0.0"},                 // never "latest"
			} {
				t.Run(tt.constraint, func(t *testing.T) {
					src := f.source(tt.constraint)
					if !s.Floating(src) {
						t.Fatal("a semver source is not floating")
					}
					pinned, err := s.Resolve(context.Background(), src)
					if err != nil {
						t.Fatalf("Resolve: %v", err)
					}
					if src.Git.ResolvedCommit != "" || src.Git.ResolvedTag != "" {
						t.Fatal("Resolve modified its argument")
					}
					if got, want := pinned.Git.ResolvedCommit, f.commits[tt.want].String(); got != want {
						t.Fatalf("resolvedCommit = %s, want %s (of %s)", got, want, tt.want)
					}
					if pinned.Git.ResolvedTag != tt.want {
						t.Fatalf("resolvedTag = %q, want %q", pinned.Git.ResolvedTag, tt.want)
					}
					if s.Floating(pinned) {
						t.Error("the pinned source is floating")
					}
					dir := t.TempDir()
					if err := s.Unpack(context.Background(), pinned, dir); err != nil {
						t.Fatalf("Unpack: %v", err)
					}
					if got, want := readFiles(t, dir), map[string]string{"version": tt.want}; !maps.Equal(got, want) {
						t.Fatalf("unpacked %v, want %v", got, want)
					}
				})
			}
		})
	}
}

func TestSemverFollows(t *testing.T) {
	f := newVersionFixture(t, serverOpts{})
	s := New(credentials.NewReader(env.Client, v1alpha2.SystemNamespace), WithWorkDir(t.TempDir()))
	spec := f.source(">=1.2 <2")
	first, err := s.Resolve(context.Background(), spec)
	if err != nil || first.Git.ResolvedTag != "v1.3.0" {
		t.Fatalf("Resolve: %v, %v", first.Git, err)
	}
	f.tagVersion("1.6.0", true)
	f.tagVersion("2.1.0", false)       // out of range
	f.tagVersion("1.7.0-beta.1", true) // a pre-release the range does not name
	next, err := s.Resolve(context.Background(), spec)
	if err != nil {
		t.Fatalf("Resolve: %v", err)
	}
	if next.Git.ResolvedTag != "1.6.0" || next.Git.ResolvedCommit != f.commits["1.6.0"].String() {
		t.Fatalf("resolved %s at %s, want 1.6.0 at %s", next.Git.ResolvedTag, next.Git.ResolvedCommit, f.commits["1.6.0"])
	}
	dir := t.TempDir()
	if err := s.Unpack(context.Background(), next, dir); err != nil {
		t.Fatalf("Unpack: %v", err)
	}
	if got := readFiles(t, dir)["version"]; got != "1.6.0" {
		t.Fatalf("unpacked version %q, want 1.6.0", got)
	}
}

// TestSemverForward checks that a tag selected last, and gone since, stays
// selected while it is newer than what the repository has, and that an
// older one is left for the newest.
func TestSemverForward(t *testing.T) {
	f := newVersionFixture(t, serverOpts{})
	s := New(credentials.NewReader(env.Client, v1alpha2.SystemNamespace), WithWorkDir(t.TempDir()))
	spec := f.source(">=1.2 <2")
	// Resolved as the manager resolves it, through a source.Registry.
	forward := func(previous v1alpha2.BundleSource) (v1alpha2.BundleSource, error) {
		res, err := source.Registry{v1alpha2.SourceTypeGit: s}.ResolveFrom(context.Background(), []v1alpha2.BundleSource{spec}, []v1alpha2.BundleSource{previous}, false, nil)
		if err != nil {
			return v1alpha2.BundleSource{}, err
		}
		return res.Pinned[0], nil
	}
	gone := *spec.DeepCopy()
	gone.Git.ResolvedTag, gone.Git.ResolvedCommit = "v1.9.0", f.c1.String() // taken off the repository since
	got, err := forward(gone)
	if err != nil || got.Git.ResolvedTag != "v1.9.0" || got.Git.ResolvedCommit != f.c1.String() {
		t.Fatalf("resolving forward from v1.9.0 = %v, %v; want v1.9.0 kept", got.Git, err)
	}
	older := *spec.DeepCopy()
	older.Git.ResolvedTag, older.Git.ResolvedCommit = "1.2.0", f.commits["1.2.0"].String()
	got, err = forward(older)
	if err != nil || got.Git.ResolvedTag != "v1.3.0" || got.Git.ResolvedCommit != f.commits["v1.3.0"].String() {
		t.Fatalf("resolving forward from 1.2.0 = %v, %v; want v1.3.0", got.Git, err)
	}
}

func TestSemverRefused(t *testing.T) {
	f := newVersionFixture(t, serverOpts{})
	s := New(credentials.NewReader(env.Client, v1alpha2.SystemNamespace), WithWorkDir(t.TempDir()))
	// The fixture's tags: v1-light, v1, v2, latest, 1.5 and five versions.
	published := "(10 tags published, 5 of them versions)"
	for _, tt := range []struct{ constraint, reason, msg string }{
		{"3.x", v1alpha2.ReasonSourceNotFound, `has no tag in "3.x" ` + published},
		{"1.4.x", v1alpha2.ReasonSourceNotFound, `has no tag in "1.4.x" ` + published},
		{"1.5.x", v1alpha2.ReasonSourceNotFound, `has no tag in "1.5.x" ` + published},
		{"1.2.1", v1alpha2.ReasonSourceNotFound, `has no tag in "1.2.1" ` + published},
		{"1.5", v1alpha2.ReasonUnpackFailed, `version "1.5": not a semantic version`},
		{">=1.x.y", v1alpha2.ReasonUnpackFailed, `version constraint ">=1.x.y"`},
	} {
		t.Run(tt.constraint, func(t *testing.T) {
			_, err := s.Resolve(context.Background(), f.source(tt.constraint))
			checkFailure(t, "Resolve", err, tt.reason, fmt.Sprintf("repository %s", f.url))
			checkFailure(t, "Resolve", err, tt.reason, tt.msg)
		})
	}
}
