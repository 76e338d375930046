//go:build integration

package bundle_test

import (
	"context"
	"fmt"
	"os"
	"testing"

	"github.com/rukpak/rukpak/internal/manager"
	"github.com/rukpak/rukpak/pkg/envtest"
)

var env *envtest.Env

// TestMain starts a real API server (with the admission policies of
// config/policy) and runs the whole manager in-process against it.
func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	e, err := envtest.Start()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	env = e
	defer func() { _ = env.Stop() }()
	dir, err := os.MkdirTemp("", "rukpak-store-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer func() { _ = os.RemoveAll(dir) }()
	opts := manager.DefaultOptions()
	opts.StorageDir = dir
	opts.HealthProbeBindAddress = "0"
	opts.MetricsBindAddress = "0"
	mgr, err := manager.New(env.Config, opts)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- mgr.Start(ctx) }()
	code := m.Run()
	cancel()
	if err := <-done; err != nil {
		fmt.Fprintln(os.Stderr, "manager:", err)
	}
	return code
}
