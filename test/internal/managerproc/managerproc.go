// Package managerproc runs the rukpak manager as real processes against a
// test's API server, for tests that kill it (SIGKILL) or run several
// replicas: it builds cmd/rukpak once per test, writes a kubeconfig, and
// starts, waits for and kills managers, each with its own log.
package managerproc

import (
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/rukpak/rukpak/internal/sourcetree"
	"github.com/rukpak/rukpak/pkg/envtest"
)

// Harness builds the manager and starts its processes.
type Harness struct {
	t *testing.T
	// Bin is the built manager; Kubeconfig reaches the test's API server
	// as its admin; Dir is a directory of the test's own.
	Bin, Kubeconfig, Dir string
}

// New builds cmd/rukpak into a temporary directory and writes a kubeconfig
// for cfg. When the test fails, the managers' logs are printed.
func New(t *testing.T, cfg *rest.Config) *Harness {
	t.Helper()
	dir := t.TempDir()
	h := &Harness{t: t, Bin: filepath.Join(dir, "rukpak"), Kubeconfig: filepath.Join(dir, "kubeconfig"), Dir: dir}
	// Static, as make build and the release build it; without symbol
	// table and DWARF, which halves the link (panics still name files
	// and lines).
	build := exec.Command("go", "build", "-ldflags=-s -w", "-o", h.Bin, "./cmd/rukpak")
	build.Dir = sourcetree.Root()
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building the manager: %v\n%s", err, out)
	}
	writeKubeconfig(t, h.Kubeconfig, cfg)
	return h
}

// KubeconfigFor writes a kubeconfig for cfg (another user, for example,
// so that an audit log tells the managers apart) as Dir/name.kubeconfig and
// returns its path, for a --kubeconfig argument of Start.
func (h *Harness) KubeconfigFor(name string, cfg *rest.Config) string {
	h.t.Helper()
	path := filepath.Join(h.Dir, name+".kubeconfig")
	writeKubeconfig(h.t, path, cfg)
	return path
}

func writeKubeconfig(t *testing.T, path string, cfg *rest.Config) {
	t.Helper()
	kc := clientcmdapi.NewConfig()
	kc.Clusters["envtest"] = &clientcmdapi.Cluster{Server: cfg.Host, CertificateAuthorityData: cfg.CAData}
	kc.AuthInfos["admin"] = &clientcmdapi.AuthInfo{ClientCertificateData: cfg.CertData, ClientKeyData: cfg.KeyData, Token: cfg.BearerToken}
	kc.Contexts["envtest"] = &clientcmdapi.Context{Cluster: "envtest", AuthInfo: "admin"}
	kc.CurrentContext = "envtest"
	if err := clientcmd.WriteToFile(*kc, path); err != nil {
		t.Fatal(err)
	}
}

// Proc is one manager process.
type Proc struct {
	cmd  *exec.Cmd
	done chan struct{}
	// Log is the file its output goes to (appended to by every process
	// of the same name).
	Log string
	// ProbePort serves its /readyz on 127.0.0.1.
	ProbePort int
}

// Start runs a manager named name (its log is Dir/name.log) with the
// kubeconfig, a health probe on a free port, metrics off, the manager
// identity by default, storage under Dir/name-store, and then args (which
// may override those), and waits until /readyz answers 200.
func (h *Harness) Start(name string, args ...string) *Proc {
	h.t.Helper()
	return h.StartBinary(h.Bin, name, args...)
}

// StartBinary is Start with another build of the manager, one BuildAt
// made for example.
func (h *Harness) StartBinary(bin, name string, args ...string) *Proc {
	h.t.Helper()
	port := FreePort(h.t)
	logPath := filepath.Join(h.Dir, name+".log")
	logs, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		h.t.Fatal(err)
	}
	flags := append([]string{"--kubeconfig=" + h.Kubeconfig, "--storage-dir=" + filepath.Join(h.Dir, name+"-store"),
		"--health-probe-bind-address=127.0.0.1:" + strconv.Itoa(port), "--metrics-bind-address=0", "--default-identity=manager"}, args...)
	cmd := exec.Command(bin, flags...)
	cmd.Stdout, cmd.Stderr = logs, logs
	if err := cmd.Start(); err != nil {
		h.t.Fatal(err)
	}
	p := &Proc{cmd: cmd, done: make(chan struct{}), Log: logPath, ProbePort: port}
	go func() { _ = cmd.Wait(); _ = logs.Close(); close(p.done) }()
	h.t.Cleanup(func() {
		p.Kill()
		if h.t.Failed() {
			data, _ := os.ReadFile(logPath)
			if len(data) > 6000 {
				data = data[len(data)-6000:]
			}
			h.t.Logf("last lines of %s:\n%s", logPath, data)
		}
	})
	url := fmt.Sprintf("http://127.0.0.1:%d/readyz", port)
	envtest.Eventually(h.t, 60*time.Second, func() error {
		if p.Exited() {
			return fmt.Errorf("manager %s exited: %v", name, cmd.ProcessState)
		}
		resp, err := http.Get(url)
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("readyz: %s", resp.Status)
		}
		return nil
	})
	return p
}

// Exited reports whether the process has ended.
func (p *Proc) Exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// Stop sends SIGTERM, as a Deployment's rollout does, and waits for the
// process to end; after a minute it is killed and the test fails.
func (p *Proc) Stop(t *testing.T) {
	t.Helper()
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(time.Minute):
		p.Kill()
		t.Fatalf("the manager did not stop within a minute of SIGTERM")
	}
}

// Kill sends SIGKILL and waits for the process to be gone.
func (p *Proc) Kill() {
	_ = p.cmd.Process.Signal(syscall.SIGKILL)
	<-p.done
}

// FreePort returns a loopback port free now.
func FreePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}
