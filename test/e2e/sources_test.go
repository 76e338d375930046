package e2e

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"net/http/cgi"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rukpak/rukpak/api/v1alpha2"
	"github.com/rukpak/rukpak/internal/chartrepotest"
	"github.com/rukpak/rukpak/pkg/envtest"
)

// counting wraps h and counts its requests.
type counting struct {
	h http.Handler
	n atomic.Int64
}

func (c *counting) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	c.n.Add(1)
	c.h.ServeHTTP(w, r)
}

// pushImage pushes a one-layer image holding files to ref and returns its
// digest.
func pushImage(t *testing.T, ref string, files map[string]string) string {
	t.Helper()
	data := chartrepotest.TarGz(t, files)
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(data)), nil })
	if err != nil {
		t.Fatal(err)
	}
	img, err := mutate.AppendLayers(empty.Image, layer)
	if err != nil {
		t.Fatal(err)
	}
	r, err := name.ParseReference(ref, name.Insecure)
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.Write(r, img); err != nil {
		t.Fatal(err)
	}
	d, err := img.Digest()
	if err != nil {
		t.Fatal(err)
	}
	return d.String()
}

func createBD(t *testing.T, name string, srcs []v1alpha2.BundleSource) {
	t.Helper()
	bd := &v1alpha2.BundleDeployment{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       v1alpha2.BundleDeploymentSpec{ProvisionerClassName: v1alpha2.ClassPlain, InstallNamespace: name, Sources: srcs},
	}
	if err := suite.client.Create(context.Background(), bd); err != nil {
		t.Fatal(err)
	}
}

func configMapValue(t *testing.T, ns, name string) string {
	t.Helper()
	cm := &corev1.ConfigMap{}
	if err := suite.client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, cm); err != nil {
		t.Fatalf("ConfigMap %s/%s: %v", ns, name, err)
	}
	return cm.Data["value"]
}

// TestImageSource installs a bundle from an OCI registry by tag, upgrades
// it to another digest, and shows that a digest-pinned bundle costs no
// registry request however often it is reconciled.
func TestImageSource(t *testing.T) {
	t.Parallel()
	reg := &counting{h: registry.New()}
	srv := httptest.NewServer(reg)
	defer srv.Close()
	host := strings.TrimPrefix(srv.URL, "http://")
	d1 := pushImage(t, host+"/bundles/demo:v1", map[string]string{"manifests/cm.yaml": configMapYAML("from-image", "v1")})
	d2 := pushImage(t, host+"/bundles/demo:v2", map[string]string{"manifests/cm.yaml": configMapYAML("from-image", "v2")})

	name := envtest.UniqueName("image")
	createBD(t, name, []v1alpha2.BundleSource{{Type: v1alpha2.SourceTypeImage,
		Image: &v1alpha2.ImageSource{Ref: host + "/bundles/demo:v1", InsecureSkipTLSVerify: true}}})
	bd := waitInstalled(t, name)
	if got := bd.Status.ResolvedSources[0].Image.Digest; got != d1 {
		t.Fatalf("resolved digest %s, want %s", got, d1)
	}
	if v := configMapValue(t, name, "from-image"); v != "v1" {
		t.Fatalf("value %q, want v1", v)
	}

	// Upgrade to a digest ref.
	updateSpec(t, name, func(s *v1alpha2.BundleDeploymentSpec) {
		s.Sources[0].Image.Ref = host + "/bundles/demo@" + d2
	})
	envtest.Eventually(t, 30*time.Second, func() error {
		if v := configMapValue(t, name, "from-image"); v != "v2" {
			return fmt.Errorf("value %q, want v2", v)
		}
		return nil
	})
	waitInstalled(t, name)

	// 100 more reconciles of the pinned bundle: no registry request.
	before := reg.n.Load()
	for i := 0; i < 100; i++ {
		updateSpec(t, name, func(s *v1alpha2.BundleDeploymentSpec) { s.RevisionHistoryLimit = ptr.To(int32(1 + i%2)) })
	}
	waitInstalled(t, name)
	if n := reg.n.Load() - before; n != 0 {
		t.Fatalf("%d registry requests during 100 reconciles of a digest-pinned bundle, want 0", n)
	}
}

