//go:build integration

package git

import (
	"context"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/utils/ptr"

	"github.com/rukpak/rukpak/api/v1alpha2"
	"github.com/rukpak/rukpak/internal/source/credentials"
)

// sourceTest resolves and unpacks one source from a fixture's server.
type sourceTest struct {
	name    string
	opts    serverOpts
	options []Option
	// src returns the source; an empty repository is the fixture's.
	src func(f *fixture) v1alpha2.GitSource
	// between runs after Resolve, before Unpack.
	between func(f *fixture)
	// wantRequests is the number of server requests Resolve makes (HTTP
	// requests, SSH sessions); nil: not checked.
	wantRequests *int
	wantCommit   func(f *fixture) plumbing.Hash
	// wantResolve and wantUnpack are the reasons of failures (transient
	// for a plain error); wantMsg is part of the message, with {repo} for
	// the fixture's URL.
	wantResolve, wantUnpack, wantMsg string
	wantFiles                        map[string]string
	// wantUploads are the upload-pack requests Unpack makes; nil: not
	// checked.
	wantUploads func(f *fixture) []upload
}

func c1(f *fixture) plumbing.Hash { return f.c1 }
func c2(f *fixture) plumbing.Hash { return f.c2 }

func branch(b string) func(*fixture) v1alpha2.GitSource {
	return func(*fixture) v1alpha2.GitSource { return v1alpha2.GitSource{Ref: v1alpha2.GitRef{Branch: b}} }
}

func tag(tg string) func(*fixture) v1alpha2.GitSource {
	return func(*fixture) v1alpha2.GitSource { return v1alpha2.GitSource{Ref: v1alpha2.GitRef{Tag: tg}} }
}

func shallowOf(h func(*fixture) plumbing.Hash) func(*fixture) []upload {
	return func(f *fixture) []upload { return []upload{{wants: []plumbing.Hash{h(f)}, depth: 1}} }
}

func TestSource(t *testing.T) {
	tests := []sourceTest{
		{name: "commit pinned: no request to resolve, a shallow fetch of the commit",
			src: func(f *fixture) v1alpha2.GitSource {
				return v1alpha2.GitSource{Ref: v1alpha2.GitRef{Commit: f.c1.String()}}
			},
			wantRequests: ptr.To(0), wantCommit: c1, wantFiles: v1Files, wantUploads: shallowOf(c1)},
		{name: "resolved commit is kept without a request",
			src: func(f *fixture) v1alpha2.GitSource {
				return v1alpha2.GitSource{Ref: v1alpha2.GitRef{Branch: "main"}, ResolvedCommit: f.c1.String()}
			},
			wantRequests: ptr.To(0), wantCommit: c1, wantFiles: v1Files, wantUploads: shallowOf(c1)},
		{name: "branch resolves to its head, fetched at depth 1",
			src: branch("main"), wantRequests: ptr.To(1), wantCommit: c2, wantFiles: v2Files, wantUploads: shallowOf(c2)},
		{name: "branch moved after resolve: the pinned commit is fetched by hash",
			src: branch("main"), between: (*fixture).moveMain, wantCommit: c2, wantFiles: v2Files, wantUploads: shallowOf(c2)},
		{name: "branch moved, server refuses wants by hash: full history of the branch",
			opts: serverOpts{noWantByHash: true}, src: branch("main"), between: (*fixture).moveMain,
			wantCommit: c2, wantFiles: v2Files,
			wantUploads: func(f *fixture) []upload { return []upload{{wants: []plumbing.Hash{f.c3}}} }},
		{name: "other branch",
			src: branch("release"), wantCommit: c1, wantFiles: v1Files},
		{name: "lightweight tag",
			src: tag("v1-light"), wantRequests: ptr.To(1), wantCommit: c1, wantFiles: v1Files, wantUploads: shallowOf(c1)},
		{name: "annotated tag resolves to the peeled commit",
			src: tag("v1"), wantRequests: ptr.To(1), wantCommit: c1, wantFiles: v1Files,
			wantUploads: func(f *fixture) []upload { return []upload{{wants: []plumbing.Hash{f.tagV1}, depth: 1}} }},
		{name: "annotated tag, server does not peel: the tag is fetched to peel it",
			opts: serverOpts{noPeel: true}, src: tag("v1"), wantRequests: ptr.To(2), wantCommit: c1, wantFiles: v1Files},
		{name: "directory",
			src: func(*fixture) v1alpha2.GitSource {
				return v1alpha2.GitSource{Ref: v1alpha2.GitRef{Branch: "main"}, Directory: "./manifests/"}
			},
			wantCommit: c2, wantFiles: map[string]string{"a.yaml": "a: 2", "sub/b.yaml": "b: 1"}},
		{name: "missing directory",
			src: func(*fixture) v1alpha2.GitSource {
				return v1alpha2.GitSource{Ref: v1alpha2.GitRef{Branch: "main"}, Directory: "deploy"}
			},
			wantCommit: c2, wantUnpack: v1alpha2.ReasonSourceNotFound, wantMsg: `directory "deploy" not found in commit`},
		{name: "directory escaping the repository",
			src: func(*fixture) v1alpha2.GitSource {
				return v1alpha2.GitSource{Ref: v1alpha2.GitRef{Branch: "main"}, Directory: "manifests/../../x"}
			},
			wantCommit: c2, wantUnpack: v1alpha2.ReasonUnpackFailed, wantMsg: "escapes"},
		{name: "unknown branch",
			src: branch("nope"), wantResolve: v1alpha2.ReasonSourceNotFound, wantMsg: `branch "nope" not found in repository {repo}`},
		{name: "unknown tag",
			src: tag("v9"), wantResolve: v1alpha2.ReasonSourceNotFound, wantMsg: `tag "v9" not found in repository {repo}`},
		{name: "unknown repository",
			src: func(f *fixture) v1alpha2.GitSource {
				return v1alpha2.GitSource{Repository: f.url + "-gone", Ref: v1alpha2.GitRef{Branch: "main"}}
			},
			wantResolve: v1alpha2.ReasonSourceNotFound, wantMsg: "repository {repo}-gone not found"},
		{name: "unknown commit",
			src: func(*fixture) v1alpha2.GitSource {
				return v1alpha2.GitSource{Ref: v1alpha2.GitRef{Commit: strings.Repeat("0123456789", 4)}}
			},
			wantCommit: func(*fixture) plumbing.Hash { return plumbing.NewHash(strings.Repeat("0123456789", 4)) },
			wantUnpack: v1alpha2.ReasonSourceNotFound, wantMsg: "commit 0123456789012345678901234567890123456789 not found in repository {repo}"},
		{name: "server failing uploads is retried",
			opts: serverOpts{failUploads: true}, src: branch("main"), wantCommit: c2,
			wantUnpack: transient, wantMsg: "fetching from {repo}"},
		{name: "symlink is refused",
			src: branch("links"), wantUnpack: v1alpha2.ReasonUnpackFailed, wantMsg: "m/link is a symbolic link",
			wantCommit: func(f *fixture) plumbing.Hash { return head(f, "links") }},
		{name: "submodule is skipped",
			src: branch("submodule"), wantFiles: map[string]string{"README": "s"},
			wantCommit: func(f *fixture) plumbing.Hash { return head(f, "submodule") }},
		{name: "file cap",
			options: []Option{WithMaxFiles(6)}, src: branch("main"), wantCommit: c2,
			wantUnpack: v1alpha2.ReasonResourceLimit, wantMsg: "more than the limit of 6 files and directories"},
		{name: "byte cap",
			options: []Option{WithMaxBytes(int64(len("#!/bin/sh\nv2a: 2b: 1")))}, src: branch("main"), wantCommit: c2, wantFiles: v2Files},
		{name: "byte cap exceeded",
			options: []Option{WithMaxBytes(int64(len("#!/bin/sh\nv2a: 2b: 1")) - 1)}, src: branch("main"), wantCommit: c2,
			wantUnpack: v1alpha2.ReasonResourceLimit, wantMsg: "repository {repo}: the content is larger than the limit of 19 bytes"},
		{name: "local paths are refused",
			src: func(*fixture) v1alpha2.GitSource {
				return v1alpha2.GitSource{Repository: "file:///etc", Ref: v1alpha2.GitRef{Branch: "main"}}
			},
			wantResolve: v1alpha2.ReasonUnpackFailed, wantMsg: "file URLs are not supported"},
	}
	tests = append(tests, authTests()...)
	tests = append(tests, sshTests()...)
	for _, tt := range tests {
		t.Run(tt.name, tt.run)
	}
}

