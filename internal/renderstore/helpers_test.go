package renderstore

import (
	"bytes"
	"compress/gzip"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// sampleRender is a render with what objects hold: nested maps and lists,
// integers, floats, booleans, nulls, HTML characters, non-ASCII text and
// base64 data; and lookup answers with white space in them.
func sampleRender() Render {
	return Render{
		ContentDigest:   "sha256:" + fmt.Sprintf("%064x", 42),
		FormatVersion:   "helm/v1",
		ReleaseRevision: 3,
		Upgrade:         true,
		Objects: []*unstructured.Unstructured{
			{Object: map[string]any{
				"apiVersion": "v1", "kind": "Secret",
				"metadata": map[string]any{"name": "tls", "namespace": "shop", "labels": map[string]any{"app": "shop"}},
				"type":     "kubernetes.io/tls",
				"data":     map[string]any{"tls.crt": "LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0t", "tls.key": "c2VjcmV0"},
			}},
			{Object: map[string]any{
				"apiVersion": "apps/v1", "kind": "Deployment",
				"metadata": map[string]any{"name": "shop", "namespace": "shop", "annotations": map[string]any{"note": "<b>&'quoted'</b> — ünïcödé ✓"}},
				"spec": map[string]any{
					"replicas": int64(3),
					"paused":   false,
					"template": map[string]any{"spec": map[string]any{"containers": []any{
						map[string]any{"name": "app", "image": "shop@sha256:abc", "args": []any{"--ratio", "0.5"},
							"resources": map[string]any{"limits": map[string]any{"cpu": 0.25, "memory": "64Mi"}},
							"env":       []any{map[string]any{"name": "EMPTY", "value": nil}}},
					}}},
					"big": int64(1) << 62,
				},
			}},
		},
		Answers: map[string]json.RawMessage{
			"v1/Secret/shop/db":  json.RawMessage("{ \"data\" : {\"password\": \"czNjcjN0\"} }"),
			"v1/ConfigMap//none": json.RawMessage("{}"),
			"list":               json.RawMessage("[1, 2.5, \"<&>\", null]\n"),
		},
	}
}

// randomObjects returns n ConfigMaps with size bytes of random base64
// each: content that hardly compresses.
func randomObjects(t testing.TB, n, size int) []*unstructured.Unstructured {
	t.Helper()
	out := make([]*unstructured.Unstructured, n)
	raw := make([]byte, size*3/4)
	for i := range out {
		if _, err := rand.Read(raw); err != nil {
			t.Fatal(err)
		}
		out[i] = &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "v1", "kind": "ConfigMap",
			"metadata": map[string]any{"name": fmt.Sprintf("cm-%05d", i), "namespace": "ns"},
			"data":     map[string]any{"blob": base64.StdEncoding.EncodeToString(raw)},
		}}
	}
	return out
}

// marshalAll returns the JSON of each object.
func marshalAll(t testing.TB, objs []*unstructured.Unstructured) [][]byte {
	t.Helper()
	out := make([][]byte, len(objs))
	for i, obj := range objs {
		b, err := json.Marshal(obj.Object)
		if err != nil {
			t.Fatal(err)
		}
		out[i] = b
	}
	return out
}

// assertSame fails unless got is want saved for the Bundle name with uid:
// objects equal byte for byte as JSON, answers byte for byte, and every
// other field.
func assertSame(t testing.TB, got *Render, want Render) {
	t.Helper()
	if got.Revision != want.Revision || got.BundleUID != want.BundleUID || got.ContentDigest != want.ContentDigest ||
		got.FormatVersion != want.FormatVersion || got.ReleaseRevision != want.ReleaseRevision || got.Upgrade != want.Upgrade {
		t.Fatalf("loaded %s %s %s %s %d %v, want %s %s %s %s %d %v",
			got.Revision, got.BundleUID, got.ContentDigest, got.FormatVersion, got.ReleaseRevision, got.Upgrade,
			want.Revision, want.BundleUID, want.ContentDigest, want.FormatVersion, want.ReleaseRevision, want.Upgrade)
	}
	if len(got.Objects) != len(want.Objects) {
		t.Fatalf("loaded %d objects, want %d", len(got.Objects), len(want.Objects))
	}
	g, w := marshalAll(t, got.Objects), marshalAll(t, want.Objects)
	for i := range w {
		if !bytes.Equal(g[i], w[i]) {
			t.Fatalf("object %d differs:\n got %s\nwant %s", i, g[i], w[i])
		}
	}
	if (got.Answers == nil) != (len(want.Answers) == 0) || len(got.Answers) != len(want.Answers) {
		t.Fatalf("loaded answers %v, want %v", got.Answers, want.Answers)
	}
	for k, v := range want.Answers {
		if !bytes.Equal(got.Answers[k], v) {
			t.Fatalf("answer %q is %q, want %q", k, got.Answers[k], v)
		}
	}
}

// gzipBytes compresses data at level.
func gzipBytes(t testing.TB, data []byte, level int) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw, err := gzip.NewWriterLevel(&buf, level)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := zw.Write(data); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// bomb returns a gzip stream of a JSON document's start followed by size
// bytes of spaces: a few KiB that decompress to size.
func bomb(t testing.TB, size int) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw, err := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := zw.Write([]byte(`{"version":1,"objects":[`)); err != nil {
		t.Fatal(err)
	}
	spaces := bytes.Repeat([]byte{' '}, 1<<20)
	for written := 0; written < size; written += len(spaces) {
		if _, err := zw.Write(spaces); err != nil {
			t.Fatal(err)
		}
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}
