// Package envtest starts a real etcd and kube-apiserver with rukpak's CRDs
// and admission policies installed, once per test package, and offers
// helpers to create objects and wait for them. Tests never mock the API
// server.
//
// It is an assembly of the public API (see package
// github.com/rukpak/rukpak/pkg): it installs rukpak's CRDs and policies
// from the copies package github.com/rukpak/rukpak/config embeds, so it
// works from the module cache as well as from rukpak's repository. The
// binaries come from $KUBEBUILDER_ASSETS (see BinDir); inside the
// repository, hack/build-cluster-bins.sh builds them into bin/cluster.
package envtest

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	rukpakv1alpha1 "github.com/rukpak/rukpak/api/v1alpha1"
	rukpakv1alpha2 "github.com/rukpak/rukpak/api/v1alpha2"
	"github.com/rukpak/rukpak/config"
	"github.com/rukpak/rukpak/internal/admission"
	"github.com/rukpak/rukpak/internal/sourcetree"
)

// Env is a running control plane.
type Env struct {
	// Config reaches the API server as an admin.
	Config *rest.Config
	// Client is a direct (uncached) client with rukpak's types registered.
	Client client.Client
	// Scheme holds the built-in and rukpak types.
	Scheme *k8sruntime.Scheme

	env *envtest.Environment
}

// clusterBins are the files hack/build-cluster-bins.sh produces.
var clusterBins = []string{"etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kubectl", "kwok", "kwok-stages.yaml"}

// BinDir returns the directory of the control-plane binaries:
// $KUBEBUILDER_ASSETS if it holds them all. Inside rukpak's repository it
// is otherwise bin/cluster, where hack/build-cluster-bins.sh builds what is
// missing (reusing what is there); from the module cache, where that
// cannot be written, $KUBEBUILDER_ASSETS is required.
func BinDir() (string, error) {
	env := os.Getenv("KUBEBUILDER_ASSETS")
	if env != "" && complete(env) {
		return env, nil
	}
	root := sourcetree.Root()
	dir := filepath.Join(root, "bin", "cluster")
	if complete(dir) {
		return dir, nil
	}
	if _, err := os.Stat(filepath.Join(root, ".git")); err != nil {
		return "", fmt.Errorf("no control-plane binaries: KUBEBUILDER_ASSETS=%q must name a directory holding %v", env, clusterBins)
	}
	cmd := exec.Command(filepath.Join(root, "hack", "build-cluster-bins.sh"), dir)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("building control-plane binaries: %w", err)
	}
	return dir, nil
}

func complete(dir string) bool {
	for _, name := range clusterBins {
		if _, err := os.Stat(filepath.Join(dir, name)); err != nil {
			return false
		}
	}
	return true
}

// Scheme returns a scheme with the built-in, apiextensions and rukpak types
// (v1alpha2, and the v1alpha1 the conversion webhook serves).
func Scheme() *k8sruntime.Scheme {
	s := k8sruntime.NewScheme()
	must(clientgoscheme.AddToScheme(s))
	must(apiextensionsv1.AddToScheme(s))
	must(rukpakv1alpha2.AddToScheme(s))
	must(rukpakv1alpha1.AddToScheme(s))
	return s
}

func must(err error) {
	if err != nil {
		panic(err)
	}
}

// Options change the control plane that StartWith starts.
type Options struct {
	// AuditLog, when set, is the file the API server writes an audit
	// event to for every request (level Metadata, one JSON object a line,
	// stages ResponseStarted and ResponseComplete). It tells who read and
	// wrote what, dry-runs and no-op applies included.
	AuditLog string
}

// Start starts etcd and kube-apiserver with rukpak's CRDs, the
// rukpak-system namespace and the admission policies of config/policy,
// enforced by the time it returns. Config's user is in system:masters, so
// it passes the policies' permission checks.
func Start() (*Env, error) { return StartWith(Options{}) }

