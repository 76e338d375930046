package e2e

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/rukpak/rukpak/internal/sourcetree"
	"github.com/rukpak/rukpak/pkg/envtest"
)

// chromiumPaths are where Debian's package (and others) put Chromium.
var chromiumPaths = []string{"chromium", "chromium-browser", "google-chrome", "/usr/bin/chromium"}

// chromium returns the path of a Chromium binary; the test fails, with
// what to install, when there is none (.ci/run installs Debian's
// package).
func chromium(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("CHROMIUM"); p != "" {
		return p
	}
	for _, name := range chromiumPaths {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	t.Fatalf("no Chromium found (tried $CHROMIUM and %v): install it, e.g. apt-get install -y chromium (.ci/run does)", chromiumPaths)
	return ""
}

// newBrowser starts a headless Chromium with a fresh profile and returns a
// tab's context; both end with the test.
func newBrowser(t *testing.T) context.Context {
	t.Helper()
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(chromium(t)),
		chromedp.Flag("headless", true),
		chromedp.Flag("no-sandbox", true),
		chromedp.Flag("disable-gpu", true),
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("no-first-run", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1400, 1000),
	}
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelTab := chromedp.NewContext(actx)
	t.Cleanup(func() { cancelTab(); cancelAlloc() })
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("starting Chromium: %v", err)
	}
	return ctx
}

// browse runs actions in the tab, within a minute.
func browse(t *testing.T, tab context.Context, actions ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	ctx, cancel := context.WithTimeout(tab, time.Minute)
	defer cancel()
	if err := chromedp.Do(ctx, actions...); err != nil {
		t.Fatalf("browser: %v", err)
	}
}

// eval evaluates the JavaScript expression js in the tab.
func eval[T any](tab context.Context, js string) (T, error) {
	ctx, cancel := context.WithTimeout(tab, 10*time.Second)
	defer cancel()
	return chromedp.Run(ctx, chromedp.Evaluate[T](js))
}

// screenshot writes the whole page to test-results/NAME.png.
func screenshot(t *testing.T, tab context.Context, name string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(tab, time.Minute)
	defer cancel()
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatalf("screenshot %s: %v", name, err)
	}
	dir := filepath.Join(sourcetree.Root(), "test-results")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, name+".png"), png, 0o644); err != nil {
		t.Fatal(err)
	}
}

// startUI runs rukpakctl ui with kubeconfig until the test ends and
// returns the URL it printed.
func startUI(t *testing.T, kubeconfig string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, filepath.Join(suite.bin, "rukpakctl"), append([]string{"ui", "--open=false", "--kubeconfig", kubeconfig}, args...)...)
	cmd.Stderr = os.Stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cancel(); _ = cmd.Wait() })
	line := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		if sc.Scan() {
			line <- sc.Text()
		}
		close(line)
		for sc.Scan() {
		}
	}()
	select {
	case url, ok := <-line:
		if !ok || !strings.HasPrefix(url, "http://127.0.0.1:") {
			t.Fatalf("rukpakctl ui printed %q, want its URL", url)
		}
		return url
	case <-time.After(60 * time.Second):
		t.Fatal("rukpakctl ui printed no URL within 60s")
	}
	return ""
}

// waitPage waits until the JavaScript predicate js holds on the page (live
// updates change it without a reload).
func waitPage(t *testing.T, tab context.Context, timeout time.Duration, what, js string) {
	t.Helper()
	envtest.Eventually(t, timeout, func() error {
		ok, err := eval[bool](tab, js)
		if err != nil {
			return fmt.Errorf("%s: %w", what, err)
		}
		if !ok {
			text, _ := eval[string](tab, "document.body ? document.body.innerText : ''")
			return fmt.Errorf("%s: not yet; the page shows:\n%s", what, text)
		}
		return nil
	})
}

// jsString quotes s as a JavaScript string literal.
func jsString(s string) string { return fmt.Sprintf("%q", s) }
