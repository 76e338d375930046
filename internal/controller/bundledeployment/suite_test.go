//go:build integration

package bundledeployment_test

import (
	"context"
	"fmt"
	"net"
	"os"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rukpak/rukpak/api/v1alpha2"
	"github.com/rukpak/rukpak/internal/manager"
	"github.com/rukpak/rukpak/pkg/envtest"
)

var env *envtest.Env

// metricsAddr is where the manager serves metrics.
var metricsAddr string

// freeAddr returns a loopback address with a port free now.
func freeAddr() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return l.Addr().String(), nil
}

// TestMain starts a real API server and runs the whole manager in-process
// against it.
func TestMain(m *testing.M) {
	e, err := envtest.Start()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	env = e
	dir, err := os.MkdirTemp("", "rukpak-store-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	opts := manager.DefaultOptions()
	opts.StorageDir = dir
	opts.HealthProbeBindAddress = "0"
	// Metrics are served as by default (HTTPS, authenticated and
	// authorized by the API server), on a port of this test's own.
	if metricsAddr, err = freeAddr(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	opts.MetricsBindAddress = metricsAddr
	// Most tests install as the manager; identity_test.go names
	// ServiceAccounts.
	opts.DefaultIdentity = manager.IdentityManager
	opts.ApprovalTTL = time.Second
	// Approvals of held revisions must come from another user than the
	// one who asked for the revision (gate_test.go approves as users of
	// its own; nothing else here holds revisions).
	opts.RequireSeparateApprover = true
	mgr, err := manager.New(env.Config, opts)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- mgr.Start(ctx) }()
	code := m.Run()
	cancel()
	if err := <-done; err != nil {
		fmt.Fprintln(os.Stderr, "manager:", err)
	}
	_ = env.Stop()
	_ = os.RemoveAll(dir)
	os.Exit(code)
}

// manifests makes an immutable ConfigMap in rukpak-system whose keys are
// files of the manifests/ directory.
func manifests(t *testing.T, files map[string]string) string {
	t.Helper()
	cm := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: envtest.UniqueName("manifests"), Namespace: v1alpha2.SystemNamespace},
		Immutable:  ptr.To(true),
		Data:       files,
	}
	if err := env.Client.Create(context.Background(), cm); err != nil {
		t.Fatalf("creating ConfigMap: %v", err)
	}
	return cm.Name
}

func source(cm string) []v1alpha2.BundleSource {
	return []v1alpha2.BundleSource{{
		Type:       v1alpha2.SourceTypeConfigMaps,
		ConfigMaps: []v1alpha2.ConfigMapSource{{ConfigMap: v1alpha2.LocalObjectReference{Name: cm}, Path: "manifests"}},
	}}
}

// newBD creates a plain BundleDeployment installing the ConfigMap cm into ns.
func newBD(t *testing.T, ns, cm string) *v1alpha2.BundleDeployment {
	t.Helper()
	bd := &v1alpha2.BundleDeployment{
		ObjectMeta: metav1.ObjectMeta{Name: envtest.UniqueName("bd")},
		Spec: v1alpha2.BundleDeploymentSpec{
			ProvisionerClassName: v1alpha2.ClassPlain,
			InstallNamespace:     ns,
			Sources:              source(cm),
		},
	}
	if err := env.Client.Create(context.Background(), bd); err != nil {
		t.Fatalf("creating BundleDeployment: %v", err)
	}
	return bd
}

// waitCondition waits until the BundleDeployment's condition has status and
// reason, for the current generation, and returns the BundleDeployment.
func waitCondition(t *testing.T, name, typ string, status metav1.ConditionStatus, reason string) *v1alpha2.BundleDeployment {
	t.Helper()
	bd := &v1alpha2.BundleDeployment{}
	envtest.Eventually(t, 30*time.Second, func() error {
		if err := env.Client.Get(context.Background(), client.ObjectKey{Name: name}, bd); err != nil {
			return err
		}
		c := meta.FindStatusCondition(bd.Status.Conditions, typ)
		if c == nil || c.Status != status || c.Reason != reason || c.ObservedGeneration != bd.Generation {
			return fmt.Errorf("condition %s = %+v, want %s/%s for generation %d", typ, c, status, reason, bd.Generation)
		}
		return nil
	})
	return bd
}

func configMapData(t *testing.T, ns, name string) (map[string]string, error) {
	t.Helper()
	cm := &corev1.ConfigMap{}
	if err := env.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, cm); err != nil {
		return nil, err
	}
	return cm.Data, nil
}

func mustNotExist(t *testing.T, obj client.Object, ns, name string) {
	t.Helper()
	err := env.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, obj)
	if !apierrors.IsNotFound(err) {
		t.Fatalf("%T %s/%s: want NotFound, got %v", obj, ns, name, err)
	}
}

func cmYAML(name, value string) string {
	return fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: %s\ndata:\n  value: %q\n", name, value)
}

func updateBD(t *testing.T, name string, mutate func(*v1alpha2.BundleDeployment)) {
	t.Helper()
	envtest.Eventually(t, 10*time.Second, func() error {
		bd := &v1alpha2.BundleDeployment{}
		if err := env.Client.Get(context.Background(), client.ObjectKey{Name: name}, bd); err != nil {
			return err
		}
		mutate(bd)
		return env.Client.Update(context.Background(), bd)
	})
}
