package renderstore

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"errors"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func TestEncodeDecodeRoundTrip(t *testing.T) {
	full := sampleRender()
	noAnswers := sampleRender()
	noAnswers.Answers = nil
	emptyAnswers := sampleRender()
	emptyAnswers.Answers = map[string]json.RawMessage{}
	tests := []struct {
		name string
		r    Render
	}{
		{name: "objects and answers", r: full},
		{name: "no answers", r: noAnswers},
		{name: "empty answers load as nil", r: emptyAnswers},
		{name: "no objects", r: Render{FormatVersion: "helm/v1"}},
		{name: "random content", r: Render{Objects: randomObjects(t, 20, 1000)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.r.Revision, tt.r.BundleUID = "shop-abc", "uid-1"
			enc, err := encode(&tt.r, DefaultMaxSize)
			if err != nil {
				t.Fatal(err)
			}
			again, err := encode(&tt.r, DefaultMaxSize)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(enc.data, again.data) {
				t.Fatal("the same render encoded to different bytes")
			}
			d, err := decode("shop-abc", enc.data, DefaultMaxSize)
			if err != nil {
				t.Fatal(err)
			}
			assertSame(t, d.render, tt.r)
			if d.jsonSize != enc.jsonSize || d.jsonSum != enc.jsonSum {
				t.Fatalf("decoded %d bytes of JSON (%x), encoded %d (%x)", d.jsonSize, d.jsonSum, enc.jsonSize, enc.jsonSum)
			}
		})
	}
}

// TestDecodeNumbers: numbers come back as unstructured objects hold them,
// integers as int64, the others as float64.
func TestDecodeNumbers(t *testing.T) {
	r := Render{Revision: "b", Objects: []*unstructured.Unstructured{{Object: map[string]any{
		"kind": "X", "i": int64(7), "f": 0.5, "neg": int64(-3), "list": []any{int64(1), 2.5},
	}}}}
	enc, err := encode(&r, DefaultMaxSize)
	if err != nil {
		t.Fatal(err)
	}
	d, err := decode("b", enc.data, DefaultMaxSize)
	if err != nil {
		t.Fatal(err)
	}
	obj := d.render.Objects[0].Object
	if _, ok := obj["i"].(int64); !ok {
		t.Fatalf("i is %T", obj["i"])
	}
	if _, ok := obj["neg"].(int64); !ok {
		t.Fatalf("neg is %T", obj["neg"])
	}
	if _, ok := obj["f"].(float64); !ok {
		t.Fatalf("f is %T", obj["f"])
	}
	if l := obj["list"].([]any); l[0] != int64(1) || l[1] != 2.5 {
		t.Fatalf("list is %#v", l)
	}
}

func TestEncodeRefuses(t *testing.T) {
	tests := []struct {
		name    string
		r       Render
		max     int64
		wantErr error
	}{
		{name: "nil object", r: Render{Objects: []*unstructured.Unstructured{nil}}, max: DefaultMaxSize},
		{name: "object without content", r: Render{Objects: []*unstructured.Unstructured{{}}}, max: DefaultMaxSize},
		{name: "answer that is not JSON", r: Render{Answers: map[string]json.RawMessage{"k": json.RawMessage("{")}}, max: DefaultMaxSize},
		{name: "answer that is not UTF-8", r: Render{Answers: map[string]json.RawMessage{"k": json.RawMessage("\"\xff\"")}}, max: DefaultMaxSize},
		{name: "over the size limit", r: Render{Objects: randomObjects(t, 4, 1000)}, max: 2000, wantErr: ErrTooLarge},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := encode(&tt.r, tt.max)
			if err == nil {
				t.Fatal("encoded")
			}
			if tt.wantErr != nil && !errors.Is(err, tt.wantErr) {
				t.Fatalf("error %v, want %v", err, tt.wantErr)
			}
		})
	}
}

