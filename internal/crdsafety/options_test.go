package crdsafety

import (
	"reflect"
	"testing"
)

func TestOptionsWithDefaults(t *testing.T) {
	d := DefaultOptions()
	tests := []struct {
		name string
		in   Options
		want Options
	}{
		{"zero is the defaults", Options{}, d},
		{"negative bounds take defaults", Options{MaxObjects: -1, PageSize: -1, MaxFailingObjects: -1, MaxObjectsPerFinding: -1}, d},
		{"set bounds kept", Options{MaxObjects: 5, PageSize: 2, MaxFailingObjects: 1, MaxObjectsPerFinding: 7}, Options{MaxObjects: 5, PageSize: 2, MaxFailingObjects: 1, MaxObjectsPerFinding: 7}},
		{
			name: "accepted findings kept, unset bounds filled",
			in:   Options{Accepted: []string{"a", "b"}, PageSize: 10},
			want: Options{Accepted: []string{"a", "b"}, MaxObjects: d.MaxObjects, PageSize: 10, MaxFailingObjects: d.MaxFailingObjects, MaxObjectsPerFinding: d.MaxObjectsPerFinding},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.in.withDefaults(); !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("withDefaults() = %+v, want %+v", got, tt.want)
			}
		})
	}
}
