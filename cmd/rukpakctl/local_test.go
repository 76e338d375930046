package main

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"
)

func run(t *testing.T, args ...string) (string, string, error) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	root := newRootCmd()
	root.SetArgs(args)
	root.SetOut(&stdout)
	root.SetErr(&stderr)
	err := root.ExecuteContext(t.Context())
	return stdout.String(), stderr.String(), err
}

func TestLocalEnvPrintsAbsoluteKubeconfig(t *testing.T) {
	dir := t.TempDir()
	t.Setenv(stateDirEnv, dir)
	stdout, stderr, err := run(t, "local", "env")
	if err != nil {
		t.Fatalf("local env: %v", err)
	}
	if want := "export KUBECONFIG=" + filepath.Join(dir, "kubeconfig") + "\n"; stdout != want {
		t.Errorf("stdout = %q, want %q", stdout, want)
	}
	if !strings.Contains(stderr, "no local cluster is running") {
		t.Errorf("stderr should warn that nothing runs, got %q", stderr)
	}

	// --state-dir wins over the environment and is made absolute.
	t.Chdir(dir)
	stdout, _, err = run(t, "local", "env", "--state-dir", "other")
	if err != nil {
		t.Fatalf("local env --state-dir: %v", err)
	}
	if want := "export KUBECONFIG=" + filepath.Join(dir, "other", "kubeconfig") + "\n"; stdout != want {
		t.Errorf("stdout = %q, want %q", stdout, want)
	}
}

func TestLocalDownWithNothingUp(t *testing.T) {
	if _, _, err := run(t, "local", "down", "--state-dir", filepath.Join(t.TempDir(), "never-up")); err != nil {
		t.Errorf("local down with nothing up: %v", err)
	}
}
