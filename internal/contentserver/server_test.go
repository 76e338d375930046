//go:build integration

package contentserver

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rukpak/rukpak/api/v1alpha2"
	"github.com/rukpak/rukpak/internal/store"
	"github.com/rukpak/rukpak/internal/upload"
	"github.com/rukpak/rukpak/pkg/envtest"
)

var env *envtest.Env

func TestMain(m *testing.M) { envtest.Run(m, &env) }

// fixture is a running content server with one Bundle, an upload store
// and ServiceAccounts with and without permissions.
type fixture struct {
	url     string
	bundle  string
	uploads *upload.Store
	ns      string
	kube    kubernetes.Interface
}

// maxUpload is the upload store's limit in these tests.
const maxUpload = 2 << 20

func newFixture(t *testing.T, opts ...Option) *fixture {
	t.Helper()
	ctx := context.Background()
	kube, err := kubernetes.NewForConfig(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	st, err := store.New(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	staging, err := st.NewStaging()
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(staging, "manifests"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(staging, "manifests", "cm.yaml"), []byte("kind: ConfigMap\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	digest, err := st.Commit(staging)
	if err != nil {
		t.Fatal(err)
	}
	b := &v1alpha2.Bundle{
		ObjectMeta: metav1.ObjectMeta{Name: envtest.UniqueName("served")},
		Spec: v1alpha2.BundleSpec{ProvisionerClassName: v1alpha2.ClassPlain, Sources: []v1alpha2.BundleSource{{
			Type: v1alpha2.SourceTypeUpload, Upload: &v1alpha2.UploadSource{Digest: "sha256:" + strings.Repeat("a", 64)},
		}}},
	}
	if err := env.Client.Create(ctx, b); err != nil {
		t.Fatal(err)
	}
	b.Status.ContentDigest = digest
	if err := env.Client.Status().Update(ctx, b); err != nil {
		t.Fatal(err)
	}
	ns := env.Namespace(t, "content")
	uploads := upload.NewStore(env.Client, env.Client, ns, upload.WithMaxSize(maxUpload))
	srv := httptest.NewServer(New(st, env.Client, kube, append([]Option{WithUploads(uploads, 0, 0)}, opts...)...))
	t.Cleanup(srv.Close)
	f := &fixture{url: srv.URL, bundle: b.Name, uploads: uploads, ns: ns, kube: kube}
	// Granted before the reader, whose grant settled waits for.
	f.grant(t, "second-uploader", rbacv1.PolicyRule{APIGroups: []string{v1alpha2.GroupVersion.Group}, Resources: []string{UploadResource}, Verbs: []string{"create"}})
	f.grant(t, "reader", rbacv1.PolicyRule{APIGroups: []string{v1alpha2.GroupVersion.Group}, Resources: []string{"bundles/content"}, Verbs: []string{"get"}})
	f.grant(t, "uploader", rbacv1.PolicyRule{APIGroups: []string{v1alpha2.GroupVersion.Group}, Resources: []string{UploadResource}, Verbs: []string{"create"}})
	f.grant(t, "nobody")
	return f
}

// grant creates ServiceAccount name with a ClusterRole of rules.
func (f *fixture) grant(t *testing.T, name string, rules ...rbacv1.PolicyRule) {
	t.Helper()
	ctx := context.Background()
	objs := []client.Object{&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: f.ns}}}
	if len(rules) > 0 {
		role := f.ns + "-" + name
		objs = append(objs,
			&rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: role}, Rules: rules},
			&rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: role},
				RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role},
				Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: f.ns, Name: name}}})
	}
	for _, o := range objs {
		if err := env.Client.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
}

