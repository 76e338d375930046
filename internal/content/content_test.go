package content

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/rukpak/rukpak/api/v1alpha2"
	"github.com/rukpak/rukpak/internal/source"
	"github.com/rukpak/rukpak/internal/source/credentials"
	httpsource "github.com/rukpak/rukpak/internal/source/http"
	"github.com/rukpak/rukpak/internal/store"
	"github.com/rukpak/rukpak/pkg/envtest"
	"github.com/rukpak/rukpak/pkg/failure"
)

var env *envtest.Env

func TestMain(m *testing.M) { envtest.Run(m, &env) }

// archives serves tar.gz archives of one 1000-byte file each, by path.
type archives map[string][]byte

func (a archives) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b, ok := a[r.URL.Path]
	if !ok {
		http.NotFound(w, r)
		return
	}
	_, _ = w.Write(b)
}

// add serves an archive at /name whose file is 1000 bytes of fill and
// returns the pinned http source of it.
func (a archives) add(t *testing.T, base, name string, fill byte) []v1alpha2.BundleSource {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	body := bytes.Repeat([]byte{fill}, 1000)
	if err := tw.WriteHeader(&tar.Header{Name: "manifests/" + name, Mode: 0o644, Size: int64(len(body)), Typeflag: tar.TypeReg}); err != nil {
		t.Fatal(err)
	}
	if _, err := tw.Write(body); err != nil {
		t.Fatal(err)
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	a["/"+name] = buf.Bytes()
	sum := sha256.Sum256(buf.Bytes())
	return []v1alpha2.BundleSource{{Type: v1alpha2.SourceTypeHTTP, HTTP: &v1alpha2.HTTPSource{URL: base + "/" + name, SHA256: hex.EncodeToString(sum[:])}}}
}

// bundle creates a Bundle whose status refers to digest.
func bundle(t *testing.T, digest string) {
	t.Helper()
	ctx := context.Background()
	b := &v1alpha2.Bundle{
		ObjectMeta: metav1.ObjectMeta{Name: envtest.UniqueName("quota")},
		Spec: v1alpha2.BundleSpec{ProvisionerClassName: v1alpha2.ClassPlain, Sources: []v1alpha2.BundleSource{{
			Type: v1alpha2.SourceTypeUpload, Upload: &v1alpha2.UploadSource{Digest: "sha256:" + strings.Repeat("a", 64)},
		}}},
	}
	if err := env.Client.Create(ctx, b); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Client.Delete(context.Background(), b) })
	b.Status.ContentDigest = digest
	if err := env.Client.Status().Update(ctx, b); err != nil {
		t.Fatal(err)
	}
}

// TestQuotaKeepsWhatBundlesReference unpacks revisions of 1000 bytes into
// a store with a quota of 2500 bytes and checks that eviction spares the
// content Bundles reference, that content which cannot fit is refused
// naming the quota, and that content gone from the store is fetched again
// from the pinned sources.
func TestQuotaKeepsWhatBundlesReference(t *testing.T) {
	ctx := context.Background()
	srv := archives{}
	hs := httptest.NewServer(srv)
	t.Cleanup(hs.Close)
	st, err := store.New(filepath.Join(t.TempDir(), "store"), store.WithQuota(2500))
	if err != nil {
		t.Fatal(err)
	}
	sources := source.Registry{v1alpha2.SourceTypeHTTP: httpsource.New(credentials.NewReader(env.Client, v1alpha2.SystemNamespace))}
	u := NewUnpacker(st, sources)
	st.SetInUse(u.InUse(env.Client))

	srcA, srcB := srv.add(t, hs.URL, "a", 'a'), srv.add(t, hs.URL, "b", 'b')
	srcC, srcD := srv.add(t, hs.URL, "c", 'c'), srv.add(t, hs.URL, "d", 'd')
	a, err := u.Ensure(ctx, "rev-a", srcA, "")
	if err != nil {
		t.Fatal(err)
	}
	bundle(t, a) // referenced by a Bundle
	b, err := u.Ensure(ctx, "rev-b", srcB, "")
	if err != nil {
		t.Fatal(err)
	}
	u.Forget("rev-b") // its Bundle is gone: nothing references b

	// c does not fit beside a and b: b goes, a stays.
	c, err := u.Ensure(ctx, "rev-c", srcC, "")
	if err != nil {
		t.Fatalf("Ensure c: %v", err)
	}
	if !st.Has(a) || st.Has(b) || !st.Has(c) {
		t.Fatalf("after c: has a=%v b=%v c=%v, want a and c only", st.Has(a), st.Has(b), st.Has(c))
	}

	// a and c are both referenced (c by what u remembers): d cannot fit.
	_, err = u.Ensure(ctx, "rev-d", srcD, "")
	if f := failure.As(err); f == nil || f.Reason != v1alpha2.ReasonResourceLimit ||
		!strings.Contains(err.Error(), "committing content of rev-d: the content store's quota of 2500 bytes is full") {
		t.Fatalf("Ensure d = %v, want a ResourceLimit failure naming the quota", err)
	}
	if !st.Has(a) || !st.Has(c) {
		t.Fatal("a refused revision evicted referenced content")
	}
	if entries, _ := filepath.Glob(filepath.Join(st.ScratchDir(), "*")); len(entries) != 0 {
		t.Fatalf("staging holds %v after a refused revision", entries)
	}

	// Content gone anyway is fetched again from the pinned sources.
	if err := st.Delete(a); err != nil {
		t.Fatal(err)
	}
	again, err := u.Ensure(ctx, "rev-a", srcA, a)
	if err != nil || again != a || !st.Has(a) {
		t.Fatalf("Ensure of evicted content = %s, %v (in store: %v); want %s fetched again", again, err, st.Has(a), a)
	}
}
