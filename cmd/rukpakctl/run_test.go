//go:build integration

package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rukpak/rukpak/api/v1alpha2"
	"github.com/rukpak/rukpak/internal/upload"
	"github.com/rukpak/rukpak/pkg/envtest"
)

var testEnv *envtest.Env

func TestMain(m *testing.M) { envtest.Run(m, &testEnv) }

// kubeconfig writes a kubeconfig for the test API server.
func kubeconfig(t *testing.T) string {
	t.Helper()
	cfg := testEnv.Config
	kc := clientcmdapi.NewConfig()
	kc.Clusters["envtest"] = &clientcmdapi.Cluster{Server: cfg.Host, CertificateAuthorityData: cfg.CAData}
	kc.AuthInfos["admin"] = &clientcmdapi.AuthInfo{ClientCertificateData: cfg.CertData, ClientKeyData: cfg.KeyData, Token: cfg.BearerToken}
	kc.Contexts["envtest"] = &clientcmdapi.Context{Cluster: "envtest", AuthInfo: "admin"}
	kc.CurrentContext = "envtest"
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := clientcmd.WriteToFile(*kc, path); err != nil {
		t.Fatal(err)
	}
	return path
}

func writeFile(t *testing.T, dir, name, content string) {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func getBD(t *testing.T, name string) *v1alpha2.BundleDeployment {
	t.Helper()
	bd := &v1alpha2.BundleDeployment{}
	if err := testEnv.Client.Get(context.Background(), client.ObjectKey{Name: name}, bd); err != nil {
		t.Fatal(err)
	}
	return bd
}

// TestRun runs `rukpakctl run` steps in order against one BundleDeployment.
func TestRun(t *testing.T) {
	kc := kubeconfig(t)
	cf := newContentFixture(t)
	name := envtest.UniqueName("run")
	dir := t.TempDir()
	writeFile(t, dir, "manifests/cm.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n")
	steps := []struct {
		name       string
		change     func()
		args       []string
		env        bool // kubeconfig through $KUBECONFIG instead of --kubeconfig
		wantOut    []string
		wantErr    []string
		wantGen    int64
		sameDigest bool // the digest stays the one of the step before
	}{
		{name: "first run creates the BundleDeployment", args: []string{"--namespace", "ns-" + name},
			wantOut: []string{"created BundleDeployment " + name + ": sha256:", "Installed: Unknown"},
			wantErr: []string{"in 1 chunk(s) through " + cf.url}, wantGen: 1},
		{name: "same content is unchanged", env: true, sameDigest: true,
			wantOut: []string{"unchanged: " + name + " already runs sha256:"}, wantGen: 1},
		{name: "touched file is unchanged", sameDigest: true, change: func() {
			writeFile(t, dir, "manifests/cm.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n")
		}, wantOut: []string{"unchanged: "}, wantGen: 1},
		{name: "changed content updates the digest", change: func() { writeFile(t, dir, "manifests/other.yaml", "kind: X\n") },
			args:    []string{"--class", "other-class"},
			wantOut: []string{"updated BundleDeployment " + name + ": sha256:"},
			wantErr: []string{"warning: --class other-class ignored"}, wantGen: 2},
	}
	var digest string
	for _, st := range steps {
		t.Run(st.name, func(t *testing.T) {
			if st.change != nil {
				st.change()
			}
			args := append([]string{"run", name, dir, "--wait=false", "--content-server", cf.url, "--token-for", cf.ns + "/uploader"}, st.args...)
			if st.env {
				t.Setenv("KUBECONFIG", kc)
			} else {
				args = append(args, "--kubeconfig", kc)
			}
			stdout, stderr, err := run(t, args...)
			if err != nil {
				t.Fatalf("run: %v\nstderr: %s", err, stderr)
			}
			for _, w := range st.wantOut {
				if !strings.Contains(stdout, w) {
					t.Errorf("stdout %q does not contain %q", stdout, w)
				}
			}
			for _, w := range st.wantErr {
				if !strings.Contains(stderr, w) {
					t.Errorf("stderr %q does not contain %q", stderr, w)
				}
			}
			bd := getBD(t, name)
			if bd.Generation != st.wantGen {
				t.Errorf("generation %d, want %d", bd.Generation, st.wantGen)
			}
			if bd.Spec.ProvisionerClassName != "core-rukpak-io-plain" || bd.Spec.InstallNamespace != "ns-"+name {
				t.Errorf("class %q, installNamespace %q", bd.Spec.ProvisionerClassName, bd.Spec.InstallNamespace)
			}
			got := bd.Spec.Sources[0].Upload.Digest
			if (got == digest) != st.sameDigest {
				t.Errorf("digest %s, before %s; want same=%v", got, digest, st.sameDigest)
			}
			if !strings.Contains(stdout, got) {
				t.Errorf("stdout %q does not name the digest %s", stdout, got)
			}
			store := upload.NewStore(testEnv.Client, testEnv.Client, v1alpha2.SystemNamespace)
			if _, err := store.Stat(context.Background(), got); err != nil {
				t.Errorf("upload %s: %v", got, err)
			}
			digest = got
		})
	}
}

func TestRunRefuses(t *testing.T) {
	kc := kubeconfig(t)
	cf := newContentFixture(t)
	dir := t.TempDir()
	writeFile(t, dir, "a.yaml", "kind: A\n")
	other := envtest.UniqueName("run-other")
	bd := &v1alpha2.BundleDeployment{}
	bd.Name = other
	bd.Spec = v1alpha2.BundleDeploymentSpec{ProvisionerClassName: "c", InstallNamespace: "x", Sources: []v1alpha2.BundleSource{{
		Type: v1alpha2.SourceTypeHTTP, HTTP: &v1alpha2.HTTPSource{URL: "https://example.com/a.tgz"},
	}}}
	if err := testEnv.Client.Create(context.Background(), bd); err != nil {
		t.Fatal(err)
	}
	unnamed := filepath.Join(t.TempDir(), "__")
	if err := os.Mkdir(unnamed, 0o755); err != nil {
		t.Fatal(err)
	}
	existing := envtest.UniqueName("run-existing")
	bd = &v1alpha2.BundleDeployment{}
	bd.Name = existing
	bd.Spec = v1alpha2.BundleDeploymentSpec{ProvisionerClassName: "c", InstallNamespace: "x", Sources: []v1alpha2.BundleSource{{
		Type: v1alpha2.SourceTypeUpload, Upload: &v1alpha2.UploadSource{Digest: "sha256:" + strings.Repeat("0", 64)},
	}}}
	if err := testEnv.Client.Create(context.Background(), bd); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(t.TempDir(), "linked")
	if err := os.Mkdir(link, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/etc/passwd", filepath.Join(link, "passwd")); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		args []string
		want string
	}{
		{name: "BundleDeployment without an upload source", args: []string{other, dir},
			want: "BundleDeployment " + other + ": it exists without an upload source"},
		{name: "symbolic link", args: []string{"x", link}, want: "passwd is a symbolic link"},
		{name: "missing directory", args: []string{"x", filepath.Join(dir, "nope")}, want: "no such file or directory"},
		{name: "wrong argument count", args: []string{"x", dir, "y"}, want: "accepts between 1 and 2 arg(s)"},
		{name: "a directory that names no BundleDeployment", args: []string{unnamed}, want: "no BundleDeployment name follows from directory"},
		{name: "no token: the kubeconfig's credentials are not sent", args: []string{"x", dir, "--token-for", ""},
			want: "the content server takes a token for audience rukpak.io/content, never the kubeconfig's credentials"},
		{name: "no token: the commands that give one", args: []string{"x", dir, "--token-for", ""},
			want: "  kubectl create serviceaccount rukpak-uploader -n rukpak-system\n" +
				"  kubectl create clusterrolebinding rukpak-uploader --clusterrole=rukpak-uploader --serviceaccount=rukpak-system:rukpak-uploader\n" +
				"and upload as it:\n  rukpakctl run x " + dir + " --token-for rukpak-system/rukpak-uploader\n" +
				"or install and upload as a ServiceAccount of namespace x bound to ClusterRole rukpak-uploader"},
		{name: "no token for an existing BundleDeployment: no --service-account advice", args: []string{existing, dir, "--token-for", ""},
			want: "  rukpakctl run " + existing + " " + dir + " --token-for rukpak-system/rukpak-uploader"},
		{name: "an uploader without the permission", args: []string{"x", dir, "--token-for", cf.ns + "/nobody"},
			want: `403 Forbidden: user "system:serviceaccount:` + cf.ns + `:nobody" may not create uploads in API group core.rukpak.io`},
		{name: "a token for the API server", args: []string{"x", dir, "--token", apiToken(t, cf.ns, "uploader")},
			want: "401 Unauthorized: the token is not valid for audience rukpak.io/content"},
		{name: "no content server", args: []string{"x", dir, "--content-server", ""},
			want: "the address of the manager's content server is not known"},
		{name: "a content server URL with credentials", args: []string{"x", dir, "--content-server", "https://u:p@example.com"},
			want: "want an http(s) URL without credentials"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv(contentServerEnv, "")
			t.Setenv(stateDirEnv, t.TempDir())
			args := append([]string{"run", "--wait=false", "--kubeconfig", kc, "--content-server", cf.url, "--token-for", cf.ns + "/uploader"}, tt.args...)
			_, _, err := run(t, args...)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error = %v, want one containing %q", err, tt.want)
			}
			if strings.Contains(tt.name, "no --service-account") && strings.Contains(err.Error(), "--service-account") {
				t.Errorf("error %q advises --service-account, which an existing BundleDeployment ignores", err)
			}
		})
	}
}