// token returns a token of ServiceAccount sa for audiences (the API
// server's when none).
func (f *fixture) token(t *testing.T, sa string, audiences ...string) string {
	t.Helper()
	tr, err := f.kube.CoreV1().ServiceAccounts(f.ns).CreateToken(context.Background(), sa,
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{Audiences: audiences}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return tr.Status.Token
}

// do sends a request and returns the status and body.
func do(t *testing.T, method, url, token string, body io.Reader, contentLength int64) (int, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, url, body)
	if err != nil {
		t.Fatal(err)
	}
	if contentLength != 0 {
		req.ContentLength = contentLength
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, data
}

// settled waits until the RBAC of the fixture reaches the authorizer: the
// reader gets the content.
func (f *fixture) settled(t *testing.T) {
	t.Helper()
	token := f.token(t, "reader", Audience)
	envtest.Eventually(t, 10*time.Second, func() error {
		// A new token each time: answers are cached per token.
		code, body := do(t, http.MethodHead, URL(f.url, f.bundle), token, nil, 0)
		if code != http.StatusOK {
			token = f.token(t, "reader", Audience)
			return fmt.Errorf("%d %s", code, body)
		}
		return nil
	})
}

func TestContent(t *testing.T) {
	f := newFixture(t)
	f.settled(t)
	tests := []struct {
		name     string
		token    string
		wantCode int
		wantBody string
	}{
		{name: "no token", wantCode: http.StatusUnauthorized, wantBody: "a bearer token for audience rukpak.io/content is required"},
		{name: "not a token", token: "garbage", wantCode: http.StatusUnauthorized, wantBody: "the token is not valid for audience rukpak.io/content"},
		{name: "a token for the API server", token: f.token(t, "reader"), wantCode: http.StatusUnauthorized,
			wantBody: "the token is not valid for audience rukpak.io/content"},
		{name: "a token for another service", token: f.token(t, "reader", "vault"), wantCode: http.StatusUnauthorized,
			wantBody: "the token is not valid for audience rukpak.io/content"},
		{name: "a token for the content server and another service is fine", token: f.token(t, "reader", "vault", Audience), wantCode: http.StatusOK},
		{name: "allowed", token: f.token(t, "reader", Audience), wantCode: http.StatusOK},
		{name: "not allowed", token: f.token(t, "nobody", Audience), wantCode: http.StatusForbidden,
			wantBody: fmt.Sprintf(`user "system:serviceaccount:%s:nobody" may not get bundles/content %q in API group core.rukpak.io`, f.ns, f.bundle)},
		{name: "an uploader may not read", token: f.token(t, "uploader", Audience), wantCode: http.StatusForbidden,
			wantBody: "may not get bundles/content"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, body := do(t, http.MethodGet, URL(f.url, f.bundle), tt.token, nil, 0)
			if code != tt.wantCode || !bytes.Contains(body, []byte(tt.wantBody)) {
				t.Fatalf("got %d %q, want %d containing %q", code, body, tt.wantCode, tt.wantBody)
			}
			if code == http.StatusOK {
				if files := tarNames(t, body); strings.Join(files, ",") != "manifests/,manifests/cm.yaml" {
					t.Fatalf("content has %v", files)
				}
			}
		})
	}
}

// archive returns n random bytes and their digest.
func archive(seed uint64, n int) ([]byte, string) {
	var key [32]byte
	key[0] = byte(seed)
	data := make([]byte, n)
	_, _ = rand.NewChaCha8(key).Read(data)
	sum := sha256.Sum256(data)
	return data, "sha256:" + hex.EncodeToString(sum[:])
}

