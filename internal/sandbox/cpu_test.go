package sandbox

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/rukpak/rukpak/api/v1alpha2"
	"github.com/rukpak/rukpak/pkg/failure"
)

func TestParseStatCPU(t *testing.T) {
	tests := []struct {
		name string
		stat string
		want time.Duration
		ok   bool
	}{
		{"plain", "4242 (rukpak) S 1 4242 4242 0 -1 4194560 100 0 0 0 250 37 0 0 30 10 8 0 123 456 789",
			2870 * time.Millisecond, true},
		{"command with spaces and parentheses", "7 (a (b) c) R 1 7 7 0 -1 0 0 0 0 0 3 4 0 0 20 0 1 0 1 2 3",
			70 * time.Millisecond, true},
		{"truncated", "7 (x) R 1 7 7 0", 0, false},
		{"no command", "7 x R", 0, false},
		{"not a number", "7 (x) R 1 7 7 0 -1 0 0 0 0 0 a 4 0", 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := parseStatCPU([]byte(tt.stat))
			if got != tt.want || ok != tt.ok {
				t.Fatalf("parseStatCPU = %v, %v; want %v, %v", got, ok, tt.want, tt.ok)
			}
		})
	}
}

// The time limit counts CPU time: a child that takes longer than it by the
// clock while using little CPU (as on a busy machine) finishes; one that
// uses it is stopped and named (TestRunDeadline has the wall-clock
// deadline).
func TestTimeLimitCountsCPUTime(t *testing.T) {
	if !cpuMetered {
		t.Fatal("this system does not let the parent read a child's CPU time (/proc/PID/stat)")
	}
	if got := (Limits{Timeout: time.Second}).withDefaults().WallTimeout; got != 10*time.Second {
		t.Errorf("wall-clock deadline of a 1s limit %v, want 10s", got)
	}
	r := newRunner(t, Limits{Memory: 256 << 20, Timeout: time.Second, WallTimeout: 10 * time.Minute})
	t.Run("slow by the clock, little CPU", func(t *testing.T) {
		t.Parallel()
		var got string
		if err := r.Run(context.Background(), Call{Job: "test-sleep", What: "running the test", In: 1500 * time.Millisecond, Out: &got}); err != nil {
			t.Fatalf("a child that used little CPU time was stopped: %v", err)
		}
		if got != "slept" {
			t.Fatalf("result %q", got)
		}
	})
	t.Run("CPU time used up", func(t *testing.T) {
		t.Parallel()
		err := r.Run(context.Background(), Call{Job: "test-loop", What: "running the test"})
		if failure.Reason(err, "") != v1alpha2.ReasonResourceLimit || !strings.Contains(err.Error(), "looping forever did not finish within 1s of CPU time") {
			t.Fatalf("error %v, want ResourceLimit: looping forever did not finish within 1s of CPU time", err)
		}
	})
}
