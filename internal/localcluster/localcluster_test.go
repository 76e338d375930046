//go:build integration

package localcluster

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rukpak/rukpak/config"
	"github.com/rukpak/rukpak/pkg/envtest"
)

func TestMain(m *testing.M) {
	switch {
	case slices.Contains(os.Args[1:], fakeManagerFlag):
		fakeManager(os.Args[1:])
	default:
		os.Exit(m.Run())
	}
}

// testBinDir is the directory of the control-plane binaries, built first
// if they are missing.
func testBinDir(t *testing.T) string {
	t.Helper()
	dir, err := envtest.BinDir()
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

func exists(path string) bool { _, err := os.Stat(path); return err == nil }

// syncBuffer collects progress output from Up.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func startCluster(t *testing.T, minimal bool) (*Cluster, client.Client, []process) {
	t.Helper()
	stateDir := t.TempDir()
	t.Cleanup(func() {
		if err := Down(stateDir); err != nil {
			t.Errorf("Down in cleanup: %v", err)
		}
	})
	out := &syncBuffer{}
	began := time.Now()
	c, err := Up(t.Context(), Options{StateDir: stateDir, BinDir: testBinDir(t), Minimal: minimal, NoManager: true, Out: out})
	if err != nil {
		t.Fatalf("Up: %v\n%s", err, out)
	}
	t.Logf("Up (minimal=%v) took %s:\n%s", minimal, time.Since(began).Round(time.Millisecond), out)
	cfg, err := c.RESTConfig()
	if err != nil {
		t.Fatal(err)
	}
	scheme, err := newScheme()
	if err != nil {
		t.Fatal(err)
	}
	cl, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	s, err := readState(stateDir)
	if err != nil || s == nil {
		t.Fatalf("reading pid file: %v", err)
	}
	return c, cl, s.Processes
}

func TestMinimalLifecycle(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	c, cl, procs := startCluster(t, true)
	if len(procs) != 2 {
		t.Fatalf("a minimal cluster runs etcd and kube-apiserver, got %+v", procs)
	}

	namespaces := &corev1.NamespaceList{}
	if err := cl.List(ctx, namespaces); err != nil {
		t.Fatalf("listing namespaces with the kubeconfig: %v", err)
	}
	if !hasNamespace(namespaces, "rukpak-system") {
		t.Errorf("namespace rukpak-system missing from %v", namespaces.Items)
	}
	crds, err := config.CRDs()
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range crds {
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := cl.Get(ctx, client.ObjectKey{Name: want.Name}, crd); err != nil {
			t.Fatalf("CRD %s: %v", want.Name, err)
		}
		if !established(crd) {
			t.Errorf("CRD %s is not Established", want.Name)
		}
	}

	// The manager's kubeconfig, the one ManagerFlags names, is the
	// release ServiceAccount's user name (which config/policy knows as the
	// manager's) in system:masters, with a bearer token, no certificate.
	managerKubeconfig := filepath.Join(c.StateDir, managerKubeconfigName)
	if !slices.Contains(ManagerFlags(c.StateDir, 1, 2), "--kubeconfig="+managerKubeconfig) {
		t.Errorf("ManagerFlags do not name %s: %v", managerKubeconfig, ManagerFlags(c.StateDir, 1, 2))
	}
	managerCfg, err := clientcmd.BuildConfigFromFlags("", managerKubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	if managerCfg.BearerToken == "" || len(managerCfg.CertData) > 0 {
		t.Errorf("the manager's kubeconfig should hold a token and no client certificate")
	}
	review, err := kubernetes.NewForConfigOrDie(managerCfg).AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("the manager's kubeconfig: %v", err)
	}
	if u := review.Status.UserInfo; u.Username != managerUser || !slices.Contains(u.Groups, adminGroup) {
		t.Errorf("the manager's kubeconfig authenticates as %s %v, want %s in %s", u.Username, u.Groups, managerUser, adminGroup)
	}

	// What users are offered: the release's ClusterRoles for them, and
	// the admin's Uploader, whose tokens for the content server the admin
	// may request.
	checkForUsers(t, cl)
	if err := cl.Delete(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: Uploader.Namespace, Name: Uploader.Name}}); err != nil {
		t.Fatal(err)
	}

	out := &syncBuffer{}
	again, err := Up(ctx, Options{StateDir: c.StateDir, BinDir: testBinDir(t), Minimal: true, NoManager: true, Out: out})
	if err != nil {
		t.Fatalf("second Up: %v", err)
	}
	if again.Server != c.Server || !strings.Contains(out.String(), "already up") {
		t.Errorf("second Up should be a no-op on %s; got %s, output %q", c.Server, again.Server, out)
	}
	// ... but for what users are offered, put back where it is missing.
	checkForUsers(t, cl)

	// A manager that exits at once fails StartManager with its log.
	began := time.Now()
	err = c.StartManager(ctx, filepath.Join(testBinDir(t), "kwok"))
	if err == nil || !strings.Contains(err.Error(), "unknown flag") {
		t.Errorf("StartManager with a binary that rejects the flags: want its log in the error, got %v", err)
	}
	if d := time.Since(began); d > 10*time.Second {
		t.Errorf("a manager that exits should fail fast, took %s", d)
	}

	// A manager that serves /readyz is recorded, so Down stops it.
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	childrenFile := filepath.Join(t.TempDir(), "children")
	if err := c.StartManager(ctx, self, fakeManagerFlag, fakeChildrenFlag+"="+childrenFile); err != nil {
		t.Fatalf("StartManager: %v", err)
	}
	// The manager's children (renderers, say), in its process group and in
	// one of their own, are stopped with it.
	children, err := readChildren(childrenFile)
	if err != nil {
		t.Fatalf("reading the fake manager's children: %v", err)
	}
	loaded, err := Load(c.StateDir)
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	if loaded.ManagerReadyURL == "" {
		t.Error("Load: ManagerReadyURL is empty after StartManager")
	}
	s, err := readState(c.StateDir)
	if err != nil {
		t.Fatal(err)
	}
	procs = s.Processes

	began = time.Now()
	if err := Down(c.StateDir); err != nil {
		t.Fatalf("Down: %v", err)
	}
	t.Logf("Down took %s", time.Since(began).Round(time.Millisecond))
	for _, p := range procs {
		if !p.gone() {
			t.Errorf("%s (pid %d) still runs after Down", p.Name, p.PID)
		}
	}
	for _, p := range children {
		if !p.gone() {
			t.Errorf("the fake manager's child (pid %d) still runs after Down", p.PID)
		}
	}
	if exists(filepath.Join(c.StateDir, pidFileName)) {
		t.Error("pid file left after Down")
	}
	if err := Down(c.StateDir); err != nil {
		t.Errorf("second Down: %v", err)
	}
	if _, err := Load(c.StateDir); !errors.Is(err, ErrNotRunning) {
		t.Errorf("Load after Down: want ErrNotRunning, got %v", err)
	}
}