// TestRunUploadsAsTheServiceAccount: without --token or --token-for, the
// token is requested for the BundleDeployment's ServiceAccount, and that
// ServiceAccount's permission decides.
func TestRunUploadsAsTheServiceAccount(t *testing.T) {
	kc := kubeconfig(t)
	cf := newContentFixture(t)
	dir := t.TempDir()
	writeFile(t, dir, "a.yaml", "kind: A\n")
	tests := []struct {
		sa      string
		wantErr string
	}{
		{sa: "uploader"},
		{sa: "nobody", wantErr: `user "system:serviceaccount:` + cf.ns + `:nobody" may not create uploads`},
	}
	for _, tt := range tests {
		t.Run(tt.sa, func(t *testing.T) {
			name := envtest.UniqueName("run-sa")
			_, _, err := run(t, "run", name, dir, "--wait=false", "--kubeconfig", kc, "--content-server", cf.url,
				"--namespace", cf.ns, "--service-account", tt.sa)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error = %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("run: %v", err)
			}
			if bd := getBD(t, name); bd.Spec.ServiceAccount == nil || bd.Spec.ServiceAccount.Name != tt.sa {
				t.Fatalf("spec.serviceAccount %v, want %s", bd.Spec.ServiceAccount, tt.sa)
			}
			// Again: the token is now requested for the existing
			// BundleDeployment's ServiceAccount.
			if _, _, err := run(t, "run", name, dir, "--wait=false", "--kubeconfig", kc, "--content-server", cf.url); err != nil {
				t.Fatalf("second run: %v", err)
			}
		})
	}
}

