//go:build integration

package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/rukpak/rukpak/api/v1alpha2"
	"github.com/rukpak/rukpak/internal/apply"
	"github.com/rukpak/rukpak/internal/builtins"
	"github.com/rukpak/rukpak/internal/inventory"
	"github.com/rukpak/rukpak/internal/planner"
	"github.com/rukpak/rukpak/internal/servingcert"
	"github.com/rukpak/rukpak/internal/values"
)

// update rewrites the golden files of diff's output:
// go test ./cmd/rukpakctl -run TestDiff -update
var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// diff runs `rukpakctl diff args...` in-process and returns its exit status.
func diff(t *testing.T, args ...string) (stdout, stderr string, status int, err error) {
	t.Helper()
	cmd := newRootCmd()
	var out, errOut bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(&errOut)
	cmd.SetArgs(append([]string{"diff"}, args...))
	err = cmd.ExecuteContext(context.Background())
	if err != nil {
		status, err = exitStatus(err)
	}
	return out.String(), errOut.String(), status, err
}

// The bundle of the tests, in two versions: v2 scales and upgrades the
// Deployment, changes a key of the Secret, adds a ConfigMap and drops
// another.
var (
	diffBundleV1 = map[string]string{
		"web.yaml":      diffDeployment(1, "registry.k8s.io/pause:3.9"),
		"settings.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: settings}\ndata: {mode: fast}\n",
		"old.yaml":      "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: old}\ndata: {legacy: \"true\"}\n",
		"creds.yaml":    "apiVersion: v1\nkind: Secret\nmetadata: {name: creds}\ndata: {password: b2xkLXNlY3JldA==, user: YWRtaW4=}\n",
	}
	diffBundleV2 = map[string]string{
		"web.yaml":      diffDeployment(3, "registry.k8s.io/pause:3.10"),
		"settings.yaml": diffBundleV1["settings.yaml"],
		"new.yaml":      "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: new}\ndata: {fresh: \"yes\"}\n",
		"creds.yaml":    "apiVersion: v1\nkind: Secret\nmetadata: {name: creds}\ndata: {password: bmV3LXNlY3JldA==, user: YWRtaW4=}\n",
	}
)

func diffDeployment(replicas int, image string) string {
	return fmt.Sprintf(`apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  replicas: %d
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
      - {name: web, image: %q}
`, replicas, image)
}

// installedBD is a BundleDeployment installed as the manager installs it:
// its objects applied by the apply engine with rukpak's field manager and
// keys, and recorded in its inventory.
type installedBD struct {
	bd   *v1alpha2.BundleDeployment
	file string // its manifest
}

func installForDiff(t *testing.T, files map[string]string) installedBD {
	t.Helper()
	var objs []*unstructured.Unstructured
	for _, doc := range files {
		u := &unstructured.Unstructured{}
		if err := yaml.Unmarshal([]byte(doc), &u.Object); err != nil {
			t.Fatal(err)
		}
		objs = append(objs, u)
	}
	ns := testEnv.Namespace(t, "diff")
	return installObjects(t, ns, v1alpha2.ClassPlain, objs)
}

// installObjects installs objs as BundleDeployment ns (of class) into
// namespace ns.
func installObjects(t *testing.T, ns, class string, objs []*unstructured.Unstructured) installedBD {
	t.Helper()
	ctx := context.Background()
	name := ns // unique too
	bd := &v1alpha2.BundleDeployment{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: v1alpha2.BundleDeploymentSpec{
			ProvisionerClassName: class,
			InstallNamespace:     ns,
			Sources:              []v1alpha2.BundleSource{imageRev(1)},
		},
	}
	if err := testEnv.Client.Create(ctx, bd); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = testEnv.Client.Delete(context.Background(), bd) })
	engine := managerEngine(t)
	plan, err := engine.Prepare(objs, ns, apply.Owner{Name: name, Revision: name + "-r1", UID: bd.UID})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := engine.Apply(ctx, plan, apply.ApplyOptions{}); err != nil {
		t.Fatal(err)
	}
	store := inventory.NewStore(testEnv.Client, testEnv.Client, v1alpha2.SystemNamespace)
	if err := store.Save(ctx, inventory.Owner{Name: name, UID: bd.UID}, plan.IDs()); err != nil {
		t.Fatal(err)
	}
	manifest := fmt.Sprintf("apiVersion: core.rukpak.io/v1alpha2\nkind: BundleDeployment\nmetadata: {name: %s}\nspec:\n  provisionerClassName: %s\n  installNamespace: %s\n  sources:\n  - type: image\n    image: {ref: quay.io/example/op:v1}\n", name, class, ns)
	dir := t.TempDir()
	writeFile(t, dir, "bd.yaml", manifest)
	return installedBD{bd: bd, file: filepath.Join(dir, "bd.yaml")}
}

