//go:build integration

package main

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rukpak/rukpak/api/v1alpha2"
	"github.com/rukpak/rukpak/internal/contentserver"
	"github.com/rukpak/rukpak/internal/store"
	"github.com/rukpak/rukpak/internal/upload"
	"github.com/rukpak/rukpak/pkg/envtest"
)

// contentFixture is a real content server (with uploads into
// rukpak-system) in front of the test API server, and ServiceAccounts of
// namespace ns: "uploader" may create uploads, "reader" may get
// bundles/content, "nobody" may do neither.
type contentFixture struct {
	url   string
	store *store.Store
	ns    string
}

func newContentFixture(t *testing.T) *contentFixture {
	t.Helper()
	ctx := context.Background()
	kube, err := kubernetes.NewForConfig(testEnv.Config)
	if err != nil {
		t.Fatal(err)
	}
	st, err := store.New(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	uploads := upload.NewStore(testEnv.Client, testEnv.Client, v1alpha2.SystemNamespace)
	srv := httptest.NewServer(contentserver.New(st, testEnv.Client, kube, contentserver.WithUploads(uploads, 0, 0)))
	t.Cleanup(srv.Close)
	f := &contentFixture{url: srv.URL, store: st, ns: testEnv.Namespace(t, "content")}
	for sa, rule := range map[string]*rbacv1.PolicyRule{
		"uploader": {APIGroups: []string{v1alpha2.GroupVersion.Group}, Resources: []string{contentserver.UploadResource}, Verbs: []string{"create"}},
		"reader":   {APIGroups: []string{v1alpha2.GroupVersion.Group}, Resources: []string{"bundles/content"}, Verbs: []string{"get"}},
		"nobody":   nil,
	} {
		objs := []client.Object{&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: sa, Namespace: f.ns}}}
		if rule != nil {
			name := f.ns + "-" + sa
			objs = append(objs, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: name}, Rules: []rbacv1.PolicyRule{*rule}},
				&rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name},
					RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: name},
					Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: f.ns, Name: sa}}})
		}
		for _, o := range objs {
			if err := testEnv.Client.Create(ctx, o); err != nil {
				t.Fatal(err)
			}
		}
	}
	// Wait until the bindings reach the authorizer.
	for sa, attrs := range map[string]authorizationv1.ResourceAttributes{
		"uploader": {Group: v1alpha2.GroupVersion.Group, Resource: contentserver.UploadResource, Verb: "create"},
		"reader":   {Group: v1alpha2.GroupVersion.Group, Resource: "bundles", Subresource: "content", Verb: "get", Name: "any"},
	} {
		envtest.Eventually(t, 10*time.Second, func() error {
			sar, err := kube.AuthorizationV1().SubjectAccessReviews().Create(ctx, &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
				User: "system:serviceaccount:" + f.ns + ":" + sa, Groups: []string{"system:serviceaccounts"}, ResourceAttributes: &attrs,
			}}, metav1.CreateOptions{})
			if err == nil && !sar.Status.Allowed {
				err = fmt.Errorf("%s not allowed yet", sa)
			}
			return err
		})
	}
	return f
}

// bundle creates a Bundle whose content (one file) is in the fixture's
// store and whose status.contentURL is contentURL ("" for the fixture's).
func (f *contentFixture) bundle(t *testing.T, contentURL string) *v1alpha2.Bundle {
	t.Helper()
	ctx := context.Background()
	staging, err := f.store.NewStaging()
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, staging, "manifests/cm.yaml", "kind: ConfigMap\n")
	digest, err := f.store.Commit(staging)
	if err != nil {
		t.Fatal(err)
	}
	b := &v1alpha2.Bundle{
		ObjectMeta: metav1.ObjectMeta{Name: envtest.UniqueName("content")},
		Spec: v1alpha2.BundleSpec{ProvisionerClassName: v1alpha2.ClassPlain, Sources: []v1alpha2.BundleSource{{
			Type: v1alpha2.SourceTypeUpload, Upload: &v1alpha2.UploadSource{Digest: "sha256:" + strings.Repeat("b", 64)},
		}}},
	}
	if err := testEnv.Client.Create(ctx, b); err != nil {
		t.Fatal(err)
	}
	if contentURL == "" {
		contentURL = contentserver.URL(f.url, b.Name)
	}
	b.Status.ContentDigest, b.Status.ContentURL = digest, contentURL
	if err := testEnv.Client.Status().Update(ctx, b); err != nil {
		t.Fatal(err)
	}
	return b
}

