package localcluster

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// provisionerPrefix starts the process names of other provisioners.
const provisionerPrefix = "provisioner-"

// ProvisionerName is the process name a provisioner binary at path runs
// under: "provisioner-" and the binary's file name.
func ProvisionerName(path string) string {
	return provisionerPrefix + strings.TrimSuffix(filepath.Base(path), filepath.Ext(path))
}

// StartProvisioner starts the binary at path next to the manager: a
// provisioner built on package github.com/rukpak/rukpak/pkg/manager,
// which takes the manager's flags (ManagerFlags, with a content store of
// its own) and then args. It is recorded in the pid file (Down stops it)
// and waited for until its /readyz answers 200. It fails if a provisioner
// of that name already runs.
func (c *Cluster) StartProvisioner(ctx context.Context, path string, args ...string) error {
	return c.withState(path, func(path string, s *state) error {
		return startProvisioner(ctx, c.StateDir, s, path, args)
	})
}

// startProvisioner starts one provisioner and waits for it; the caller
// holds the state directory's lock.
func startProvisioner(ctx context.Context, stateDir string, s *state, path string, args []string) error {
	name := ProvisionerName(path)
	if p, ok := s.process(name); ok && p.alive() {
		return fmt.Errorf("provisioner %s already runs (pid %d)", name, p.PID)
	}
	if err := waitAPIServer(ctx, stateDir, s); err != nil {
		return fmt.Errorf("starting %s: %w", name, err)
	}
	ports, err := freePorts(2)
	if err != nil {
		return err
	}
	store := filepath.Join(stateDir, storageDir+"-"+name)
	logs := filepath.Join(stateDir, logsDir)
	for _, dir := range []string{store, logs} {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return fmt.Errorf("starting %s: %w", name, err)
		}
	}
	flags := append(ManagerFlags(stateDir, ports[0], ports[1]), "--storage-dir="+store)
	p, err := startProcess(name, path, append(flags, args...), stateDir, logs)
	if err != nil {
		return err
	}
	kept := s.Processes[:0:0]
	for _, q := range s.Processes {
		if q.Name != name {
			kept = append(kept, q)
		}
	}
	s.Processes = append(kept, p)
	if err := writeState(stateDir, s); err != nil {
		_ = stopProcesses([]process{p}, 5*time.Second)
		return err
	}
	if err := waitHTTP(ctx, plainClient(), p, "http://"+loopback(ports[0])+"/readyz", managerReadyTimeout); err != nil {
		_ = stopProcesses([]process{p}, 5*time.Second)
		s.Processes = kept
		_ = writeState(stateDir, s)
		return fmt.Errorf("starting provisioner %s: %w", path, err)
	}
	return nil
}
