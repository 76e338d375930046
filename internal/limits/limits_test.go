package limits

import (
	"testing"
	"time"
)

func TestPositiveOr(t *testing.T) {
	tests := []struct {
		name   string
		v, def int64
		want   int64
	}{
		{"positive kept", 7, 100, 7},
		{"one kept", 1, 100, 1},
		{"zero takes default", 0, 100, 100},
		{"negative takes default", -1, 100, 100},
		{"most negative takes default", -1 << 63, 100, 100},
		{"above default kept", 1000, 100, 1000},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := PositiveOr(tt.v, tt.def); got != tt.want {
				t.Fatalf("PositiveOr(%d, %d) = %d, want %d", tt.v, tt.def, got, tt.want)
			}
		})
	}
}

// TestPositiveOrTypes checks the other kinds of Number a limit is counted
// in: durations, unsigned and floating-point values.
func TestPositiveOrTypes(t *testing.T) {
	tests := []struct {
		name string
		got  any
		want any
	}{
		{"duration zero", PositiveOr(time.Duration(0), time.Second), time.Second},
		{"duration negative", PositiveOr(-time.Minute, time.Second), time.Second},
		{"duration kept", PositiveOr(time.Minute, time.Second), time.Minute},
		{"int kept", PositiveOr(3, 4), 3},
		{"unsigned zero", PositiveOr(uint(0), uint(5)), uint(5)},
		{"unsigned kept", PositiveOr(uint(2), uint(5)), uint(2)},
		{"float below zero", PositiveOr(-0.5, 2.5), 2.5},
		{"float kept", PositiveOr(0.5, 2.5), 0.5},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.got != tt.want {
				t.Fatalf("got %v (%T), want %v (%T)", tt.got, tt.got, tt.want, tt.want)
			}
		})
	}
}
