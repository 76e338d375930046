package objdiff

import (
	"bytes"
	"errors"
	"flag"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"
)

// update rewrites the golden files: go test ./internal/objdiff -update
var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// obj parses a YAML object; "" is no object.
func obj(t *testing.T, doc string) *unstructured.Unstructured {
	t.Helper()
	if doc == "" {
		return nil
	}
	u := &unstructured.Unstructured{}
	if err := yaml.Unmarshal([]byte(doc), &u.Object); err != nil {
		t.Fatalf("test object: %v", err)
	}
	return u
}

// readObject reads testdata/dir/file, nil when it does not exist.
func readObject(t *testing.T, dir, file string) *unstructured.Unstructured {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", dir, file))
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	return obj(t, string(data))
}

// TestWriteGolden diffs each testdata/NN_case/{live,merged}.yaml (a
// missing file is a missing object) against testdata/NN_case/want.diff.
func TestWriteGolden(t *testing.T) {
	dirs, err := os.ReadDir("testdata")
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range dirs {
		if !d.IsDir() {
			continue
		}
		t.Run(d.Name(), func(t *testing.T) {
			live, merged := readObject(t, d.Name(), "live.yaml"), readObject(t, d.Name(), "merged.yaml")
			any := live
			if any == nil {
				any = merged
			}
			name := Name(any.GroupVersionKind(), any.GetNamespace(), any.GetName())
			var out bytes.Buffer
			n, err := Write(&out, []Object{{Name: name, Live: live, Merged: merged}})
			if err != nil {
				t.Fatal(err)
			}
			if (n == 0) != (out.Len() == 0) {
				t.Errorf("Write reported %d changed object(s) and wrote %d bytes", n, out.Len())
			}
			golden := filepath.Join("testdata", d.Name(), "want.diff")
			if *update {
				if err := os.WriteFile(golden, out.Bytes(), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run go test ./internal/objdiff -update to write it)", err)
			}
			if out.String() != string(want) {
				t.Errorf("diff differs from %s:\n--- got\n%s--- want\n%s", golden, out.String(), want)
			}
		})
	}
}

// TestWriteGoldenShowsNoSecretValue: no value of the Secret case, in any
// encoding it is given in, reaches the output.
func TestWriteGoldenShowsNoSecretValue(t *testing.T) {
	live, merged := readObject(t, "04_secret_masked", "live.yaml"), readObject(t, "04_secret_masked", "merged.yaml")
	var out bytes.Buffer
	if _, err := Write(&out, []Object{{Name: "s", Live: live, Merged: merged}}); err != nil {
		t.Fatal(err)
	}
	for _, side := range []*unstructured.Unstructured{live, merged} {
		for k, v := range side.Object["data"].(map[string]any) {
			if strings.Contains(out.String(), v.(string)) {
				t.Errorf("the value of %s shows in the diff", k)
			}
		}
		if strings.Contains(out.String(), side.GetAnnotations()[lastApplied]) {
			t.Error("the last-applied annotation shows in the diff")
		}
	}
}

func TestWriteSortsAndCounts(t *testing.T) {
	cm := func(name, value string) *unstructured.Unstructured {
		return obj(t, "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: "+name+", namespace: ns}\ndata: {v: \""+value+"\"}\n")
	}
	var out bytes.Buffer
	n, err := Write(&out, []Object{
		{Name: "v1.ConfigMap.ns.c", Live: cm("c", "1"), Merged: cm("c", "2")},
		{Name: "v1.ConfigMap.ns.b", Live: cm("b", "1"), Merged: cm("b", "1")},
		{Name: "v1.ConfigMap.ns.a", Merged: cm("a", "1")},
		{Name: "apps.v1.Deployment.ns.z", Live: obj(t, "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: z, namespace: ns}\n")},
	})
	if err != nil {
		t.Fatal(err)
	}
	if n != 3 {
		t.Errorf("changed = %d, want 3", n)
	}
	var headers []string
	for _, line := range strings.Split(out.String(), "\n") {
		if strings.HasPrefix(line, "diff -u -N ") {
			headers = append(headers, strings.Fields(line)[3])
		}
	}
	want := []string{"live/apps.v1.Deployment.ns.z", "live/v1.ConfigMap.ns.a", "live/v1.ConfigMap.ns.c"}
	if !reflect.DeepEqual(headers, want) {
		t.Errorf("headers = %v, want %v", headers, want)
	}
}

func TestNormalize(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{
			name: "server metadata and status dropped, the rest kept",
			in: `apiVersion: v1
kind: ConfigMap
metadata: {name: a, namespace: n, uid: u, resourceVersion: "1", generation: 2, creationTimestamp: "2026-01-01T00:00:00Z", selfLink: /x,
  managedFields: [{manager: m}], labels: {l: v}, annotations: {a: v}}
data: {k: v}
status: {phase: Active}
`,
			want: "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a, namespace: n, labels: {l: v}, annotations: {a: v}}\ndata: {k: v}\n",
		},
		{
			name: "nothing to drop",
			in:   "apiVersion: v1\nkind: Namespace\nmetadata: {name: a}\n",
			want: "apiVersion: v1\nkind: Namespace\nmetadata: {name: a}\n",
		},
		{name: "no object", in: "", want: ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := obj(t, tt.in)
			var before *unstructured.Unstructured
			if in != nil {
				before = in.DeepCopy()
			}
			got := Normalize(in)
			if want := obj(t, tt.want); !reflect.DeepEqual(got, want) {
				t.Errorf("Normalize = %v, want %v", got, want)
			}
			if !reflect.DeepEqual(in, before) {
				t.Error("Normalize changed its argument")
			}
		})
	}
}