// managerEngine is an apply engine set up as the manager's.
func managerEngine(t *testing.T) *apply.Engine {
	t.Helper()
	hc, err := rest.HTTPClientFor(testEnv.Config)
	if err != nil {
		t.Fatal(err)
	}
	md, err := apply.NewMetadataClient(testEnv.Config, hc)
	if err != nil {
		t.Fatal(err)
	}
	c, err := client.New(testEnv.Config, client.Options{HTTPClient: hc, Scheme: testEnv.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	opts := planner.EngineOptions()
	opts.Concurrency = 4
	return apply.New(c, c, md, c.RESTMapper(), opts)
}

// golden compares out, with the test's names and UIDs replaced, with
// testdata/diff/file (rewritten with -update).
func golden(t *testing.T, out string, replace map[string]string, file string) {
	t.Helper()
	for from, to := range replace {
		out = strings.ReplaceAll(out, from, to)
	}
	path := filepath.Join("testdata", "diff", file)
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(out), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (go test ./cmd/rukpakctl -run TestDiff -update writes it)", err)
	}
	if out != string(want) {
		t.Errorf("output differs from %s:\n--- got\n%s--- want\n%s", path, out, want)
	}
}

func TestDiff(t *testing.T) {
	kc := kubeconfig(t)
	inst := installForDiff(t, diffBundleV1)
	name := inst.bd.Name
	v1, v2 := bundleDir(t, diffBundleV1), bundleDir(t, diffBundleV2)
	names := map[string]string{string(inst.bd.UID): "UID", name: "NAME"}

	notBD := filepath.Join(t.TempDir(), "cm.yaml")
	writeFile(t, filepath.Dir(notBD), "cm.yaml", diffBundleV1["settings.yaml"])

	tests := []struct {
		name       string
		args       []string
		wantStatus int
		golden     string   // stdout, compared with testdata/diff/golden
		wantErr    string   // in the error printed
		wantStderr []string // in stderr
	}{
		{name: "the installed content again: no differences", args: []string{inst.file, "--content", v1}, wantStatus: 0},
		{name: "by name, the installed content: no differences", args: []string{name, "--content", v1}, wantStatus: 0},
		{name: "a new version: changed, added and removed objects", args: []string{inst.file, "--content", v2}, wantStatus: 1, golden: "changed.diff"},
		{name: "by name, a new version", args: []string{name, "--content", v2}, wantStatus: 1, golden: "changed.diff"},
		{name: "a file that is not a BundleDeployment", args: []string{notBD, "--content", v1}, wantStatus: 2, wantErr: "holds no BundleDeployment"},
		{name: "neither a file nor a BundleDeployment", args: []string{"no-such-bd-" + name, "--content", v1}, wantStatus: 2, wantErr: "getting BundleDeployment no-such-bd-"},
		{name: "content that does not exist", args: []string{inst.file, "--content", filepath.Join(v1, "nope.tgz")}, wantStatus: 2, wantErr: "nope.tgz"},
		{name: "an unknown flag", args: []string{inst.file, "--no-such-flag"}, wantStatus: 2, wantErr: "unknown flag"},
		{name: "no argument", args: nil, wantStatus: 2, wantErr: "accepts 1 arg"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			args := tt.args
			if len(args) > 0 {
				args = append(args, "--kubeconfig", kc)
			}
			stdout, stderr, status, err := diff(t, args...)
			if status != tt.wantStatus {
				t.Fatalf("exit status %d, want %d (err %v)\nstdout:\n%s\nstderr:\n%s", status, tt.wantStatus, err, stdout, stderr)
			}
			if tt.wantErr == "" && err != nil {
				t.Fatalf("err = %v", err)
			}
			if tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)) {
				t.Fatalf("err = %v, want it to contain %q", err, tt.wantErr)
			}
			for _, want := range tt.wantStderr {
				if !strings.Contains(stderr, want) {
					t.Errorf("stderr lacks %q:\n%s", want, stderr)
				}
			}
			switch {
			case tt.golden != "":
				golden(t, stdout, names, tt.golden)
			case stdout != "":
				t.Errorf("stdout = %q, want nothing", stdout)
			}
			for _, secret := range []string{"b2xkLXNlY3JldA==", "bmV3LXNlY3JldA==", "YWRtaW4="} {
				if strings.Contains(stdout+stderr, secret) {
					t.Errorf("a Secret value shows: %s", secret)
				}
			}
		})
	}
}

