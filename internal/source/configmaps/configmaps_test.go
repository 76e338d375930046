//go:build integration

package configmaps

import (
	"context"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/rukpak/rukpak/api/v1alpha2"
	"github.com/rukpak/rukpak/pkg/envtest"
	"github.com/rukpak/rukpak/pkg/failure"
)

var env *envtest.Env

func TestMain(m *testing.M) { envtest.Run(m, &env) }

// cmSpec is a ConfigMap to create in rukpak-system under a logical name.
type cmSpec struct {
	name    string
	data    map[string]string
	binary  map[string][]byte
	mutable bool
	missing bool // for replace: delete without recreating
}

func (c cmSpec) object(name string) *corev1.ConfigMap {
	return &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: v1alpha2.SystemNamespace},
		Data:       c.data,
		BinaryData: c.binary,
		Immutable:  ptr.To(!c.mutable),
	}
}

// ref is one entry of the source; digest is "" (unset), "match" (the digest
// of the ConfigMap of the same name in cms) or a literal digest.
type ref struct{ cm, path, digest string }

const zeroDigest = "sha256:0000000000000000000000000000000000000000000000000000000000000000"

func TestSource(t *testing.T) {
	manifests := cmSpec{name: "a", data: map[string]string{"a.yaml": "kind: A", "b.yaml": "kind: B"}, binary: map[string][]byte{"blob.bin": {0, 1, 2, 255}}}
	readme := cmSpec{name: "b", data: map[string]string{"README": "hi"}}
	tests := []struct {
		name           string
		cms            []cmSpec
		refs           []ref
		replace        []cmSpec // deleted and recreated between Resolve and Unpack
		wantResolve    string   // reason of a Resolve failure
		wantUnpack     string   // reason of an Unpack failure
		wantMsg        string   // part of the failure message; {a} and {b} stand for the ConfigMaps
		wantFiles      map[string]string
		wantEmptyPaths []string
	}{
		{name: "immutable ConfigMaps are unpacked",
			cms:  []cmSpec{manifests, readme},
			refs: []ref{{cm: "a", path: "manifests"}, {cm: "b"}},
			wantFiles: map[string]string{
				"manifests/a.yaml": "kind: A", "manifests/b.yaml": "kind: B", "manifests/blob.bin": "\x00\x01\x02\xff", "README": "hi",
			}},
		{name: "user digest matches",
			cms:       []cmSpec{readme},
			refs:      []ref{{cm: "b", path: "./docs/", digest: "match"}},
			wantFiles: map[string]string{"docs/README": "hi"}},
		{name: "same ConfigMap at two paths",
			cms:       []cmSpec{readme},
			refs:      []ref{{cm: "b", path: "x"}, {cm: "b", path: "y"}},
			wantFiles: map[string]string{"x/README": "hi", "y/README": "hi"}},
		{name: "empty ConfigMap makes its directory",
			cms:            []cmSpec{{name: "a"}},
			refs:           []ref{{cm: "a", path: "empty/dir"}},
			wantFiles:      map[string]string{},
			wantEmptyPaths: []string{"empty/dir"}},
		{name: "mutable ConfigMap is refused",
			cms:         []cmSpec{{name: "a", data: map[string]string{"f": "x"}, mutable: true}},
			refs:        []ref{{cm: "a"}},
			wantResolve: v1alpha2.ReasonSourceMutable,
			wantMsg:     "ConfigMap rukpak-system/{a} must be immutable (set immutable: true): a revision is a fixed thing"},
		{name: "missing ConfigMap is refused",
			cms:         []cmSpec{readme},
			refs:        []ref{{cm: "b"}, {cm: "a"}},
			wantResolve: v1alpha2.ReasonSourceNotFound,
			wantMsg:     "ConfigMap rukpak-system/{a} not found"},
		{name: "user digest mismatch",
			cms:         []cmSpec{readme},
			refs:        []ref{{cm: "b", digest: zeroDigest}},
			wantResolve: v1alpha2.ReasonDigestMismatch,
			wantMsg:     "ConfigMap rukpak-system/{b} has content digest sha256:"},
		{name: "two ConfigMaps write the same file",
			cms:        []cmSpec{{name: "a", data: map[string]string{"x.yaml": "1"}}, {name: "b", data: map[string]string{"x.yaml": "2"}}},
			refs:       []ref{{cm: "a", path: "m"}, {cm: "b", path: "m/"}},
			wantUnpack: v1alpha2.ReasonSourceConflict,
			wantMsg:    "ConfigMaps rukpak-system/{a} and rukpak-system/{b} both write m/x.yaml"},
		{name: "a file where another ConfigMap has a directory",
			cms:        []cmSpec{{name: "a", data: map[string]string{"x.yaml": "1"}}, {name: "b", data: map[string]string{"m": "2"}}},
			refs:       []ref{{cm: "a", path: "m"}, {cm: "b"}},
			wantUnpack: v1alpha2.ReasonSourceConflict,
			wantMsg:    "ConfigMaps rukpak-system/{a} and rukpak-system/{b} both write m"},
		{name: "content replaced between Resolve and Unpack",
			cms:        []cmSpec{readme},
			refs:       []ref{{cm: "b"}},
			replace:    []cmSpec{{name: "b", data: map[string]string{"README": "evil"}}},
			wantUnpack: v1alpha2.ReasonDigestMismatch,
			wantMsg:    "it was replaced"},
		{name: "replaced by equal content",
			cms:       []cmSpec{readme},
			refs:      []ref{{cm: "b"}},
			replace:   []cmSpec{readme},
			wantFiles: map[string]string{"README": "hi"}},
		{name: "deleted between Resolve and Unpack",
			cms:        []cmSpec{readme},
			refs:       []ref{{cm: "b"}},
			replace:    []cmSpec{{name: "b", missing: true}},
			wantUnpack: v1alpha2.ReasonSourceNotFound,
			wantMsg:    "ConfigMap rukpak-system/{b} not found"},
		{name: "escaping path",
			cms:        []cmSpec{readme},
			refs:       []ref{{cm: "b", path: "a/../../up"}},
			wantUnpack: v1alpha2.ReasonUnpackFailed,
			wantMsg:    `ConfigMap rukpak-system/{b}: path: path "a/../../up" escapes`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			prefix := envtest.UniqueName("cm")
			real := func(logical string) string { return prefix + "-" + logical }
			specs := map[string]cmSpec{}
			for _, c := range tt.cms {
				specs[c.name] = c
				create(t, c.object(real(c.name)))
			}
			srcIn := v1alpha2.BundleSource{Type: v1alpha2.SourceTypeConfigMaps}
			for _, r := range tt.refs {
				d := r.digest
				if d == "match" {
					d = Digest(specs[r.cm].object(""))
				}
				srcIn.ConfigMaps = append(srcIn.ConfigMaps, v1alpha2.ConfigMapSource{
					ConfigMap: v1alpha2.LocalObjectReference{Name: real(r.cm)}, Path: r.path, Digest: d,
				})
			}
			before := srcIn.DeepCopy()
			msg := strings.NewReplacer("{a}", real("a"), "{b}", real("b")).Replace(tt.wantMsg)
			s := New(env.Client, v1alpha2.SystemNamespace)

			pinned, err := s.Resolve(ctx, srcIn)
			if tt.wantResolve != "" {
				checkFailure(t, "Resolve", err, tt.wantResolve, msg)
				return
			}
			if err != nil {
				t.Fatalf("Resolve: %v", err)
			}
			if !equalSources(before, &srcIn) {
				t.Fatal("Resolve modified its argument")
			}
			for i, r := range tt.refs {
				want := Digest(specs[r.cm].object(""))
				if got := pinned.ConfigMaps[i].Digest; got != want {
					t.Fatalf("entry %d digest = %q, want %q", i, got, want)
				}
			}

			for _, c := range tt.replace {
				replace(t, c, real(c.name))
			}
			dir := t.TempDir()
			err = s.Unpack(ctx, pinned, dir)
			if tt.wantUnpack != "" {
				checkFailure(t, "Unpack", err, tt.wantUnpack, msg)
				return
			}
			if err != nil {
				t.Fatalf("Unpack: %v", err)
			}
			if got := readFiles(t, dir); !maps.Equal(got, tt.wantFiles) {
				t.Fatalf("files = %v, want %v", got, tt.wantFiles)
			}
			for _, p := range tt.wantEmptyPaths {
				if info, err := os.Stat(filepath.Join(dir, p)); err != nil || !info.IsDir() {
					t.Fatalf("directory %s: %v", p, err)
				}
			}
		})
	}
}

