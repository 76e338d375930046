package localcluster

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// ErrNotRunning is returned by Load when no cluster runs in a state
// directory.
var ErrNotRunning = errors.New("no local cluster is running")

// startAttempts is how often Up tries when a picked port was taken by
// another program before a component bound it.
const startAttempts = 3

// Cluster is a running local control plane.
type Cluster struct {
	// StateDir is the cluster's state directory (absolute).
	StateDir string
	// Kubeconfig is the path of the admin kubeconfig (absolute).
	Kubeconfig string
	// TokenKubeconfig is the path of the kubeconfig the manager uses: the
	// same user as Kubeconfig, authenticated by a bearer token instead of
	// a client certificate, which the API server verifies on every request.
	TokenKubeconfig string
	// Server is the API server URL, https://127.0.0.1:<port>.
	Server string
	// Minimal is true when only etcd and kube-apiserver run.
	Minimal bool
	// ManagerReadyURL is the manager's /readyz URL, or "" when the cluster
	// runs no manager.
	ManagerReadyURL string
}

// RESTConfig loads the admin kubeconfig.
func (c *Cluster) RESTConfig() (*rest.Config, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", c.Kubeconfig)
	if err != nil {
		return nil, fmt.Errorf("loading kubeconfig %s: %w", c.Kubeconfig, err)
	}
	return cfg, nil
}

// LogPath returns the log file of a component ("etcd", "kube-apiserver",
// "kube-controller-manager", "kube-scheduler", "kwok" or "rukpak").
func (c *Cluster) LogPath(component string) string {
	return filepath.Join(c.StateDir, logsDir, component+".log")
}

// KubeconfigPath returns where the admin kubeconfig of the cluster in
// stateDir is (absolute), whether or not the cluster runs.
func KubeconfigPath(stateDir string) (string, error) {
	dir, err := filepath.Abs(stateDir)
	if err != nil {
		return "", fmt.Errorf("resolving state directory: %w", err)
	}
	return filepath.Join(dir, kubeconfigName), nil
}

// Load returns the cluster running in stateDir, or an error wrapping
// ErrNotRunning when none runs (or only part of one does).
func Load(stateDir string) (*Cluster, error) {
	dir, err := filepath.Abs(stateDir)
	if err != nil {
		return nil, fmt.Errorf("resolving state directory: %w", err)
	}
	s, err := readState(dir)
	if err != nil {
		return nil, err
	}
	if s == nil || !s.allAlive() {
		return nil, fmt.Errorf("%w in %s", ErrNotRunning, dir)
	}
	return clusterFrom(dir, s), nil
}

func clusterFrom(dir string, s *state) *Cluster {
	return &Cluster{
		StateDir:        dir,
		Kubeconfig:      filepath.Join(dir, kubeconfigName),
		TokenKubeconfig: filepath.Join(dir, managerKubeconfigName),
		Server:          s.Server,
		Minimal:         s.Minimal,
		ManagerReadyURL: managerProbe(s),
	}
}

// Up starts a local cluster as described in the package documentation. If
// the processes recorded in Options.StateDir all run, it does nothing and
// returns that cluster; if only some do, it stops them and starts afresh.
// If start-up fails, everything Up started is stopped again.
func Up(ctx context.Context, opts Options) (*Cluster, error) {
	o, err := opts.complete()
	if err != nil {
		return nil, err
	}
	unlock, err := lockStateDir(o.StateDir)
	if err != nil {
		return nil, err
	}
	defer unlock()
	s, err := readState(o.StateDir)
	if err != nil {
		return nil, err
	}
	if s != nil && s.allAlive() {
		// Running is not answering: a cluster whose API server (or
		// manager) is still starting is not handed out as up.
		if err := waitRunning(ctx, o.StateDir, s); err != nil {
			return nil, err
		}
		if err := ensureForUsers(ctx, o.StateDir); err != nil {
			return nil, err
		}
		fmt.Fprintf(o.Out, "already up: %s\n", s.Server)
		for _, path := range o.Provisioners {
			if p, ok := s.process(ProvisionerName(path)); ok && p.alive() {
				continue
			}
			if err := startProvisioner(ctx, o.StateDir, s, path, nil); err != nil {
				return nil, err
			}
		}
		return clusterFrom(o.StateDir, s), nil
	}
	if s != nil {
		fmt.Fprintln(o.Out, "stopping what is left of an earlier cluster")
		if err := down(o.StateDir, s); err != nil {
			return nil, err
		}
	}
	began := time.Now()
	for attempt := 1; ; attempt++ {
		c, err := up(ctx, o, began)
		if err == nil {
			fmt.Fprintf(o.Out, "cluster up in %s\n", since(began))
			return c, nil
		}
		if !errors.Is(err, errPortInUse) || attempt == startAttempts {
			return nil, fmt.Errorf("starting local cluster in %s: %w", o.StateDir, err)
		}
		fmt.Fprintf(o.Out, "a port was taken by another program; retrying (%v)\n", err)
	}
}

