//go:build integration

package content

import (
	"archive/tar"
	"bytes"
	"cmp"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/rukpak/rukpak/api/v1alpha2"
	"github.com/rukpak/rukpak/internal/source"
	"github.com/rukpak/rukpak/internal/source/credentials"
	httpsource "github.com/rukpak/rukpak/internal/source/http"
	"github.com/rukpak/rukpak/internal/source/sourcekey"
	"github.com/rukpak/rukpak/internal/store"
	"github.com/rukpak/rukpak/internal/tenant"
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
	u := NewUnpacker(st, sources, 0, 0)
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

// ownedBundle creates a BundleDeployment installing into ns as its
// ServiceAccount installer (or as the manager when ns is ""), and a Bundle
// it controls whose status refers to digest; it returns their names.
func ownedBundle(t *testing.T, bdName, ns, digest string) string {
	t.Helper()
	ctx := context.Background()
	bd := &v1alpha2.BundleDeployment{
		ObjectMeta: metav1.ObjectMeta{Name: bdName},
		Spec: v1alpha2.BundleDeploymentSpec{ProvisionerClassName: v1alpha2.ClassPlain, InstallNamespace: cmp.Or(ns, "default"),
			Sources: []v1alpha2.BundleSource{{Type: v1alpha2.SourceTypeUpload, Upload: &v1alpha2.UploadSource{Digest: "sha256:" + strings.Repeat("a", 64)}}}},
	}
	if ns != "" {
		bd.Spec.ServiceAccount = &v1alpha2.ServiceAccountReference{Name: "installer"}
	}
	if err := env.Client.Get(ctx, client.ObjectKey{Name: bdName}, bd); apierrors.IsNotFound(err) {
		if err := env.Client.Create(ctx, bd); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = env.Client.Delete(context.Background(), bd) })
	} else if err != nil {
		t.Fatal(err)
	}
	b := &v1alpha2.Bundle{
		ObjectMeta: metav1.ObjectMeta{Name: envtest.UniqueName(bdName)},
		Spec:       v1alpha2.BundleSpec{ProvisionerClassName: v1alpha2.ClassPlain, Sources: bd.Spec.Sources},
	}
	if err := controllerutil.SetControllerReference(bd, b, env.Scheme); err != nil {
		t.Fatal(err)
	}
	if err := env.Client.Create(ctx, b); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Client.Delete(context.Background(), b) })
	b.Status.ContentDigest = digest
	if err := env.Client.Status().Update(ctx, b); err != nil {
		t.Fatal(err)
	}
	return b.Name
}