// TestHTTPSource installs a bundle from a .tar.gz with a sha256, and
// refuses one whose sha256 does not match without touching the installed
// revision.
func TestHTTPSource(t *testing.T) {
	t.Parallel()
	good := chartrepotest.TarGz(t, map[string]string{"manifests/cm.yaml": configMapYAML("from-http", "v1")})
	evil := chartrepotest.TarGz(t, map[string]string{"manifests/cm.yaml": configMapYAML("from-http", "evil")})
	sum := sha256.Sum256(good)
	mux := http.NewServeMux()
	mux.HandleFunc("/good.tgz", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write(good) })
	mux.HandleFunc("/swapped.tgz", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write(evil) })
	srv := &counting{h: mux}
	hs := httptest.NewServer(srv)
	defer hs.Close()

	name := envtest.UniqueName("http")
	createBD(t, name, []v1alpha2.BundleSource{{Type: v1alpha2.SourceTypeHTTP,
		HTTP: &v1alpha2.HTTPSource{URL: hs.URL + "/good.tgz", SHA256: hex.EncodeToString(sum[:])}}})
	rev := waitInstalled(t, name).Status.ActiveBundle
	if v := configMapValue(t, name, "from-http"); v != "v1" {
		t.Fatalf("value %q, want v1", v)
	}
	updateSpec(t, name, func(s *v1alpha2.BundleDeploymentSpec) {
		s.Sources[0].HTTP.URL = hs.URL + "/swapped.tgz"
	})
	bd := waitCondition(t, name, v1alpha2.TypeUnpacked, metav1.ConditionFalse, v1alpha2.ReasonDigestMismatch)
	if bd.Status.ActiveBundle != rev || configMapValue(t, name, "from-http") != "v1" {
		t.Fatalf("a refused archive changed the installed revision")
	}
}

func updateSpec(t *testing.T, name string, mutate func(*v1alpha2.BundleDeploymentSpec)) {
	t.Helper()
	envtest.Eventually(t, 10*time.Second, func() error {
		bd := &v1alpha2.BundleDeployment{}
		if err := suite.client.Get(context.Background(), client.ObjectKey{Name: name}, bd); err != nil {
			return err
		}
		mutate(&bd.Spec)
		return suite.client.Update(context.Background(), bd)
	})
}

func waitCondition(t *testing.T, name, typ string, status metav1.ConditionStatus, reason string) *v1alpha2.BundleDeployment {
	t.Helper()
	return waitConditionWithin(t, 30*time.Second, name, typ, status, reason)
}

// waitConditionWithin is waitCondition with a deadline of its own.
func waitConditionWithin(t *testing.T, deadline time.Duration, name, typ string, status metav1.ConditionStatus, reason string) *v1alpha2.BundleDeployment {
	t.Helper()
	bd := &v1alpha2.BundleDeployment{}
	envtest.Eventually(t, deadline, func() error {
		if err := suite.client.Get(context.Background(), client.ObjectKey{Name: name}, bd); err != nil {
			return err
		}
		for _, c := range bd.Status.Conditions {
			if c.Type == typ && c.Status == status && c.Reason == reason && c.ObservedGeneration == bd.Generation {
				return nil
			}
		}
		return fmt.Errorf("no %s=%s/%s for generation %d: %+v", typ, status, reason, bd.Generation, bd.Status.Conditions)
	})
	return bd
}

