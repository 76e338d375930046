package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/cgi"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// The Flux controllers the bench runs, as named in hack/tools/flux/go.mod
// and built into bin/tools by `make flux` (the bench's -tools-dir).
var fluxModules = []string{"github.com/fluxcd/source-controller", "github.com/fluxcd/kustomize-controller"}

const (
	fluxNamespace = "flux-system"
	// fluxPrefix is the prefix of the namespaces Flux installs into.
	fluxPrefix = "flux"
)

var (
	gitRepositoryGVK = schema.GroupVersionKind{Group: "source.toolkit.fluxcd.io", Version: "v1", Kind: "GitRepository"}
	kustomizationGVK = schema.GroupVersionKind{Group: "kustomize.toolkit.fluxcd.io", Version: "v1", Kind: "Kustomization"}
)

// fluxTools are the Flux controllers' binaries and where their modules,
// with their CRDs, are in the module cache.
type fluxTools struct {
	binaries []string // source-controller, kustomize-controller
	versions []string // of each module
	dirs     []string // each module's directory in the module cache
}

// findFlux finds the controllers `make flux` builds into toolsDir and
// their modules' directories (`go list -m` in hack/tools/flux, whose
// go.mod names the versions). Its error says why Flux cannot run.
func findFlux(ctx context.Context, root, toolsDir string) (fluxTools, error) {
	var t fluxTools
	for _, m := range fluxModules {
		bin := filepath.Join(toolsDir, filepath.Base(m))
		if !exists(bin) {
			return t, fmt.Errorf("%s is not built (make flux builds it from hack/tools/flux; make bench-peers runs make flux)", bin)
		}
		t.binaries = append(t.binaries, bin)
	}
	cmd := exec.CommandContext(ctx, "go", append([]string{"list", "-m", "-f", "{{.Path}} {{.Version}} {{.Dir}}"}, fluxModules...)...)
	cmd.Dir = filepath.Join(root, "hack", "tools", "flux")
	cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=")
	out, err := cmd.Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			err = fmt.Errorf("%w: %s", err, ee.Stderr)
		}
		return t, fmt.Errorf("finding the Flux modules (go list -m in hack/tools/flux): %w", err)
	}
	t.versions, t.dirs, err = parseModuleList(string(out), fluxModules)
	return t, err
}

// parseModuleList parses the lines "path version dir" of `go list -m`
// for the modules of want, in that order. A module not in the module
// cache has no dir.
func parseModuleList(out string, want []string) (versions, dirs []string, err error) {
	found := map[string][2]string{}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		f := strings.Fields(line)
		if len(f) == 3 {
			found[f[0]] = [2]string{f[1], f[2]}
		} else if len(f) == 2 {
			found[f[0]] = [2]string{f[1], ""}
		}
	}
	for _, m := range want {
		vd, ok := found[m]
		if !ok {
			return nil, nil, fmt.Errorf("go list -m does not name %s", m)
		}
		if vd[1] == "" {
			return nil, nil, fmt.Errorf("%s@%s is not in the module cache (make flux downloads it)", m, vd[0])
		}
		versions, dirs = append(versions, vd[0]), append(dirs, vd[1])
	}
	return versions, dirs, nil
}

// fluxRun is the Flux peer, prepared by fluxPrepare: it creates the
// GitRepositories and a Kustomization per bundle and waits until every
// Kustomization is Ready.
type fluxRun struct {
	c        config
	k        client.WithWatch
	gitURL   string
	repos    int // 1, or one per bundle
	procs    []fluxProc
	stopGit  func()
	stateDir string
}