// up makes one attempt at starting a cluster; on failure it stops what it
// started and removes the pid file.
func up(ctx context.Context, o Options, began time.Time) (_ *Cluster, err error) {
	for _, dir := range []string{etcdDir, storageDir, certsDir} {
		if err := os.RemoveAll(filepath.Join(o.StateDir, dir)); err != nil {
			return nil, fmt.Errorf("clearing %s: %w", dir, err)
		}
	}
	if err := os.MkdirAll(filepath.Join(o.StateDir, logsDir), 0o755); err != nil {
		return nil, fmt.Errorf("creating log directory: %w", err)
	}
	p, err := generatePKI(filepath.Join(o.StateDir, certsDir))
	if err != nil {
		return nil, err
	}
	picked, err := freePorts(6)
	if err != nil {
		return nil, err
	}
	pt := ports{EtcdClient: picked[0], EtcdPeer: picked[1], APIServer: picked[2]}
	if !o.Minimal {
		pt.Controllers, pt.Scheduler, pt.Kwok = picked[3], picked[4], picked[5]
	}
	l := layout{stateDir: o.StateDir, binDir: o.BinDir, pki: p}
	s := &state{Server: "https://" + loopback(pt.APIServer), Minimal: o.Minimal, Ports: pt}
	if err := writeKubeconfig(l.kubeconfig(), s.Server, p); err != nil {
		return nil, err
	}
	if err := writeManagerKubeconfig(filepath.Join(o.StateDir, managerKubeconfigName), s.Server, p); err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			if stopErr := down(o.StateDir, s); stopErr != nil {
				err = fmt.Errorf("%w (and stopping it again: %w)", err, stopErr)
			}
		}
	}()
	// etcd and the API server first: the controller manager gives the API
	// server 10 s to become healthy and exits when it has not, which on a
	// loaded machine (its RBAC bootstrap hook taking longer) it may not.
	all := components(l, pt, o.Minimal)
	start := func(comps []component) error {
		for _, comp := range comps {
			proc, err := startProcess(comp.name, l.bin(comp.name), comp.args, o.StateDir, l.logs())
			if err != nil {
				return err
			}
			s.Processes = append(s.Processes, proc)
			if err := writeState(o.StateDir, s); err != nil {
				return err
			}
		}
		return nil
	}
	if err := start(all[:2]); err != nil {
		return nil, err
	}
	if err := waitStore(ctx, o, s, began); err != nil {
		return nil, err
	}
	if err := start(all[2:]); err != nil {
		return nil, err
	}
	if err := waitControlPlane(ctx, o, l, s, began); err != nil {
		return nil, err
	}
	if !o.NoManager {
		if err := startManager(ctx, o.StateDir, s, o.ManagerPath, o.ManagerArgs); err != nil {
			return nil, err
		}
		fmt.Fprintf(o.Out, "manager ready (%s)\n", since(began))
	}
	for _, path := range o.Provisioners {
		if err := startProvisioner(ctx, o.StateDir, s, path, nil); err != nil {
			return nil, err
		}
		fmt.Fprintf(o.Out, "%s ready (%s)\n", ProvisionerName(path), since(began))
	}
	return clusterFrom(o.StateDir, s), nil
}

