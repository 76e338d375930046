package plain

import "testing"

func TestLimitsWithDefaults(t *testing.T) {
	d := DefaultLimits()
	tests := []struct {
		name string
		in   Limits
		want Limits
	}{
		{"zero is the defaults", Limits{}, d},
		{"negative fields take defaults", Limits{MaxFileBytes: -1, MaxTotalBytes: -1, MaxObjects: -1, MaxFiles: -1}, d},
		{"set fields kept", Limits{MaxFileBytes: 1, MaxTotalBytes: 2, MaxObjects: 3, MaxFiles: 4}, Limits{MaxFileBytes: 1, MaxTotalBytes: 2, MaxObjects: 3, MaxFiles: 4}},
		{"some set", Limits{MaxObjects: 3}, Limits{MaxFileBytes: d.MaxFileBytes, MaxTotalBytes: d.MaxTotalBytes, MaxObjects: 3, MaxFiles: d.MaxFiles}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.in.withDefaults(); got != tt.want {
				t.Fatalf("withDefaults() = %+v, want %+v", got, tt.want)
			}
		})
	}
}
