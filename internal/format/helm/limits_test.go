package helm

import "testing"

func TestLimitsWithDefaults(t *testing.T) {
	d := DefaultLimits()
	tests := []struct {
		name string
		in   Limits
		want Limits
	}{
		{"zero is the defaults", Limits{}, d},
		{"negative fields take defaults", Limits{MaxFiles: -1, MaxFileBytes: -1, MaxTotalBytes: -1, MaxRenderedBytes: -1, MaxObjects: -1}, d},
		{"set fields kept", Limits{MaxFiles: 1, MaxFileBytes: 2, MaxTotalBytes: 3, MaxRenderedBytes: 4, MaxObjects: 5}, Limits{MaxFiles: 1, MaxFileBytes: 2, MaxTotalBytes: 3, MaxRenderedBytes: 4, MaxObjects: 5}},
		{"some set", Limits{MaxRenderedBytes: 4}, Limits{MaxFiles: d.MaxFiles, MaxFileBytes: d.MaxFileBytes, MaxTotalBytes: d.MaxTotalBytes, MaxRenderedBytes: 4, MaxObjects: d.MaxObjects}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.in.withDefaults(); got != tt.want {
				t.Fatalf("withDefaults() = %+v, want %+v", got, tt.want)
			}
		})
	}
}
