package release

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	goruntime "runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlenvtest "sigs.k8s.io/controller-runtime/pkg/envtest"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/rukpak/rukpak/internal/release"
	"github.com/rukpak/rukpak/internal/sourcetree"
	"github.com/rukpak/rukpak/pkg/envtest"
)

const testVersion = "v0.0.0-e2e.1"

// TestRelease makes a release for the host's platform and checks what a
// cluster admin gets: the image in a registry, its config, its binary and
// rukpak.yaml on an API server.
func TestRelease(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 25*time.Minute)
	defer cancel()

	reg := httptest.NewServer(registry.New(registry.Logger(nopLogger())))
	defer reg.Close()
	u, err := url.Parse(reg.URL)
	if err != nil {
		t.Fatal(err)
	}
	repo := u.Host + "/rukpak/rukpak"
	host := release.Platform{OS: "linux", Arch: goruntime.GOARCH}
	out := t.TempDir()
	opts := release.Options{
		Version:         testVersion,
		RepoRoot:        sourcetree.Root(),
		OutDir:          out,
		ImageRepository: repo,
		Push:            true,
		ImagePlatforms:  []release.Platform{host},
		CLIPlatforms:    []release.Platform{host},
		Log:             t.Logf,
	}
	start := time.Now()
	headBefore := gitHead(t) // others may commit while the release builds
	res, err := release.Run(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("release built in %s: image %s", time.Since(start).Round(time.Second), res.Image)
	if headAfter := gitHead(t); !strings.HasPrefix(res.Commit, headBefore) && !strings.HasPrefix(res.Commit, headAfter) {
		t.Fatalf("release commit %q, want HEAD %s", res.Commit, headAfter)
	}
	for _, f := range []string{release.ManifestFile, release.ImageArchiveFile, "rukpakctl-linux-" + host.Arch, release.ChecksumsFile} {
		if _, err := os.Stat(filepath.Join(out, f)); err != nil {
			t.Fatalf("release file: %v", err)
		}
	}

	t.Run("checksums", func(t *testing.T) {
		cmd := exec.CommandContext(ctx, "sha256sum", "--strict", "-c", release.ChecksumsFile)
		cmd.Dir = out
		if output, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("sha256sum -c: %v\n%s", err, output)
		}
		sums, _ := os.ReadFile(filepath.Join(out, release.ChecksumsFile))
		if n := strings.Count(string(sums), "\n"); n != len(res.Files)-1 {
			t.Fatalf("SHA256SUMS lists %d files, want %d:\n%s", n, len(res.Files)-1, sums)
		}
	})

	t.Run("rukpakctl version", func(t *testing.T) {
		output, err := exec.CommandContext(ctx, filepath.Join(out, "rukpakctl-linux-"+host.Arch), "version").CombinedOutput()
		if err != nil {
			t.Fatalf("rukpakctl version: %v\n%s", err, output)
		}
		want := fmt.Sprintf("rukpakctl %s commit %s %s linux/%s\n", testVersion, res.Commit, goruntime.Version(), host.Arch)
		if string(output) != want {
			t.Fatalf("rukpakctl version printed %q, want %q", output, want)
		}
	})

	img := pulledImage(ctx, t, repo, res.Image.Digest, host)

	t.Run("image config", func(t *testing.T) {
		cf, err := img.ConfigFile()
		if err != nil {
			t.Fatal(err)
		}
		c := cf.Config
		checks := []struct {
			what      string
			got, want any
		}{
			{"os", cf.OS, "linux"},
			{"architecture", cf.Architecture, host.Arch},
			{"user", c.User, "65532:65532"},
			{"entrypoint", strings.Join(c.Entrypoint, " "), "/rukpak"},
			{"cmd", len(c.Cmd), 0},
			{"working dir", c.WorkingDir, "/"},
			{"version label", c.Labels["org.opencontainers.image.version"], testVersion},
			{"revision label", c.Labels["org.opencontainers.image.revision"], res.Commit},
		}
		for _, ck := range checks {
			if fmt.Sprint(ck.got) != fmt.Sprint(ck.want) {
				t.Errorf("image %s: %v, want %v", ck.what, ck.got, ck.want)
			}
		}
	})

	t.Run("entrypoint runs from the image", func(t *testing.T) {
		cf, err := img.ConfigFile()
		if err != nil {
			t.Fatal(err)
		}
		root := t.TempDir()
		// The image's root, as a container sees it: anyone may enter it.
		if err := os.Chmod(root, 0o755); err != nil {
			t.Fatal(err)
		}
		unpack(t, img, root)
		want := fmt.Sprintf("rukpak %s commit %s %s linux/%s\n", testVersion, res.Commit, goruntime.Version(), host.Arch)
		output := runEntrypoint(ctx, t, root, cf.Config, "version")
		if output != want {
			t.Fatalf("%s version printed %q, want %q", cf.Config.Entrypoint[0], output, want)
		}
		// The manager itself starts: without a cluster it stops at its
		// kubeconfig, which shows flag parsing and start-up work in the
		// image (an empty base, a read-only user).
		output = runEntrypointErr(ctx, t, root, cf.Config, "--kubeconfig=/nonexistent")
		if !strings.Contains(output, "/nonexistent") {
			t.Fatalf("the manager without a cluster printed %q, want an error naming its kubeconfig", output)
		}
	})

	t.Run("rukpak.yaml applies", func(t *testing.T) {
		manifest, err := os.ReadFile(filepath.Join(out, release.ManifestFile))
		if err != nil {
			t.Fatal(err)
		}
		// With the shards' Deployments after it, as docs/ha.md applies
		// them.
		shards, err := os.ReadFile(filepath.Join(out, release.ShardsManifestFile))
		if err != nil {
			t.Fatal(err)
		}
		applyManifest(ctx, t, append(append(manifest, "\n---\n"...), shards...), res.Image.String())
	})
}

