package configmaps

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/rukpak/rukpak/internal/store"
)

func TestDigest(t *testing.T) {
	base := &corev1.ConfigMap{Data: map[string]string{"a": "1", "b": "2"}}
	tests := []struct {
		name  string
		other *corev1.ConfigMap
		equal bool
	}{
		{"same content", &corev1.ConfigMap{Data: map[string]string{"b": "2", "a": "1"}}, true},
		{"metadata is ignored", &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "x", Labels: map[string]string{"l": "v"}}, Data: map[string]string{"a": "1", "b": "2"}}, true},
		{"other value", &corev1.ConfigMap{Data: map[string]string{"a": "1", "b": "3"}}, false},
		{"other key", &corev1.ConfigMap{Data: map[string]string{"a": "1", "c": "2"}}, false},
		{"missing key", &corev1.ConfigMap{Data: map[string]string{"a": "1"}}, false},
		{"key and value boundary", &corev1.ConfigMap{Data: map[string]string{"a1": "", "b": "2"}}, false},
		{"binaryData instead of data", &corev1.ConfigMap{Data: map[string]string{"a": "1"}, BinaryData: map[string][]byte{"b": []byte("2")}}, false},
		{"empty", &corev1.ConfigMap{}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, b := Digest(base), Digest(tt.other)
			if !store.ValidDigest(a) || !store.ValidDigest(b) {
				t.Fatalf("malformed digests %q, %q", a, b)
			}
			if (a == b) != tt.equal {
				t.Fatalf("Digest equal = %v, want %v (%s, %s)", a == b, tt.equal, a, b)
			}
		})
	}
	// The encoding is part of the API (users pin digests): it must not change.
	const golden = "sha256:5f9898f05589caf1d10159cde35b3f803ed841e3d57e2e93e9b0a8f8b217cff6"
	if got := Digest(base); got != golden {
		t.Fatalf("Digest = %s, want %s", got, golden)
	}
}

func TestValidKey(t *testing.T) {
	tests := []struct {
		key string
		ok  bool
	}{
		{"a.yaml", true}, {".hidden", true}, {"...", true}, {"a-b_c.D9", true},
		{"", false}, {".", false}, {"..", false}, {"a/b", false}, {"/a", false}, {"../a", false}, {`a\b`, false}, {"a\x00", false},
	}
	for _, tt := range tests {
		if got := validKey(tt.key); got != tt.ok {
			t.Errorf("validKey(%q) = %v, want %v", tt.key, got, tt.ok)
		}
	}
}

func TestWriterRefusesBadKeys(t *testing.T) {
	for _, key := range []string{"..", ".", "a/b", "../../etc/x"} {
		t.Run(key, func(t *testing.T) {
			w := newWriter(t.TempDir())
			err := w.write(owner{name: "ns/cm"}, "", &corev1.ConfigMap{Data: map[string]string{key: "x"}})
			if err == nil {
				t.Fatal("write succeeded")
			}
		})
	}
	w := newWriter(t.TempDir())
	err := w.write(owner{name: "ns/cm"}, "", &corev1.ConfigMap{Data: map[string]string{"k": "x"}, BinaryData: map[string][]byte{"k": nil}})
	if err == nil {
		t.Fatal("key in both data and binaryData accepted")
	}
}
