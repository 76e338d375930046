package sandbox

import (
	"bytes"
	"os"
	"strconv"
	"time"
)

// A child's time limit counts the CPU time it uses, not the time that
// passes: the child runs at a lower priority than the manager, so on a busy
// machine the same content takes longer by the clock, and a limit by the
// clock would fail content for the machine's load (a chart whose render
// runs into its memory limit after 3 s of CPU time would be reported as too
// slow instead). The clock still bounds a child, at wallFactor times the
// limit, so that one that waits instead of computing (or one the system
// cannot meter) ends too.
const (
	// wallFactor is how many times Limits.Timeout a child may take by the
	// clock when its CPU time is metered.
	wallFactor = 10
	// cpuPollInterval is how often the parent reads a child's CPU time.
	cpuPollInterval = 20 * time.Millisecond
	// clockTick is the unit of the times in /proc/PID/stat (USER_HZ,
	// which Linux fixes at 100 for user space on every architecture Go
	// supports).
	clockTick = 10 * time.Millisecond
)

// cpuMetered reports whether this system lets the parent read a child's
// CPU time (Linux's /proc); it is read once.
var cpuMetered = func() bool {
	_, ok := cpuTime(os.Getpid())
	return ok
}()

// wallTimeout is how long a child with a CPU-time limit of cpu may take by
// the clock: wallFactor times it where CPU time is metered, else cpu.
func wallTimeout(cpu time.Duration) time.Duration {
	if !cpuMetered {
		return cpu
	}
	return cpu * wallFactor
}

// cpuTime returns the CPU time, user and system, that process pid and all
// its threads have used, from /proc/PID/stat; ok is false when it cannot
// be read (the process is gone, or the system has no /proc).
func cpuTime(pid int) (used time.Duration, ok bool) {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, false
	}
	return parseStatCPU(data)
}

// parseStatCPU reads utime and stime (fields 14 and 15) of a
// /proc/PID/stat line. The command name (field 2) is in parentheses and
// may hold spaces and parentheses itself, so the fields are counted from
// the last ')'.
func parseStatCPU(stat []byte) (time.Duration, bool) {
	end := bytes.LastIndexByte(stat, ')')
	if end < 0 {
		return 0, false
	}
	// After ") " come field 3 (state) onwards: utime is the 12th of them.
	fields := bytes.Fields(stat[end+1:])
	if len(fields) < 13 {
		return 0, false
	}
	utime, err1 := strconv.ParseInt(string(fields[11]), 10, 64)
	stime, err2 := strconv.ParseInt(string(fields[12]), 10, 64)
	if err1 != nil || err2 != nil || utime < 0 || stime < 0 {
		return 0, false
	}
	return time.Duration(utime+stime) * clockTick, true
}