// TestDiffWithoutTheInventory: a user who may not read the inventory (in
// rukpak-system) sees the removed objects among those labelled as the
// BundleDeployment's that they may list, in the install namespace, and is
// told so.
func TestDiffWithoutTheInventory(t *testing.T) {
	ctx := context.Background()
	inst := installForDiff(t, diffBundleV1)
	ns := inst.bd.Spec.InstallNamespace
	user := "diff-user-" + ns
	objs := []client.Object{
		&rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: user}, Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{v1alpha2.GroupVersion.Group}, Resources: []string{"bundledeployments", "bundles"}, Verbs: []string{"get", "list"}},
			{APIGroups: []string{""}, Resources: []string{"namespaces"}, Verbs: []string{"get"}},
		}},
		&rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: user},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: user},
			Subjects: []rbacv1.Subject{{Kind: rbacv1.UserKind, Name: user}}},
		&rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "diff", Namespace: ns}, Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{"", "apps"}, Resources: []string{"configmaps", "secrets", "deployments"}, Verbs: []string{"get", "list", "create", "patch"}},
		}},
		&rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "diff", Namespace: ns},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "diff"},
			Subjects: []rbacv1.Subject{{Kind: rbacv1.UserKind, Name: user}}},
	}
	for _, obj := range objs {
		if err := testEnv.Client.Create(ctx, obj); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = testEnv.Client.Delete(context.Background(), obj) })
	}
	kc := kubeconfigAs(t, user)
	var stdout, stderr string
	var status int
	var err error
	// The RBAC authorizer sees new bindings through informers.
	for range 50 {
		if stdout, stderr, status, err = diff(t, inst.file, "--content", bundleDir(t, diffBundleV2), "--kubeconfig", kc); status == 1 {
			break
		}
	}
	if status != 1 {
		t.Fatalf("exit status %d, want 1 (err %v)\nstderr:\n%s", status, err, stderr)
	}
	golden(t, stdout, map[string]string{string(inst.bd.UID): "UID", inst.bd.Name: "NAME"}, "changed.diff")
	for _, want := range []string{
		"note: the inventory of BundleDeployment " + inst.bd.Name + " cannot be read",
		"only in namespace " + ns,
	} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr)
		}
	}
}