// TestUploadSource runs `rukpakctl run` on a directory three times: the
// first installs it, a changed file pivots to a new revision, the same
// content again changes nothing.
func TestUploadSource(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write := func(value string) {
		if err := os.MkdirAll(filepath.Join(dir, "manifests"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "manifests", "cm.yaml"), []byte(configMapYAML("uploaded", value)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	name := envtest.UniqueName("upload")
	uploader := adminUploader(t)
	write("v1")
	if out, err := rukpakctl("run", name, dir, "--token-for", uploader); err != nil {
		t.Fatalf("rukpakctl run: %v\n%s", err, out)
	}
	rev1 := waitInstalled(t, name).Status.ActiveBundle
	if v := configMapValue(t, name, "uploaded"); v != "v1" {
		t.Fatalf("value %q, want v1", v)
	}

	write("v2")
	if out, err := rukpakctl("run", name, dir, "--token-for", uploader); err != nil {
		t.Fatalf("second rukpakctl run: %v\n%s", err, out)
	}
	bd := waitInstalled(t, name)
	if bd.Status.ActiveBundle == rev1 || configMapValue(t, name, "uploaded") != "v2" {
		t.Fatalf("changed content did not pivot: active %s (was %s)", bd.Status.ActiveBundle, rev1)
	}

	gen := bd.Generation
	out, err := rukpakctl("run", name, dir, "--token-for", uploader)
	if err != nil {
		t.Fatalf("third rukpakctl run: %v\n%s", err, out)
	}
	if !strings.Contains(out, "unchanged") {
		t.Fatalf("same content should report unchanged:\n%s", out)
	}
	if bd = waitInstalled(t, name); bd.Generation != gen {
		t.Fatalf("same content bumped the generation from %d to %d", gen, bd.Generation)
	}
}

// TestGitSource installs a bundle from a branch of a repository served by
// git http-backend, and follows the branch when it moves.
func TestGitSource(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	repo := filepath.Join(root, "bundle.git")
	work := filepath.Join(root, "work")
	git := func(dir string, args ...string) string {
		t.Helper()
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	commit := func(value string) string {
		t.Helper()
		if err := os.MkdirAll(filepath.Join(work, "deploy", "manifests"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(work, "deploy", "manifests", "cm.yaml"), []byte(configMapYAML("from-git", value)), 0o644); err != nil {
			t.Fatal(err)
		}
		git(work, "add", ".")
		git(work, "commit", "-q", "-m", value)
		git(work, "push", "-q", repo, "HEAD:main")
		return git(work, "rev-parse", "HEAD")
	}
	git(root, "init", "-q", "--bare", repo)
	git(root, "init", "-q", work)
	c1 := commit("v1")

	gitBin, err := exec.LookPath("git")
	if err != nil {
		t.Fatalf("the git binary serves the test repository (apt-get install git): %v", err)
	}
	srv := httptest.NewServer(&cgi.Handler{
		Path: gitBin,
		Args: []string{"http-backend"},
		Env:  []string{"GIT_PROJECT_ROOT=" + root, "GIT_HTTP_EXPORT_ALL=1"},
	})
	defer srv.Close()

	name := envtest.UniqueName("git")
	createBD(t, name, []v1alpha2.BundleSource{{Type: v1alpha2.SourceTypeGit,
		Git: &v1alpha2.GitSource{Repository: srv.URL + "/bundle.git", Ref: v1alpha2.GitRef{Branch: "main"}, Directory: "deploy"}}})
	bd := waitInstalled(t, name)
	if got := bd.Status.ResolvedSources[0].Git.ResolvedCommit; got != c1 {
		t.Fatalf("resolved commit %s, want %s", got, c1)
	}
	if v := configMapValue(t, name, "from-git"); v != "v1" {
		t.Fatalf("value %q, want v1", v)
	}

	// The branch moves; with the shortest pollInterval rukpak follows it.
	c2 := commit("v2")
	updateSpec(t, name, func(s *v1alpha2.BundleDeploymentSpec) {
		s.PollInterval = &metav1.Duration{Duration: v1alpha2.MinPollInterval}
	})
	envtest.Eventually(t, 60*time.Second, func() error {
		bd := waitInstalled(t, name)
		if got := bd.Status.ResolvedSources[0].Git.ResolvedCommit; got != c2 {
			return fmt.Errorf("resolved commit %s, want %s", got, c2)
		}
		if v := configMapValue(t, name, "from-git"); v != "v2" {
			return fmt.Errorf("value %q, want v2", v)
		}
		return nil
	})
}
