//go:build integration

package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rukpak/rukpak/api/v1alpha2"
	"github.com/rukpak/rukpak/internal/permissions"
	"github.com/rukpak/rukpak/internal/upload"
	"github.com/rukpak/rukpak/pkg/envtest"
)

// preview runs `rukpakctl preview args...` in-process.
func preview(t *testing.T, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	cmd := newRootCmd()
	var out, errOut bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(&errOut)
	cmd.SetArgs(append([]string{"preview"}, args...))
	err = cmd.ExecuteContext(context.Background())
	return out.String(), errOut.String(), err
}

// previewFixture is a namespace with ServiceAccount installer, allowed
// every verb on ConfigMaps there and nothing else.
type previewFixture struct {
	ns, sa string
}

func newPreviewFixture(t *testing.T) previewFixture {
	t.Helper()
	ctx := context.Background()
	f := previewFixture{ns: testEnv.Namespace(t, "preview"), sa: "installer"}
	for _, obj := range []client.Object{
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: f.sa, Namespace: f.ns}},
		&rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "configmaps", Namespace: f.ns}, Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: permissions.Verbs},
		}},
		&rbacv1.RoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: "configmaps", Namespace: f.ns},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "configmaps"},
			Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: f.sa, Namespace: f.ns}},
		},
	} {
		if err := testEnv.Client.Create(ctx, obj); err != nil {
			t.Fatal(err)
		}
	}
	// The RBAC authorizer reads Roles through informers.
	cs := kubernetes.NewForConfigOrDie(testEnv.Config)
	subject := permissions.ServiceAccount(f.ns, f.sa)
	envtest.Eventually(t, 10*time.Second, func() error {
		sar, err := cs.AuthorizationV1().SubjectAccessReviews().Create(ctx, &authorizationv1.SubjectAccessReview{
			Spec: authorizationv1.SubjectAccessReviewSpec{User: subject.User, Groups: subject.Groups,
				ResourceAttributes: &authorizationv1.ResourceAttributes{Namespace: f.ns, Verb: "watch", Resource: "configmaps"}},
		}, metav1.CreateOptions{})
		if err != nil {
			return err
		}
		if !sar.Status.Allowed {
			return errors.New("the Role is not in effect yet")
		}
		return nil
	})
	return f
}

const (
	configMapYAML = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: %s\ndata: {a: b}\n"
	crbYAML       = `apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata:
  name: op-view
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: view}
subjects:
- {kind: ServiceAccount, name: op, namespace: default}
`
)

// bundleDir writes a plain bundle of the given manifests (file name to
// YAML).
func bundleDir(t *testing.T, manifests map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, doc := range manifests {
		writeFile(t, dir, filepath.Join("manifests", name), doc)
	}
	return dir
}

// bdFile writes a BundleDeployment manifest into a file.
func bdFile(t *testing.T, name, ns, sa, sources string) string {
	t.Helper()
	doc := fmt.Sprintf(`apiVersion: core.rukpak.io/v1alpha2
kind: BundleDeployment
metadata:
  name: %s
spec:
  provisionerClassName: core-rukpak-io-plain
  installNamespace: %s
  sources:
%s`, name, ns, sources)
	if sa != "" {
		doc += "  serviceAccount: {name: " + sa + "}\n"
	}
	dir := t.TempDir()
	// A namespace document before it, as in a real install file.
	writeFile(t, dir, "bd.yaml", "apiVersion: v1\nkind: Namespace\nmetadata: {name: "+ns+"}\n---\n"+doc)
	return filepath.Join(dir, "bd.yaml")
}

// kubeconfigAs writes a kubeconfig that impersonates user.
func kubeconfigAs(t *testing.T, user string) string {
	t.Helper()
	path := kubeconfig(t)
	kc, err := clientcmd.LoadFromFile(path)
	if err != nil {
		t.Fatal(err)
	}
	kc.AuthInfos["admin"].Impersonate = user
	if err := clientcmd.WriteToFile(*kc, path); err != nil {
		t.Fatal(err)
	}
	return path
}

// isMissing reports whether err is preview's "something is missing" (exit
// status 1 without another failure).
func isMissing(err error) bool {
	var m *missingError
	return errors.As(err, &m)
}

