package sandbox

import (
	"testing"
	"time"
)

func TestLimitsWithDefaults(t *testing.T) {
	d := DefaultLimits()
	tests := []struct {
		name string
		in   Limits
		want Limits
	}{
		{"zero is the defaults", Limits{}, d},
		{"negative fields take defaults", Limits{Memory: -1, Timeout: -time.Second, Concurrency: -2, TenantConcurrency: -3, MaxOutputBytes: -4}, d},
		{
			name: "set fields kept",
			in:   Limits{Memory: 1 << 30, Timeout: time.Minute, Concurrency: 8, TenantConcurrency: 3, MaxOutputBytes: 1 << 20},
			want: Limits{Memory: 1 << 30, Timeout: time.Minute, WallTimeout: 10 * time.Minute, Concurrency: 8, TenantConcurrency: 3, MaxOutputBytes: 1 << 20},
		},
		{
			name: "wall-clock deadline kept",
			in:   Limits{Timeout: time.Minute, WallTimeout: time.Hour},
			want: Limits{Memory: d.Memory, Timeout: time.Minute, WallTimeout: time.Hour, Concurrency: d.Concurrency, TenantConcurrency: d.TenantConcurrency, MaxOutputBytes: d.MaxOutputBytes},
		},
		{
			name: "memory below the minimum raised to it",
			in:   Limits{Memory: 1 << 20},
			want: Limits{Memory: minMemory, Timeout: d.Timeout, WallTimeout: d.WallTimeout, Concurrency: d.Concurrency, TenantConcurrency: d.TenantConcurrency, MaxOutputBytes: d.MaxOutputBytes},
		},
		{
			name: "tenant share defaults from the concurrency set",
			in:   Limits{Concurrency: 10},
			want: Limits{Memory: d.Memory, Timeout: d.Timeout, WallTimeout: d.WallTimeout, Concurrency: 10, TenantConcurrency: 5, MaxOutputBytes: d.MaxOutputBytes},
		},
		{
			name: "tenant share of one slot is one",
			in:   Limits{Concurrency: 1},
			want: Limits{Memory: d.Memory, Timeout: d.Timeout, WallTimeout: d.WallTimeout, Concurrency: 1, TenantConcurrency: 1, MaxOutputBytes: d.MaxOutputBytes},
		},
		{
			name: "tenant share capped at the concurrency",
			in:   Limits{Concurrency: 2, TenantConcurrency: 9},
			want: Limits{Memory: d.Memory, Timeout: d.Timeout, WallTimeout: d.WallTimeout, Concurrency: 2, TenantConcurrency: 2, MaxOutputBytes: d.MaxOutputBytes},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.in.withDefaults(); got != tt.want {
				t.Fatalf("withDefaults() = %+v, want %+v", got, tt.want)
			}
		})
	}
}
