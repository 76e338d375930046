package localcluster

import (
	"bytes"
	"errors"
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
	if _, start, err := procStat(p.PID); err == nil {
		p.StartTime = start
	}
	return p, nil
}

// procStat returns the state letter and start time of pid from
// /proc/<pid>/stat.
func procStat(pid int) (string, uint64, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return "", 0, err
	}
	// The command name (field 2) is in parentheses and may hold spaces.
	i := bytes.LastIndexByte(data, ')')
	if i < 0 {
		return "", 0, fmt.Errorf("malformed /proc/%d/stat", pid)
	}
	fields := strings.Fields(string(data[i+1:]))
	if len(fields) < 20 {
		return "", 0, fmt.Errorf("malformed /proc/%d/stat", pid)
	}
	start, err := strconv.ParseUint(fields[19], 10, 64)
	if err != nil {
		return "", 0, fmt.Errorf("malformed start time in /proc/%d/stat: %w", pid, err)
	}
	return fields[0], start, nil
}

// alive reports whether the recorded process still runs: the PID exists,
// is not a zombie, started at the recorded time and runs the recorded
// binary.
func (p process) alive() bool {
	if p.PID <= 0 {
		return false
	}
	state, start, err := procStat(p.PID)
	if err != nil || state == "Z" || state == "X" {
		return false
	}
	if p.StartTime != 0 && start != p.StartTime {
		return false
	}
	cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", p.PID))
	if err != nil {
		return false
	}
	argv0, _, _ := bytes.Cut(cmdline, []byte{0})
	return string(argv0) == p.Path
}

// stopProcesses sends SIGTERM to every live process, waits up to grace for
// them to exit, then sends SIGKILL to the rest and waits again.
func stopProcesses(procs []process, grace time.Duration) error {
	signalAll := func(sig syscall.Signal) []process {
		var live []process
		for _, p := range procs {
			if !p.alive() {
				continue
			}
			if err := syscall.Kill(p.PID, sig); err != nil && !errors.Is(err, syscall.ESRCH) {
				continue
			}
			live = append(live, p)
		}
		return live
	}
	waitGone := func(live []process, timeout time.Duration) []process {
		deadline := time.Now().Add(timeout)
		for {
			var still []process
			for _, p := range live {
				if p.alive() {
					still = append(still, p)
				}
			}
			if len(still) == 0 || time.Now().After(deadline) {
				return still
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	live := waitGone(signalAll(syscall.SIGTERM), grace)
	if len(live) == 0 {
		return nil
	}
	procs = live
	live = waitGone(signalAll(syscall.SIGKILL), 5*time.Second)
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