func TestDecodeRefuses(t *testing.T) {
	good, err := encode(&Render{Revision: "b", Objects: randomObjects(t, 2, 100)}, DefaultMaxSize)
	if err != nil {
		t.Fatal(err)
	}
	badCRC := bytes.Clone(good.data)
	badCRC[len(badCRC)-5] ^= 0xff // the trailer: CRC-32, then size
	tests := []struct {
		name string
		data []byte
		max  int64
		want Problem
	}{
		{name: "not gzip", data: []byte("plain text"), max: DefaultMaxSize, want: ProblemUndecodable},
		{name: "truncated", data: good.data[:len(good.data)/2], max: DefaultMaxSize, want: ProblemUndecodable},
		{name: "bad CRC", data: badCRC, max: DefaultMaxSize, want: ProblemUndecodable},
		{name: "not JSON", data: gzipBytes(t, []byte("objects: []"), gzip.DefaultCompression), max: DefaultMaxSize, want: ProblemUndecodable},
		{name: "two documents", data: gzipBytes(t, []byte(`{"version":1} {"version":1}`), gzip.DefaultCompression), max: DefaultMaxSize, want: ProblemUndecodable},
		{name: "null object", data: gzipBytes(t, []byte(`{"version":1,"objects":[null]}`), gzip.DefaultCompression), max: DefaultMaxSize, want: ProblemUndecodable},
		{name: "object that is a list", data: gzipBytes(t, []byte(`{"version":1,"objects":[[1]]}`), gzip.DefaultCompression), max: DefaultMaxSize, want: ProblemUndecodable},
		{name: "unknown version", data: gzipBytes(t, []byte(`{"version":2,"objects":[]}`), gzip.DefaultCompression), max: DefaultMaxSize, want: ProblemUnsupported},
		{name: "no version", data: gzipBytes(t, []byte(`{"objects":[]}`), gzip.DefaultCompression), max: DefaultMaxSize, want: ProblemUnsupported},
		{name: "decompression bomb", data: bomb(t, 8<<20), max: 1 << 20, want: ProblemTooLarge},
		{name: "just over the limit", data: good.data, max: good.jsonSize - 1, want: ProblemTooLarge},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := decode("b", tt.data, tt.max)
			var ce *CorruptError
			if !errors.As(err, &ce) || !errors.Is(err, ErrCorrupt) {
				t.Fatalf("error %v, want a *CorruptError", err)
			}
			if ce.Problem != tt.want || ce.Chunk != -1 || ce.Revision != "b" {
				t.Fatalf("problem %s of chunk %d of %s (%v), want %s of the payload of b", ce.Problem, ce.Chunk, ce.Revision, err, tt.want)
			}
		})
	}
	if _, err := decode("b", good.data, good.jsonSize); err != nil {
		t.Fatalf("a payload of exactly the limit: %v", err)
	}
}

func TestSplit(t *testing.T) {
	tests := []struct {
		name string
		n    int
		size int
		want []int
	}{
		{name: "empty", n: 0, size: 4, want: []int{0}},
		{name: "under", n: 3, size: 4, want: []int{3}},
		{name: "exact", n: 8, size: 4, want: []int{4, 4}},
		{name: "over", n: 9, size: 4, want: []int{4, 4, 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			data := bytes.Repeat([]byte{'x'}, tt.n)
			got := split(data, tt.size)
			if len(got) != len(tt.want) {
				t.Fatalf("%d chunks, want %d", len(got), len(tt.want))
			}
			for i := range got {
				if len(got[i]) != tt.want[i] || cap(got[i]) > tt.size {
					t.Fatalf("chunk %d has %d bytes (cap %d), want %d", i, len(got[i]), cap(got[i]), tt.want[i])
				}
			}
			if joined := bytes.Join(got, nil); !bytes.Equal(joined, data) {
				t.Fatal("chunks do not join to the data")
			}
		})
	}
}