func TestUpload(t *testing.T) {
	f := newFixture(t)
	f.settled(t)
	uploader, nobody := f.token(t, "uploader", Audience), f.token(t, "nobody", Audience)
	second := f.token(t, "second-uploader", Audience)
	sa := func(name string) string { return "system:serviceaccount:" + f.ns + ":" + name }
	data, digest := archive(1, upload.ChunkSize+100) // two chunks
	other, otherDigest := archive(2, 1000)
	big, bigDigest := archive(3, maxUpload+1)
	tests := []struct {
		name          string
		method        string
		digest        string
		token         string
		body          []byte
		chunked       bool // no Content-Length
		wantCode      int
		wantBody      string
		wantStored    bool
		wantNotStored string   // a digest that must not be stored afterwards
		wantUploaders []string // the uploaders of digest afterwards
	}{
		{name: "stored", digest: digest, token: uploader, body: data, wantCode: http.StatusOK,
			wantBody: fmt.Sprintf(`{"digest":%q,"size":%d,"chunks":2}`, digest, len(data)), wantStored: true,
			wantUploaders: []string{sa("uploader")}},
		{name: "stored again: idempotent", digest: digest, token: uploader, body: data, wantCode: http.StatusOK,
			wantBody: fmt.Sprintf(`"digest":%q`, digest), wantStored: true, wantUploaders: []string{sa("uploader")}},
		// The digest alone makes no one an uploader: another user's bytes
		// are read and checked.
		{name: "another uploader, other bytes under a stored digest", digest: digest, token: second, body: other, wantCode: http.StatusUnprocessableEntity,
			wantBody: fmt.Sprintf("upload %s: the archive has digest %s, not %s", digest, otherDigest, digest), wantUploaders: []string{sa("uploader")}},
		{name: "another uploader, the same bytes", digest: digest, token: second, body: data, wantCode: http.StatusOK,
			wantBody: fmt.Sprintf(`"digest":%q`, digest), wantStored: true, wantUploaders: []string{sa("second-uploader"), sa("uploader")}},
		{name: "not allowed", digest: otherDigest, token: nobody, body: other, wantCode: http.StatusForbidden,
			wantBody: fmt.Sprintf(`user "system:serviceaccount:%s:nobody" may not create uploads in API group core.rukpak.io`, f.ns), wantNotStored: otherDigest},
		{name: "a token for the API server", digest: otherDigest, token: f.token(t, "uploader"), body: other, wantCode: http.StatusUnauthorized,
			wantBody: "not valid for audience rukpak.io/content", wantNotStored: otherDigest},
		{name: "no token", digest: otherDigest, body: other, wantCode: http.StatusUnauthorized, wantNotStored: otherDigest},
		{name: "wrong digest", digest: otherDigest, token: uploader, body: data, wantCode: http.StatusUnprocessableEntity,
			wantBody: fmt.Sprintf("upload %s: the archive has digest %s, not %s", otherDigest, digest, otherDigest), wantNotStored: otherDigest},
		{name: "oversized, announced", digest: bigDigest, token: uploader, body: big, wantCode: http.StatusRequestEntityTooLarge,
			wantBody: fmt.Sprintf("upload %s has %d bytes, more than the limit of %d", bigDigest, len(big), maxUpload), wantNotStored: bigDigest},
		{name: "oversized, chunked", digest: bigDigest, token: uploader, body: big, chunked: true, wantCode: http.StatusRequestEntityTooLarge,
			wantBody: fmt.Sprintf("upload %s: the archive is larger than the limit of %d bytes", bigDigest, maxUpload), wantNotStored: bigDigest},
		{name: "malformed digest", digest: "sha256:ABC", token: uploader, body: other, wantCode: http.StatusBadRequest,
			wantBody: `invalid upload digest "sha256:ABC"`},
		{name: "GET", method: http.MethodGet, digest: digest, token: uploader, wantCode: http.StatusMethodNotAllowed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			method := tt.method
			if method == "" {
				method = http.MethodPut
			}
			var body io.Reader
			length := int64(0)
			if tt.body != nil {
				body = bytes.NewReader(tt.body)
				if tt.chunked {
					body, length = io.MultiReader(body), -1
				}
			}
			code, got := do(t, method, UploadURL(f.url, tt.digest), tt.token, body, length)
			if code != tt.wantCode || !bytes.Contains(got, []byte(tt.wantBody)) {
				t.Fatalf("got %d %q, want %d containing %q", code, got, tt.wantCode, tt.wantBody)
			}
			if tt.wantStored {
				f.checkStored(t, tt.digest, tt.body)
			}
			if tt.wantNotStored != "" {
				if _, err := f.uploads.Stat(context.Background(), tt.wantNotStored); err == nil {
					t.Fatalf("upload %s was stored", tt.wantNotStored)
				}
			}
			if tt.wantUploaders != nil {
				got, err := f.uploads.Uploaders(context.Background(), tt.digest)
				if err != nil || !slices.Equal(got, tt.wantUploaders) {
					t.Fatalf("uploaders of %s = %q, %v; want %q", tt.digest, got, err, tt.wantUploaders)
				}
			}
		})
	}
}