// head returns the commit the branch b of f points to.
func head(f *fixture, b string) plumbing.Hash {
	ref, err := f.repo.sto.Reference(plumbing.NewBranchReferenceName(b))
	if err != nil {
		f.t.Fatal(err)
	}
	return ref.Hash()
}

func (tt sourceTest) run(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, tt.opts)
	g := tt.src(f)
	if g.Repository == "" {
		g.Repository = f.url
	}
	src := v1alpha2.BundleSource{Type: v1alpha2.SourceTypeGit, Git: &g}
	before := src.DeepCopy()
	msg := strings.ReplaceAll(tt.wantMsg, "{repo}", f.url)
	s := New(credentials.NewReader(env.Client, v1alpha2.SystemNamespace), tt.options...)

	pinned, err := s.Resolve(ctx, src)
	requests, _ := f.up.stats()
	if tt.wantResolve != "" {
		checkFailure(t, "Resolve", err, tt.wantResolve, msg)
		return
	}
	if err != nil {
		t.Fatalf("Resolve: %v", err)
	}
	if !equality.Semantic.DeepEqual(before, &src) {
		t.Fatal("Resolve modified its argument")
	}
	if tt.wantRequests != nil && requests != *tt.wantRequests {
		t.Errorf("Resolve made %d requests, want %d", requests, *tt.wantRequests)
	}
	if want := tt.wantCommit(f).String(); pinned.Git.ResolvedCommit != want {
		t.Fatalf("resolvedCommit = %s, want %s", pinned.Git.ResolvedCommit, want)
	}
	if tt.between != nil {
		tt.between(f)
	}
	_, uploadsBefore := f.up.stats()

	dir := t.TempDir()
	err = s.Unpack(ctx, pinned, dir)
	if tt.wantUnpack != "" {
		checkFailure(t, "Unpack", err, tt.wantUnpack, msg)
		return
	}
	if err != nil {
		t.Fatalf("Unpack: %v", err)
	}
	if got := readFiles(t, dir); !maps.Equal(got, tt.wantFiles) {
		t.Errorf("files = %v, want %v", got, tt.wantFiles)
	}
	if tt.wantUploads != nil {
		_, uploads := f.up.stats()
		got, want := uploads[len(uploadsBefore):], tt.wantUploads(f)
		if !slices.EqualFunc(got, want, func(a, b upload) bool { return a.depth == b.depth && slices.Equal(a.wants, b.wants) }) {
			t.Errorf("Unpack requested %v, want %v", got, want)
		}
	}
}
