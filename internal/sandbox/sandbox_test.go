package sandbox

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rukpak/rukpak/api/v1alpha2"
	"github.com/rukpak/rukpak/internal/tenant"
	"github.com/rukpak/rukpak/pkg/failure"
)

// The jobs of the tests' children: this test binary is its own sandbox.
func init() {
	ServeIfChild("test-echo", func(_ context.Context, in json.RawMessage) (any, error) {
		var s string
		if err := json.Unmarshal(in, &s); err != nil {
			return nil, err
		}
		return strings.ToUpper(s), nil
	})
	ServeIfChild("test-fail", func(context.Context, json.RawMessage) (any, error) {
		return nil, failure.New(v1alpha2.ReasonRenderFailed, "templates/x.yaml: bad template")
	})
	ServeIfChild("test-need", func(context.Context, json.RawMessage) (any, error) {
		need, err := NewNeed("test-items", []string{"a", "b"}, "needs a and b")
		if err != nil {
			return nil, err
		}
		return nil, fmt.Errorf("wrapped: %w", need)
	})
	ServeIfChild("test-error", func(context.Context, json.RawMessage) (any, error) {
		return nil, errors.New("not terminal")
	})
	ServeIfChild("test-alloc", func(context.Context, json.RawMessage) (any, error) {
		Describe("allocating forever")
		var kept [][]byte
		for {
			b := make([]byte, 1<<20)
			for i := range b {
				b[i] = byte(i)
			}
			kept = append(kept, b) //nolint:staticcheck // kept alive on purpose: the child must run out of memory
		}
	})
	ServeIfChild("test-huge", func(context.Context, json.RawMessage) (any, error) {
		// One allocation far over the limit, as sprig's until 2000000000.
		return len(make([]int, 2_000_000_000)), nil
	})
	ServeIfChild("test-loop", func(context.Context, json.RawMessage) (any, error) {
		Describe("looping forever")
		n := 0
		for {
			n++
		}
	})
	// Takes time by the clock but next to no CPU time, as a child does
	// on a machine busy with other work.
	ServeIfChild("test-sleep", func(_ context.Context, in json.RawMessage) (any, error) {
		var d time.Duration
		if err := json.Unmarshal(in, &d); err != nil {
			return nil, err
		}
		Describe("sleeping")
		time.Sleep(d)
		return "slept", nil
	})
	ServeIfChild("test-recurse", func(context.Context, json.RawMessage) (any, error) {
		return recurse(0), nil
	})
	ServeIfChild("test-flood", func(context.Context, json.RawMessage) (any, error) {
		return strings.Repeat("x", 8<<20), nil
	})
	ServeIfChild("test-exit", func(context.Context, json.RawMessage) (any, error) {
		os.Stderr.WriteString("something broke\n")
		os.Exit(7)
		return nil, nil
	})
	ServeIfChild("test-env", func(context.Context, json.RawMessage) (any, error) {
		return os.Environ(), nil
	})
	// Marks itself alive in a directory, and says how many children were
	// alive, in all and of its tenant, while it was.
	ServeIfChild("test-overlap", func(_ context.Context, in json.RawMessage) (any, error) {
		var dir string
		if err := json.Unmarshal(in, &dir); err != nil {
			return nil, err
		}
		me := filepath.Join(dir, os.Getenv(EnvTenant)+"."+strconv.Itoa(os.Getpid()))
		if err := os.WriteFile(me, nil, 0o600); err != nil {
			return nil, err
		}
		defer os.Remove(me)
		var seen overlap
		for range 10 {
			time.Sleep(15 * time.Millisecond)
			des, err := os.ReadDir(dir)
			if err != nil {
				return nil, err
			}
			mine := 0
			for _, de := range des {
				if strings.HasPrefix(de.Name(), os.Getenv(EnvTenant)+".") {
					mine++
				}
			}
			seen.All, seen.Tenant = max(seen.All, len(des)), max(seen.Tenant, mine)
		}
		return seen, nil
	})
}

// overlap is what a test-overlap child saw alive at once.
type overlap struct{ All, Tenant int }

