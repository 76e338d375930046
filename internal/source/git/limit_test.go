//go:build integration

package git

import (
	"context"
	"crypto/rand"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/ssh/knownhosts"

	"github.com/rukpak/rukpak/api/v1alpha2"
	"github.com/rukpak/rukpak/internal/source"
	"github.com/rukpak/rukpak/internal/source/credentials"
)

// addBig adds the branches big (a commit with 2 MiB of random bytes, which
// do not compress) and bomb (a commit with 64 MiB of zeros, which compress
// to a few hundred KiB) to f's repository.
func addBig(f *fixture) {
	random := make([]byte, 2<<20)
	if _, err := rand.Read(random); err != nil {
		f.t.Fatal(err)
	}
	f.repo.branch("big", f.repo.commit("big", map[string]file{"big.bin": {content: string(random)}}))
	f.repo.branch("bomb", f.repo.commit("bomb", map[string]file{"zeros": {content: strings.Repeat("\x00", 64<<20)}}))
}

// TestFetchCaps fetches repositories bigger than the caps: what the server
// sends, what the pack inflates to (a compression bomb) and the tree.
func TestFetchCaps(t *testing.T) {
	tests := []struct {
		name    string
		ssh     bool
		branch  string
		options []Option
		reason  string
		msg     string
	}{
		{name: "bytes received over the cap (HTTP)", branch: "big", options: []Option{WithMaxFetchBytes(1 << 20)},
			reason: v1alpha2.ReasonResourceLimit, msg: "repository {repo} sent more than the limit of 1048576 bytes"},
		{name: "bytes received over the cap (SSH)", ssh: true, branch: "big", options: []Option{WithMaxFetchBytes(1 << 20)},
			reason: v1alpha2.ReasonResourceLimit, msg: "repository {repo} sent more than the limit of 1048576 bytes"},
		{name: "compression bomb refused before go-git reads it", branch: "bomb", options: []Option{WithMaxBytes(1 << 20)},
			reason: v1alpha2.ReasonResourceLimit, msg: "repository {repo}: object 0 of the pack inflates to more than the limit of 5242880 bytes"},
		{name: "compression bomb over SSH", ssh: true, branch: "bomb", options: []Option{WithMaxBytes(1 << 20)},
			reason: v1alpha2.ReasonResourceLimit, msg: "of the pack inflates to more than the limit of 5242880 bytes"},
		{name: "tree over the cap", branch: "big", options: []Option{WithMaxBytes(1 << 20), WithMaxFetchBytes(8 << 20)},
			reason: v1alpha2.ReasonResourceLimit, msg: "repository {repo}: the content is larger than the limit of 1048576 bytes (at big.bin)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, serverOpts{ssh: tt.ssh})
			addBig(f)
			g := v1alpha2.GitSource{Repository: f.url, Ref: v1alpha2.GitRef{Branch: tt.branch}}
			if tt.ssh {
				g.Auth = f.sshAuth(f.ssh.knownHosts(f.ssh.hostKey.PublicKey()))
			}
			s := New(credentials.NewReader(env.Client, v1alpha2.SystemNamespace), tt.options...)
			pinned, err := s.Resolve(context.Background(), v1alpha2.BundleSource{Type: v1alpha2.SourceTypeGit, Git: &g})
			if err != nil {
				t.Fatalf("Resolve: %v", err)
			}
			parent := t.TempDir()
			dir := filepath.Join(parent, "content")
			if err := os.Mkdir(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			err = s.Unpack(context.Background(), pinned, dir)
			checkFailure(t, "Unpack", err, tt.reason, strings.ReplaceAll(tt.msg, "{repo}", f.url))
			// The temporary repository is gone with everything in it.
			if entries, _ := os.ReadDir(parent); len(entries) != 1 {
				t.Errorf("%s holds %v after Unpack, want only the content directory", parent, entries)
			}
		})
	}
}

// TestDeadline points git sources at servers that accept connections and
// then never answer or trickle, and checks that resolving gives up at the
// deadline with a message naming the repository and the deadline.
func TestDeadline(t *testing.T) {
	const deadline = time.Second
	silent := silentServer(t)
	trickle := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/x-git-upload-pack-advertisement")
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write([]byte("fff0")) // a pkt-line of 65520 bytes, sent a byte at a time
		for {
			if _, err := w.Write([]byte("a")); err != nil {
				return
			}
			w.(http.Flusher).Flush()
			select {
			case <-r.Context().Done():
				return
			case <-time.After(100 * time.Millisecond):
			}
		}
	}))
	t.Cleanup(trickle.Close)
	f := newFixture(t, serverOpts{ssh: true})
	silentHosts := knownhosts.Line([]string{knownhosts.Normalize(silent)}, f.ssh.hostKey.PublicKey()) + "\n"

	tests := []struct {
		name string
		g    func() v1alpha2.GitSource
	}{
		{name: "HTTP server that never answers", g: func() v1alpha2.GitSource {
			return v1alpha2.GitSource{Repository: "http://" + silent + "/repo.git"}
		}},
		{name: "HTTP server that trickles", g: func() v1alpha2.GitSource {
			return v1alpha2.GitSource{Repository: trickle.URL + "/repo.git"}
		}},
		{name: "SSH server that never answers", g: func() v1alpha2.GitSource {
			return v1alpha2.GitSource{Repository: "ssh://git@" + silent + "/repo.git", Auth: f.sshAuth(silentHosts)}
		}},
	}
	reg := source.Registry{v1alpha2.SourceTypeGit: New(credentials.NewReader(env.Client, v1alpha2.SystemNamespace))}.WithDeadline(deadline)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := tt.g()
			g.Ref = v1alpha2.GitRef{Branch: "main"}
			start := time.Now()
			_, err := reg.Resolve(context.Background(), []v1alpha2.BundleSource{{Type: v1alpha2.SourceTypeGit, Git: &g}}, nil, false)
			elapsed := time.Since(start)
			checkFailure(t, "Resolve", err, v1alpha2.ReasonResourceLimit,
				fmt.Sprintf("resolving git repository %s took longer than the deadline of 1s", g.Repository))
			if elapsed > deadline+5*time.Second {
				t.Errorf("Resolve returned after %s, want about %s", elapsed, deadline)
			}
		})
	}
}

// silentServer listens on loopback, accepts connections and never writes
// to them; it returns its address.
func silentServer(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	t.Cleanup(func() { close(done); _ = l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func() {
				<-done
				_ = c.Close()
			}()
		}
	}()
	return l.Addr().String()
}
