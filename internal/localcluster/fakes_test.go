package localcluster

import (
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// The test binary doubles as the stand-ins that StartManager and Down are
// tested with, selected by a flag in its arguments (see TestMain).
const (
	// fakeManagerFlag makes the test binary act as a manager: it serves
	// /readyz on --health-probe-bind-address.
	fakeManagerFlag = "--localcluster-fake-manager"
	// fakeChildrenFlag=FILE makes the fake manager start two long-running
	// children, one in its own process group and one in a group of its own,
	// and write "pid start" lines for them to FILE.
	fakeChildrenFlag = "--localcluster-fake-children"
	// fakeStartedFlag=FILE makes the fake manager create FILE as it starts.
	fakeStartedFlag = "--localcluster-fake-started"
	// fakeAPIServerFlag makes the test binary act as an API server that
	// answers /readyz with 503 until the file named by --ready-file exists,
	// over TLS with the serving pair in --pki on --port.
	fakeAPIServerFlag = "--localcluster-fake-apiserver"
)

// argValue returns the value of --name=value in args.
func argValue(args []string, name string) string {
	for _, arg := range args {
		if v, ok := strings.CutPrefix(arg, name+"="); ok {
			return v
		}
	}
	return ""
}

func fakeManager(args []string) {
	if v := argValue(args, "--kubeconfig"); v != "" {
		if _, err := os.Stat(v); err != nil {
			fmt.Fprintln(os.Stderr, "fake manager:", err)
			os.Exit(1)
		}
	}
	if file := argValue(args, fakeStartedFlag); file != "" {
		if err := os.WriteFile(file, nil, 0o644); err != nil {
			fmt.Fprintln(os.Stderr, "fake manager:", err)
			os.Exit(1)
		}
	}
	if file := argValue(args, fakeChildrenFlag); file != "" {
		var lines []string
		for _, ownGroup := range []bool{false, true} {
			cmd := exec.Command("sleep", "600")
			cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: ownGroup}
			if err := cmd.Start(); err != nil {
				fmt.Fprintln(os.Stderr, "fake manager:", err)
				os.Exit(1)
			}
			info, err := procStat(cmd.Process.Pid)
			if err != nil {
				fmt.Fprintln(os.Stderr, "fake manager:", err)
				os.Exit(1)
			}
			lines = append(lines, fmt.Sprintf("%d %d", cmd.Process.Pid, info.start))
		}
		if err := os.WriteFile(file, []byte(strings.Join(lines, "\n")), 0o644); err != nil {
			fmt.Fprintln(os.Stderr, "fake manager:", err)
			os.Exit(1)
		}
	}
	addr := argValue(args, "--health-probe-bind-address")
	http.HandleFunc("/readyz", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok")) })
	fmt.Fprintln(os.Stderr, "fake manager serving", addr, http.ListenAndServe(addr, nil))
	os.Exit(1)
}

func fakeAPIServer(args []string) {
	p := pki{dir: argValue(args, "--pki")}
	ready := argValue(args, "--ready-file")
	http.HandleFunc("/readyz", func(w http.ResponseWriter, _ *http.Request) {
		if _, err := os.Stat(ready); errors.Is(err, fs.ErrNotExist) {
			http.Error(w, "not ready", http.StatusServiceUnavailable)
			return
		}
		_, _ = w.Write([]byte("ok"))
	})
	addr := loopback(mustAtoi(argValue(args, "--port")))
	fmt.Fprintln(os.Stderr, "fake apiserver", http.ListenAndServeTLS(addr, p.path(servingCert), p.path(servingKey), nil))
	os.Exit(1)
}

func mustAtoi(s string) int {
	n, err := strconv.Atoi(s)
	if err != nil {
		panic(err)
	}
	return n
}

// readChildren reads the file written by a fake manager with
// fakeChildrenFlag, waiting up to 10 s for it.
func readChildren(file string) ([]process, error) {
	deadline := time.Now().Add(10 * time.Second)
	for {
		data, err := os.ReadFile(file)
		if err == nil {
			var out []process
			for _, line := range strings.Split(string(data), "\n") {
				var pid int
				var start uint64
				if _, err := fmt.Sscanf(line, "%d %d", &pid, &start); err != nil {
					return nil, fmt.Errorf("%s: %q: %w", file, line, err)
				}
				out = append(out, process{Name: "child", PID: pid, StartTime: start})
			}
			return out, nil
		}
		if time.Now().After(deadline) {
			return nil, err
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// fakeStateDir makes a state directory with a PKI and a pid file recording
// a fake API server on a free port that is not ready until readyFile
// exists.
func fakeStateDir(dir, readyFile string) (*state, error) {
	p, err := generatePKI(filepath.Join(dir, certsDir))
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(filepath.Join(dir, logsDir), 0o755); err != nil {
		return nil, err
	}
	picked, err := freePorts(1)
	if err != nil {
		return nil, err
	}
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	s := &state{Server: "https://" + loopback(picked[0]), Minimal: true, Ports: ports{APIServer: picked[0]}}
	if err := writeKubeconfig(filepath.Join(dir, kubeconfigName), s.Server, p); err != nil {
		return nil, err
	}
	proc, err := startProcess("kube-apiserver", self, []string{fakeAPIServerFlag,
		"--pki=" + p.dir, "--port=" + strconv.Itoa(picked[0]), "--ready-file=" + readyFile}, dir, filepath.Join(dir, logsDir))
	if err != nil {
		return nil, err
	}
	s.Processes = append(s.Processes, proc)
	return s, writeState(dir, s)
}