// TestTenantQuota has team-b fill its quota of the store (2000 of 10000
// bytes) with revisions of 1000 bytes, held by Bundles of its
// BundleDeployments on a real API server, and checks that its next
// revision is refused before anything is fetched, naming the quota and
// its Bundles, and that team-a and the manager tenant still store theirs.
func TestTenantQuota(t *testing.T) {
	srv := archives{}
	var mu sync.Mutex
	fetched := map[string]int{}
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		fetched[r.URL.Path]++
		mu.Unlock()
		srv.ServeHTTP(w, r)
	}))
	t.Cleanup(hs.Close)
	st, err := store.New(filepath.Join(t.TempDir(), "store"), store.WithQuota(10000), store.WithTenantQuota(2000))
	if err != nil {
		t.Fatal(err)
	}
	sources := source.Registry{v1alpha2.SourceTypeHTTP: httpsource.New(credentials.NewReader(env.Client, v1alpha2.SystemNamespace))}
	u := NewUnpacker(st, sources, 0, 0)
	st.SetInUse(u.InUse(env.Client))
	teamA, teamB := tenant.WithContext(context.Background(), "team-a"), tenant.WithContext(context.Background(), "team-b")
	bdB1, bdB2 := envtest.UniqueName("b1"), envtest.UniqueName("b2")

	var held []string
	for i, bd := range []string{bdB1, bdB2} {
		rev := "rev-b" + strconv.Itoa(i)
		d, err := u.Ensure(teamB, rev, srv.add(t, hs.URL, rev, byte('0'+i)), "")
		if err != nil {
			t.Fatalf("team-b's revision %d: %v", i, err)
		}
		held = append(held, ownedBundle(t, bd, "team-b", d))
		u.Forget(rev) // from now on only the Bundle holds it
	}
	_, err = u.Ensure(teamB, "rev-b2", srv.add(t, hs.URL, "rev-b2", '2'), "")
	if f := failure.As(err); f == nil || f.Reason != v1alpha2.ReasonResourceLimit {
		t.Fatalf("team-b's third revision: %v, want ResourceLimit", err)
	}
	for _, w := range []string{"tenant team-b's quota of 2 KiB in the content store is full: it holds 2 KiB (",
		"Bundle " + held[0] + " of BundleDeployment " + bdB1 + ": 1000 bytes", "Bundle " + held[1] + " of BundleDeployment " + bdB2 + ": 1000 bytes"} {
		if !strings.Contains(err.Error(), w) {
			t.Fatalf("team-b's third revision: %q does not name %q", err, w)
		}
	}
	mu.Lock()
	if n := fetched["/rev-b2"]; n != 0 {
		t.Fatalf("team-b's third revision was fetched %d times; a full tenant is refused first", n)
	}
	mu.Unlock()

	// team-a and the manager tenant are not held back by team-b.
	if _, err := u.Ensure(teamA, "rev-a0", srv.add(t, hs.URL, "a0", 'a'), ""); err != nil {
		t.Fatalf("team-a's revision while team-b's quota is full: %v", err)
	}
	if _, err := u.Ensure(tenant.WithContext(context.Background(), tenant.Manager), "rev-m0", srv.add(t, hs.URL, "m0", 'm'), ""); err != nil {
		t.Fatalf("the manager tenant's revision while team-b's quota is full: %v", err)
	}
	if used, _ := st.Usage(); used != 4000 {
		t.Fatalf("the store holds %d bytes, want 4000: team-b's two, team-a's and the manager's", used)
	}
}

// TestSharedUnpacks: revisions whose pinned sources and credentials are
// the same share one fetch (WithSharing), concurrent ones included; other
// credentials, changed credentials, or content gone from the store fetch
// again.
func TestSharedUnpacks(t *testing.T) {
	ctx := context.Background()
	srv := archives{}
	var fetched atomic.Int64
	users := map[string]string{"team-a": "pa", "team-b": "pb", "team-a2": "pa2"}
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		user, pass, ok := r.BasicAuth()
		if !ok || users[user] != pass {
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		fetched.Add(1)
		srv.ServeHTTP(w, r)
	}))
	t.Cleanup(hs.Close)
	secret := func(name, user string) {
		s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: v1alpha2.SystemNamespace},
			Data: map[string][]byte{"username": []byte(user), "password": []byte(users[user])}}
		err := env.Client.Create(ctx, s)
		if apierrors.IsAlreadyExists(err) {
			err = env.Client.Update(ctx, s)
		} else if err == nil {
			t.Cleanup(func() { _ = env.Client.Delete(context.Background(), s) })
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	nameA, nameB := envtest.UniqueName("creds-a"), envtest.UniqueName("creds-b")
	secret(nameA, "team-a")
	secret(nameB, "team-b")
	st, err := store.New(filepath.Join(t.TempDir(), "store"))
	if err != nil {
		t.Fatal(err)
	}
	u := sharingUnpacker(st)
	withAuth := func(src []v1alpha2.BundleSource, name string) []v1alpha2.BundleSource {
		out := []v1alpha2.BundleSource{*src[0].DeepCopy()}
		out[0].HTTP.Auth = &v1alpha2.HTTPAuth{Secret: v1alpha2.LocalObjectReference{Name: name}}
		return out
	}
	chart := srv.add(t, hs.URL, "chart", 'c')
	asA, asB := withAuth(chart, nameA), withAuth(chart, nameB)

	// Twenty revisions at once, of as many tenants: one fetch.
	var wg sync.WaitGroup
	digests := make([]string, 20)
	for i := range digests {
		wg.Add(1)
		go func() {
			defer wg.Done()
			tctx := tenant.WithContext(ctx, "team-"+strconv.Itoa(i))
			d, err := u.Ensure(tctx, "shared-"+strconv.Itoa(i), asA, "")
			if err != nil {
				t.Error(err)
			}
			digests[i] = d
		}()
	}
	wg.Wait()
	for i, d := range digests {
		if d != digests[0] {
			t.Errorf("revision %d unpacked to %s, revision 0 to %s", i, d, digests[0])
		}
	}
	want := int64(1)
	check := func(what string) {
		t.Helper()
		if n := fetched.Load(); n != want {
			t.Errorf("%s: %d fetches, want %d", what, n, want)
		}
	}
	check("twenty revisions of the same pins and credentials")
	if _, err := u.Ensure(ctx, "later", asA, ""); err != nil {
		t.Fatal(err)
	}
	check("a later revision of the same pins and credentials")

	if _, err := u.Ensure(ctx, "other-creds", asB, ""); err != nil {
		t.Fatal(err)
	}
	want++
	check("the same pins with another team's credentials")

	secret(nameA, "team-a2") // rotated
	if _, err := u.Ensure(ctx, "rotated", asA, ""); err != nil {
		t.Fatal(err)
	}
	want++
	check("the same pins after the credentials changed")

	if err := st.Delete(digests[0]); err != nil {
		t.Fatal(err)
	}
	if _, err := u.Ensure(ctx, "evicted", asA, ""); err != nil {
		t.Fatal(err)
	}
	want++
	check("the same pins once the content left the store")
	for _, rev := range []string{"shared-3", "later", "other-creds"} {
		u.mu.RLock()
		_, ok := u.digests[rev]
		u.mu.RUnlock()
		if !ok {
			t.Errorf("revision %s not remembered: its tenant would not be charged for the content", rev)
		}
	}
}