func TestFullClusterRunsDeployment(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	_, cl, procs := startCluster(t, false)
	if len(procs) != 5 {
		t.Fatalf("a full cluster runs five components, got %+v", procs)
	}
	labels := map[string]string{"app": "hello"}
	deploy := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "hello", Namespace: "default"},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](2),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					NodeSelector: map[string]string{NodeSelectorKey: NodeSelectorValue},
					Containers:   []corev1.Container{{Name: "hello", Image: "registry.example/hello:1"}},
				},
			},
		},
	}
	if err := cl.Create(ctx, deploy); err != nil {
		t.Fatalf("creating deployment: %v", err)
	}
	began := time.Now()
	err := poll(ctx, 60*time.Second, "deployment hello to be Available", func(ctx context.Context) (bool, error) {
		if err := cl.Get(ctx, client.ObjectKeyFromObject(deploy), deploy); err != nil {
			return false, err
		}
		return deploy.Status.AvailableReplicas == 2 && deploymentAvailable(deploy), nil
	})
	if err != nil {
		t.Fatalf("%v; status: %+v", err, deploy.Status)
	}
	t.Logf("deployment Available after %s", time.Since(began).Round(time.Millisecond))

	// The simulated Node has a heartbeat: well past the node lifecycle
	// controller's grace period (about 50 s) the Node is still Ready, its
	// Lease keeps being renewed and the Deployment stays Available. Every
	// check runs throughout the window; the first miss fails the test.
	var firstRenew time.Time
	holdUntil := time.Now().Add(nodeHeartbeatWindow)
	for time.Now().Before(holdUntil) {
		node := &corev1.Node{}
		if err := cl.Get(ctx, client.ObjectKey{Name: NodeName}, node); err != nil {
			t.Fatalf("reading node: %v", err)
		}
		if !nodeReady(node) {
			t.Fatalf("node %s is not Ready %s after the deployment became Available: %+v",
				NodeName, time.Since(began).Round(time.Second), node.Status.Conditions)
		}
		if err := cl.Get(ctx, client.ObjectKeyFromObject(deploy), deploy); err != nil {
			t.Fatalf("reading deployment: %v", err)
		}
		if deploy.Status.AvailableReplicas != 2 || !deploymentAvailable(deploy) {
			t.Fatalf("deployment hello lost availability %s after it became Available: %+v",
				time.Since(began).Round(time.Second), deploy.Status)
		}
		lease := &coordinationv1.Lease{}
		if err := cl.Get(ctx, client.ObjectKey{Namespace: corev1.NamespaceNodeLease, Name: NodeName}, lease); err != nil {
			t.Fatalf("reading the node's lease: %v", err)
		}
		if lease.Spec.RenewTime != nil && firstRenew.IsZero() {
			firstRenew = lease.Spec.RenewTime.Time
		}
		select {
		case <-ctx.Done():
			t.Fatal(ctx.Err())
		case <-time.After(2 * time.Second):
		}
	}
	lease := &coordinationv1.Lease{}
	if err := cl.Get(ctx, client.ObjectKey{Namespace: corev1.NamespaceNodeLease, Name: NodeName}, lease); err != nil {
		t.Fatalf("reading the node's lease: %v", err)
	}
	if firstRenew.IsZero() || lease.Spec.RenewTime == nil || !lease.Spec.RenewTime.After(firstRenew) {
		t.Fatalf("the node's lease was not renewed during %s (first seen %v, now %v)", nodeHeartbeatWindow, firstRenew, lease.Spec.RenewTime)
	}
	t.Logf("node Ready and deployment Available for %s; lease renewed at %v", nodeHeartbeatWindow, lease.Spec.RenewTime.Time)
}

