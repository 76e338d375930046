package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/rukpak/rukpak/internal/localcluster"
)

func init() { register(newLocalCmd) }

// stateDirEnv overrides the default state directory.
const stateDirEnv = "RUKPAK_STATE_DIR"

// defaultStateDir is $RUKPAK_STATE_DIR or ./.local/cluster.
func defaultStateDir() string {
	if dir := os.Getenv(stateDirEnv); dir != "" {
		return dir
	}
	return filepath.Join(".local", "cluster")
}

func newLocalCmd() *cobra.Command {
	var stateDir string
	cmd := &cobra.Command{
		Use:   "local",
		Short: "Run a local control plane with rukpak (no containers: simulated nodes)",
	}
	cmd.PersistentFlags().StringVar(&stateDir, "state-dir", defaultStateDir(),
		"directory of the cluster's state, logs and kubeconfig (env "+stateDirEnv+")")
	absStateDir := func() (string, error) {
		dir, err := filepath.Abs(stateDir)
		if err != nil {
			return "", fmt.Errorf("resolving --state-dir: %w", err)
		}
		return dir, nil
	}
	cmd.AddCommand(newLocalUpCmd(absStateDir), newLocalDownCmd(absStateDir), newLocalEnvCmd(absStateDir))
	return cmd
}

func newLocalUpCmd(stateDir func() (string, error)) *cobra.Command {
	opts := localcluster.Options{}
	cmd := &cobra.Command{
		Use:   "up",
		Short: "Start the local cluster and the manager; print the KUBECONFIG line",
		Long: `Start etcd, kube-apiserver and (unless --minimal) kube-controller-manager,
kube-scheduler and kwok as background processes on 127.0.0.1, install rukpak's
CRDs and start the rukpak manager. Progress goes to stderr; the last line,
on stdout, is "export KUBECONFIG=...". Does nothing if the cluster is up.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			dir, err := stateDir()
			if err != nil {
				return err
			}
			opts.StateDir, opts.Out = dir, cmd.ErrOrStderr()
			c, err := localcluster.Up(cmd.Context(), opts)
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.ErrOrStderr(), "logs: %s\n", filepath.Dir(c.LogPath("etcd")))
			fmt.Fprintf(cmd.OutOrStdout(), "export KUBECONFIG=%s\n", c.Kubeconfig)
			return nil
		},
	}
	f := cmd.Flags()
	f.BoolVar(&opts.Minimal, "minimal", false, "start only etcd and kube-apiserver (no controllers, scheduler or node)")
	f.StringVar(&opts.BinDir, "bin-dir", "", "directory of the control-plane binaries (default <dir of rukpakctl>/cluster)")
	f.StringVar(&opts.ManagerPath, "manager", "", "rukpak manager binary (default <dir of rukpakctl>/rukpak)")
	f.BoolVar(&opts.NoManager, "no-manager", false, "do not start the manager")
	f.StringArrayVar(&opts.ManagerArgs, "manager-arg", nil, "extra manager flag (repeatable)")
	f.StringArrayVar(&opts.Provisioners, "provisioner", nil, "binary of another provisioner (built on pkg/manager) to run next to the manager, with the manager's flags (repeatable)")
	return cmd
}

func newLocalDownCmd(stateDir func() (string, error)) *cobra.Command {
	return &cobra.Command{
		Use:   "down",
		Short: "Stop the local cluster (logs and certificates stay)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			dir, err := stateDir()
			if err != nil {
				return err
			}
			if err := localcluster.Down(dir); err != nil {
				return err
			}
			fmt.Fprintf(cmd.ErrOrStderr(), "local cluster in %s stopped\n", dir)
			return nil
		},
	}
}

func newLocalEnvCmd(stateDir func() (string, error)) *cobra.Command {
	return &cobra.Command{
		Use:   "env",
		Short: `Print "export KUBECONFIG=..." for the local cluster`,
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			dir, err := stateDir()
			if err != nil {
				return err
			}
			kubeconfig, err := localcluster.KubeconfigPath(dir)
			if err != nil {
				return err
			}
			if _, err := localcluster.Load(dir); errors.Is(err, localcluster.ErrNotRunning) {
				fmt.Fprintf(cmd.ErrOrStderr(), "warning: %v (run `rukpakctl local up`)\n", err)
			} else if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "export KUBECONFIG=%s\n", kubeconfig)
			return nil
		},
	}
}