// checkStored checks that the upload digest reads back as data from chunks
// the upload store's field manager wrote.
func (f *fixture) checkStored(t *testing.T, digest string, data []byte) {
	t.Helper()
	ctx := context.Background()
	r, err := f.uploads.Open(ctx, digest)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	got, err := io.ReadAll(r)
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("read back %d bytes, %v; want the %d uploaded", len(got), err, len(data))
	}
	list := &corev1.ConfigMapList{}
	if err := env.Client.List(ctx, list, client.InNamespace(f.ns), client.HasLabels{upload.LabelChunk}); err != nil {
		t.Fatal(err)
	}
	for _, cm := range list.Items {
		if len(cm.ManagedFields) == 0 || cm.ManagedFields[0].Manager != upload.FieldManager {
			t.Fatalf("chunk %s written by %v, want %s", cm.Name, cm.ManagedFields, upload.FieldManager)
		}
	}
}

// TestUploadSlots: uploads beyond the concurrency limit are refused with
// 429 while one is in progress, and a slot frees when it ends.
func TestUploadSlots(t *testing.T) {
	f := newFixture(t)
	f.settled(t)
	ctx := context.Background()
	uploader := f.token(t, "uploader", Audience)
	// A second server on the same store with one slot, which says when an
	// upload has its slot and is being stored.
	started := &startSignal{Uploads: f.uploads, started: make(chan struct{}, 1)}
	one := httptest.NewServer(New(nil, env.Client, f.kube, WithUploads(started, 1, time.Minute)))
	defer one.Close()

	data, digest := archive(4, 1000)
	pr, pw := io.Pipe()
	first := make(chan int, 1)
	go func() {
		req, _ := http.NewRequestWithContext(ctx, http.MethodPut, UploadURL(one.URL, digest), pr)
		req.Header.Set("Authorization", "Bearer "+uploader)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			first <- 0
			return
		}
		resp.Body.Close()
		first <- resp.StatusCode
	}()
	if _, err := pw.Write(data[:10]); err != nil {
		t.Fatal(err)
	}
	select {
	case <-started.started:
	case <-time.After(10 * time.Second):
		t.Fatal("the first upload did not start within 10s")
	}
	other, otherDigest := archive(5, 1000)
	code, body := do(t, http.MethodPut, UploadURL(one.URL, otherDigest), uploader, bytes.NewReader(other), 0)
	if code != http.StatusTooManyRequests || !bytes.Contains(body, []byte("1 uploads are in progress")) {
		t.Fatalf("second upload: %d %q, want 429", code, body)
	}
	if _, err := pw.Write(data[10:]); err != nil {
		t.Fatal(err)
	}
	_ = pw.Close()
	if code := <-first; code != http.StatusOK {
		t.Fatalf("first upload: %d, want 200", code)
	}
	if code, body := do(t, http.MethodPut, UploadURL(one.URL, otherDigest), uploader, bytes.NewReader(other), 0); code != http.StatusOK {
		t.Fatalf("upload after the first ended: %d %q, want 200", code, body)
	}
}

func tarNames(t *testing.T, data []byte) []string {
	t.Helper()
	zr, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(zr)
	var names []string
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return names
		}
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, h.Name)
	}
}

// startSignal is an upload store that signals when a Put starts.
type startSignal struct {
	Uploads
	started chan struct{}
}

func (s *startSignal) Put(ctx context.Context, r io.Reader, digest, uploader string) error {
	select {
	case s.started <- struct{}{}:
	default:
	}
	return s.Uploads.Put(ctx, r, digest, uploader)
}
