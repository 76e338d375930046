package sandbox

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/rukpak/rukpak/api/v1alpha2"
	"github.com/rukpak/rukpak/internal/tenant"
	"github.com/rukpak/rukpak/pkg/failure"
)

// Runner starts children of the current executable within Limits. It is
// safe for concurrent use.
type Runner struct {
	limits Limits
	exe    string
	slots  *tenant.Slots
}

// New returns a Runner of children of the running executable with limits
// (zero fields are defaults).
func New(limits Limits) (*Runner, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("finding the executable to run sandboxed children: %w", err)
	}
	limits = limits.withDefaults()
	return &Runner{limits: limits, exe: exe, slots: tenant.NewSlots(limits.Concurrency, limits.TenantConcurrency).Lend(1)}, nil
}

// Acquire waits for a slot of the share of the tenant ctx carries, as Run
// does, but not for one of the total, and returns the function that gives
// it back. Work that renders in the caller's process takes a slot this
// way: it counts against its tenant's share, and starts no child, so it
// neither adds to what the children use together nor waits behind other
// tenants' children. A tenant whose share is full is lent a slot while no
// other tenant waits for one and one slot of the total stays unheld
// (tenant.Slots.Lend): a tenant alone is not held to its share, and one
// that comes along finds a slot.
func (r *Runner) Acquire(ctx context.Context, what string) (release func(), err error) {
	return r.slots.AcquireShare(ctx, what)
}

// Usage returns how many of r's slots are held now and the most held at
// once, in all and by tenant.
func (r *Runner) Usage() tenant.Usage { return r.slots.Usage() }

// Limits returns the limits of r's children, defaults filled in.
func (r *Runner) Limits() Limits { return r.limits }

// Call is one run of a job in a child.
type Call struct {
	// Job names the job, as registered with ServeIfChild.
	Job string
	// What says what the child does, for messages: "rendering the bundle".
	// What the child Describes replaces it.
	What string
	// In is sent to the child as JSON.
	In any
	// Out receives the child's result, decoded from JSON.
	Out any
	// CrashReason is the condition reason of a child that dies for
	// another cause than a limit (a bug, not the content's fault in
	// general); empty means the error is not terminal.
	CrashReason string
}

// Run runs c in a child and decodes its result into c.Out. Every child
// waits for a slot first: at most Limits.Concurrency run at once, and at
// most Limits.TenantConcurrency of the tenant ctx carries (package
// tenant). A child over a limit is a *failure.Error with reason
// ResourceLimit naming the limit; an error the job returned keeps its
// reason and message, and a *Need is returned as one; a canceled ctx is
// returned as such.
func (r *Runner) Run(ctx context.Context, c Call) error {
	in, err := json.Marshal(c.In)
	if err != nil {
		return fmt.Errorf("encoding the input of %s: %w", c.What, err)
	}
	release, err := r.slots.Acquire(ctx, c.What)
	if err != nil {
		return err
	}
	defer release()
	res, err := r.start(ctx, c.Job, in, tenant.From(ctx))
	if err != nil {
		return err
	}
	if res.what != "" {
		c.What = res.what
	}
	if err := r.verdict(ctx, c, res); err != nil {
		return err
	}
	var env envelope
	if err := json.Unmarshal(res.stdout, &env); err != nil {
		return r.crashed(c, res, fmt.Sprintf("its result is not readable: %v", err))
	}
	if env.Error != nil {
		if env.Error.Need != nil {
			return env.Error.Need
		}
		if env.Error.Reason != "" {
			return &failure.Error{Reason: env.Error.Reason, Message: env.Error.Message}
		}
		return errors.New(env.Error.Message)
	}
	if c.Out == nil {
		return nil
	}
	if err := json.Unmarshal(env.Result, c.Out); err != nil {
		return fmt.Errorf("decoding the result of %s: %w", c.What, err)
	}
	return nil
}

// result is how a child ended.
type result struct {
	// waitErr is what Wait returned.
	waitErr error
	// timedOut is set when the child was killed for the time it took:
	// cpuTimedOut when it used Limits.Timeout of CPU time, else at the
	// wall-clock deadline. overflowed is set when it wrote more than
	// MaxOutputBytes.
	timedOut, cpuTimedOut, overflowed bool
	stdout                            []byte
	// what is the last thing the child said it does; stderr the start of
	// the rest of its stderr.
	what, stderr string
	took         time.Duration
	// maxRSS is the child's peak resident set, in bytes.
	maxRSS int64
}