// recorder is an HTTP server that records the Authorization headers it
// receives.
type recorder struct {
	mu      sync.Mutex
	headers []string
	url     string
}

func newRecorder(t *testing.T) *recorder {
	r := &recorder{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		r.mu.Lock()
		r.headers = append(r.headers, req.Header.Get("Authorization"))
		r.mu.Unlock()
		w.WriteHeader(http.StatusOK)
	}))
	t.Cleanup(srv.Close)
	r.url = srv.URL
	return r
}

func (r *recorder) requests() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.headers...)
}

func TestContent(t *testing.T) {
	f := newContentFixture(t)
	kc := kubeconfig(t)
	evil := newRecorder(t)
	served := f.bundle(t, "")
	planted := f.bundle(t, evil.url+"/bundles/x")
	samehost := f.bundle(t, f.url+"/elsewhere/"+"x")
	out := filepath.Join(t.TempDir(), "content.tar.gz")
	tests := []struct {
		name    string
		args    []string
		env     map[string]string
		wantErr []string
	}{
		{name: "downloaded with a token requested for a reader", args: []string{served.Name, "--content-server", f.url, "--token-for", f.ns + "/reader"}},
		{name: "the content server from the environment", args: []string{served.Name, "--token-for", f.ns + "/reader"},
			env: map[string]string{contentServerEnv: f.url}},
		{name: "a contentURL on another server is refused", args: []string{planted.Name, "--content-server", f.url, "--token-for", f.ns + "/reader"},
			wantErr: []string{"status.contentURL \"" + evil.url + "/bundles/x\" is not the manager's content server", "refusing to send a token"}},
		{name: "a contentURL on another server is refused with --token too", args: []string{planted.Name, "--content-server", f.url, "--token", "secret"},
			wantErr: []string{"is not the manager's content server"}},
		{name: "a contentURL on another path is refused", args: []string{samehost.Name, "--content-server", f.url, "--token", "secret"},
			wantErr: []string{"is not the manager's content server"}},
		{name: "no content server known", args: []string{served.Name, "--token-for", f.ns + "/reader"},
			env:     map[string]string{stateDirEnv: t.TempDir()},
			wantErr: []string{"the address of the manager's content server is not known: pass --content-server"}},
		{name: "no token: the kubeconfig's credentials are not sent", args: []string{served.Name, "--content-server", f.url},
			wantErr: []string{"never the kubeconfig's credentials", "--token-for NAMESPACE/NAME"}},
		{name: "a ServiceAccount without the permission", args: []string{served.Name, "--content-server", f.url, "--token-for", f.ns + "/nobody"},
			wantErr: []string{"403 Forbidden", "may not get bundles/content"}},
		{name: "a token for the API server", args: []string{served.Name, "--content-server", f.url, "--token", apiToken(t, f.ns, "reader")},
			wantErr: []string{"401 Unauthorized", "not valid for audience " + contentserver.Audience}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv(contentServerEnv, "")
			for k, v := range tt.env {
				t.Setenv(k, v)
			}
			_, stderr, err := run(t, append([]string{"content", "--kubeconfig", kc, "-o", out}, tt.args...)...)
			if tt.wantErr == nil {
				if err != nil {
					t.Fatalf("content: %v", err)
				}
				if data, _ := os.ReadFile(out); len(data) == 0 || !strings.Contains(stderr, served.Name+":") {
					t.Fatalf("downloaded %d bytes; stderr %q", len(data), stderr)
				}
				return
			}
			if err == nil {
				t.Fatalf("content succeeded, want an error containing %q", tt.wantErr)
			}
			for _, w := range tt.wantErr {
				if !strings.Contains(err.Error(), w) {
					t.Fatalf("error %q does not contain %q", err, w)
				}
			}
		})
	}
	if got := evil.requests(); len(got) != 0 {
		t.Fatalf("the server of a planted contentURL received %d request(s) (Authorization %q), want none", len(got), got)
	}
}

// apiToken returns a token of ServiceAccount ns/name for the API server.
func apiToken(t *testing.T, ns, name string) string {
	t.Helper()
	kube, err := kubernetes.NewForConfig(testEnv.Config)
	if err != nil {
		t.Fatal(err)
	}
	tr, err := kube.CoreV1().ServiceAccounts(ns).CreateToken(context.Background(), name, &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return tr.Status.Token
}