// gitHead returns the repository's HEAD.
func gitHead(t *testing.T) string {
	t.Helper()
	cmd := exec.Command("git", "rev-parse", "HEAD")
	cmd.Dir = sourcetree.Root()
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("git rev-parse HEAD: %v", err)
	}
	return strings.TrimSpace(string(out))
}

// pulledImage pulls repo:testVersion from the registry, checks that the tag
// is the index the release pinned, and returns the image of platform p.
func pulledImage(ctx context.Context, t *testing.T, repo, digest string, p release.Platform) v1.Image {
	t.Helper()
	tag, err := name.NewTag(repo + ":" + testVersion)
	if err != nil {
		t.Fatal(err)
	}
	idx, err := remote.Index(tag, remote.WithContext(ctx))
	if err != nil {
		t.Fatalf("pulling %s: %v", tag, err)
	}
	got, err := idx.Digest()
	if err != nil {
		t.Fatal(err)
	}
	if got.String() != digest {
		t.Fatalf("%s is %s, but rukpak.yaml pins %s", tag, got, digest)
	}
	im, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range im.Manifests {
		if d.Platform != nil && d.Platform.OS == p.OS && d.Platform.Architecture == p.Arch {
			img, err := idx.Image(d.Digest)
			if err != nil {
				t.Fatal(err)
			}
			return img
		}
	}
	t.Fatalf("%s has no image for %s: %+v", tag, p, im.Manifests)
	return nil
}

