package main

import (
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/rukpak/rukpak/internal/localcluster"
)

// clockTicks is USER_HZ, the unit of utime and stime in /proc/PID/stat; it
// is 100 on every Linux architecture Go supports.
const clockTicks = 100

// cpuSet is the cluster processes whose CPU time the bench reports.
type cpuSet struct {
	names []string
	pids  []int
}

// cpuSample is CPU seconds per process, and of this process (the client).
type cpuSample []float64

func cpuProcesses(cl *localcluster.Cluster) (*cpuSet, error) {
	s := &cpuSet{}
	for _, name := range []string{"rukpak", "kube-apiserver", "etcd"} {
		pid, err := cl.PID(name)
		if err != nil {
			return nil, err
		}
		s.names = append(s.names, name)
		s.pids = append(s.pids, pid)
	}
	s.names = append(s.names, "bench client")
	s.pids = append(s.pids, os.Getpid())
	return s, nil
}

func (s *cpuSet) sample() cpuSample {
	out := make(cpuSample, len(s.pids))
	for i, pid := range s.pids {
		out[i] = cpuSeconds(pid)
	}
	return out
}

// used is the CPU seconds each process used since start.
func (s *cpuSet) used(start cpuSample) cpuSample {
	now := s.sample()
	for i := range now {
		now[i] -= start[i]
	}
	return now
}

// format formats CPU seconds of each process.
func (s *cpuSet) format(used cpuSample) string {
	parts := make([]string, len(s.names))
	for i, name := range s.names {
		parts[i] = fmt.Sprintf("%s %.1f", name, used[i])
	}
	return strings.Join(parts, ", ")
}

// cpuSeconds is the user+system CPU time of pid, or 0 if unreadable.
func cpuSeconds(pid int) float64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	// The command name (field 2) may contain spaces; fields after it are
	// counted from its closing parenthesis.
	rest := string(b)
	if i := strings.LastIndexByte(rest, ')'); i >= 0 {
		rest = rest[i+1:]
	}
	f := strings.Fields(rest)
	if len(f) < 13 {
		return 0
	}
	utime, _ := strconv.ParseFloat(f[11], 64)
	stime, _ := strconv.ParseFloat(f[12], 64)
	return (utime + stime) / clockTicks
}
