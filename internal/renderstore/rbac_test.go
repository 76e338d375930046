//go:build integration

package renderstore

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rukpak/rukpak/api/v1alpha2"
	"github.com/rukpak/rukpak/internal/sourcetree"
	"github.com/rukpak/rukpak/pkg/envtest"
)

// TestManagerRBAC saves, loads and deletes a render as the manager's
// ServiceAccount bound to the roles of config/rbac: they grant what a
// Store needs in rukpak-system, and nothing in another namespace.
func TestManagerRBAC(t *testing.T) {
	ctx := context.Background()
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "rukpak-manager", Namespace: v1alpha2.SystemNamespace}}
	if err := env.Client.Create(ctx, sa); err != nil {
		t.Fatal(err)
	}
	for _, file := range []string{"role.yaml", "role_binding.yaml"} {
		createAll(t, filepath.Join(sourcetree.Root(), "config", "rbac", file))
	}
	kube := kubernetes.NewForConfigOrDie(env.Config)
	tok, err := kube.CoreV1().ServiceAccounts(sa.Namespace).CreateToken(ctx, sa.Name,
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](3600)}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	asManager, err := client.New(&rest.Config{Host: env.Config.Host, BearerToken: tok.Status.Token,
		TLSClientConfig: rest.TLSClientConfig{CAData: env.Config.CAData}}, client.Options{Scheme: env.Scheme})
	if err != nil {
		t.Fatal(err)
	}

	b := newBundle(t, "rbac")
	in := Render{Objects: randomObjects(t, 4, 2<<10)}
	s := New(asManager, asManager, v1alpha2.SystemNamespace, Options{})
	s.chunkSize = 4 << 10 // several chunks
	// The authorizer sees new bindings within moments.
	envtest.Eventually(t, 10*time.Second, func() error { return s.Save(ctx, b, in) })
	fresh := New(asManager, asManager, v1alpha2.SystemNamespace, Options{})
	fresh.chunkSize = s.chunkSize
	got, err := fresh.Load(ctx, b.Name)
	if err != nil {
		t.Fatal(err)
	}
	assertSame(t, got, saved(in, b))
	if err := fresh.Delete(ctx, b.Name); err != nil {
		t.Fatal(err)
	}
	if _, err := fresh.Load(ctx, b.Name); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Load after Delete = %v, want ErrNotFound", err)
	}

	elsewhere := New(asManager, asManager, "default", Options{})
	if err := elsewhere.Save(ctx, b, in); !apierrors.IsForbidden(err) {
		t.Fatalf("Save in default as the manager = %v, want forbidden", err)
	}
}

// createAll creates every object of the YAML file path.
func createAll(t *testing.T, path string) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	dec := utilyaml.NewYAMLOrJSONDecoder(f, 4096)
	for {
		obj := &unstructured.Unstructured{}
		err := dec.Decode(&obj.Object)
		if errors.Is(err, io.EOF) {
			return
		}
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		if len(obj.Object) == 0 {
			continue
		}
		if err := env.Client.Create(context.Background(), obj); err != nil {
			t.Fatalf("creating %s %s from %s: %v", obj.GetKind(), obj.GetName(), path, err)
		}
	}
}
