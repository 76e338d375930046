package apply

import (
	"reflect"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func TestParsePointer(t *testing.T) {
	tests := []struct {
		in      string
		want    FieldPath
		wantErr bool
	}{
		{in: "/spec/replicas", want: FieldPath{"spec", "replicas"}},
		{in: "/metadata/annotations/example.com~1owner", want: FieldPath{"metadata", "annotations", "example.com/owner"}},
		{in: "/data/a~0b", want: FieldPath{"data", "a~b"}},
		{in: "", wantErr: true},
		{in: "/", wantErr: true},
		{in: "spec/replicas", wantErr: true},
		{in: "/spec//replicas", wantErr: true},
	}
	for _, tt := range tests {
		got, err := ParsePointer(tt.in)
		if (err != nil) != tt.wantErr || !reflect.DeepEqual(got, tt.want) {
			t.Errorf("ParsePointer(%q) = %v, %v; want %v (error %v)", tt.in, got, err, tt.want, tt.wantErr)
		}
		if err == nil && got.String() != tt.in {
			t.Errorf("String() of %q = %q", tt.in, got.String())
		}
	}
}

func TestKeepLive(t *testing.T) {
	desired := &unstructured.Unstructured{Object: map[string]any{
		"spec": map[string]any{"replicas": int64(3), "paused": false, "template": map[string]any{"x": "desired"}},
	}}
	tests := []struct {
		name  string
		live  map[string]any
		paths []FieldPath
		want  map[string]any
	}{
		{
			name:  "live value kept",
			live:  map[string]any{"spec": map[string]any{"replicas": int64(7)}},
			paths: []FieldPath{{"spec", "replicas"}},
			want:  map[string]any{"spec": map[string]any{"replicas": int64(7), "paused": false, "template": map[string]any{"x": "desired"}}},
		},
		{
			name:  "absent live: left out",
			live:  map[string]any{"spec": map[string]any{}},
			paths: []FieldPath{{"spec", "replicas"}},
			want:  map[string]any{"spec": map[string]any{"paused": false, "template": map[string]any{"x": "desired"}}},
		},
		{
			name:  "a whole map",
			live:  map[string]any{"spec": map[string]any{"template": map[string]any{"x": "live", "y": "z"}}},
			paths: []FieldPath{{"spec", "template"}},
			want:  map[string]any{"spec": map[string]any{"replicas": int64(3), "paused": false, "template": map[string]any{"x": "live", "y": "z"}}},
		},
		{
			name:  "path through a non-map in live: left out",
			live:  map[string]any{"spec": "oops"},
			paths: []FieldPath{{"spec", "replicas"}},
			want:  map[string]any{"spec": map[string]any{"paused": false, "template": map[string]any{"x": "desired"}}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := keepLive(desired, &unstructured.Unstructured{Object: tt.live}, tt.paths)
			if !reflect.DeepEqual(got.Object, tt.want) {
				t.Fatalf("got %v, want %v", got.Object, tt.want)
			}
			if desired.Object["spec"].(map[string]any)["replicas"] != int64(3) {
				t.Fatal("keepLive changed the desired object")
			}
		})
	}
}