// start runs the child to its end.
func (r *Runner) start(ctx context.Context, job string, in []byte, tenantName string) (*result, error) {
	runCtx, cancel := context.WithTimeout(ctx, r.limits.WallTimeout)
	defer cancel()
	cmd := exec.Command(r.exe)
	cmd.Env = r.env(job, tenantName)
	cmd.Stdin = bytes.NewReader(in)
	// The child and anything it might start are one group, killed as one.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	stdout := &cappedBuffer{limit: r.limits.MaxOutputBytes}
	stderr := &stderrLog{}
	cmd.Stdout, cmd.Stderr = stdout, stderr
	begin := time.Now()
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting sandboxed child %s: %w", r.exe, err)
	}
	pgid := cmd.Process.Pid
	kill := func() { _ = syscall.Kill(-pgid, syscall.SIGKILL) }
	stdout.onOverflow = kill
	done := make(chan struct{})
	var cpuOut atomic.Bool
	go func() {
		tick := time.NewTicker(cpuPollInterval)
		defer tick.Stop()
		for {
			select {
			case <-runCtx.Done():
				kill()
				return
			case <-done:
				return
			case <-tick.C:
				if used, ok := cpuTime(pgid); ok && used >= r.limits.Timeout {
					cpuOut.Store(true)
					kill()
					return
				}
			}
		}
	}()
	waitErr := cmd.Wait()
	close(done)
	// Whatever the child left behind in its group goes with it.
	kill()
	return &result{
		waitErr:     waitErr,
		timedOut:    cpuOut.Load() || errors.Is(runCtx.Err(), context.DeadlineExceeded) && ctx.Err() == nil,
		cpuTimedOut: cpuOut.Load(),
		overflowed:  stdout.overflowed(),
		stdout:      stdout.Bytes(),
		what:        stderr.doing(),
		stderr:      stderr.start(),
		took:        time.Since(begin),
		maxRSS:      peakRSS(cmd.ProcessState),
	}, nil
}

// env is the child's whole environment: its job, its tenant (for whoever
// lists the manager's children: it tells the content nothing it does not
// know) and limits, and where temporary files go. Nothing else of the
// parent's (credentials in the environment, KUBECONFIG) reaches content
// the child processes.
func (r *Runner) env(job, tenantName string) []string {
	return []string{
		envJob + "=" + job,
		EnvTenant + "=" + tenantName,
		envMemory + "=" + strconv.FormatInt(r.limits.Memory, 10),
		envTimeout + "=" + r.limits.WallTimeout.String(),
		"TMPDIR=" + os.TempDir(),
		// A fatal error prints its message, not every goroutine.
		"GOTRACEBACK=none",
	}
}

// verdict returns the error of a child that did not end normally, or nil.
func (r *Runner) verdict(ctx context.Context, c Call, res *result) error {
	switch {
	case res.cpuTimedOut:
		return failure.New(v1alpha2.ReasonResourceLimit, "%s did not finish within %s of CPU time", c.What, r.limits.Timeout)
	case res.timedOut:
		return failure.New(v1alpha2.ReasonResourceLimit, "%s did not finish within %s", c.What, r.limits.WallTimeout)
	case ctx.Err() != nil:
		return fmt.Errorf("%s: %w", c.What, ctx.Err())
	case res.overflowed:
		return failure.New(v1alpha2.ReasonResourceLimit, "%s produced more than the limit of %s of output",
			c.What, bytesString(r.limits.MaxOutputBytes))
	case res.waitErr == nil:
		return nil
	}
	switch cause(res, r.limits.Memory) {
	case causeStack:
		return failure.New(v1alpha2.ReasonResourceLimit, "%s exceeded the stack limit of %s (templates recursing without end?)",
			c.What, bytesString(maxStack(r.limits.Memory)))
	case causeMemory:
		return failure.New(v1alpha2.ReasonResourceLimit, "%s exceeded the memory limit of %s", c.What, bytesString(r.limits.Memory))
	}
	return r.crashed(c, res, fmt.Sprintf("%v: %s", res.waitErr, firstLines(res.stderr, 3)))
}

// crashed is the error of a child that died for another reason than a
// limit.
func (r *Runner) crashed(c Call, res *result, detail string) error {
	if c.CrashReason == "" {
		return fmt.Errorf("%s: sandboxed child failed: %s", c.What, detail)
	}
	return failure.New(c.CrashReason, "%s: sandboxed child failed: %s", c.What, detail)
}

// firstLines returns the first n lines of s, joined by "; ".
func firstLines(s string, n int) string {
	lines := strings.Split(s, "\n")
	return strings.Join(lines[:min(n, len(lines))], "; ")
}

// peakRSS returns the peak resident set of an ended process, in bytes, or
// 0 when the system does not say.
func peakRSS(ps *os.ProcessState) int64 {
	if ps == nil {
		return 0
	}
	if ru, ok := ps.SysUsage().(*syscall.Rusage); ok {
		return ru.Maxrss << 10 // Linux counts KiB.
	}
	return 0
}
