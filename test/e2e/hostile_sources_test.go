package e2e

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/cgi"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rukpak/rukpak/api/v1alpha2"
	"github.com/rukpak/rukpak/pkg/envtest"
)

// Attacks with the sources of a BundleDeployment: content that is too big
// once fetched or unpacked, servers that stall, polling in a loop. Each is
// refused with a condition naming the source and the limit, while the
// manager keeps serving other teams.

// tarEntry is one entry of a test archive.
type tarEntry struct {
	name     string
	typ      byte
	body     []byte
	linkname string
}

// tarGzOf returns a gzip-compressed tar archive of entries.
func tarGzOf(t *testing.T, entries ...tarEntry) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	for _, e := range entries {
		hdr := &tar.Header{Name: e.name, Typeflag: e.typ, Mode: 0o644, Size: int64(len(e.body)), Linkname: e.linkname,
			ModTime: time.Unix(1700000000, 0)}
		if e.typ != tar.TypeReg {
			hdr.Size = 0
		}
		if err := tw.WriteHeader(hdr); err != nil {
			t.Fatal(err)
		}
		if e.typ == tar.TypeReg {
			if _, err := tw.Write(e.body); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// serveArchive serves data over HTTP on loopback until the test ends and
// returns an http source of it pinned to its sha256.
func serveArchive(t *testing.T, data []byte) []v1alpha2.BundleSource {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write(data) }))
	t.Cleanup(srv.Close)
	sum := sha256.Sum256(data)
	return []v1alpha2.BundleSource{{Type: v1alpha2.SourceTypeHTTP,
		HTTP: &v1alpha2.HTTPSource{URL: srv.URL + "/bundle.tar.gz", SHA256: hex.EncodeToString(sum[:])}}}
}

// unpackAttack installs srcs as a plain bundle of the team's and expects
// the Unpacked condition to be False with reason and a message holding
// want (where {url} is the URL of the first source, if it is http).
func unpackAttack(srcs func(t *testing.T) []v1alpha2.BundleSource, reason string, wait time.Duration, want ...string) func(*testing.T, *hostileTeam) func(*testing.T) {
	return func(t *testing.T, team *hostileTeam) func(*testing.T) {
		name := envtest.UniqueName("attack")
		s := srcs(t)
		team.create(t, team.bd(name, v1alpha2.ClassPlain, s))
		url := ""
		if s[0].HTTP != nil {
			url = s[0].HTTP.URL
		}
		return func(t *testing.T) {
			msg := waitUnpackFailed(t, name, reason, wait)
			for _, w := range want {
				if w = strings.ReplaceAll(w, "{url}", url); !strings.Contains(msg, w) {
					t.Fatalf("BundleDeployment %s: Unpacked message %q does not contain %q", name, msg, w)
				}
			}
		}
	}
}

// waitUnpackFailed waits up to wait for the Unpacked condition of bd to be
// False with reason, and returns its message.
func waitUnpackFailed(t *testing.T, bd, reason string, wait time.Duration) string {
	t.Helper()
	var msg string
	envtest.Eventually(t, wait, func() error {
		got := &v1alpha2.BundleDeployment{}
		if err := suite.client.Get(context.Background(), client.ObjectKey{Name: bd}, got); err != nil {
			return err
		}
		c := findCondition(got.Status.Conditions, v1alpha2.TypeUnpacked)
		if c.Status != metav1.ConditionFalse || c.Reason != reason {
			return fmt.Errorf("Unpacked is %s/%s (%s), want False/%s", c.Status, c.Reason, c.Message, reason)
		}
		msg = c.Message
		return nil
	})
	return msg
}

// gitBomb serves, with git http-backend, a repository whose branch main
// holds one file of 300 MiB of zeros: a pack of a few hundred KiB that
// inflates past the manager's cap on a git tree (256 MiB).
func gitBomb(t *testing.T) []v1alpha2.BundleSource {
	t.Helper()
	root := t.TempDir()
	repo := filepath.Join(root, "bomb.git")
	git := func(stdin io.Reader, args ...string) string {
		t.Helper()
		cmd := exec.Command("git", args...)
		cmd.Dir = repo
		cmd.Stdin = stdin
		cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com")
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("git %v: %v", args, err)
		}
		return strings.TrimSpace(string(out))
	}
	if err := os.Mkdir(repo, 0o755); err != nil {
		t.Fatal(err)
	}
	git(nil, "init", "-q", "--bare")
	blob := git(io.LimitReader(zeros{}, 300<<20), "hash-object", "-w", "--stdin")
	tree := git(strings.NewReader("100644 blob "+blob+"\tzeros\n"), "mktree")
	commit := git(nil, "commit-tree", tree, "-m", "bomb")
	git(nil, "update-ref", "refs/heads/main", commit)
	gitBin, err := exec.LookPath("git")
	if err != nil {
		t.Fatalf("the git binary serves the test repository (apt-get install git): %v", err)
	}
	srv := httptest.NewServer(&cgi.Handler{Path: gitBin, Args: []string{"http-backend"},
		Env: []string{"GIT_PROJECT_ROOT=" + root, "GIT_HTTP_EXPORT_ALL=1"}})
	t.Cleanup(srv.Close)
	return []v1alpha2.BundleSource{{Type: v1alpha2.SourceTypeGit,
		Git: &v1alpha2.GitSource{Repository: srv.URL + "/bomb.git", Ref: v1alpha2.GitRef{Branch: "main"}}}}
}

// zeros reads zero bytes forever.
type zeros struct{}

func (zeros) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}

