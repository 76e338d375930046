package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"k8s.io/client-go/kubernetes"
)

// managerSample is the manager's memory at one moment, after a forced GC.
// Its heap and goroutine profiles are saved in the state directory as
// churn-<moment>.heap (compare with `go tool pprof -base`) and
// churn-<moment>.goroutines.
type managerSample struct {
	heapInuse  uint64 // bytes, runtime.MemStats.HeapInuse
	heapAlloc  uint64 // bytes, runtime.MemStats.HeapAlloc: live objects
	stackInuse uint64 // bytes, runtime.MemStats.StackInuse
	rss        int64  // KiB, VmRSS
	goroutines int
}

// freeAddr returns a free loopback address for the manager's pprof.
func freeAddr() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return l.Addr().String(), nil
}

// sampleManager forces two garbage collections in the manager (the second
// frees what finalizers of the first released) and reads its heap in use,
// goroutines and RSS.
func sampleManager(ctx context.Context, pprofAddr string, pid int, saveAs string) (managerSample, error) {
	var s managerSample
	var heap string
	var err error
	for range 2 {
		if heap, err = getPprof(ctx, pprofAddr, "heap?debug=1&gc=1"); err != nil {
			return s, err
		}
	}
	if s.heapInuse, err = memStat(heap, "HeapInuse"); err != nil {
		return s, err
	}
	if s.heapAlloc, err = memStat(heap, "HeapAlloc"); err != nil {
		return s, err
	}
	if s.stackInuse, err = memStat(heap, "Stack"); err != nil { // "# Stack = inuse / sys"
		return s, err
	}
	g, err := getPprof(ctx, pprofAddr, "goroutine?debug=1")
	if err != nil {
		return s, err
	}
	if _, err := fmt.Sscanf(g, "goroutine profile: total %d", &s.goroutines); err != nil {
		return s, fmt.Errorf("parsing goroutine profile: %w", err)
	}
	if s.rss, err = procStatus(pid, "VmRSS"); err != nil {
		return s, err
	}
	// Saved for inspection; the collections above made it current.
	proto, err := getPprof(ctx, pprofAddr, "heap")
	if err != nil {
		return s, err
	}
	if err := os.WriteFile(saveAs+".heap", []byte(proto), 0o644); err != nil {
		return s, err
	}
	if err := os.WriteFile(saveAs+".goroutines", []byte(g), 0o644); err != nil {
		return s, err
	}
	return s, nil
}

func getPprof(ctx context.Context, addr, path string) (string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/debug/pprof/"+path, nil)
	if err != nil {
		return "", err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", fmt.Errorf("reading the manager's pprof %s: %w", path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return "", fmt.Errorf("reading the manager's pprof %s: %w", path, err)
	}
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("the manager's pprof %s: %s", path, resp.Status)
	}
	return string(b), nil
}

// memStat reads "# name = value" of the runtime.MemStats a debug=1 heap
// profile ends with (the first value of "# name = a / b").
func memStat(profile, name string) (uint64, error) {
	prefix := "# " + name + " = "
	for _, line := range strings.Split(profile, "\n") {
		if v, ok := strings.CutPrefix(line, prefix); ok {
			v, _, _ = strings.Cut(v, " ")
			return strconv.ParseUint(strings.TrimSpace(v), 10, 64)
		}
	}
	return 0, fmt.Errorf("no %s in the heap profile", name)
}

// procStatus reads a "kB" field of /proc/PID/status, in KiB.
func procStatus(pid int, field string) (int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, fmt.Errorf("reading manager status: %w", err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, field+":"); ok {
			var kb int64
			if _, err := fmt.Sscanf(strings.TrimSpace(v), "%d kB", &kb); err != nil {
				return 0, fmt.Errorf("parsing %q: %w", line, err)
			}
			return kb, nil
		}
	}
	return 0, fmt.Errorf("no %s for pid %d", field, pid)
}

// resetPeakRSS resets the process's VmHWM to its current RSS (Linux
// clear_refs), so that the next peakRSS is of what happens from now on.
func resetPeakRSS(pid int) error {
	return os.WriteFile(fmt.Sprintf("/proc/%d/clear_refs", pid), []byte("5"), 0o200)
}

// cpuProfile saves the manager's CPU profile of the next seconds to path.
func cpuProfile(ctx context.Context, addr string, seconds int, path string) error {
	p, err := getPprof(ctx, addr, fmt.Sprintf("profile?seconds=%d", seconds))
	if err != nil {
		return err
	}
	if err := os.WriteFile(path, []byte(p), 0o644); err != nil {
		return fmt.Errorf("saving the CPU profile: %w", err)
	}
	fmt.Printf("manager CPU profile of %ds saved to %s\n", seconds, path)
	return nil
}

// allocsProfile saves the manager's allocations over the next seconds
// (a delta of its allocs profile) at path.
func allocsProfile(ctx context.Context, addr string, seconds int, path string) error {
	p, err := getPprof(ctx, addr, fmt.Sprintf("allocs?seconds=%d", seconds))
	if err != nil {
		return err
	}
	if err := os.WriteFile(path, []byte(p), 0o644); err != nil {
		return fmt.Errorf("saving the allocation profile: %w", err)
	}
	fmt.Printf("manager allocation profile of %ds saved to %s\n", seconds, path)
	return nil
}

// profileInstall, with -pprof, saves CPU profiles of the manager and of
// the API server over the next seconds (<prefix>-manager.pprof,
// <prefix>-apiserver.pprof in the state directory), and the manager's
// allocations over the same seconds (<prefix>-manager-allocs.pprof). The channel reports once both are saved (at once without
// -pprof).
func profileInstall(ctx context.Context, c config, cs kubernetes.Interface, seconds int, prefix string) <-chan error {
	done := make(chan error, 1)
	if c.pprof == "" {
		done <- nil
		return done
	}
	go func() {
		manager, allocs := make(chan error, 1), make(chan error, 1)
		go func() {
			manager <- cpuProfile(ctx, c.pprof, seconds, filepath.Join(c.stateDir, prefix+"-manager.pprof"))
		}()
		go func() {
			allocs <- allocsProfile(ctx, c.pprof, seconds, filepath.Join(c.stateDir, prefix+"-manager-allocs.pprof"))
		}()
		p, err := cs.CoreV1().RESTClient().Get().AbsPath("/debug/pprof/profile").
			Param("seconds", fmt.Sprint(seconds)).Timeout(time.Duration(seconds)*time.Second + time.Minute).DoRaw(ctx)
		if err == nil {
			path := filepath.Join(c.stateDir, prefix+"-apiserver.pprof")
			err = os.WriteFile(path, p, 0o644)
			fmt.Printf("API server CPU profile of %ds saved to %s\n", seconds, path)
		}
		if merr := <-manager; err == nil {
			err = merr
		}
		if aerr := <-allocs; err == nil {
			err = aerr
		}
		if err != nil {
			err = fmt.Errorf("profiling the install: %w", err)
		}
		done <- err
	}()
	return done
}
