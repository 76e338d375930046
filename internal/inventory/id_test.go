package inventory

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"reflect"
	"testing"
)

func TestStale(t *testing.T) {
	cm := func(name string) ID { return ID{Version: "v1", Kind: "ConfigMap", Namespace: "ns", Name: name} }
	crd := func(version string) ID {
		return ID{Group: "apiextensions.k8s.io", Version: version, Kind: "CustomResourceDefinition", Name: "widgets.example.com"}
	}
	tests := []struct {
		name string
		a, b []ID
		want []ID
	}{
		{name: "empty", a: nil, b: []ID{cm("x")}, want: nil},
		{name: "dropped object", a: []ID{cm("keep"), cm("drop")}, b: []ID{cm("keep")}, want: []ID{cm("drop")}},
		{name: "version change is the same object", a: []ID{crd("v1beta1")}, b: []ID{crd("v1")}, want: nil},
		{name: "namespace matters", a: []ID{cm("x")}, b: []ID{{Version: "v1", Kind: "ConfigMap", Namespace: "other", Name: "x"}}, want: []ID{cm("x")}},
		{name: "keeps a's order", a: []ID{cm("c"), cm("a"), cm("b")}, b: []ID{cm("a")}, want: []ID{cm("c"), cm("b")}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Stale(tt.a, tt.b); !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("Stale = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestIDString(t *testing.T) {
	tests := []struct {
		id   ID
		want string
	}{
		{ID{Version: "v1", Kind: "ConfigMap", Namespace: "ns", Name: "x"}, "ConfigMap ns/x"},
		{ID{Group: "apps", Version: "v1", Kind: "Deployment", Namespace: "ns", Name: "d"}, "Deployment.apps ns/d"},
		{ID{Version: "v1", Kind: "Namespace", Name: "ns"}, "Namespace ns"},
	}
	for _, tt := range tests {
		if got := tt.id.String(); got != tt.want {
			t.Errorf("String() = %q, want %q", got, tt.want)
		}
	}
}

func TestCodecRoundTrip(t *testing.T) {
	for _, n := range []int{0, 1, 10000} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			ids := make([]ID, n)
			recs := map[ID]Record{}
			for i := range ids {
				ids[i] = ID{Group: "apps", Version: "v1", Kind: "Deployment", Namespace: fmt.Sprintf("ns-%d", i%7), Name: fmt.Sprintf("object-%05d", i)}
				if i%2 == 0 { // half of them applied, half only recorded before a write
					recs[ids[i].Key()] = Record{Hash: fmt.Sprintf("%016x", i*7919), ResourceVersion: fmt.Sprint(100000 + i), Generation: int64(i % 3), Keep: i%4 == 0}
				}
			}
			data, err := encode(ids, recs)
			if err != nil {
				t.Fatal(err)
			}
			got, gotRecs, err := decode(data)
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != n || (n > 0 && !reflect.DeepEqual(got, ids)) {
				t.Fatalf("round trip of %d IDs gave %d", n, len(got))
			}
			if len(gotRecs) != len(recs) || (len(recs) > 0 && !reflect.DeepEqual(gotRecs, recs)) {
				t.Fatalf("round trip of %d records gave %d", len(recs), len(gotRecs))
			}
			// 10,000 objects with their records must fit one chunk.
			if len(data) > defaultChunkSize {
				t.Fatalf("%d IDs encode to %d bytes, want < %d", n, len(data), defaultChunkSize)
			}
		})
	}
}

func TestDecodeRefusesGarbage(t *testing.T) {
	tests := map[string][]byte{
		"not gzip": []byte("plain text"),
	}
	for name, line := range map[string]string{
		"six fields":        "apps|v1|Deployment|ns|d|abc\n",
		"bad generation":    "apps|v1|Deployment|ns|d|abc|12|x\n",
		"negative gen":      "apps|v1|Deployment|ns|d|abc|12|-1\n",
		"empty record hash": "apps|v1|Deployment|ns|d||12|1\n",
		"unknown ninth":     "apps|v1|Deployment|ns|d|abc|12|1|maybe\n",
		"keep without rec":  "apps|v1|Deployment|ns|d|keep\n",
	} {
		tests[name] = gzipped(t, line)
	}
	bad, _ := encode(nil, nil)
	tests["truncated"] = bad[:len(bad)/2]
	for name, data := range tests {
		t.Run(name, func(t *testing.T) {
			if _, _, err := decode(data); err == nil {
				t.Fatal("decode accepted garbage")
			}
		})
	}
}

// gzipped compresses s as inventories are stored.
func gzipped(t *testing.T, s string) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	if _, err := zw.Write([]byte(s)); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}
