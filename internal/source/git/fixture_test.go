//go:build integration

package git

import (
	"context"
	"encoding/pem"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/rukpak/rukpak/api/v1alpha2"
	"github.com/rukpak/rukpak/pkg/envtest"
)

var env *envtest.Env

func TestMain(m *testing.M) { envtest.Run(m, &env) }

// The content of the fixture's commits.
var (
	v1Files = map[string]string{"README": "v1", "manifests/a.yaml": "a: 1", "manifests/sub/b.yaml": "b: 1", "bin/run.sh": "#!/bin/sh\n"}
	v2Files = map[string]string{"README": "v2", "manifests/a.yaml": "a: 2", "manifests/sub/b.yaml": "b: 1", "bin/run.sh": "#!/bin/sh\n"}
)

// fixture is a repository served by one test server:
//
//	c1 (v1Files) ← c2 (v2Files) ← c3 (after moveMain)
//	main → c2, release → c1, tags v1-light → c1, v1 (annotated) → c1,
//	v2 (annotated) → c2; links → a commit with a symlink; submodule → a
//	commit with a submodule.
type fixture struct {
	t      *testing.T
	repo   *testRepo
	up     *uploadPack
	url    string
	c1, c2 plumbing.Hash
	c3     plumbing.Hash // set by moveMain
	tagV1  plumbing.Hash // the tag object of v1
	caPEM  []byte        // the server's certificate (HTTPS)
	ssh    *sshServer
	sshKey []byte // the client's private key (SSH)
	sync   func() // copies the repository to the server's disk (real git)
}

func newFixture(t *testing.T, opts serverOpts) *fixture {
	t.Helper()
	r := newTestRepo(t)
	f := &fixture{t: t, repo: r}
	f.c1 = r.commit("one", files(v1Files))
	f.c2 = r.commit("two", files(v2Files), f.c1)
	r.branch("main", f.c2)
	r.branch("release", f.c1)
	r.lightweightTag("v1-light", f.c1)
	f.tagV1 = r.annotatedTag("v1", f.c1)
	r.annotatedTag("v2", f.c2)
	r.branch("links", r.commit("links", map[string]file{"README": {content: "l"}, "m/link": {content: "../README", mode: filemode.Symlink}}))
	r.branch("submodule", r.commit("submodule", map[string]file{"README": {content: "s"}, "vendor/lib": {content: f.c1.String(), mode: filemode.Submodule}}))

	f.up = &uploadPack{opts: opts, repo: r.sto}
	switch {
	case opts.ssh:
		key, pub := newClientKey(t)
		f.sshKey = key
		f.ssh = startSSH(t, f.up, pub)
		f.url = f.ssh.url()
	case opts.realGit:
		f.url = f.serveRealGit(opts)
	case opts.tls:
		srv := httptest.NewTLSServer(f.up)
		t.Cleanup(srv.Close)
		f.url = srv.URL + repoPath
		f.caPEM = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
	default:
		srv := httptest.NewServer(f.up)
		t.Cleanup(srv.Close)
		f.url = srv.URL + repoPath
	}
	return f
}

// files makes regular files, executable under bin/.
func files(m map[string]string) map[string]file {
	out := map[string]file{}
	for p, c := range m {
		f := file{content: c}
		if strings.HasPrefix(p, "bin/") {
			f.mode = filemode.Executable
		}
		out[p] = f
	}
	return out
}

// moveMain commits c3 on top of main.
func (f *fixture) moveMain() {
	f.c3 = f.repo.commit("three", files(map[string]string{"README": "v3"}), f.c2)
	f.repo.branch("main", f.c3)
	if f.sync != nil {
		f.sync()
	}
}

// secret creates a Secret with data in rukpak-system and returns its
// reference.
func (f *fixture) secret(data map[string]string) *v1alpha2.LocalObjectReference {
	f.t.Helper()
	s := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: envtest.UniqueName("git"), Namespace: v1alpha2.SystemNamespace},
		StringData: data,
	}
	if err := env.Client.Create(context.Background(), s); err != nil {
		f.t.Fatalf("creating Secret: %v", err)
	}
	f.t.Cleanup(func() { _ = env.Client.Delete(context.Background(), s) })
	return &v1alpha2.LocalObjectReference{Name: s.Name}
}

// sshAuth returns the auth of an SSH source whose Secret has the client's
// key and knownHosts.
func (f *fixture) sshAuth(knownHosts string) *v1alpha2.GitAuth {
	data := map[string]string{corev1.SSHAuthPrivateKey: string(f.sshKey)}
	if knownHosts != "" {
		data[KnownHostsKey] = knownHosts
	}
	return &v1alpha2.GitAuth{Secret: *f.secret(data)}
}

// readFiles returns the content of every file under root by slash path,
// checking that files under bin/ are 0755, other files 0644 and
// directories 0755.
func readFiles(t *testing.T, root string) map[string]string {
	t.Helper()
	got := map[string]string{}
	err := filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		rel = filepath.ToSlash(rel)
		want := os.FileMode(0o644)
		switch {
		case d.IsDir():
			want = 0o755 | os.ModeDir
		case !info.Mode().IsRegular():
			t.Errorf("%s is not a regular file: %v", rel, info.Mode())
		case strings.HasPrefix(rel, "bin/"):
			want = 0o755
		}
		if rel != "." && info.Mode() != want {
			t.Errorf("%s has mode %v, want %v", rel, info.Mode(), want)
		}
		if d.IsDir() {
			return nil
		}
		b, err := os.ReadFile(p)
		got[rel] = string(b)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return got
}