// unpack writes the flattened file system of img to root.
func unpack(t *testing.T, img v1.Image, root string) {
	t.Helper()
	rc := mutate.Extract(img)
	defer rc.Close()
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return
		}
		if err != nil {
			t.Fatal(err)
		}
		target := filepath.Join(root, filepath.FromSlash(h.Name))
		if !strings.HasPrefix(target, root+string(filepath.Separator)) {
			t.Fatalf("image entry %q leaves the root", h.Name)
		}
		switch h.Typeflag {
		case tar.TypeDir:
			if err := os.MkdirAll(target, os.FileMode(h.Mode).Perm()); err != nil {
				t.Fatal(err)
			}
		case tar.TypeReg:
			if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
				t.Fatal(err)
			}
			f, err := os.OpenFile(target, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, os.FileMode(h.Mode).Perm())
			if err != nil {
				t.Fatal(err)
			}
			if _, err := io.Copy(f, tr); err != nil {
				t.Fatal(err)
			}
			if err := f.Close(); err != nil {
				t.Fatal(err)
			}
		default:
			t.Fatalf("image entry %q has type %c; the image should hold only files and directories", h.Name, h.Typeflag)
		}
		if os.Geteuid() == 0 {
			if err := os.Lchown(target, h.Uid, h.Gid); err != nil {
				t.Fatal(err)
			}
			// Lchown clears setuid/sticky bits; put the mode back.
			if err := os.Chmod(target, os.FileMode(h.Mode).Perm()|modeBits(h.Mode)); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// modeBits converts the sticky, setuid and setgid bits of a tar mode.
func modeBits(m int64) os.FileMode {
	var out os.FileMode
	if m&0o1000 != 0 {
		out |= os.ModeSticky
	}
	if m&0o2000 != 0 {
		out |= os.ModeSetgid
	}
	if m&0o4000 != 0 {
		out |= os.ModeSetuid
	}
	return out
}

// entrypointCmd runs the image's entrypoint with args as a container would:
// chrooted into root, as the image's user, in its working dir, with its
// environment only — when the test runs as root; otherwise (no chroot) the
// binary is run from root as the current user.
func entrypointCmd(ctx context.Context, t *testing.T, root string, c v1.Config, args ...string) *exec.Cmd {
	t.Helper()
	if len(c.Entrypoint) == 0 {
		t.Fatal("the image has no entrypoint")
	}
	var uid, gid uint32
	if _, err := fmt.Sscanf(c.User, "%d:%d", &uid, &gid); err != nil {
		t.Fatalf("image user %q is not numeric uid:gid: %v", c.User, err)
	}
	argv := append(append([]string(nil), c.Entrypoint[1:]...), args...)
	if os.Geteuid() != 0 {
		t.Logf("not root: running %s from %s without chroot", c.Entrypoint[0], root)
		cmd := exec.CommandContext(ctx, filepath.Join(root, c.Entrypoint[0]), argv...)
		cmd.Env = c.Env
		return cmd
	}
	cmd := exec.CommandContext(ctx, c.Entrypoint[0], argv...)
	cmd.Path = c.Entrypoint[0]
	cmd.Dir = c.WorkingDir
	cmd.Env = c.Env
	cmd.SysProcAttr = &syscall.SysProcAttr{Chroot: root, Credential: &syscall.Credential{Uid: uid, Gid: gid}}
	return cmd
}

// runEntrypoint runs the entrypoint, which must succeed, and returns its
// output.
func runEntrypoint(ctx context.Context, t *testing.T, root string, c v1.Config, args ...string) string {
	t.Helper()
	output, err := entrypointCmd(ctx, t, root, c, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("%s %q in the image: %v\n%s", c.Entrypoint[0], args, err, output)
	}
	return string(output)
}

// runEntrypointErr runs the entrypoint, which must fail with exit code 1,
// and returns its output.
func runEntrypointErr(ctx context.Context, t *testing.T, root string, c v1.Config, args ...string) string {
	t.Helper()
	output, err := entrypointCmd(ctx, t, root, c, args...).CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 1 {
		t.Fatalf("%s %q in the image: %v, want exit code 1\n%s", c.Entrypoint[0], args, err, output)
	}
	return string(output)
}

// applyManifest applies every object of manifest with server-side apply to
// a fresh API server, as `kubectl apply --server-side -f rukpak.yaml` does,
// and checks that each was accepted and stored as written, twice (an
// upgrade to the same release changes nothing).
func applyManifest(ctx context.Context, t *testing.T, manifest []byte, image string) {
	t.Helper()
	bin, err := envtest.BinDir()
	if err != nil {
		t.Fatal(err)
	}
	ctrllog.SetLogger(logr.Discard())
	env := &ctrlenvtest.Environment{BinaryAssetsDirectory: bin}
	cfg, err := env.Start()
	if err != nil {
		t.Fatalf("starting kube-apiserver: %v", err)
	}
	t.Cleanup(func() {
		if err := env.Stop(); err != nil {
			t.Logf("stopping kube-apiserver: %v", err)
		}
	})
	c, err := client.New(cfg, client.Options{Scheme: envtest.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	objs := decode(t, manifest)
	for round := 1; round <= 2; round++ {
		for _, obj := range objs {
			err := c.Apply(ctx, client.ApplyConfigurationFromUnstructured(obj.DeepCopy()), client.FieldOwner("kubectl"), client.ForceOwnership)
			if err != nil {
				t.Fatalf("round %d: applying %s %s: %v", round, obj.GetKind(), client.ObjectKeyFromObject(obj), err)
			}
		}
	}
	for _, obj := range objs {
		got := &unstructured.Unstructured{}
		got.SetGroupVersionKind(obj.GroupVersionKind())
		if err := c.Get(ctx, client.ObjectKeyFromObject(obj), got); err != nil {
			t.Errorf("%s %s not stored: %v", obj.GetKind(), client.ObjectKeyFromObject(obj), err)
			continue
		}
		if got.GetGeneration() > 1 {
			t.Errorf("%s %s has generation %d after applying the same manifest twice", obj.GetKind(), client.ObjectKeyFromObject(obj), got.GetGeneration())
		}
	}
	t.Logf("applied %d objects", len(objs))

	deadline := time.Now().Add(30 * time.Second)
	for _, obj := range objs {
		if obj.GetKind() != "CustomResourceDefinition" {
			continue
		}
		for {
			crd := &apiextensionsv1.CustomResourceDefinition{}
			if err := c.Get(ctx, client.ObjectKeyFromObject(obj), crd); err != nil {
				t.Fatal(err)
			}
			if established(crd) {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("CRD %s not Established: %+v", crd.Name, crd.Status.Conditions)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	dep := &appsv1.Deployment{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: "rukpak-system", Name: "rukpak-manager"}, dep); err != nil {
		t.Fatal(err)
	}
	if got := dep.Spec.Template.Spec.Containers[0].Image; got != image {
		t.Fatalf("manager Deployment runs %q, want %q", got, image)
	}
	// The Deployment's pod is admitted in rukpak-system, which enforces the
	// restricted Pod Security Standard (a dry run: nothing would run it).
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: dep.Namespace, Name: "rukpak-manager-dry-run", Labels: dep.Spec.Template.Labels},
		Spec:       dep.Spec.Template.Spec,
	}
	if err := c.Create(ctx, pod, client.DryRunAll); err != nil {
		t.Fatalf("the manager's pod is not admitted in %s: %v", dep.Namespace, err)
	}
	// And the check is real: the same pod running as root is refused.
	root := pod.DeepCopy()
	root.Spec.SecurityContext.RunAsNonRoot = nil
	root.Spec.SecurityContext.RunAsUser = ptr.To[int64](0)
	err = c.Create(ctx, root, client.DryRunAll)
	if err == nil || !strings.Contains(err.Error(), "restricted") {
		t.Fatalf("a root pod in %s: %v, want a refusal by the restricted Pod Security Standard", dep.Namespace, err)
	}
}

func established(crd *apiextensionsv1.CustomResourceDefinition) bool {
	for _, c := range crd.Status.Conditions {
		if c.Type == apiextensionsv1.Established && c.Status == apiextensionsv1.ConditionTrue {
			return true
		}
	}
	return false
}

// decode splits a multi-document manifest into objects.
func decode(t *testing.T, data []byte) []*unstructured.Unstructured {
	t.Helper()
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	var objs []*unstructured.Unstructured
	for {
		obj := &unstructured.Unstructured{}
		err := dec.Decode(&obj.Object)
		if errors.Is(err, io.EOF) {
			return objs
		}
		if err != nil {
			t.Fatalf("decoding rukpak.yaml: %v", err)
		}
		if len(obj.Object) > 0 {
			objs = append(objs, obj)
		}
	}
}
