package e2e

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rukpak/rukpak/internal/sourcetree"
	"github.com/rukpak/rukpak/pkg/envtest"
)

// suite is what every test of the package shares.
var suite struct {
	bin        string // rukpakctl and rukpak, built from this tree
	clusterBin string // control-plane binaries
	stateDir   string
	kubeconfig string
	client     client.Client
}

func TestMain(m *testing.M) {
	flag.Parse()
	if err := selectPart(os.Getenv("RUKPAK_E2E_HOSTILE")); err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		os.Exit(2)
	}
	code, err := setUp(m)
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		code = 1
	}
	os.Exit(code)
}

// hostileCorpusTest matches the name of the hostile corpus's test.
const hostileCorpusTest = "^TestHostileCorpus$"

// selectPart runs the part of the suite that RUKPAK_E2E_HOSTILE names
// (part): "skip" runs every test but the hostile corpus, "only" only the
// corpus, "" everything. make test runs the two parts one after the other
// (hack/test-all.sh): the first at the same time as the integration
// tier, the corpus, whose canary is timed, without it.
func selectPart(part string) error {
	switch part {
	case "":
		return nil
	case "skip":
		skip := hostileCorpusTest
		if prev := flag.Lookup("test.skip").Value.String(); prev != "" {
			skip = prev + "|" + skip
		}
		return flag.Set("test.skip", skip)
	case "only":
		return flag.Set("test.run", hostileCorpusTest)
	}
	return fmt.Errorf("RUKPAK_E2E_HOSTILE=%q: want skip, only or nothing", part)
}

func setUp(m *testing.M) (int, error) {
	clusterBin, err := envtest.BinDir()
	if err != nil {
		return 1, err
	}
	tmp, err := os.MkdirTemp("", "rukpak-e2e-")
	if err != nil {
		return 1, err
	}
	defer os.RemoveAll(tmp)
	suite.bin, suite.clusterBin, suite.stateDir = filepath.Join(tmp, "bin"), clusterBin, filepath.Join(tmp, "cluster")
	for _, pkg := range []string{"rukpak", "rukpakctl"} {
		// Without symbol table and DWARF: half the link's CPU.
		build := exec.Command("go", "build", "-ldflags=-s -w", "-o", filepath.Join(suite.bin, pkg), "./cmd/"+pkg)
		build.Dir = sourcetree.Root()
		if out, err := build.CombinedOutput(); err != nil {
			return 1, fmt.Errorf("building %s: %w\n%s", pkg, err, out)
		}
	}
	out, err := rukpakctl("local", "up")
	if err != nil {
		return 1, fmt.Errorf("rukpakctl local up: %w\n%s", err, out)
	}
	defer func() {
		if out, err := rukpakctl("local", "down"); err != nil {
			fmt.Fprintf(os.Stderr, "rukpakctl local down: %v\n%s", err, out)
		}
	}()
	line := lastLine(out)
	suite.kubeconfig = strings.TrimPrefix(line, "export KUBECONFIG=")
	if suite.kubeconfig == line {
		return 1, fmt.Errorf("rukpakctl local up did not end with the KUBECONFIG line:\n%s", out)
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", suite.kubeconfig)
	if err != nil {
		return 1, err
	}
	if suite.client, err = client.New(cfg, client.Options{Scheme: envtest.Scheme()}); err != nil {
		return 1, err
	}
	code := m.Run()
	if code != 0 {
		log, _ := os.ReadFile(filepath.Join(suite.stateDir, "logs", "rukpak.log"))
		fmt.Fprintf(os.Stderr, "--- last lines of the manager's log:\n%s\n", tail(string(log), 40))
		// The whole log, kept where make test keeps its results: the
		// last lines rarely cover the minutes a failed test waited.
		kept := filepath.Join(sourcetree.Root(), "test-results", "e2e-manager.log")
		if part := os.Getenv("RUKPAK_E2E_HOSTILE"); part != "" {
			kept = filepath.Join(sourcetree.Root(), "test-results", "e2e-manager-hostile-"+part+".log")
		}
		if err := os.MkdirAll(filepath.Dir(kept), 0o755); err == nil && os.WriteFile(kept, log, 0o644) == nil {
			fmt.Fprintf(os.Stderr, "--- the manager's whole log: %s\n", kept)
		}
	}
	return code, nil
}

// rukpakctl runs the built CLI against the suite's cluster; it returns
// stdout and stderr together. `local up` is pointed at the binaries built
// for the suite.
func rukpakctl(args ...string) (string, error) {
	if len(args) >= 2 && args[0] == "local" && args[1] == "up" {
		args = append(args, "--bin-dir="+suite.clusterBin, "--manager="+filepath.Join(suite.bin, "rukpak"))
		for _, a := range managerArgs() {
			args = append(args, "--manager-arg="+a)
		}
	}
	cmd := exec.Command(filepath.Join(suite.bin, "rukpakctl"), args...)
	cmd.Env = append(os.Environ(), "RUKPAK_STATE_DIR="+suite.stateDir, "KUBECONFIG="+suite.kubeconfig)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	return stderr.String() + stdout.String(), err
}

// managerArgs are the flags the suite's manager runs with beyond those of
// the local cluster.
func managerArgs() []string {
	return []string{
		// A stalled source ends sooner than the default 5m (the
		// hostile corpus has one).
		"--source-timeout=15s",
		// A template that loops ends sooner than the default 30s
		// of CPU time; the memory bombs of the hostile corpus run
		// into their memory limit well within 10 s of it.
		"--render-timeout=" + renderTimeout.String(),
		// A team fills its share of the content store sooner than
		// the default 2.5Gi (hostile_quota_test.go).
		"--tenant-store-quota=" + tenantStoreQuota,
		// A team reaches its bound of kept renders sooner than the
		// default 64 (hostile_review_test.go).
		"--tenant-renders=" + strconv.Itoa(tenantRenders),
	}
}

// kubectl runs the real kubectl against the suite's cluster.
func kubectl(t *testing.T, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(suite.clusterBin, "kubectl"), args...)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+suite.kubeconfig)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}

func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