// TestDiffKeepsLiveServingCertificates: the serving certificates of a
// registry+v1 bundle's webhooks are filled in from the live Secrets, as the
// manager fills them, so an unchanged bundle shows no differences.
func TestDiffKeepsLiveServingCertificates(t *testing.T) {
	ctx := context.Background()
	dir := repoPath("internal", "format", "registryv1", "testdata", "bundles", "admission-operator")
	ns := testEnv.Namespace(t, "diff-certs")
	prov, err := builtinForClass(v1alpha2.ClassRegistry)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := builtins.FormatConfig(prov, ns, ns, nil, values.Resolved{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	objs, err := prov.Format.Objects(ctx, os.DirFS(dir), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if len(servingcert.Requested(objs, ns)) == 0 {
		t.Fatal("the bundle asks for no serving certificate: the test tests nothing")
	}
	if err := planner.FillCerts(ctx, ns, objs, diffCerts(io.Discard, testEnv.Client, ns)); err != nil {
		t.Fatal(err)
	}
	inst := installObjects(t, ns, v1alpha2.ClassRegistry, objs)
	stdout, stderr, status, err := diff(t, inst.file, "--content", dir, "--kubeconfig", kubeconfig(t))
	if status != 0 || err != nil {
		t.Fatalf("exit status %d (err %v), want 0:\n%s\nstderr:\n%s", status, err, stdout, stderr)
	}
}

// TestDiffHooksAndRunOnceJobs: the active revision diffed by name runs no
// hook and does not create again a Job that ran and removed itself; a new
// revision over it runs upgrade hooks only, and creates the Job again.
func TestDiffHooksAndRunOnceJobs(t *testing.T) {
	ctx := context.Background()
	files := map[string]string{
		"settings.yaml":     diffBundleV1["settings.yaml"],
		"install-hook.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: install-hook\n  annotations: {helm.sh/hook: pre-install}\n",
		"upgrade-hook.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: upgrade-hook\n  annotations: {helm.sh/hook: pre-upgrade}\n",
		"migrate.yaml": `apiVersion: batch/v1
kind: Job
metadata: {name: migrate}
spec:
  ttlSecondsAfterFinished: 60
  template:
    spec:
      restartPolicy: Never
      containers: [{name: m, image: registry.k8s.io/pause:3.10}]
`,
	}
	inst := installForDiff(t, files)
	bd, ns := inst.bd, inst.bd.Spec.InstallNamespace
	// The Job ran and its TTL removed it.
	job := &unstructured.Unstructured{}
	job.SetAPIVersion("batch/v1")
	job.SetKind("Job")
	job.SetNamespace(ns)
	job.SetName("migrate")
	if err := testEnv.Client.Delete(ctx, job, client.PropagationPolicy(metav1.DeletePropagationBackground)); err != nil {
		t.Fatal(err)
	}
	// The installed revision is the active one.
	b := &v1alpha2.Bundle{
		ObjectMeta: metav1.ObjectMeta{
			Name:            bd.Name + "-r1",
			Labels:          map[string]string{v1alpha2.LabelBundleDeployment: bd.Name, v1alpha2.LabelRevision: "1"},
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(bd, v1alpha2.GroupVersion.WithKind(v1alpha2.BundleDeploymentKind))},
		},
		Spec: v1alpha2.BundleSpec{ProvisionerClassName: v1alpha2.ClassPlain, Sources: bd.Spec.Sources},
	}
	if err := testEnv.Client.Create(ctx, b); err != nil {
		t.Fatal(err)
	}
	bd.Status.ActiveBundle = b.Name
	if err := testEnv.Client.Status().Update(ctx, bd); err != nil {
		t.Fatal(err)
	}
	kc, content := kubeconfig(t), bundleDir(t, files)

	stdout, stderr, status, err := diff(t, bd.Name, "--content", content, "--kubeconfig", kc)
	if status != 0 {
		t.Fatalf("the active revision by name: exit status %d (err %v), want 0:\n%s\nstderr:\n%s", status, err, stdout, stderr)
	}
	stdout, stderr, status, err = diff(t, inst.file, "--content", content, "--kubeconfig", kc)
	if status != 1 {
		t.Fatalf("a new revision: exit status %d (err %v), want 1:\n%s\nstderr:\n%s", status, err, stdout, stderr)
	}
	for _, want := range []string{"live/batch.v1.Job." + ns + ".migrate", "+    core.rukpak.io/revision: (next revision)\n", "live/v1.ConfigMap." + ns + ".upgrade-hook"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("the diff lacks %q:\n%s", want, stdout)
		}
	}
	if strings.Contains(stdout, "install-hook") {
		t.Errorf("an install hook shows in an upgrade:\n%s", stdout)
	}
	if !strings.Contains(stderr, "note: Helm hook(s) ConfigMap "+ns+"/upgrade-hook run during the apply") {
		t.Errorf("stderr does not note the hook:\n%s", stderr)
	}
}
