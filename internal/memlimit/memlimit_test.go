package memlimit

import (
	"os"
	"path/filepath"
	"runtime/debug"
	"testing"
)

func TestChoose(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		name     string
		flag     int64
		cgroup   string // content of memory.max; "" means no file
		wantFrom string
		want     int64
	}{
		{name: "flag wins", flag: 100 << 20, cgroup: "1073741824", wantFrom: "flag", want: 100 << 20},
		{name: "share of a small cgroup limit", cgroup: "268435456\n", wantFrom: "cgroup", want: shareOf256Mi},
		{name: "large cgroup limit: the default", cgroup: "1073741824\n", wantFrom: "default", want: Default},
		{name: "cgroup without a limit", cgroup: "max\n", wantFrom: "default", want: Default},
		{name: "no cgroup file", wantFrom: "default", want: Default},
		{name: "garbage in the cgroup file", cgroup: "lots", wantFrom: "default", want: Default},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv("GOMEMLIMIT", "")
			cgroupFile = filepath.Join(dir, "missing")
			if tt.cgroup != "" {
				cgroupFile = filepath.Join(dir, "memory.max."+string(rune('a'+i)))
				if err := os.WriteFile(cgroupFile, []byte(tt.cgroup), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			got, from := Choose(tt.flag)
			if got != tt.want || from != tt.wantFrom {
				t.Fatalf("Choose(%d) = %d from %s, want %d from %s", tt.flag, got, from, tt.want, tt.wantFrom)
			}
		})
	}
}

// shareOf256Mi is cgroupShare of 256 MiB, as Choose computes it.
var shareOf256Mi = func() int64 {
	n := int64(256) << 20
	return int64(float64(n) * cgroupShare)
}()

func TestSetGCPercent(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	tests := []struct {
		name     string
		flag     int
		gogc     string
		before   int // the runtime's percentage before the call (as GOGC set it)
		want     int
		wantFrom string
	}{
		{name: "flag wins", flag: 80, gogc: "200", before: 200, want: 80, wantFrom: "flag"},
		{name: "flag 0 is kept", flag: 0, want: 0, wantFrom: "flag"},
		{name: "GOGC is left as the runtime read it", flag: -1, gogc: "150", before: 150, want: 150, wantFrom: "GOGC"},
		{name: "default", flag: -1, before: 100, want: DefaultGCPercent, wantFrom: "default"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv("GOGC", tt.gogc)
			debug.SetGCPercent(tt.before)
			got, from := SetGCPercent(tt.flag)
			if got != tt.want || from != tt.wantFrom {
				t.Fatalf("SetGCPercent(%d) = %d from %s, want %d from %s", tt.flag, got, from, tt.want, tt.wantFrom)
			}
			if now := debug.SetGCPercent(100); now != tt.want {
				t.Fatalf("the runtime's percentage is %d, want %d", now, tt.want)
			}
		})
	}
}
