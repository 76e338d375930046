package main

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"

	"github.com/rukpak/rukpak/internal/localcluster"
)

// shardManager is one manager process started with --shard beside the
// local cluster's unsharded manager.
type shardManager struct {
	name        string // the shard, shard-<i>
	cmd         *exec.Cmd
	done        chan struct{}
	metricsAddr string // plain HTTP /metrics on loopback
	log         string
}

// startShardManager starts the manager of shard name as the local cluster
// starts its own (its kubeconfig, the manager identity), with a content
// store, health probe, content server and metrics endpoint of its own and
// no CRD webhook (the unsharded manager serves it), and waits until its
// /readyz answers. It is killed if the bench dies (Pdeathsig).
func startShardManager(ctx context.Context, c config, name string, args []string) (*shardManager, error) {
	addrs := make([]string, 3) // probe, content, metrics
	for i := range addrs {
		a, err := freeAddr()
		if err != nil {
			return nil, fmt.Errorf("picking ports of shard %s: %w", name, err)
		}
		addrs[i] = a
	}
	var probePort, contentPort int
	if _, err := fmt.Sscanf(addrs[0], "127.0.0.1:%d", &probePort); err != nil {
		return nil, fmt.Errorf("parsing %s: %w", addrs[0], err)
	}
	if _, err := fmt.Sscanf(addrs[1], "127.0.0.1:%d", &contentPort); err != nil {
		return nil, fmt.Errorf("parsing %s: %w", addrs[1], err)
	}
	// The later flags override ManagerFlags' store and metrics endpoint.
	flags := append(localcluster.ManagerFlags(c.stateDir, probePort, contentPort),
		"--storage-dir="+filepath.Join(c.stateDir, name+"-store"),
		"--metrics-bind-address="+addrs[2], "--metrics-insecure", "--shard="+name)
	flags = append(flags, args...)
	logPath := filepath.Join(c.stateDir, "logs", name+".log")
	logs, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("opening the log of shard %s: %w", name, err)
	}
	cmd := exec.Command(c.managerPath, flags...)
	cmd.Stdout, cmd.Stderr = logs, logs
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		logs.Close()
		return nil, fmt.Errorf("starting the manager of shard %s: %w", name, err)
	}
	m := &shardManager{name: name, cmd: cmd, done: make(chan struct{}), metricsAddr: addrs[2], log: logPath}
	go func() { _ = cmd.Wait(); _ = logs.Close(); close(m.done) }()
	if err := m.waitReady(ctx, "http://"+addrs[0]+"/readyz", time.Minute); err != nil {
		m.stop()
		return nil, err
	}
	return m, nil
}

// waitReady polls url every 100 ms until it answers 200, the process
// exits or timeout passes.
func (m *shardManager) waitReady(ctx context.Context, url string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		select {
		case <-m.done:
			return fmt.Errorf("the manager of shard %s exited before it was ready (%v; see %s)", m.name, m.cmd.ProcessState, m.log)
		default:
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return err
		}
		if resp, err := http.DefaultClient.Do(req); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the manager of shard %s not ready after %s (see %s)", m.name, timeout, m.log)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// pid is the process id of the shard's manager.
func (m *shardManager) pid() int { return m.cmd.Process.Pid }

// stop sends SIGTERM and waits up to 30 s for the process to end, then
// kills it.
func (m *shardManager) stop() {
	_ = m.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-m.done:
	case <-time.After(30 * time.Second):
		_ = m.cmd.Process.Kill()
		<-m.done
	}
}