// waitStore waits for etcd and the API server.
func waitStore(ctx context.Context, o Options, s *state, began time.Time) error {
	etcd, _ := s.process("etcd")
	if err := waitHTTP(ctx, plainClient(), etcd, fmt.Sprintf("http://%s/health", loopback(s.Ports.EtcdClient)), 30*time.Second); err != nil {
		return err
	}
	fmt.Fprintf(o.Out, "etcd ready (%s)\n", since(began))
	if err := waitAPIServer(ctx, o.StateDir, s); err != nil {
		return err
	}
	fmt.Fprintf(o.Out, "kube-apiserver ready (%s)\n", since(began))
	return nil
}

// waitControlPlane bootstraps the cluster once the API server is ready
// and waits for the remaining components.
func waitControlPlane(ctx context.Context, o Options, l layout, s *state, began time.Time) error {
	cfg, err := clientcmd.BuildConfigFromFlags("", l.kubeconfig())
	if err != nil {
		return fmt.Errorf("loading kubeconfig: %w", err)
	}
	if err := bootstrap(ctx, cfg, o.Minimal); err != nil {
		if kwok, ok := s.process("kwok"); ok {
			err = fmt.Errorf("%w; last lines of %s:\n%s", err, kwok.Log, logTail(kwok.Log, 15))
		}
		return err
	}
	if o.Minimal {
		fmt.Fprintf(o.Out, "CRDs established, namespace created (%s)\n", since(began))
		return nil
	}
	for _, c := range []struct {
		name string
		port int
	}{{"kube-controller-manager", s.Ports.Controllers}, {"kube-scheduler", s.Ports.Scheduler}} {
		proc, _ := s.process(c.name)
		if err := waitHTTP(ctx, plainClient(), proc, fmt.Sprintf("https://%s/healthz", loopback(c.port)), 30*time.Second); err != nil {
			return err
		}
	}
	fmt.Fprintf(o.Out, "CRDs established, node %s ready, controllers and scheduler healthy (%s)\n", NodeName, since(began))
	return nil
}

// Down stops the cluster recorded in stateDir and removes its pid file. It
// is safe to call when nothing runs, and twice. Logs, certificates and the
// kubeconfig stay for inspection.
func Down(stateDir string) error {
	dir, err := filepath.Abs(stateDir)
	if err != nil {
		return fmt.Errorf("resolving state directory: %w", err)
	}
	if _, err := os.Stat(dir); errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	unlock, err := lockStateDir(dir)
	if err != nil {
		return err
	}
	defer unlock()
	s, err := readState(dir)
	if err != nil || s == nil {
		return err
	}
	return down(dir, s)
}

// down stops the processes of s, newest first, and removes the pid file.
// The caller holds the lock.
func down(dir string, s *state) error {
	// etcd goes last: kube-apiserver's graceful shutdown stalls for its
	// whole grace period while its storage is unreachable.
	var clients, storage []process
	for _, p := range slices.Backward(s.Processes) {
		if p.Name == "etcd" {
			storage = append(storage, p)
		} else {
			clients = append(clients, p)
		}
	}
	for _, tier := range [][]process{clients, storage} {
		if err := stopProcesses(tier, 10*time.Second); err != nil {
			return fmt.Errorf("stopping local cluster in %s: %w", dir, err)
		}
	}
	if err := os.Remove(filepath.Join(dir, pidFileName)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("removing pid file: %w", err)
	}
	return nil
}

func since(t time.Time) time.Duration { return time.Since(t).Round(10 * time.Millisecond) }

// PID returns the process ID of a running component of the cluster
// ("etcd", "kube-apiserver", "rukpak", …), read from the pid file.
func (c *Cluster) PID(component string) (int, error) {
	s, err := readState(c.StateDir)
	if err != nil {
		return 0, err
	}
	if s == nil {
		return 0, fmt.Errorf("%w in %s", ErrNotRunning, c.StateDir)
	}
	p, ok := s.process(component)
	if !ok || !p.alive() {
		return 0, fmt.Errorf("component %s does not run in %s", component, c.StateDir)
	}
	return p.PID, nil
}