// fluxPrepare installs Flux's CRDs, writes the git repositories (one
// holding a directory per bundle, or with perBundle one per bundle) and
// serves them with git http-backend on loopback, and starts
// source-controller and kustomize-controller as local processes with
// --concurrent set to c.concurrency. Nothing of it is measured.
func fluxPrepare(ctx context.Context, c config, t fluxTools, k client.WithWatch, kubeconfig string, perBundle bool) (*fluxRun, error) {
	dir, err := os.MkdirTemp(c.stateDir, "flux-")
	if err != nil {
		return nil, fmt.Errorf("flux directory: %w", err)
	}
	f := &fluxRun{c: c, k: k, repos: 1, stateDir: dir}
	if perBundle {
		f.repos = c.bundles
	}
	if err := installFluxCRDs(ctx, k, t.dirs); err != nil {
		return nil, err
	}
	if err := k.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: fluxNamespace}}); err != nil && !apierrors.IsAlreadyExists(err) {
		return nil, fmt.Errorf("creating namespace %s: %w", fluxNamespace, err)
	}
	gitRoot := filepath.Join(dir, "git")
	if err := writeFluxRepos(gitRoot, c, f.repos); err != nil {
		return nil, err
	}
	gitBin, err := exec.LookPath("git")
	if err != nil {
		return nil, fmt.Errorf("the git binary serves Flux's source (apt-get install git): %w", err)
	}
	srv := httptest.NewServer(&cgi.Handler{Path: gitBin, Args: []string{"http-backend"},
		Env: []string{"GIT_PROJECT_ROOT=" + gitRoot, "GIT_HTTP_EXPORT_ALL=1"}})
	f.gitURL, f.stopGit = srv.URL, srv.Close
	if err := f.start(ctx, t, kubeconfig); err != nil {
		f.stop()
		return nil, err
	}
	return f, nil
}

// installFluxCRDs applies the CRDs under config/crd/bases of each module
// directory and waits until they are established.
func installFluxCRDs(ctx context.Context, k client.Client, dirs []string) error {
	var names []string
	for _, d := range dirs {
		files, err := filepath.Glob(filepath.Join(d, "config", "crd", "bases", "*.yaml"))
		if err != nil || len(files) == 0 {
			return fmt.Errorf("no CRDs under %s/config/crd/bases", d)
		}
		for _, file := range files {
			raw, err := os.ReadFile(file)
			if err != nil {
				return fmt.Errorf("reading Flux CRD: %w", err)
			}
			dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(raw), 4096)
			for {
				crd := &apiextensionsv1.CustomResourceDefinition{}
				if err := dec.Decode(crd); errors.Is(err, io.EOF) {
					break
				} else if err != nil {
					return fmt.Errorf("decoding %s: %w", file, err)
				}
				if crd.Name == "" {
					continue
				}
				crd.SetGroupVersionKind(apiextensionsv1.SchemeGroupVersion.WithKind("CustomResourceDefinition"))
				if err := k.Patch(ctx, crd, client.Apply, client.FieldOwner("bench"), client.ForceOwnership); err != nil {
					return fmt.Errorf("applying CRD %s: %w", crd.Name, err)
				}
				names = append(names, crd.Name)
			}
		}
	}
	deadline := time.Now().Add(time.Minute)
	for _, name := range names {
		for {
			crd := &apiextensionsv1.CustomResourceDefinition{}
			if err := k.Get(ctx, client.ObjectKey{Name: name}, crd); err != nil {
				return fmt.Errorf("reading CRD %s: %w", name, err)
			}
			if crdEstablished(crd) {
				break
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("CRD %s not established after a minute", name)
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
	return nil
}

func crdEstablished(crd *apiextensionsv1.CustomResourceDefinition) bool {
	for _, cond := range crd.Status.Conditions {
		if cond.Type == apiextensionsv1.Established && cond.Status == apiextensionsv1.ConditionTrue {
			return true
		}
	}
	return false
}

// writeFluxRepos writes repos bare repositories under root, bench-<r>.git,
// each with a commit on main holding, for every bundle i of it (i%repos
// == r), the directory b<i> with the bundle's M ConfigMaps in one file,
// as rukpak's source ConfigMaps hold them.
func writeFluxRepos(root string, c config, repos int) error {
	for r := 0; r < repos; r++ {
		work := filepath.Join(root, fmt.Sprintf("work-%d", r))
		for i := r; i < c.bundles; i += repos {
			d := filepath.Join(work, fmt.Sprintf("b%d", i))
			if err := os.MkdirAll(d, 0o755); err != nil {
				return fmt.Errorf("writing git repository: %w", err)
			}
			if err := os.WriteFile(filepath.Join(d, "objects.yaml"), []byte(sourceConfigMap(i, c.objects).Data["objects.yaml"]), 0o644); err != nil {
				return fmt.Errorf("writing git repository: %w", err)
			}
		}
		bare := filepath.Join(root, fmt.Sprintf("bench-%d.git", r))
		for _, args := range [][]string{{"init", "-q", "-b", "main", work}, {"-C", work, "add", "."},
			{"-C", work, "commit", "-q", "-m", "bench"}, {"clone", "-q", "--bare", work, bare}} {
			cmd := exec.Command("git", args...)
			cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=bench", "GIT_AUTHOR_EMAIL=bench@example.com",
				"GIT_COMMITTER_NAME=bench", "GIT_COMMITTER_EMAIL=bench@example.com")
			if out, err := cmd.CombinedOutput(); err != nil {
				return fmt.Errorf("git %s: %w: %s", strings.Join(args, " "), err, out)
			}
		}
		if err := os.RemoveAll(work); err != nil {
			return fmt.Errorf("writing git repository: %w", err)
		}
	}
	return nil
}

// fluxProc is a running controller; done is closed when it has exited.
type fluxProc struct {
	cmd  *exec.Cmd
	done chan struct{}
}

// start starts source-controller and kustomize-controller, logging to
// files in the state directory, and waits until both are ready.
func (f *fluxRun) start(ctx context.Context, t fluxTools, kubeconfig string) error {
	storage, err := freeAddr()
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Join(f.stateDir, "storage"), 0o755); err != nil {
		return fmt.Errorf("source-controller's storage: %w", err)
	}
	// Flux's defaults, but for --concurrent (the bench's workers, as the
	// manager's) and the client's rate limit, raised so that the bench
	// measures Flux and not its default limit of 50 requests a second.
	common := []string{fmt.Sprintf("--concurrent=%d", f.c.concurrency), "--kube-api-qps=500", "--kube-api-burst=1000",
		"--enable-leader-election=false"}
	extra := [][]string{{"--storage-path=" + filepath.Join(f.stateDir, "storage"), "--storage-addr=" + storage, "--storage-adv-addr=" + storage}, nil}
	for i, bin := range t.binaries {
		metrics, err := freeAddr()
		if err != nil {
			return err
		}
		health, err := freeAddr()
		if err != nil {
			return err
		}
		args := append(append([]string{"--metrics-addr=" + metrics, "--health-addr=" + health}, common...), extra[i]...)
		log, err := os.Create(filepath.Join(f.stateDir, filepath.Base(bin)+".log"))
		if err != nil {
			return fmt.Errorf("flux log: %w", err)
		}
		cmd := exec.Command(bin, args...)
		cmd.Env = append(os.Environ(), "KUBECONFIG="+kubeconfig, "RUNTIME_NAMESPACE="+fluxNamespace)
		cmd.Stdout, cmd.Stderr = log, log
		if err := cmd.Start(); err != nil {
			_ = log.Close()
			return fmt.Errorf("starting %s: %w", bin, err)
		}
		_ = log.Close()
		p := fluxProc{cmd: cmd, done: make(chan struct{})}
		go func() { _ = cmd.Wait(); close(p.done) }()
		f.procs = append(f.procs, p)
		if err := waitHealthy(ctx, "http://"+health+"/readyz", p.done, time.Minute); err != nil {
			return fmt.Errorf("%s %s: %w; the end of its log, %s:\n%s", filepath.Base(bin), t.versions[i], err, log.Name(), tail(log.Name(), 10))
		}
	}
	return nil
}