// StartWith is Start with options.
func StartWith(o Options) (*Env, error) {
	bin, err := BinDir()
	if err != nil {
		return nil, err
	}
	e := &envtest.Environment{BinaryAssetsDirectory: bin}
	if o.AuditLog != "" {
		policy := filepath.Join(filepath.Dir(o.AuditLog), "audit-policy.yaml")
		if err := os.WriteFile(policy, []byte(auditAll), 0o644); err != nil {
			return nil, fmt.Errorf("writing the audit policy: %w", err)
		}
		e.ControlPlane.GetAPIServer().Configure().
			Set("audit-policy-file", policy).
			Set("audit-log-path", o.AuditLog).
			Set("audit-log-mode", "blocking")
	}
	cfg, err := e.Start()
	if err != nil {
		return nil, fmt.Errorf("starting envtest: %w", err)
	}
	cfg.QPS, cfg.Burst = 500, 1000
	env, err := setUp(e, cfg)
	if err != nil {
		_ = e.Stop()
		return nil, err
	}
	return env, nil
}

// setUp installs rukpak into a started control plane. The API server loads
// admission policies a second or two after they are written, so they are
// written first and waited for last.
func setUp(e *envtest.Environment, cfg *rest.Config) (*Env, error) {
	ctx := context.Background()
	if err := admission.ApplyPolicies(ctx, cfg); err != nil {
		return nil, fmt.Errorf("installing admission policies: %w", err)
	}
	// The CRDs are package config's embedded copies, so that this works
	// from the module cache as well as from the repository.
	embedded, err := config.CRDs()
	if err != nil {
		return nil, fmt.Errorf("installing CRDs: %w", err)
	}
	e.CRDInstallOptions = envtest.CRDInstallOptions{CRDs: embedded}
	crds, err := envtest.InstallCRDs(cfg, e.CRDInstallOptions)
	if err != nil {
		return nil, fmt.Errorf("installing CRDs: %w", err)
	}
	e.CRDs = crds
	s := Scheme()
	c, err := client.New(cfg, client.Options{Scheme: s})
	if err != nil {
		return nil, fmt.Errorf("creating client: %w", err)
	}
	ns := &corev1Namespace{}
	if err := c.Create(ctx, ns.object(rukpakv1alpha2.SystemNamespace)); err != nil {
		return nil, fmt.Errorf("creating %s: %w", rukpakv1alpha2.SystemNamespace, err)
	}
	if err := admission.WaitPoliciesEnforced(ctx, cfg); err != nil {
		return nil, fmt.Errorf("installing admission policies: %w", err)
	}
	return &Env{Config: cfg, Client: c, Scheme: s, env: e}, nil
}

// auditAll is the audit policy of Options.AuditLog.
const auditAll = `apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: [RequestReceived]
rules:
- level: Metadata
`

// AddUser returns a config that reaches the API server as a new user
// called name (a client certificate), in groups. A process given it is
// told apart from the test's own requests, in an audit log for example.
func (e *Env) AddUser(name string, groups ...string) (*rest.Config, error) {
	u, err := e.env.ControlPlane.AddUser(envtest.User{Name: name, Groups: groups}, e.Config)
	if err != nil {
		return nil, fmt.Errorf("adding user %s: %w", name, err)
	}
	cfg := u.Config()
	cfg.QPS, cfg.Burst = e.Config.QPS, e.Config.Burst
	return cfg, nil
}

// Stop stops the control plane.
func (e *Env) Stop() error { return e.env.Stop() }

// Run starts a control plane, runs the package's tests, stops it and exits.
// Use it from TestMain: `func TestMain(m *testing.M) { envtest.Run(m, &env) }`.
func Run(m *testing.M, into **Env) { RunWith(m, into, Options{}) }

// RunWith is Run with options.
func RunWith(m *testing.M, into **Env, o Options) {
	env, err := StartWith(o)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	*into = env
	code := m.Run()
	if err := env.Stop(); err != nil {
		fmt.Fprintln(os.Stderr, "stopping envtest:", err)
	}
	os.Exit(code)
}

// Eventually polls cond every 50ms until it returns nil or timeout passes,
// then fails the test with the last error.
func Eventually(t testing.TB, timeout time.Duration, cond func() error) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	var err error
	for {
		if err = cond(); err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("condition not met within %s: %v", timeout, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// GVK returns the group, version and kind of obj from the env's scheme.
func (e *Env) GVK(obj k8sruntime.Object) schema.GroupVersionKind {
	gvk, err := e.Client.GroupVersionKindFor(obj)
	must(err)
	return gvk
}
