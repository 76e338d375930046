//go:build integration

package upload

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rukpak/rukpak/api/v1alpha2"
	"github.com/rukpak/rukpak/internal/upload"
	"github.com/rukpak/rukpak/pkg/envtest"
	"github.com/rukpak/rukpak/pkg/failure"
)

var env *envtest.Env

func TestMain(m *testing.M) { envtest.Run(m, &env) }

// big is incompressible, so the archive spans three chunks.
var big = func() string {
	b := make([]byte, 2*upload.ChunkSize+1000)
	var seed [32]byte
	_, _ = rand.NewChaCha8(seed).Read(b)
	return string(b)
}()

func TestSource(t *testing.T) {
	files := map[string]string{"manifests/a.yaml": "kind: A", "big.bin": big}
	tests := []struct {
		name        string
		archive     []byte                                // uploaded instead of a packed files
		damage      func(t *testing.T, ns, digest string) // between Resolve and Unpack
		missing     bool
		wantResolve string
		wantUnpack  string
		wantMsg     string
	}{
		{name: "packed directory is unpacked"},
		{name: "missing upload", missing: true, wantResolve: v1alpha2.ReasonSourceNotFound,
			wantMsg: "not found; run `rukpakctl run` again"},
		{name: "upload deleted after Resolve", wantUnpack: v1alpha2.ReasonSourceNotFound,
			damage: func(t *testing.T, ns, digest string) {
				h, _ := upload.ParseDigest(digest)
				deleteCM(t, ns, upload.ManifestName(h))
			}, wantMsg: "not found; run `rukpakctl run` again"},
		{name: "chunk replaced", wantUnpack: v1alpha2.ReasonDigestMismatch,
			damage: func(t *testing.T, ns, digest string) {
				cm := manifestCM(t, ns, digest)
				first, _, _ := strings.Cut(cm.Data["chunks"], " ")
				deleteCM(t, ns, upload.ChunkName(first))
				recreate(t, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: upload.ChunkName(first)},
					BinaryData: map[string][]byte{"chunk": []byte("evil")}})
			}, wantMsg: "it was replaced after it was uploaded"},
		{name: "chunks reordered", wantUnpack: v1alpha2.ReasonDigestMismatch,
			damage: func(t *testing.T, ns, digest string) {
				cm := manifestCM(t, ns, digest)
				lines := strings.SplitAfter(cm.Data["chunks"], "\n")
				lines[0], lines[1] = lines[1], lines[0]
				cm.Data["chunks"] = strings.Join(lines, "")
				deleteCM(t, ns, cm.Name)
				cm.ResourceVersion, cm.UID = "", ""
				recreate(t, cm)
			}, wantMsg: "the manifest was replaced"},
		{name: "symlink entry is refused", archive: tarGz(t, &tar.Header{Name: "evil", Typeflag: tar.TypeSymlink, Linkname: "/etc/passwd"}),
			wantUnpack: v1alpha2.ReasonUnpackFailed, wantMsg: `"evil"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			ns := env.Namespace(t, "upload-src")
			store := upload.NewStore(env.Client, env.Client, ns)
			data := tt.archive
			if data == nil {
				data = packed(t, files)
			}
			digest := digestOf(data)
			if !tt.missing {
				if err := store.Put(ctx, bytes.NewReader(data), digest, "system:serviceaccount:team-a:installer"); err != nil {
					t.Fatal(err)
				}
			}
			src := v1alpha2.BundleSource{Type: v1alpha2.SourceTypeUpload, Upload: &v1alpha2.UploadSource{Digest: digest}}
			s := New(store)

			pinned, err := s.Resolve(ctx, src)
			if tt.wantResolve != "" {
				checkFailure(t, "Resolve", err, tt.wantResolve, tt.wantMsg)
				return
			}
			if err != nil {
				t.Fatalf("Resolve: %v", err)
			}
			if pinned.Upload.Digest != digest || pinned.Type != src.Type {
				t.Fatalf("Resolve changed the source: %+v", pinned)
			}
			if tt.damage != nil {
				tt.damage(t, ns, digest)
			}
			dir := t.TempDir()
			err = s.Unpack(ctx, pinned, dir)
			if tt.wantUnpack != "" {
				checkFailure(t, "Unpack", err, tt.wantUnpack, tt.wantMsg)
				return
			}
			if err != nil {
				t.Fatalf("Unpack: %v", err)
			}
			for p, want := range files {
				got, err := os.ReadFile(filepath.Join(dir, p))
				if err != nil || string(got) != want {
					t.Errorf("%s: %d bytes, %v; want %d bytes", p, len(got), err, len(want))
				}
			}
		})
	}
}

// packed returns the archive Pack makes of files.
func packed(t *testing.T, files map[string]string) []byte {
	t.Helper()
	dir := t.TempDir()
	for p, content := range files {
		full := filepath.Join(dir, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	a, err := upload.Pack(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = a.Close() }()
	var b bytes.Buffer
	if _, err := b.ReadFrom(a); err != nil {
		t.Fatal(err)
	}
	if digestOf(b.Bytes()) != a.Digest {
		t.Fatal("Pack's digest does not match its bytes")
	}
	return b.Bytes()
}

// tarGz returns a .tar.gz of entries without content.
func tarGz(t *testing.T, hdrs ...*tar.Header) []byte {
	t.Helper()
	var b bytes.Buffer
	zw := gzip.NewWriter(&b)
	tw := tar.NewWriter(zw)
	for _, h := range hdrs {
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func digestOf(b []byte) string {
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:])
}

func manifestCM(t *testing.T, ns, digest string) *corev1.ConfigMap {
	t.Helper()
	h, _ := upload.ParseDigest(digest)
	cm := &corev1.ConfigMap{}
	if err := env.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: upload.ManifestName(h)}, cm); err != nil {
		t.Fatal(err)
	}
	return cm
}

func deleteCM(t *testing.T, ns, name string) {
	t.Helper()
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	if err := env.Client.Delete(context.Background(), cm); err != nil {
		t.Fatalf("deleting %s: %v", name, err)
	}
}

func recreate(t *testing.T, cm *corev1.ConfigMap) {
	t.Helper()
	if err := env.Client.Create(context.Background(), cm); err != nil {
		t.Fatalf("creating %s: %v", cm.Name, err)
	}
}

func checkFailure(t *testing.T, op string, err error, reason, msg string) {
	t.Helper()
	if got := failure.Reason(err, ""); got != reason {
		t.Fatalf("%s: reason %q, want %q (error %v)", op, got, reason, err)
	}
	if !strings.Contains(err.Error(), msg) {
		t.Fatalf("%s: error %q does not contain %q", op, err, msg)
	}
}