// tail returns the last n lines of the file at path.
func tail(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// waitHealthy polls url until it answers 200, the process exits (done is
// closed) or timeout passes.
func waitHealthy(ctx context.Context, url string, done <-chan struct{}, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		select {
		case <-done:
			return errors.New("exited before it was ready")
		default:
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return err
		}
		if resp, err := http.DefaultClient.Do(req); err == nil {
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("not ready after %s", timeout)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// pids are the controllers' process IDs.
func (f *fluxRun) pids() []int {
	var out []int
	for _, p := range f.procs {
		out = append(out, p.cmd.Process.Pid)
	}
	return out
}

// stop stops the controllers (SIGTERM, then SIGKILL after 10 s) and the
// git server.
func (f *fluxRun) stop() {
	for _, p := range f.procs {
		_ = p.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-p.done:
		case <-time.After(10 * time.Second):
			_ = p.cmd.Process.Kill()
			<-p.done
		}
	}
	f.procs = nil
	if f.stopGit != nil {
		f.stopGit()
	}
}

// install creates the GitRepositories and a Kustomization per bundle and
// waits until every Kustomization is Ready.
func (f *fluxRun) install(ctx context.Context) error {
	if err := parallel(f.repos, f.c.concurrency, func(r int) error {
		u := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{
			"interval": "10m", "url": fmt.Sprintf("%s/bench-%d.git", f.gitURL, r), "ref": map[string]any{"branch": "main"}}}}
		u.SetGroupVersionKind(gitRepositoryGVK)
		u.SetName(fmt.Sprintf("bench-%d", r))
		u.SetNamespace(fluxNamespace)
		return f.k.Create(ctx, u)
	}); err != nil {
		return fmt.Errorf("creating GitRepositories: %w", err)
	}
	if err := parallel(f.c.bundles, f.c.concurrency, func(i int) error {
		u := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{
			"interval": "10m", "path": fmt.Sprintf("./b%d", i), "prune": true,
			"targetNamespace": fmt.Sprintf("%s-%d", fluxPrefix, i%f.c.namespaces),
			"sourceRef":       map[string]any{"kind": "GitRepository", "name": fmt.Sprintf("bench-%d", i%f.repos)}}}}
		u.SetGroupVersionKind(kustomizationGVK)
		u.SetName(fmt.Sprintf("b%d", i))
		u.SetNamespace(fluxNamespace)
		return f.k.Create(ctx, u)
	}); err != nil {
		return fmt.Errorf("creating Kustomizations: %w", err)
	}
	return waitKustomizations(ctx, f.k, f.c.bundles, f.c.fluxTimeout)
}