// TestSharedUnpacksWhileTheStoreMakesRoom: shared unpacks and unpacks that
// make the store evict (it reads what is in use, InUse, under its own
// lock) run at once without waiting for each other for good.
func TestSharedUnpacksWhileTheStoreMakesRoom(t *testing.T) {
	srv := archives{}
	hs := httptest.NewServer(srv)
	t.Cleanup(hs.Close)
	// Both quotas: the store reads what is in use (InUse) under its lock
	// to make room and to check a tenant.
	st, err := store.New(filepath.Join(t.TempDir(), "store"), store.WithQuota(20_000), store.WithTenantQuota(15_000))
	if err != nil {
		t.Fatal(err)
	}
	u := sharingUnpacker(st)
	var pins [][]v1alpha2.BundleSource
	for i := range 40 {
		pins = append(pins, srv.add(t, hs.URL, "a"+strconv.Itoa(i), byte('a'+i%26)))
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var wg sync.WaitGroup
	for i := range 400 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// Ten revisions of each pin: shared unpacks of pins the store
			// evicts and fetches again.
			if _, err := u.Ensure(ctx, "rev-"+strconv.Itoa(i), pins[i%len(pins)], ""); err != nil && !isLimit(err) {
				t.Error(err)
			}
			u.Forget("rev-" + strconv.Itoa(i))
		}()
	}
	wg.Wait()
	if ctx.Err() != nil {
		t.Fatal("the unpacks did not end within a minute: they wait for each other")
	}
}

// isLimit reports whether err is the store's refusal of content that
// does not fit (everything else in use at that moment).
func isLimit(err error) bool {
	f := failure.As(err)
	return f != nil && f.Reason == v1alpha2.ReasonResourceLimit
}

// sharingUnpacker returns an Unpacker of http sources into st that shares
// unpacks as the manager's does (WithSharing, keyed by sourcekey), and
// tells st what it holds.
func sharingUnpacker(st *store.Store) *Unpacker {
	creds := credentials.NewReader(env.Client, v1alpha2.SystemNamespace)
	sources := source.Registry{v1alpha2.SourceTypeHTTP: httpsource.New(creds)}
	u := NewUnpacker(st, sources, 0, 0, WithSharing(func(ctx context.Context, pinned []v1alpha2.BundleSource) (string, error) {
		return sourcekey.Of(ctx, creds, pinned)
	}))
	st.SetInUse(u.InUse(env.Client))
	return u
}
