package archive

import "testing"

func TestLimitsWithDefaults(t *testing.T) {
	d := DefaultLimits()
	tests := []struct {
		name string
		in   Limits
		want Limits
	}{
		{"zero is the defaults", Limits{}, d},
		{"negative fields take defaults", Limits{MaxBytes: -1, MaxFiles: -1, MaxFileBytes: -1, MaxPathBytes: -1, MaxRatio: -1}, d},
		{"set fields kept", Limits{MaxBytes: 1, MaxFiles: 2, MaxFileBytes: 3, MaxPathBytes: 4, MaxRatio: 5}, Limits{MaxBytes: 1, MaxFiles: 2, MaxFileBytes: 3, MaxPathBytes: 4, MaxRatio: 5}},
		{"some set", Limits{MaxFiles: 7, MaxRatio: -1}, Limits{MaxBytes: d.MaxBytes, MaxFiles: 7, MaxFileBytes: d.MaxFileBytes, MaxPathBytes: d.MaxPathBytes, MaxRatio: d.MaxRatio}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.in.withDefaults(); got != tt.want {
				t.Fatalf("withDefaults() = %+v, want %+v", got, tt.want)
			}
		})
	}
}