// recurse calls itself until the child's stack limit ends it.
func recurse(n int) int {
	var pad [256]byte
	pad[n%256] = byte(n)
	return recurse(n+1) + int(pad[0]) //nolint:staticcheck // recursing without end is the test
}

func newRunner(t *testing.T, l Limits) *Runner {
	t.Helper()
	r, err := New(l)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestRun(t *testing.T) {
	// Each limit is tested alone: the memory, stack and output limits with
	// a time limit that a busy machine does not reach first, the time
	// limit with a short one.
	r := newRunner(t, Limits{Memory: 256 << 20, Timeout: 2 * time.Minute, MaxOutputBytes: 4 << 20})
	// The loop's CPU time is what ends it, however long the machine
	// takes to give it that much.
	short := newRunner(t, Limits{Memory: 256 << 20, Timeout: 2 * time.Second, WallTimeout: 10 * time.Minute, MaxOutputBytes: 4 << 20})
	tests := []struct {
		name       string
		job        string
		in         any
		want       any
		reason     string // of the *failure.Error; "" for a plain error
		wantErr    []string
		notFailure bool
	}{
		{name: "result", job: "test-echo", in: "hello", want: "HELLO"},
		{name: "job failure keeps its reason", job: "test-fail", reason: v1alpha2.ReasonRenderFailed,
			wantErr: []string{"templates/x.yaml: bad template"}},
		{name: "plain job error", job: "test-error", notFailure: true, wantErr: []string{"not terminal"}},
		{name: "unbounded allocation", job: "test-alloc", reason: v1alpha2.ReasonResourceLimit,
			wantErr: []string{"allocating forever exceeded the memory limit of 256 MiB"}},
		{name: "one huge allocation", job: "test-huge", reason: v1alpha2.ReasonResourceLimit,
			wantErr: []string{"running the test exceeded the memory limit of 256 MiB"}},
		{name: "endless loop", job: "test-loop", reason: v1alpha2.ReasonResourceLimit,
			wantErr: []string{"looping forever did not finish within 2s of CPU time"}},
		{name: "endless recursion", job: "test-recurse", reason: v1alpha2.ReasonResourceLimit,
			wantErr: []string{"running the test exceeded the stack limit of 32 MiB"}},
		{name: "output flood", job: "test-flood", reason: v1alpha2.ReasonResourceLimit,
			wantErr: []string{"running the test produced more than the limit of 4 MiB of output"}},
		{name: "crash", job: "test-exit", reason: v1alpha2.ReasonRenderFailed,
			wantErr: []string{"running the test: sandboxed child failed: exit status 7: something broke"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var got any
			start := time.Now()
			runner := r
			if tt.job == "test-loop" {
				runner = short
			}
			err := runner.Run(context.Background(), Call{Job: tt.job, What: "running the test", In: tt.in, Out: &got,
				CrashReason: v1alpha2.ReasonRenderFailed})
			t.Logf("took %v", time.Since(start))
			if tt.wantErr == nil {
				if err != nil {
					t.Fatalf("Run: %v", err)
				}
				if got != tt.want {
					t.Fatalf("result %v, want %v", got, tt.want)
				}
				return
			}
			if err == nil {
				t.Fatal("Run succeeded, want an error")
			}
			for _, w := range tt.wantErr {
				if !strings.Contains(err.Error(), w) {
					t.Fatalf("error %q does not contain %q", err, w)
				}
			}
			f := failure.As(err)
			if tt.notFailure {
				if f != nil {
					t.Fatalf("error %q is a terminal failure", err)
				}
				return
			}
			if f == nil || f.Reason != tt.reason {
				t.Fatalf("error %q: reason %q, want %q", err, failure.Reason(err, ""), tt.reason)
			}
		})
	}
}

// A *Need a job returns, even wrapped, reaches the parent as a *Need with
// its kind and data intact.
func TestRunNeed(t *testing.T) {
	r := newRunner(t, Limits{})
	err := r.Run(context.Background(), Call{Job: "test-need", What: "running the test", CrashReason: v1alpha2.ReasonRenderFailed})
	var need *Need
	if !errors.As(err, &need) {
		t.Fatalf("Run returned %v (%T), want a *Need", err, err)
	}
	if failure.As(err) != nil {
		t.Errorf("a *Need is a terminal failure: %v", err)
	}
	var items []string
	if err := need.Decode(&items); err != nil {
		t.Fatal(err)
	}
	if need.Kind != "test-items" || !slices.Equal(items, []string{"a", "b"}) || need.Error() != "needs a and b" {
		t.Errorf("need = %s %v %q, want test-items [a b] \"needs a and b\"", need.Kind, items, need.Error())
	}
}

// A child is killed at the wall-clock deadline, not later, however little
// CPU time it used.
func TestRunDeadline(t *testing.T) {
	r := newRunner(t, Limits{Timeout: time.Minute, WallTimeout: time.Second})
	start := time.Now()
	err := r.Run(context.Background(), Call{Job: "test-sleep", What: "x", In: time.Hour})
	if failure.Reason(err, "") != v1alpha2.ReasonResourceLimit || !strings.Contains(err.Error(), "sleeping did not finish within 1s") {
		t.Fatalf("Run = %v, want ResourceLimit: sleeping did not finish within 1s", err)
	}
	if took := time.Since(start); took > 3*time.Second {
		t.Fatalf("a 1s deadline took %v to end the child", took)
	}
}

// A canceled context ends the child and is not a limit.
func TestRunCanceled(t *testing.T) {
	r := newRunner(t, Limits{Timeout: time.Minute})
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	err := r.Run(ctx, Call{Job: "test-loop", What: "x"})
	if !errors.Is(err, context.DeadlineExceeded) || failure.As(err) != nil {
		t.Fatalf("Run = %v, want the context's error", err)
	}
}

// The child sees none of the parent's environment.
func TestRunEnvironment(t *testing.T) {
	t.Setenv("KUBECONFIG", "/secret/kubeconfig")
	r := newRunner(t, Limits{})
	var env []string
	if err := r.Run(context.Background(), Call{Job: "test-env", What: "x", Out: &env}); err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(env, EnvTenant+"="+tenant.Unattributed) {
		t.Errorf("the child's environment %q does not name its tenant", env)
	}
	for _, kv := range env {
		if !strings.HasPrefix(kv, "RUKPAK_SANDBOX_") && !strings.HasPrefix(kv, "TMPDIR=") && kv != "GOTRACEBACK=none" {
			t.Errorf("the child's environment holds %q", kv)
		}
	}
}

// At most Concurrency children run at once; the others wait.
func TestRunConcurrency(t *testing.T) {
	r := newRunner(t, Limits{Concurrency: 1, Timeout: time.Second})
	done := make(chan error, 1)
	go func() { done <- r.Run(context.Background(), Call{Job: "test-loop", What: "x"}) }()
	// Wait until the loop holds the slot.
	deadline := time.Now().Add(5 * time.Second)
	for r.Usage().Running == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the first child never took its slot")
		}
		time.Sleep(10 * time.Millisecond)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	err := r.Run(ctx, Call{Job: "test-echo", What: "x", In: "a"})
	if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "slots to start x") {
		t.Fatalf("second Run = %v, want it to wait for the slot", err)
	}
	if err := <-done; failure.Reason(err, "") != v1alpha2.ReasonResourceLimit {
		t.Fatalf("first Run = %v", err)
	}
}