func TestPreviewFile(t *testing.T) {
	f := newPreviewFixture(t)
	kc := kubeconfig(t)
	name := envtest.UniqueName("preview")
	configMapSource := "  - type: configMaps\n    configMaps:\n    - configMap: {name: x}\n"
	withSA := bdFile(t, name, f.ns, f.sa, configMapSource)
	withoutSA := bdFile(t, name, f.ns, "", configMapSource)
	mixed := bundleDir(t, map[string]string{"cm.yaml": fmt.Sprintf(configMapYAML, "a"), "crb.yaml": crbYAML})
	configMaps := bundleDir(t, map[string]string{"a.yaml": fmt.Sprintf(configMapYAML, "a"), "b.yaml": fmt.Sprintf(configMapYAML, "b")})
	missingFile := filepath.Join(t.TempDir(), "no-kubeconfig")

	tests := []struct {
		name        string
		args        []string
		wantMissing bool       // exit status 1 because something is missing
		wantErr     string     // another error
		wantRows    [][]string // table rows, by field
		wantOut     []string
		notWantOut  []string
		wantStderr  []string
		wantPrefix  string
	}{
		{name: "a ConfigMap and a ClusterRoleBinding: the binding is missing",
			args:        []string{withSA, "--content", mixed, "--kubeconfig", kc},
			wantMissing: true,
			wantRows:    [][]string{{"(cluster-wide)", "rbac.authorization.k8s.io", "clusterrolebindings", "MISSING"}, {f.ns, `""`, "configmaps", "OK"}},
			wantOut: []string{
				"installs its 2 object(s) as ServiceAccount " + f.ns + "/" + f.sa,
				"lacks 1 rule(s). Grant with:\n---\napiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata:\n  name: " + name + "-installer\n",
				"kind: ClusterRoleBinding\n", "  - clusterrolebindings\n", "- kind: ServiceAccount\n  name: installer\n  namespace: " + f.ns,
			},
			notWantOut: []string{"kind: Role\n", "creationTimestamp"}},
		{name: "only ConfigMaps: nothing missing",
			args:       []string{withSA, "--content", configMaps, "--kubeconfig", kc},
			wantRows:   [][]string{{f.ns, `""`, "configmaps", "OK"}},
			wantOut:    []string{"has every permission BundleDeployment " + name + " needs"},
			notWantOut: []string{"MISSING", "Grant with"}},
		{name: "-o yaml prints only the objects granting what is missing",
			args:        []string{withSA, "--content", mixed, "--kubeconfig", kc, "-o", "yaml"},
			wantMissing: true,
			wantPrefix:  "---\napiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\n",
			wantOut:     []string{"kind: ClusterRoleBinding\n"},
			notWantOut:  []string{"kind: Role\n", "NAMESPACE", "configmaps"}},
		{name: "-o yaml --all grants every required rule",
			args:       []string{withSA, "--content", configMaps, "--kubeconfig", kc, "-o", "yaml", "--all"},
			wantPrefix: "---\napiVersion: rbac.authorization.k8s.io/v1\nkind: Role\n",
			wantOut:    []string{"namespace: " + f.ns + "\n", "  - configmaps\n", "kind: RoleBinding\n"}},
		{name: "-o yaml with nothing missing prints nothing",
			args: []string{withSA, "--content", configMaps, "--kubeconfig", kc, "-o", "yaml"}},
		{name: "without a serviceAccount it installs as the manager",
			args:       []string{withoutSA, "--content", mixed, "--kubeconfig", kc},
			wantOut:    []string{"cluster-admin mode", "would need 2 rule(s)", "clusterrolebindings", "configmaps"},
			notWantOut: []string{"STATUS", "Grant with"}},
		{name: "--service-account checks a ServiceAccount of installNamespace",
			args:        []string{withoutSA, "--content", mixed, "--kubeconfig", kc, "--service-account", f.sa},
			wantMissing: true,
			wantRows:    [][]string{{"(cluster-wide)", "rbac.authorization.k8s.io", "clusterrolebindings", "MISSING"}}},
		{name: "without a cluster resources are guessed and nothing is checked",
			args:       []string{withSA, "--content", mixed, "--kubeconfig", missingFile},
			wantRows:   [][]string{{"(cluster-wide)", "rbac.authorization.k8s.io", "clusterrolebindings"}, {f.ns, `""`, "configmaps"}},
			wantOut:    []string{"Not checked against the cluster"},
			wantStderr: []string{"working without a cluster", "guessed the resource of ConfigMap → configmaps, ClusterRoleBinding.rbac.authorization.k8s.io → clusterrolebindings"}},
		{name: "without a cluster -o yaml needs --all",
			args:    []string{withSA, "--content", mixed, "--kubeconfig", missingFile, "-o", "yaml"},
			wantErr: "use --all"},
		{name: "not allowed to create SubjectAccessReviews",
			args:       []string{withSA, "--content", mixed, "--kubeconfig", kubeconfigAs(t, "nobody")},
			wantRows:   [][]string{{"(cluster-wide)", "rbac.authorization.k8s.io", "clusterrolebindings"}},
			wantOut:    []string{"Not checked"},
			wantStderr: []string{"you may not create subjectaccessreviews"}},
		{name: "no --content and no image source: fetched here, from the cluster",
			args:    []string{withSA, "--kubeconfig", kc},
			wantErr: "ConfigMap rukpak-system/x not found"},
		{name: "bad --output", args: []string{withSA, "-o", "json"}, wantErr: `--output "json"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, stderr, err := preview(t, tt.args...)
			switch {
			case tt.wantErr != "":
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error = %v, want %q", err, tt.wantErr)
				}
				return
			case tt.wantMissing && !isMissing(err):
				t.Fatalf("error = %v, want the missing-rules error (exit status 1)\n%s%s", err, out, stderr)
			case !tt.wantMissing && err != nil:
				t.Fatalf("error = %v\n%s%s", err, out, stderr)
			}
			if !strings.HasPrefix(out, tt.wantPrefix) {
				t.Errorf("output does not start with %q:\n%s", tt.wantPrefix, out)
			}
			for _, row := range tt.wantRows {
				if !hasRow(out, row) {
					t.Errorf("output lacks the row %q:\n%s", row, out)
				}
			}
			for _, w := range tt.wantOut {
				if !strings.Contains(out, w) {
					t.Errorf("output lacks %q:\n%s", w, out)
				}
			}
			for _, w := range tt.notWantOut {
				if strings.Contains(out, w) {
					t.Errorf("output has %q:\n%s", w, out)
				}
			}
			for _, w := range tt.wantStderr {
				if !strings.Contains(stderr, w) {
					t.Errorf("stderr lacks %q:\n%s", w, stderr)
				}
			}
		})
	}
}

// TestPreviewName previews a BundleDeployment of the cluster: the content
// of its newest Bundle comes from a content server.
func TestPreviewName(t *testing.T) {
	ctx := context.Background()
	f := newPreviewFixture(t)
	kc := kubeconfig(t)
	name := envtest.UniqueName("preview")
	content := packed(t, bundleDir(t, map[string]string{"cm.yaml": fmt.Sprintf(configMapYAML, "a"), "crb.yaml": crbYAML}))
	const token = "t0ken"
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer "+token {
			http.Error(w, "who are you", http.StatusUnauthorized)
			return
		}
		_, _ = w.Write(content)
	}))
	defer srv.Close()

	bd := &v1alpha2.BundleDeployment{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: v1alpha2.BundleDeploymentSpec{
			ProvisionerClassName: v1alpha2.ClassPlain,
			InstallNamespace:     f.ns,
			Sources:              []v1alpha2.BundleSource{imageRev(1)},
			ServiceAccount:       &v1alpha2.ServiceAccountReference{Name: f.sa},
		},
	}
	if err := testEnv.Client.Create(ctx, bd); err != nil {
		t.Fatal(err)
	}
	for i := range 2 {
		b := &v1alpha2.Bundle{
			ObjectMeta: metav1.ObjectMeta{
				Name:   fmt.Sprintf("%s-r%09d", name, i+1),
				Labels: map[string]string{v1alpha2.LabelBundleDeployment: name},
				// Only Bundles the BundleDeployment controls are its revisions.
				OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(bd, v1alpha2.GroupVersion.WithKind(v1alpha2.BundleDeploymentKind))},
			},
			Spec: v1alpha2.BundleSpec{ProvisionerClassName: v1alpha2.ClassPlain, Sources: []v1alpha2.BundleSource{imageRev(i + 1)}},
		}
		if err := testEnv.Client.Create(ctx, b); err != nil {
			t.Fatal(err)
		}
		if i == 1 { // only the newest has content
			b.Status.ContentURL = srv.URL + "/bundles/" + b.Name
			if err := testEnv.Client.Status().Update(ctx, b); err != nil {
				t.Fatal(err)
			}
		}
	}

	tests := []struct {
		name        string
		args        []string
		wantMissing bool
		wantErr     string
		wantRows    [][]string
		wantOut     []string
	}{
		{name: "the newest Bundle's content", args: []string{"--token", token, "--content-server", srv.URL}, wantMissing: true,
			wantRows: [][]string{{"(cluster-wide)", "rbac.authorization.k8s.io", "clusterrolebindings", "MISSING"}},
			wantOut:  []string{"installs its 2 object(s)", "kind: ClusterRole\n"}},
		{name: "--content instead of the content server", wantMissing: false,
			args:     []string{"--content", bundleDir(t, map[string]string{"cm.yaml": fmt.Sprintf(configMapYAML, "a")})},
			wantRows: [][]string{{f.ns, `""`, "configmaps", "OK"}},
			wantOut:  []string{"has every permission"}},
		{name: "without a token the sources are fetched here", wantErr: "fetching image quay.io/example/op:v2"},
		{name: "a wrong token", args: []string{"--token", "nope", "--content-server", srv.URL}, wantErr: "401 Unauthorized"},
		{name: "a contentURL that is not on the manager's content server", args: []string{"--token", token, "--content-server", "http://127.0.0.1:1"},
			wantErr: "is not the manager's content server (http://127.0.0.1:1/bundles/" + name + "-r000000002): refusing to send a token"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, stderr, err := preview(t, append([]string{name, "--kubeconfig", kc}, tt.args...)...)
			switch {
			case tt.wantErr != "":
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error = %v, want %q", err, tt.wantErr)
				}
				return
			case tt.wantMissing && !isMissing(err):
				t.Fatalf("error = %v, want the missing-rules error\n%s%s", err, out, stderr)
			case !tt.wantMissing && err != nil:
				t.Fatalf("error = %v\n%s%s", err, out, stderr)
			}
			for _, row := range tt.wantRows {
				if !hasRow(out, row) {
					t.Errorf("output lacks the row %q:\n%s", row, out)
				}
			}
			for _, w := range tt.wantOut {
				if !strings.Contains(out, w) {
					t.Errorf("output lacks %q:\n%s", w, out)
				}
			}
		})
	}

	if _, _, err := preview(t, envtest.UniqueName("nothing"), "--kubeconfig", kc); err == nil || !strings.Contains(err.Error(), "not found") {
		t.Errorf("previewing an unknown BundleDeployment: %v", err)
	}
}

// packed returns dir as a .tar.gz.
func packed(t *testing.T, dir string) []byte {
	t.Helper()
	a, err := upload.Pack(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	data, err := io.ReadAll(a)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// hasRow reports whether a line of out has exactly the fields row.
func hasRow(out string, row []string) bool {
	for _, line := range strings.Split(out, "\n") {
		if slices.Equal(strings.Fields(line), row) {
			return true
		}
	}
	return false
}

// TestPreviewNameWithoutToken previews a BundleDeployment of the cluster
// with a client-certificate kubeconfig (no token for the content server):
// its sources are fetched on this machine instead.
func TestPreviewNameWithoutToken(t *testing.T) {
	ctx := context.Background()
	f := newPreviewFixture(t)
	kc := kubeconfig(t)
	cm := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: envtest.UniqueName("preview-bundle"), Namespace: v1alpha2.SystemNamespace},
		Immutable:  ptr.To(true),
		Data:       map[string]string{"cm.yaml": fmt.Sprintf(configMapYAML, "a"), "crb.yaml": crbYAML},
	}
	if err := testEnv.Client.Create(ctx, cm); err != nil {
		t.Fatal(err)
	}
	bd := &v1alpha2.BundleDeployment{
		ObjectMeta: metav1.ObjectMeta{Name: envtest.UniqueName("preview")},
		Spec: v1alpha2.BundleDeploymentSpec{
			ProvisionerClassName: v1alpha2.ClassPlain,
			InstallNamespace:     f.ns,
			Sources: []v1alpha2.BundleSource{{Type: v1alpha2.SourceTypeConfigMaps,
				ConfigMaps: []v1alpha2.ConfigMapSource{{ConfigMap: v1alpha2.LocalObjectReference{Name: cm.Name}, Path: "manifests"}}}},
			ServiceAccount: &v1alpha2.ServiceAccountReference{Name: f.sa},
		},
	}
	if err := testEnv.Client.Create(ctx, bd); err != nil {
		t.Fatal(err)
	}
	out, stderr, err := preview(t, bd.Name, "--kubeconfig", kc)
	if !isMissing(err) {
		t.Fatalf("error = %v, want the missing-rules error\n%s%s", err, out, stderr)
	}
	for _, row := range [][]string{{f.ns, `""`, "configmaps", "OK"}, {"(cluster-wide)", "rbac.authorization.k8s.io", "clusterrolebindings", "MISSING"}} {
		if !hasRow(out, row) {
			t.Errorf("output lacks the row %q:\n%s", row, out)
		}
	}
}