// stallingServer accepts connections on loopback and never answers; it
// returns an http source pointing at it.
func stallingServer(t *testing.T) []v1alpha2.BundleSource {
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
			go func() { <-done; _ = c.Close() }()
		}
	}()
	return []v1alpha2.BundleSource{{Type: v1alpha2.SourceTypeHTTP,
		HTTP: &v1alpha2.HTTPSource{URL: "http://" + l.Addr().String() + "/bundle.tar.gz"}}}
}

// hardlinkBomb is an archive of one 10 MiB file of random bytes (so that
// it does not compress) and 110 hard links to it: 10 MiB on the wire,
// 1.1 GiB for whoever reads the tree.
func hardlinkBomb(t *testing.T) []v1alpha2.BundleSource {
	t.Helper()
	big := make([]byte, 10<<20)
	if _, err := rand.Read(big); err != nil {
		t.Fatal(err)
	}
	entries := []tarEntry{{name: "manifests/big", typ: tar.TypeReg, body: big}}
	for i := range 110 {
		entries = append(entries, tarEntry{name: fmt.Sprintf("manifests/l%03d", i), typ: tar.TypeLink, linkname: "manifests/big"})
	}
	return serveArchive(t, tarGzOf(t, entries...))
}

var _ = registerHostile(
	hostileCase{
		name: "git repository whose pack inflates past the cap (300 MiB of zeros)",
		attack: unpackAttack(gitBomb, v1alpha2.ReasonResourceLimit, time.Minute,
			"of the pack inflates to more than the limit of 272629760 bytes", "/bomb.git"),
	},
	hostileCase{
		name: "http server that accepts the connection and never answers",
		// The suite runs the manager with --source-timeout=15s
		// (main_test.go), which ends it before the download's own limit
		// (60s).
		attack: unpackAttack(stallingServer, v1alpha2.ReasonResourceLimit, time.Minute,
			"took longer than the deadline of 15s for one source"),
	},
	hostileCase{
		name: "archive of one file and 110 hard links to it (hard-link bomb)",
		attack: unpackAttack(hardlinkBomb, v1alpha2.ReasonUnpackFailed, time.Minute,
			`hard link to "manifests/big" (10485760 bytes) makes the files of the archive exceed the limit of 1073741824 bytes in all`, "http source {url}"),
	},
	hostileCase{
		name: "archive with a path that climbs out of the destination",
		attack: unpackAttack(func(t *testing.T) []v1alpha2.BundleSource {
			return serveArchive(t, tarGzOf(t, tarEntry{name: "../../etc/pwned", typ: tar.TypeReg, body: []byte("x")}))
		}, v1alpha2.ReasonUnpackFailed, time.Minute, `archive entry "../../etc/pwned": path escapes the destination`, "http source {url}"),
	},
	hostileCase{
		name: "archive with a symlink out of the destination and a file through it",
		attack: unpackAttack(func(t *testing.T) []v1alpha2.BundleSource {
			return serveArchive(t, tarGzOf(t, tarEntry{name: "evil", typ: tar.TypeSymlink, linkname: "/etc"},
				tarEntry{name: "evil/pwned", typ: tar.TypeReg, body: []byte("x")}))
		}, v1alpha2.ReasonUnpackFailed, time.Minute, `archive entry "evil": symlink target "/etc" is absolute`),
	},
	hostileCase{
		// Tiny compressed, but every entry implies 16 new directories
		// with long names: extraction used to keep gigabytes of paths.
		name: "archive of deeply nested long paths (path memory bomb)",
		attack: unpackAttack(func(t *testing.T) []v1alpha2.BundleSource {
			var entries []tarEntry
			for i := range 1500 {
				parts := make([]string, 16)
				for j := range parts {
					parts[j] = fmt.Sprintf("%0240d", i*16+j)
				}
				entries = append(entries, tarEntry{name: strings.Join(parts, "/") + "/f", typ: tar.TypeReg})
			}
			return serveArchive(t, tarGzOf(t, entries...))
		}, v1alpha2.ReasonUnpackFailed, time.Minute, "the paths of the archive (entries and the directories they imply) exceed the limit of 33554432 bytes in all"),
	},
	hostileCase{
		name: "gzip bomb (64 MiB of zeros)",
		attack: unpackAttack(func(t *testing.T) []v1alpha2.BundleSource {
			return serveArchive(t, tarGzOf(t, tarEntry{name: "zeros", typ: tar.TypeReg, body: make([]byte, 64<<20)}))
		}, v1alpha2.ReasonUnpackFailed, time.Minute, `archive entry "zeros": gzip stream expands more than 200 times`),
	},
	hostileCase{
		name: "pollInterval of 1s, polling other people's servers in a loop",
		attack: func(t *testing.T, team *hostileTeam) func(*testing.T) {
			name := envtest.UniqueName("attack")
			bd := team.bd(name, v1alpha2.ClassPlain, ownSource(t, map[string]string{"cm.yaml": configMapYAML("polled", "x")}))
			bd.Spec.PollInterval = &metav1.Duration{Duration: time.Second}
			team.allowReferences(t, bd.Spec.Sources, bd.Spec.Config)
			cleanupBD(t, name)
			err := team.client.Create(context.Background(), bd)
			return func(t *testing.T) {
				if err == nil || !strings.Contains(err.Error(), "pollInterval must be at least 10s") {
					t.Fatalf("creating a BundleDeployment with pollInterval 1s: %v, want it refused with %q", err, "pollInterval must be at least 10s")
				}
			}
		},
	},
)