// Many children of several tenants at once: the children themselves count
// how many of them are alive together, which never exceeds Concurrency in
// all nor TenantConcurrency of one tenant; in-process work taken with
// Acquire counts against the same slots.
func TestRunTenantConcurrency(t *testing.T) {
	if testing.Short() {
		t.Skip("starts 33 children (tenant.Slots is tested alone in package tenant): make test runs it, make test-unit does not")
	}
	for _, tc := range []struct {
		name                   string
		limits                 Limits
		tenants, each, inProc  int
		wantAll, wantPerTenant int
	}{
		{"defaults: 4, 2 per tenant", Limits{}, 3, 4, 0, 4, 2},
		{"one per tenant", Limits{Concurrency: 3, TenantConcurrency: 1}, 4, 3, 0, 3, 1},
		{"with in-process work", Limits{Concurrency: 4, TenantConcurrency: 2}, 3, 3, 4, 4, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRunner(t, tc.limits)
			dir := t.TempDir()
			var (
				wg   sync.WaitGroup
				mu   sync.Mutex
				seen overlap
			)
			for i := range tc.tenants {
				ctx := tenant.WithContext(context.Background(), "team-"+strconv.Itoa(i))
				for range tc.each {
					wg.Add(1)
					go func() {
						defer wg.Done()
						var got overlap
						if err := r.Run(ctx, Call{Job: "test-overlap", What: "x", In: dir, Out: &got}); err != nil {
							t.Error(err)
							return
						}
						mu.Lock()
						seen.All, seen.Tenant = max(seen.All, got.All), max(seen.Tenant, got.Tenant)
						mu.Unlock()
					}()
				}
				for range tc.inProc {
					wg.Add(1)
					go func() {
						defer wg.Done()
						release, err := r.Acquire(ctx, "in-process work")
						if err != nil {
							t.Error(err)
							return
						}
						time.Sleep(20 * time.Millisecond)
						release()
					}()
				}
			}
			wg.Wait()
			u := r.Usage()
			t.Logf("children alive at once: %d (of one tenant %d); slots held at once: %d, by tenant %v", seen.All, seen.Tenant, u.Peak, u.PeakOf)
			if seen.All > tc.wantAll || u.Peak > tc.wantAll {
				t.Fatalf("%d children (%d slots) at once, more than %d", seen.All, u.Peak, tc.wantAll)
			}
			if seen.Tenant > tc.wantPerTenant {
				t.Fatalf("%d children of one tenant at once, more than %d", seen.Tenant, tc.wantPerTenant)
			}
			for tn, p := range u.PeakOf {
				if p > tc.wantPerTenant {
					t.Fatalf("tenant %s held %d slots at once, more than %d", tn, p, tc.wantPerTenant)
				}
			}
			if seen.All < 2 {
				t.Fatalf("children never overlapped (%d at most): the test measures nothing", seen.All)
			}
		})
	}
}

