package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync/atomic"
	"time"
)

// helmCLIRun installs c.bundles releases of benchChart with the helm CLI
// at helm, c.concurrency installs at a time, each a `helm install` with the
// CLI's defaults (server-side apply, releases stored as Secrets, no wait
// beyond hooks). The chart is written once under dir; Helm's cache, config
// and data directories are kept there too.
// It returns the largest peak RSS of one helm process, in KiB.
func helmCLIRun(ctx context.Context, c config, helm, kubeconfig, dir string) (int64, error) {
	chartDir := filepath.Join(dir, "chart")
	if err := writeChart(chartDir, c.objects); err != nil {
		return 0, err
	}
	env := append(os.Environ(), "HELM_CACHE_HOME="+filepath.Join(dir, "cache"),
		"HELM_CONFIG_HOME="+filepath.Join(dir, "config"), "HELM_DATA_HOME="+filepath.Join(dir, "data"))
	var peak atomic.Int64
	err := parallel(c.bundles, c.concurrency, func(i int) error {
		cmd := exec.CommandContext(ctx, helm, "install", fmt.Sprintf("b%d", i), chartDir,
			"--namespace", fmt.Sprintf("helmcli-%d", i%c.namespaces), "--kubeconfig", kubeconfig)
		cmd.Env = env
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Start(); err != nil {
			return fmt.Errorf("helm install b%d: %w", i, err)
		}
		done := make(chan struct{})
		go watchPeak(cmd.Process.Pid, &peak, done)
		err := cmd.Wait()
		close(done)
		if err != nil {
			return fmt.Errorf("helm install b%d: %w: %s", i, err, out.Bytes())
		}
		return nil
	})
	return peak.Load(), err
}

// watchPeak raises peak to pid's peak RSS (VmHWM, KiB) every 20 ms until
// done is closed. The kernel's rusage of children cannot tell it: a child
// started with vfork and exec inherits its parent's high-water mark.
func watchPeak(pid int, peak *atomic.Int64, done <-chan struct{}) {
	t := time.NewTicker(20 * time.Millisecond)
	defer t.Stop()
	for {
		if hwm, err := peakRSS(pid); err == nil {
			for {
				cur := peak.Load()
				if hwm <= cur || peak.CompareAndSwap(cur, hwm) {
					break
				}
			}
		}
		select {
		case <-done:
			return
		case <-t.C:
		}
	}
}

// writeChart writes benchChart(objects) as a chart directory.
func writeChart(dir string, objects int) error {
	ch := benchChart(objects)
	if err := os.MkdirAll(filepath.Join(dir, "templates"), 0o755); err != nil {
		return fmt.Errorf("writing chart: %w", err)
	}
	meta := fmt.Sprintf("apiVersion: %s\nname: %s\nversion: %s\n", ch.Metadata.APIVersion, ch.Metadata.Name, ch.Metadata.Version)
	if err := os.WriteFile(filepath.Join(dir, "Chart.yaml"), []byte(meta), 0o644); err != nil {
		return fmt.Errorf("writing chart: %w", err)
	}
	for _, t := range ch.Templates {
		if err := os.WriteFile(filepath.Join(dir, t.Name), t.Data, 0o644); err != nil {
			return fmt.Errorf("writing chart: %w", err)
		}
	}
	return nil
}
