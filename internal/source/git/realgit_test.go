//go:build integration

package git

import (
	"bytes"
	"io"
	"net/http"
	"net/http/cgi"
	"net/http/httptest"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/go-git/go-billy/v5/osfs"
	gogit "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/cache"
	"github.com/go-git/go-git/v5/plumbing/protocol/packp"
	"github.com/go-git/go-git/v5/plumbing/storer"
	"github.com/go-git/go-git/v5/storage/filesystem"
	"k8s.io/utils/ptr"

	"github.com/rukpak/rukpak/api/v1alpha2"
)

// serveRealGit serves the fixture's repository with `git http-backend`,
// which really honours depth and wants by hash (go-git's server does not),
// and returns its URL. It needs the git binary (.ci/run installs it).
func (f *fixture) serveRealGit(opts serverOpts) string {
	t := f.t
	t.Helper()
	bin, err := exec.LookPath("git")
	if err != nil {
		t.Fatal("the git binary is needed to serve repositories with git http-backend (apt-get install git)")
	}
	root := t.TempDir()
	dir := filepath.Join(root, strings.TrimPrefix(repoPath, "/"))
	disk := filesystem.NewStorage(osfs.New(dir), cache.NewObjectLRUDefault())
	if _, err := gogit.Init(disk, nil); err != nil {
		t.Fatal(err)
	}
	f.sync = func() { copyRepo(t, f.repo.sto, disk) }
	f.sync()
	if !opts.noWantByHash {
		if out, err := exec.Command(bin, "-C", dir, "config", "uploadpack.allowReachableSHA1InWant", "true").CombinedOutput(); err != nil {
			t.Fatalf("git config: %v: %s", err, out)
		}
	}
	backend := &cgi.Handler{Path: bin, Args: []string{"http-backend"}, Env: []string{"GIT_PROJECT_ROOT=" + root, "GIT_HTTP_EXPORT_ALL=1"}}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.up.count()
		if r.Method == http.MethodPost {
			body, err := io.ReadAll(r.Body)
			if err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			req := packp.NewUploadPackRequest()
			if err := req.Decode(bytes.NewReader(body)); err == nil {
				f.up.record(req)
			}
			r.Body = io.NopCloser(bytes.NewReader(body))
		}
		backend.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv.URL + repoPath
}

// copyRepo copies every object and reference of src into dst.
func copyRepo(t *testing.T, src, dst storer.Storer) {
	t.Helper()
	objs, err := src.IterEncodedObjects(plumbing.AnyObject)
	if err != nil {
		t.Fatal(err)
	}
	err = objs.ForEach(func(o plumbing.EncodedObject) error {
		_, err := dst.SetEncodedObject(o)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	refs, err := src.IterReferences()
	if err != nil {
		t.Fatal(err)
	}
	if err := refs.ForEach(dst.SetReference); err != nil {
		t.Fatal(err)
	}
}

// TestRealGitServer runs the main cases against git http-backend.
func TestRealGitServer(t *testing.T) {
	real := serverOpts{realGit: true}
	tests := []sourceTest{
		{name: "branch at depth 1", opts: real, src: branch("main"),
			wantRequests: ptr.To(1), wantCommit: c2, wantFiles: v2Files, wantUploads: shallowOf(c2)},
		{name: "commit pinned, fetched by hash at depth 1", opts: real,
			src: func(f *fixture) v1alpha2.GitSource {
				return v1alpha2.GitSource{Ref: v1alpha2.GitRef{Commit: f.c1.String()}}
			},
			wantRequests: ptr.To(0), wantCommit: c1, wantFiles: v1Files, wantUploads: shallowOf(c1)},
		{name: "branch moved", opts: real, src: branch("main"), between: (*fixture).moveMain,
			wantCommit: c2, wantFiles: v2Files, wantUploads: shallowOf(c2)},
		{name: "branch moved, wants by hash not allowed", opts: serverOpts{realGit: true, noWantByHash: true},
			src: branch("main"), between: (*fixture).moveMain, wantCommit: c2, wantFiles: v2Files,
			wantUploads: func(f *fixture) []upload { return []upload{{wants: []plumbing.Hash{f.c3}}} }},
		{name: "annotated tag, peeled by the server", opts: real, src: tag("v1"),
			wantRequests: ptr.To(1), wantCommit: c1, wantFiles: v1Files},
		{name: "lightweight tag", opts: real, src: tag("v1-light"),
			wantRequests: ptr.To(1), wantCommit: c1, wantFiles: v1Files},
		{name: "unknown commit", opts: real,
			src: func(*fixture) v1alpha2.GitSource {
				return v1alpha2.GitSource{Ref: v1alpha2.GitRef{Commit: strings.Repeat("0123456789", 4)}}
			},
			wantCommit: func(*fixture) plumbing.Hash { return plumbing.NewHash(strings.Repeat("0123456789", 4)) },
			wantUnpack: v1alpha2.ReasonSourceNotFound, wantMsg: "not found in repository {repo}"},
	}
	for _, tt := range tests {
		t.Run(tt.name, tt.run)
	}
}