func TestMaskSecrets(t *testing.T) {
	secret := func(body string) string { return "apiVersion: v1\nkind: Secret\nmetadata: {name: s}\n" + body }
	tests := []struct {
		name                   string
		live, merged           string
		wantLive, wantMerged   string
		wantUntouchedArguments bool
	}{
		{
			name:       "changed, equal, added and removed keys",
			live:       secret("data: {changed: b2xk, same: c2FtZQ==, removed: Z29uZQ==}\n"),
			merged:     secret("data: {changed: bmV3, same: c2FtZQ==, added: YWRkZWQ=}\n"),
			wantLive:   secret("data: {changed: '*** (before)', same: '***', removed: '***'}\n"),
			wantMerged: secret("data: {changed: '*** (after)', same: '***', added: '***'}\n"),
		},
		{
			name:       "stringData too, and a Secret added",
			merged:     secret("stringData: {password: hunter2}\ndata: {k: dg==}\n"),
			wantMerged: secret("stringData: {password: '***'}\ndata: {k: '***'}\n"),
		},
		{
			name:     "a Secret removed",
			live:     secret("data: {k: dg==}\n"),
			wantLive: secret("data: {k: '***'}\n"),
		},
		{
			name:       "kubectl's last-applied annotation masked, other annotations kept",
			live:       "apiVersion: v1\nkind: Secret\nmetadata: {name: s, annotations: {kubectl.kubernetes.io/last-applied-configuration: '{\"data\":{\"k\":\"dg==\"}}', team: a}}\n",
			merged:     "apiVersion: v1\nkind: Secret\nmetadata: {name: s, annotations: {kubectl.kubernetes.io/last-applied-configuration: '{\"data\":{\"k\":\"dw==\"}}', team: b}}\n",
			wantLive:   "apiVersion: v1\nkind: Secret\nmetadata: {name: s, annotations: {kubectl.kubernetes.io/last-applied-configuration: '*** (before)', team: a}}\n",
			wantMerged: "apiVersion: v1\nkind: Secret\nmetadata: {name: s, annotations: {kubectl.kubernetes.io/last-applied-configuration: '*** (after)', team: b}}\n",
		},
		{
			name:       "a ConfigMap is not masked",
			live:       "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\ndata: {k: a}\n",
			merged:     "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\ndata: {k: b}\n",
			wantLive:   "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\ndata: {k: a}\n",
			wantMerged: "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\ndata: {k: b}\n",
		},
		{
			name:       "a Secret of another group is not a core Secret",
			live:       "apiVersion: example.com/v1\nkind: Secret\nmetadata: {name: c}\ndata: {k: a}\n",
			wantLive:   "apiVersion: example.com/v1\nkind: Secret\nmetadata: {name: c}\ndata: {k: a}\n",
			wantMerged: "",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			live, merged := obj(t, tt.live), obj(t, tt.merged)
			gotLive, gotMerged := MaskSecrets(live, merged)
			if want := obj(t, tt.wantLive); !reflect.DeepEqual(gotLive, want) {
				t.Errorf("live = %v, want %v", gotLive, want)
			}
			if want := obj(t, tt.wantMerged); !reflect.DeepEqual(gotMerged, want) {
				t.Errorf("merged = %v, want %v", gotMerged, want)
			}
			if !reflect.DeepEqual(live, obj(t, tt.live)) || !reflect.DeepEqual(merged, obj(t, tt.merged)) {
				t.Error("MaskSecrets changed its arguments")
			}
		})
	}
}

func TestName(t *testing.T) {
	tests := []struct {
		gvk      schema.GroupVersionKind
		ns, name string
		want     string
	}{
		{schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}, "shop", "web", "apps.v1.Deployment.shop.web"},
		{schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}, "shop", "settings", "v1.ConfigMap.shop.settings"},
		{schema.GroupVersionKind{Version: "v1", Kind: "Namespace"}, "", "shop", "v1.Namespace..shop"},
		{schema.GroupVersionKind{Group: "rbac.authorization.k8s.io", Version: "v1", Kind: "ClusterRole"}, "", "r", "rbac.authorization.k8s.io.v1.ClusterRole..r"},
	}
	for _, tt := range tests {
		if got := Name(tt.gvk, tt.ns, tt.name); got != tt.want {
			t.Errorf("Name(%v, %q, %q) = %q, want %q", tt.gvk, tt.ns, tt.name, got, tt.want)
		}
	}
}

func TestLines(t *testing.T) {
	tests := []struct {
		in   string
		want []string
	}{
		{"", nil},
		{"a\n", []string{"a\n"}},
		{"a\nb\n", []string{"a\n", "b\n"}},
		{"a\nb", []string{"a\n", "b\n"}},
	}
	for _, tt := range tests {
		if got := lines(tt.in); !reflect.DeepEqual(got, tt.want) {
			t.Errorf("lines(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}
