package localcluster

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// Options configure Up.
type Options struct {
	// StateDir holds everything the cluster owns: certificates, logs, the pid
	// file, etcd's data, the manager's content store and the kubeconfig.
	// Required.
	StateDir string
	// BinDir holds etcd, kube-apiserver, kube-controller-manager,
	// kube-scheduler, kwok and kwok-stages.yaml. Empty means DefaultBinDir().
	BinDir string
	// ManagerPath is the rukpak manager binary. Empty means
	// DefaultManagerPath().
	ManagerPath string
	// Minimal starts only etcd and kube-apiserver: no controllers, no
	// scheduler, no Node, so Pods never run.
	Minimal bool
	// NoManager skips starting the manager, for callers that run it
	// themselves.
	NoManager bool
	// ManagerArgs are extra flags for the manager, after ManagerFlags.
	ManagerArgs []string
	// Provisioners are binaries of other provisioners (built on package
	// pkg/manager) started next to the manager (see StartProvisioner).
	Provisioners []string
	// Out receives progress lines; nil discards them.
	Out io.Writer
}

// DefaultBinDir returns <dir of the running executable>/cluster, or, when
// that does not exist (for example under `go run`), bin/cluster of the
// enclosing Go module of the working directory.
func DefaultBinDir() string {
	return besideExecutable("cluster")
}

// DefaultManagerPath returns <dir of the running executable>/rukpak, or,
// when that does not exist, bin/rukpak of the enclosing Go module of the
// working directory.
func DefaultManagerPath() string {
	return besideExecutable("rukpak")
}

func besideExecutable(name string) string {
	exe, err := os.Executable()
	if err == nil {
		if resolved, err := filepath.EvalSymlinks(exe); err == nil {
			exe = resolved
		}
		candidate := filepath.Join(filepath.Dir(exe), name)
		if _, err := os.Stat(candidate); err == nil {
			return candidate
		}
	}
	if root := moduleRoot(); root != "" {
		candidate := filepath.Join(root, "bin", name)
		if _, err := os.Stat(candidate); err == nil {
			return candidate
		}
	}
	if err != nil {
		return filepath.Join("bin", name)
	}
	return filepath.Join(filepath.Dir(exe), name)
}

// moduleRoot returns the nearest ancestor of the working directory holding a
// go.mod, or "".
func moduleRoot() string {
	dir, err := os.Getwd()
	if err != nil {
		return ""
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return ""
		}
		dir = parent
	}
}

// complete fills in defaults and makes every path absolute.
func (o Options) complete() (Options, error) {
	if o.StateDir == "" {
		return o, fmt.Errorf("localcluster: Options.StateDir is required")
	}
	if o.BinDir == "" {
		o.BinDir = DefaultBinDir()
	}
	if o.ManagerPath == "" {
		o.ManagerPath = DefaultManagerPath()
	}
	if o.Out == nil {
		o.Out = io.Discard
	}
	var err error
	for _, p := range []*string{&o.StateDir, &o.BinDir, &o.ManagerPath} {
		if *p, err = filepath.Abs(*p); err != nil {
			return o, fmt.Errorf("resolving %q: %w", *p, err)
		}
	}
	for i, p := range o.Provisioners {
		if o.Provisioners[i], err = filepath.Abs(p); err != nil {
			return o, fmt.Errorf("resolving %q: %w", p, err)
		}
		if _, err := os.Stat(o.Provisioners[i]); err != nil {
			return o, fmt.Errorf("provisioner binary: %w", err)
		}
	}
	need := []string{"etcd", "kube-apiserver"}
	if !o.Minimal {
		need = append(need, "kube-controller-manager", "kube-scheduler", "kwok", stagesFile)
	}
	for _, name := range need {
		if _, err := os.Stat(filepath.Join(o.BinDir, name)); err != nil {
			return o, fmt.Errorf("control-plane binaries in %s are incomplete (run `make cluster-bins`): %w", o.BinDir, err)
		}
	}
	if !o.Minimal {
		if err := checkStages(filepath.Join(o.BinDir, stagesFile)); err != nil {
			return o, err
		}
	}
	if !o.NoManager {
		if _, err := os.Stat(o.ManagerPath); err != nil {
			return o, fmt.Errorf("manager binary (run `make build`): %w", err)
		}
	}
	return o, nil
}