// waitKustomizations watches Kustomizations until want of them are Ready.
func waitKustomizations(ctx context.Context, k client.WithWatch, want int, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	ready := map[string]bool{}
	last := map[string]string{}
	rv := ""
	lastReport := time.Now()
	for {
		list := &unstructured.UnstructuredList{}
		list.SetGroupVersionKind(kustomizationGVK.GroupVersion().WithKind("KustomizationList"))
		w, err := k.Watch(ctx, list, &client.ListOptions{Namespace: fluxNamespace, Raw: &metav1.ListOptions{ResourceVersion: rv, AllowWatchBookmarks: true}})
		if err != nil {
			return fmt.Errorf("watching Kustomizations: %w", err)
		}
		for ev := range w.ResultChan() {
			u, ok := ev.Object.(*unstructured.Unstructured)
			if !ok {
				continue
			}
			rv = u.GetResourceVersion()
			if u.GetName() == "" {
				continue // a bookmark
			}
			var msg string
			ready[u.GetName()], msg = fluxReady(u)
			last[u.GetName()] = msg
			n := count(ready)
			if n >= want {
				w.Stop()
				fmt.Printf("  %d/%d Ready\n", n, want)
				return nil
			}
			if time.Since(lastReport) > 5*time.Second {
				fmt.Printf("  %d/%d Ready\n", n, want)
				lastReport = time.Now()
			}
		}
		if err := ctx.Err(); err != nil {
			for name, ok := range ready {
				if !ok {
					return fmt.Errorf("%d of %d Kustomizations Ready after %s (%s: %s): %w", count(ready), want, timeout, name, last[name], err)
				}
			}
			return fmt.Errorf("%d of %d Kustomizations Ready after %s: %w", count(ready), want, timeout, err)
		}
	}
}

// count is the number of true values of m.
func count(m map[string]bool) int {
	n := 0
	for _, ok := range m {
		if ok {
			n++
		}
	}
	return n
}

// fluxReady reports whether a Flux object's Ready condition is True for
// its current generation, and the condition's message.
func fluxReady(u *unstructured.Unstructured) (bool, string) {
	raw, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	observed, _, _ := unstructured.NestedInt64(u.Object, "status", "observedGeneration")
	for _, c := range raw {
		m, ok := c.(map[string]any)
		if !ok || m["type"] != "Ready" {
			continue
		}
		msg, _ := m["message"].(string)
		return m["status"] == string(metav1.ConditionTrue) && observed == u.GetGeneration(), msg
	}
	return false, "no Ready condition"
}

// fluxApplied checks, after the measurement, that kustomize-controller
// applied every object.
func fluxApplied(ctx context.Context, k client.Client, c config) error {
	n := 0
	for i := 0; i < c.namespaces; i++ {
		list := &metav1.PartialObjectMetadataList{}
		list.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("ConfigMapList"))
		if err := k.List(ctx, list, client.InNamespace(fmt.Sprintf("%s-%d", fluxPrefix, i)),
			client.HasLabels{"kustomize.toolkit.fluxcd.io/name"}); err != nil {
			return fmt.Errorf("listing Flux's objects: %w", err)
		}
		n += len(list.Items)
	}
	if want := c.bundles * c.objects; n != want {
		return fmt.Errorf("%d objects applied by Flux in %s-*, want %d", n, fluxPrefix, want)
	}
	return nil
}
