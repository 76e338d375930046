package localcluster

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"time"
)

const (
	managerName = "rukpak"
	// managerReadyTimeout bounds the wait for the manager's /readyz.
	managerReadyTimeout = 60 * time.Second
)

// ManagerFlags returns the flags the manager is started with (before any
// extra ones): the manager's kubeconfig (the admin user, with a bearer
// token), a content store inside the state
// directory, the health probe on 127.0.0.1:probePort, the content server on
// 127.0.0.1:contentPort, no metrics endpoint, and BundleDeployments without
// a serviceAccount installed as the manager.
func ManagerFlags(stateDir string, probePort, contentPort int) []string {
	return []string{
		"--kubeconfig=" + filepath.Join(stateDir, managerKubeconfigName),
		"--storage-dir=" + filepath.Join(stateDir, storageDir),
		"--health-probe-bind-address=" + loopback(probePort),
		"--content-bind-address=" + loopback(contentPort),
		"--content-url=http://" + loopback(contentPort),
		"--metrics-bind-address=0",
		// The development cluster runs in the cluster-admin mode, so that
		// BundleDeployments without spec.serviceAccount (the examples)
		// install; those that name one are bounded by its RBAC.
		"--default-identity=manager",
	}
}

// StartManager starts the binary at path as the cluster's manager, with
// ManagerFlags and then args, records it in the pid file (so Down stops it)
// and waits until its /readyz answers 200. It fails if a manager already
// runs.
func (c *Cluster) StartManager(ctx context.Context, path string, args ...string) error {
	return c.withState(path, func(path string, s *state) error {
		if p, ok := s.process(managerName); ok && p.alive() {
			return fmt.Errorf("a manager already runs (pid %d)", p.PID)
		}
		return startManager(ctx, c.StateDir, s, path, args)
	})
}

// withState resolves path and runs fn with the recorded cluster, holding
// the state directory's lock.
func (c *Cluster) withState(path string, fn func(path string, s *state) error) error {
	path, err := filepath.Abs(path)
	if err != nil {
		return fmt.Errorf("resolving %q: %w", path, err)
	}
	unlock, err := lockStateDir(c.StateDir)
	if err != nil {
		return err
	}
	defer unlock()
	s, err := readState(c.StateDir)
	if err != nil {
		return err
	}
	if s == nil {
		return fmt.Errorf("no cluster recorded in %s", c.StateDir)
	}
	return fn(path, s)
}

// startManager starts the manager, records it in s and the pid file, and
// waits for it to be ready; on failure it stops the manager and drops it
// from the record again. The caller holds the state directory's lock.
func startManager(ctx context.Context, stateDir string, s *state, path string, args []string) error {
	// The manager gives up when it cannot reach the API server at start;
	// never start it before the API server answers.
	if err := waitAPIServer(ctx, stateDir, s); err != nil {
		return fmt.Errorf("starting manager: %w", err)
	}
	picked, err := managerPorts(s)
	if err != nil {
		return err
	}
	port := picked[0]
	if err := os.MkdirAll(filepath.Join(stateDir, storageDir), 0o755); err != nil {
		return fmt.Errorf("creating content store: %w", err)
	}
	logs := filepath.Join(stateDir, logsDir)
	if err := os.MkdirAll(logs, 0o755); err != nil {
		return fmt.Errorf("creating log directory: %w", err)
	}
	hook, err := freePorts(1)
	if err != nil {
		return err
	}
	// The manager serves the CRD webhook on loopback, where the API server
	// calls it: CRD upgrade safety for direct edits, and the conversion of
	// rukpak's v1alpha1 API.
	flags := append(ManagerFlags(stateDir, port, picked[1]), "--crd-webhook-bind-address="+loopback(hook[0]))
	flags = append(flags, args...)
	p, err := startProcess(managerName, path, flags, stateDir, logs)
	if err != nil {
		return err
	}
	kept := s.Processes[:0:0]
	for _, q := range s.Processes {
		if q.Name != managerName {
			kept = append(kept, q)
		}
	}
	s.Processes = append(kept, p)
	s.Ports.Manager, s.Ports.Content = port, picked[1]
	if err := writeState(stateDir, s); err != nil {
		_ = stopProcesses([]process{p}, 5*time.Second)
		return err
	}
	url := "http://" + loopback(port) + "/readyz"
	if err := waitHTTP(ctx, plainClient(), p, url, managerReadyTimeout); err != nil {
		_ = stopProcesses([]process{p}, 5*time.Second)
		s.Processes, s.Ports.Manager, s.Ports.Content = kept, 0, 0
		_ = writeState(stateDir, s)
		return fmt.Errorf("starting manager %s: %w", path, err)
	}
	return nil
}

// waitRunning waits until the API server of the running cluster s answers
// and, when s records a manager, the manager's /readyz too.
func waitRunning(ctx context.Context, stateDir string, s *state) error {
	if err := waitAPIServer(ctx, stateDir, s); err != nil {
		return err
	}
	p, ok := s.process(managerName)
	if !ok || s.Ports.Manager == 0 {
		return nil
	}
	return waitHTTP(ctx, plainClient(), p, managerProbe(s), managerReadyTimeout)
}

// managerProbe returns the manager's /readyz URL, or "" when s records no
// manager.
func managerProbe(s *state) string {
	if _, ok := s.process(managerName); !ok || s.Ports.Manager == 0 {
		return ""
	}
	return "http://" + loopback(s.Ports.Manager) + "/readyz"
}

// managerPorts returns the manager's health probe and content server
// ports: those it had before when they are still free (so that a manager
// started again serves the content URLs Bundles already name), else new
// ones.
func managerPorts(s *state) ([]int, error) {
	if s.Ports.Manager != 0 && s.Ports.Content != 0 && portFree(s.Ports.Manager) && portFree(s.Ports.Content) {
		return []int{s.Ports.Manager, s.Ports.Content}, nil
	}
	return freePorts(2)
}

// portFree reports whether 127.0.0.1 can listen on port now.
func portFree(port int) bool {
	l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	if err != nil {
		return false
	}
	_ = l.Close()
	return true
}