// nodeHeartbeatWindow is how long the full-cluster test watches the Node and
// a Deployment after it became Available: a Node whose Lease is never
// renewed goes NotReady 50 s (the node lifecycle controller's
// node-monitor-grace-period) after its last renewal, found by a check
// every 5 s; the window starts after the Node registered, and leaves 25 s
// more for a loaded machine. (test/e2e's TestExamplesStayHealthy watches
// the same on the suite's cluster for two minutes.)
const nodeHeartbeatWindow = 80 * time.Second

// checkForUsers checks that the cluster offers what installForUsers
// installs, and that the admin gets a token for the content server as the
// Uploader.
func checkForUsers(t *testing.T, cl client.Client) {
	t.Helper()
	ctx := t.Context()
	roles, err := config.UserRoles()
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range roles {
		if err := cl.Get(ctx, client.ObjectKey{Name: r.Name}, &rbacv1.ClusterRole{}); err != nil {
			t.Errorf("ClusterRole %s: %v", r.Name, err)
		}
	}
	binding := &rbacv1.ClusterRoleBinding{}
	if err := cl.Get(ctx, client.ObjectKey{Name: Uploader.Name}, binding); err != nil {
		t.Fatalf("ClusterRoleBinding %s: %v", Uploader.Name, err)
	}
	if binding.RoleRef.Name != "rukpak-uploader" || len(binding.Subjects) != 1 || binding.Subjects[0].Name != Uploader.Name ||
		binding.Subjects[0].Namespace != Uploader.Namespace {
		t.Errorf("ClusterRoleBinding %s binds %+v to %s", Uploader.Name, binding.Subjects, binding.RoleRef.Name)
	}
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: Uploader.Namespace, Name: Uploader.Name}}
	tr := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{Audiences: []string{"rukpak.io/content"}}}
	if err := cl.SubResource("token").Create(ctx, sa, tr); err != nil || tr.Status.Token == "" {
		t.Errorf("a token for %s: %v", Uploader, err)
	}
}

func nodeReady(node *corev1.Node) bool {
	for _, c := range node.Status.Conditions {
		if c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue {
			return true
		}
	}
	return false
}

func hasNamespace(list *corev1.NamespaceList, name string) bool {
	for _, ns := range list.Items {
		if ns.Name == name {
			return true
		}
	}
	return false
}

func established(crd *apiextensionsv1.CustomResourceDefinition) bool {
	for _, c := range crd.Status.Conditions {
		if c.Type == apiextensionsv1.Established && c.Status == apiextensionsv1.ConditionTrue {
			return true
		}
	}
	return false
}

func deploymentAvailable(d *appsv1.Deployment) bool {
	for _, c := range d.Status.Conditions {
		if c.Type == appsv1.DeploymentAvailable && c.Status == corev1.ConditionTrue {
			return true
		}
	}
	return false
}
