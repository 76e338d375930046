package localcluster

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
)

// Names of files and directories in a state directory.
const (
	pidFileName = "pids.json"
	lockName    = "lock"
	logsDir     = "logs"
	certsDir    = "certs"
	etcdDir     = "etcd"
	storageDir  = "storage"
)

// state is the content of <StateDir>/pids.json: what runs and how to reach
// it.
type state struct {
	// Server is the API server URL.
	Server string `json:"server"`
	// Minimal is true when only etcd and kube-apiserver were started.
	Minimal bool `json:"minimal"`
	// Ports are the loopback ports in use.
	Ports ports `json:"ports"`
	// Processes are in start order.
	Processes []process `json:"processes"`
}

func (s *state) allAlive() bool {
	if len(s.Processes) == 0 {
		return false
	}
	for _, p := range s.Processes {
		if !p.alive() {
			return false
		}
	}
	return true
}

func (s *state) process(name string) (process, bool) {
	for _, p := range s.Processes {
		if p.Name == name {
			return p, true
		}
	}
	return process{}, false
}

// readState reads the pid file; it returns (nil, nil) when there is none.
func readState(stateDir string) (*state, error) {
	data, err := os.ReadFile(filepath.Join(stateDir, pidFileName))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading pid file: %w", err)
	}
	s := &state{}
	if err := json.Unmarshal(data, s); err != nil {
		return nil, fmt.Errorf("decoding %s: %w", filepath.Join(stateDir, pidFileName), err)
	}
	return s, nil
}

// writeState replaces the pid file atomically.
func writeState(stateDir string, s *state) error {
	data, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return fmt.Errorf("encoding pid file: %w", err)
	}
	path := filepath.Join(stateDir, pidFileName)
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, append(data, '\n'), 0o644); err != nil {
		return fmt.Errorf("writing pid file: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("writing pid file: %w", err)
	}
	return nil
}

// lockStateDir takes an exclusive lock on the state directory (creating
// it), so that Up, Down and StartManager on one directory never interleave.
// The returned function releases the lock.
func lockStateDir(stateDir string) (func(), error) {
	if err := os.MkdirAll(stateDir, 0o755); err != nil {
		return nil, fmt.Errorf("creating state directory: %w", err)
	}
	f, err := os.OpenFile(filepath.Join(stateDir, lockName), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, fmt.Errorf("opening lock file: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("locking state directory %s: %w", stateDir, err)
	}
	return func() {
		_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		_ = f.Close()
	}, nil
}