// TestRunWaits plays the manager: it sets the conditions a reconcile of the
// new generation would set while `rukpakctl run` waits.
func TestRunWaits(t *testing.T) {
	kc := kubeconfig(t)
	cf := newContentFixture(t)
	dir := t.TempDir()
	writeFile(t, dir, "a.yaml", "kind: A\n")
	tests := []struct {
		name    string
		conds   []metav1.Condition // nil: no manager answers
		wantOut string
		wantErr string
	}{
		{name: "installed",
			conds:   []metav1.Condition{{Type: v1alpha2.TypeInstalled, Status: metav1.ConditionTrue, Reason: v1alpha2.ReasonInstalled, Message: "all applied"}},
			wantOut: "Installed: True (Installed, generation 1): all applied"},
		{name: "terminal unpack failure",
			conds: []metav1.Condition{
				{Type: v1alpha2.TypeUnpacked, Status: metav1.ConditionFalse, Reason: v1alpha2.ReasonDigestMismatch, Message: "chunk replaced"},
				{Type: v1alpha2.TypeInstalled, Status: metav1.ConditionFalse, Reason: v1alpha2.ReasonInstallPending, Message: "waiting"}},
			wantErr: "Unpacked (DigestMismatch): chunk replaced"},
		{name: "timeout", wantErr: "was not installed within 2s"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			name := envtest.UniqueName("wait")
			done := make(chan struct{})
			defer close(done)
			if tt.conds != nil {
				go answer(t, name, tt.conds, done)
			}
			stdout, _, err := run(t, "run", name, dir, "--timeout", "2s", "--kubeconfig", kc, "--content-server", cf.url, "--token-for", cf.ns+"/uploader")
			if tt.wantErr == "" && err != nil {
				t.Fatalf("run: %v", err)
			}
			if tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)) {
				t.Fatalf("error = %v, want one containing %q", err, tt.wantErr)
			}
			if !strings.Contains(stdout, tt.wantOut) {
				t.Fatalf("stdout %q does not contain %q", stdout, tt.wantOut)
			}
		})
	}
}

// answer sets conds for its generation on BundleDeployment name once it
// exists.
func answer(t *testing.T, name string, conds []metav1.Condition, done <-chan struct{}) {
	for {
		select {
		case <-done:
			return
		case <-time.After(100 * time.Millisecond):
		}
		bd := &v1alpha2.BundleDeployment{}
		if err := testEnv.Client.Get(context.Background(), client.ObjectKey{Name: name}, bd); err != nil {
			continue
		}
		for _, c := range conds {
			c.ObservedGeneration = bd.Generation
			meta.SetStatusCondition(&bd.Status.Conditions, c)
		}
		bd.Status.ObservedGeneration = bd.Generation
		if err := testEnv.Client.Status().Update(context.Background(), bd); err != nil {
			t.Errorf("updating status: %v", err)
		}
		return
	}
}
