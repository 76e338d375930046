package localcluster

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// process is one recorded component. PID alone is not an identity: the
// kernel reuses PIDs, so the binary path (argv[0]) and the kernel's start
// time must match too before the process is signalled.
type process struct {
	Name string `json:"name"`
	PID  int    `json:"pid"`
	// Path is the absolute binary path, argv[0] of the process.
	Path string `json:"path"`
	// StartTime is field 22 of /proc/<pid>/stat (clock ticks after boot).
	StartTime uint64 `json:"startTime"`
	// Log is the file stdout and stderr go to.
	Log string `json:"log"`
}

// startProcess starts path in its own session (so it outlives the caller
// and a terminal's ^C), with stdout and stderr appended to logDir/name.log.
func startProcess(name, path string, args []string, dir, logDir string) (process, error) {
	logPath := filepath.Join(logDir, name+".log")
	logFile, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o644)
	if err != nil {
		return process{}, fmt.Errorf("opening log of %s: %w", name, err)
	}
	defer logFile.Close()
	fmt.Fprintf(logFile, "# %s %s\n", path, strings.Join(args, " "))
	cmd := exec.Command(path, args...)
	cmd.Dir = dir
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return process{}, fmt.Errorf("starting %s: %w", name, err)
	}
	// Reap the child if it exits while this program still runs; otherwise
	// it would linger as a zombie. The goroutine ends with the process.
	go func() { _ = cmd.Wait() }()
	p := process{Name: name, PID: cmd.Process.Pid, Path: path, Log: logPath}
	if info, err := procStat(p.PID); err == nil {
		p.StartTime = info.start
	}
	return p, nil
}

// procInfo is what /proc/<pid>/stat says about a process.
type procInfo struct {
	// state is the state letter: R, S, D, Z (zombie), X (dead), ...
	state string
	// ppid is the parent's PID.
	ppid int
	// start is the start time in clock ticks after boot.
	start uint64
}

// procStat reads /proc/<pid>/stat.
func procStat(pid int) (procInfo, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return procInfo{}, err
	}
	// The command name (field 2) is in parentheses and may hold spaces.
	i := bytes.LastIndexByte(data, ')')
	if i < 0 {
		return procInfo{}, fmt.Errorf("malformed /proc/%d/stat", pid)
	}
	fields := strings.Fields(string(data[i+1:]))
	if len(fields) < 20 {
		return procInfo{}, fmt.Errorf("malformed /proc/%d/stat", pid)
	}
	ppid, err := strconv.Atoi(fields[1])
	if err != nil {
		return procInfo{}, fmt.Errorf("malformed parent in /proc/%d/stat: %w", pid, err)
	}
	start, err := strconv.ParseUint(fields[19], 10, 64)
	if err != nil {
		return procInfo{}, fmt.Errorf("malformed start time in /proc/%d/stat: %w", pid, err)
	}
	return procInfo{state: fields[0], ppid: ppid, start: start}, nil
}

// alive reports whether the recorded process still runs: the PID exists,
// is not a zombie, started at the recorded time and runs the recorded
// binary.
func (p process) alive() bool {
	if p.PID <= 0 {
		return false
	}
	info, err := procStat(p.PID)
	if err != nil || info.state == "Z" || info.state == "X" {
		return false
	}
	if p.StartTime != 0 {
		// The start time tells the process from a later one with the
		// same PID. Its command line is no proof: right after the fork
		// and before the exec it is still the parent's.
		return info.start == p.StartTime
	}
	cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", p.PID))
	if err != nil {
		return false
	}
	argv0, _, _ := bytes.Cut(cmdline, []byte{0})
	return string(argv0) == p.Path
}

// gone reports whether the process has exited: its PID is free, taken by
// a process started at another time, or a zombie (which holds no memory,
// files or ports any more). Unlike alive, it does not look at the command
// line, which the kernel empties while a process is still exiting.
func (p process) gone() bool {
	if p.PID <= 0 {
		return true
	}
	info, err := procStat(p.PID)
	if err != nil {
		return true
	}
	return info.state == "Z" || info.state == "X" || (p.StartTime != 0 && info.start != p.StartTime)
}

// descendants returns the live processes below pid (children, their
// children, ...), each named after name, read from /proc at this instant.
func descendants(pid int, name string) []process {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	children := map[int][]process{}
	for _, e := range entries {
		child, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		info, err := procStat(child)
		if err != nil || info.state == "Z" || info.state == "X" {
			continue
		}
		children[info.ppid] = append(children[info.ppid], process{Name: name + " child", PID: child, StartTime: info.start})
	}
	var out []process
	queue := []int{pid}
	for len(queue) > 0 {
		for _, c := range children[queue[0]] {
			out = append(out, c)
			queue = append(queue, c.PID)
		}
		queue = queue[1:]
	}
	return out
}

// stopProcesses stops every live process of procs together with the
// processes it started: SIGTERM to each one's process group (every
// component leads its own session) and to its descendants, a wait of up to
// grace, then SIGKILL to whatever is left and another wait. It returns
// only when every one of them is gone, or an error naming those that are
// not.
func stopProcesses(procs []process, grace time.Duration) error {
	var targets []process
	for _, p := range procs {
		if !p.alive() {
			continue
		}
		// Descendants are listed before the signal: once a parent exits,
		// its orphans are re-parented and could no longer be found.
		targets = append(targets, p)
		targets = append(targets, descendants(p.PID, p.Name)...)
	}
	signal := func(sig syscall.Signal, live []process) {
		for _, p := range live {
			if p.gone() {
				continue
			}
			if p.Path != "" {
				// A component: its whole group, which holds the children
				// that did not move to a group of their own.
				_ = syscall.Kill(-p.PID, sig)
			}
			_ = syscall.Kill(p.PID, sig)
		}
	}
	waitGone := func(live []process, timeout time.Duration) []process {
		deadline := time.Now().Add(timeout)
		for {
			var still []process
			for _, p := range live {
				if !p.gone() {
					still = append(still, p)
				}
			}
			if len(still) == 0 || time.Now().After(deadline) {
				return still
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	signal(syscall.SIGTERM, targets)
	live := waitGone(targets, grace)
	if len(live) == 0 {
		return nil
	}
	signal(syscall.SIGKILL, live)
	live = waitGone(live, 5*time.Second)
	if len(live) > 0 {
		names := make([]string, 0, len(live))
		for _, p := range live {
			names = append(names, fmt.Sprintf("%s (pid %d)", p.Name, p.PID))
		}
		return fmt.Errorf("still running after SIGKILL: %s", strings.Join(names, ", "))
	}
	return nil
}

// logTail returns the last n lines of a log file, for error messages.
func logTail(path string, n int) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return fmt.Sprintf("(no log: %v)", err)
	}
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
