package memlimit

import (
	"fmt"
	"os"
	"runtime/debug"
	"strconv"
	"strings"
)

// Default is the soft limit when neither a flag, GOMEMLIMIT nor a cgroup
// limit says otherwise (256 MiB: enough for about 4,000
// BundleDeployments of ten objects, low enough that a burst does not grow
// the process without bound; more need a higher limit, docs/ha.md).
const Default int64 = 256 << 20

// cgroupShare is the most of a cgroup memory limit used as the soft
// limit; the rest is for memory the Go runtime does not count (the
// binary's pages, rendering child processes, which share the cgroup) and
// for headroom.
const cgroupShare = 0.85

// cgroupFile is the cgroup v2 memory limit of the process's cgroup.
var cgroupFile = "/sys/fs/cgroup/memory.max"

// Choose returns the soft limit to use and where it came from: flag when
// positive, else nothing to change when GOMEMLIMIT is set (the runtime
// read it at start; limit is then the runtime's current value), else
// Default, or cgroupShare of the cgroup's memory.max when that is less.
func Choose(flag int64) (limit int64, from string) {
	switch {
	case flag > 0:
		return flag, "flag"
	case os.Getenv("GOMEMLIMIT") != "":
		return debug.SetMemoryLimit(-1), "GOMEMLIMIT"
	}
	if max, ok := cgroupLimit(); ok {
		if share := int64(float64(max) * cgroupShare); share < Default {
			return share, "cgroup"
		}
	}
	return Default, "default"
}

// Set applies the soft limit Choose picks and returns it with its origin,
// for the log.
func Set(flag int64) (int64, string) {
	limit, from := Choose(flag)
	debug.SetMemoryLimit(limit)
	return limit, from
}

// cgroupLimit reads the cgroup v2 memory limit; "max" or no file means
// none.
func cgroupLimit() (int64, bool) {
	data, err := os.ReadFile(cgroupFile)
	if err != nil {
		return 0, false
	}
	v := strings.TrimSpace(string(data))
	if v == "max" || v == "" {
		return 0, false
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n <= 0 {
		return 0, false
	}
	return n, true
}

// String formats a limit in MiB for logs.
func String(limit int64) string { return fmt.Sprintf("%d MiB", limit>>20) }

// DefaultGCPercent is the garbage collector's target when neither a flag
// nor GOGC says otherwise: the heap may grow by half its live size between
// collections (the runtime's own default is 100, twice the live heap). The
// manager's live heap is mostly caches that stay, so a collection finds
// little garbage and a lower target costs little CPU for a smaller process.
const DefaultGCPercent = 50

// SetGCPercent sets the garbage collector's target percentage: flag when
// not negative, else nothing to change when GOGC is set, else
// DefaultGCPercent. It returns the percentage in effect and its origin,
// for the log.
func SetGCPercent(flag int) (int, string) {
	switch {
	case flag >= 0:
		debug.SetGCPercent(flag)
		return flag, "flag"
	case os.Getenv("GOGC") != "":
		// The runtime read it at start; reading the value back sets it.
		p := debug.SetGCPercent(100)
		debug.SetGCPercent(p)
		return p, "GOGC"
	}
	debug.SetGCPercent(DefaultGCPercent)
	return DefaultGCPercent, "default"
}