// What the runner concludes from how a child ended.
func TestCause(t *testing.T) {
	const memory = 512 << 20
	exit2 := exec.Command("sh", "-c", "exit 2").Run()
	tests := []struct {
		name string
		res  result
		want int
	}{
		{"stack overflow", result{waitErr: exit2, stderr: "runtime: goroutine stack exceeds 67108864-byte limit"}, causeStack},
		{"runtime out of memory", result{waitErr: exit2, stderr: "fatal error: runtime: out of memory"}, causeMemory},
		{"runtime fault past the soft limit", result{waitErr: exit2,
			stderr: "SIGSEGV: segmentation violation\nPC=0xcc58fd m=0 sigcode=1 addr=0x0", maxRSS: 430 << 20}, causeMemory},
		{"runtime fault well below it", result{waitErr: exit2,
			stderr: "SIGSEGV: segmentation violation\nPC=0xcc58fd m=0 sigcode=1 addr=0x0", maxRSS: 40 << 20}, causeOther},
		{"large and failing for another reason", result{waitErr: exit2, stderr: "something broke", maxRSS: 500 << 20}, causeOther},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := cause(&tt.res, memory); got != tt.want {
				t.Fatalf("cause = %d, want %d", got, tt.want)
			}
		})
	}
}

func TestBytesString(t *testing.T) {
	for n, want := range map[int64]string{512 << 20: "512 MiB", 1 << 30: "1 GiB", 1000: "1000 bytes", 64 << 10: "64 KiB"} {
		if got := bytesString(n); got != want {
			t.Errorf("bytesString(%d) = %q, want %q", n, got, want)
		}
	}
}

// BenchmarkRun measures what a child costs: start, input, result.
func BenchmarkRun(b *testing.B) {
	r, err := New(Limits{})
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		var got string
		if err := r.Run(context.Background(), Call{Job: "test-echo", What: "x", In: "a", Out: &got}); err != nil {
			b.Fatal(err)
		}
	}
}