func TestUnpackRefusesUnpinned(t *testing.T) {
	name := envtest.UniqueName("cm")
	create(t, cmSpec{data: map[string]string{"f": "x"}}.object(name))
	src := v1alpha2.BundleSource{Type: v1alpha2.SourceTypeConfigMaps, ConfigMaps: []v1alpha2.ConfigMapSource{{ConfigMap: v1alpha2.LocalObjectReference{Name: name}}}}
	err := New(env.Client, v1alpha2.SystemNamespace).Unpack(context.Background(), src, t.TempDir())
	if err == nil || !strings.Contains(err.Error(), "not pinned") {
		t.Fatalf("error = %v, want not pinned", err)
	}
}

func create(t *testing.T, cm *corev1.ConfigMap) {
	t.Helper()
	if err := env.Client.Create(context.Background(), cm); err != nil {
		t.Fatalf("creating ConfigMap %s: %v", cm.Name, err)
	}
	t.Cleanup(func() { _ = env.Client.Delete(context.Background(), cm) })
}

// replace deletes the ConfigMap name and, unless c.missing, creates it again
// from c: immutable ConfigMaps cannot be updated.
func replace(t *testing.T, c cmSpec, name string) {
	t.Helper()
	if err := env.Client.Delete(context.Background(), c.object(name)); err != nil {
		t.Fatalf("deleting ConfigMap %s: %v", name, err)
	}
	if !c.missing {
		create(t, c.object(name))
	}
}

func checkFailure(t *testing.T, op string, err error, reason, msg string) {
	t.Helper()
	if err == nil {
		t.Fatalf("%s succeeded, want a %s failure", op, reason)
	}
	if got := failure.Reason(err, ""); got != reason {
		t.Fatalf("%s reason = %q, want %q (error %v)", op, got, reason, err)
	}
	if !strings.Contains(err.Error(), msg) {
		t.Fatalf("%s error %q does not contain %q", op, err, msg)
	}
}

// readFiles returns the content of every file under root by slash path, and
// checks that files are 0644.
func readFiles(t *testing.T, root string) map[string]string {
	t.Helper()
	got := map[string]string{}
	err := filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		if info.Mode() != 0o644 {
			t.Errorf("%s has mode %v, want 0644", rel, info.Mode())
		}
		b, err := os.ReadFile(p)
		got[filepath.ToSlash(rel)] = string(b)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return got
}

func equalSources(a, b *v1alpha2.BundleSource) bool {
	if len(a.ConfigMaps) != len(b.ConfigMaps) {
		return false
	}
	for i := range a.ConfigMaps {
		if a.ConfigMaps[i] != b.ConfigMaps[i] {
			return false
		}
	}
	return a.Type == b.Type && a.Destination == b.Destination
}
