//go:build integration

package localcluster

import (
	"fmt"
	"net/http"
	"os"
	"os/exec"
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
