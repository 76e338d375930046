//go:build integration

package builtins

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/rukpak/rukpak/api/v1alpha2"
	"github.com/rukpak/rukpak/internal/values"
	"github.com/rukpak/rukpak/pkg/envtest"
	"github.com/rukpak/rukpak/pkg/failure"
)

var env *envtest.Env

func TestMain(m *testing.M) { envtest.Run(m, &env) }

// leakyChart writes a chart whose template fails with .Values.password.
func leakyChart(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	for p, content := range map[string]string{
		"Chart.yaml":           "apiVersion: v2\nname: leaky\nversion: 0.1.0\n",
		"templates/fail.yaml":  "{{ fail .Values.password }}\n",
		"templates/other.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: other}\n",
	} {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, p)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, p), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// A password read from a Secret through valuesFrom and echoed by fail is
// redacted from the render error, whether the values carry their Secrets
// (resolved with values.Resolve) or not (every string of values whose
// config names a Secret is hidden).
func TestSecretValuesRedacted(t *testing.T) {
	const password = "s3cret-from-a-Secret"
	ctx := context.Background()
	name := envtest.UniqueName("helm-values")
	sec := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: v1alpha2.SystemNamespace},
		Data:       map[string][]byte{"values.yaml": []byte("password: " + password + "\n")},
	}
	if err := env.Client.Create(ctx, sec); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Client.Delete(ctx, sec) })
	cfg := &v1alpha2.BundleConfig{ValuesFrom: []v1alpha2.ValuesReference{{Kind: values.KindSecret, Name: name}}}
	resolved, err := values.Resolve(ctx, env.Client, v1alpha2.SystemNamespace, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if len(resolved.Secrets) != 1 || resolved.Secrets[0] != password {
		t.Fatalf("Resolved.Secrets = %q", resolved.Secrets)
	}
	prov := Builtin()[v1alpha2.ControllerHelm]
	tests := []struct {
		name string
		vals values.Resolved
	}{
		{"resolved here", resolved},
		{"resolved elsewhere", values.Resolved{Values: map[string]any{"password": password, "other": "x"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fc, err := FormatConfig(prov, "rel", "ns", cfg, tt.vals, nil)
			if err != nil {
				t.Fatal(err)
			}
			_, err = prov.Format.Objects(ctx, os.DirFS(leakyChart(t)), fc)
			if failure.Reason(err, "") != v1alpha2.ReasonRenderFailed {
				t.Fatalf("error %v, want RenderFailed", err)
			}
			if msg := err.Error(); strings.Contains(msg, password) || !strings.Contains(msg, "[redacted]") ||
				!strings.Contains(msg, "leaky/templates/fail.yaml") {
				t.Fatalf("error %q: want the template named, [redacted], and not the password", msg)
			}
		})
	}
	// Values without a Secret are not redacted.
	fc, err := FormatConfig(prov, "rel", "ns", &v1alpha2.BundleConfig{}, values.Resolved{Values: map[string]any{"password": "inline-visible"}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	_, err = prov.Format.Objects(ctx, os.DirFS(leakyChart(t)), fc)
	if err == nil || !strings.Contains(err.Error(), "inline-visible") {
		t.Fatalf("error %v: inline values must stay in messages", err)
	}
}
