package sandbox

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/rukpak/rukpak/pkg/failure"
)

// Environment of a child: the job it runs and its limits.
const (
	envJob     = "RUKPAK_SANDBOX_JOB"
	envMemory  = "RUKPAK_SANDBOX_MEMORY"
	envTimeout = "RUKPAK_SANDBOX_TIMEOUT"
)

// EnvTenant names, in a child's environment, the tenant it works for
// (package tenant), so that the manager's children can be counted by
// tenant from outside (ps, /proc).
const EnvTenant = "RUKPAK_SANDBOX_TENANT"

// notePrefix starts a line of the child's stderr that describes what it
// does (see Describe).
const notePrefix = "rukpak-sandbox-doing: "

// childPriority is the nice value of a child: the manager's own work
// (correcting drift, other installs) comes first.
const childPriority = 10

// Job does the work of a child: it decodes its input from in and returns
// what the parent receives as JSON. An error that is a *failure.Error
// reaches the parent with its reason, one that is a *Need as that *Need;
// any other with its message.
type Job func(ctx context.Context, in json.RawMessage) (any, error)

// envelope is what a child writes to stdout.
type envelope struct {
	Result json.RawMessage `json:"result,omitempty"`
	Error  *jobError       `json:"error,omitempty"`
}

// jobError is an error of the job: Reason is set for a *failure.Error,
// Need for a *Need.
type jobError struct {
	Reason  string `json:"reason,omitempty"`
	Message string `json:"message"`
	Need    *Need  `json:"need,omitempty"`
}

// IsChild reports whether this process is a sandbox child.
func IsChild() bool {
	return os.Getenv(envJob) != ""
}

// ServeIfChild runs job and exits if this process is a sandbox child
// started for the job called name; otherwise it returns at once. Call it
// from an init function of the package that offers the job.
func ServeIfChild(name string, job Job) {
	if os.Getenv(envJob) != name {
		return
	}
	os.Exit(serve(job, os.Stdin, os.Stdout))
}

// Describe tells the parent what the child is doing, in words that fit
// "<what> exceeded the memory limit" ("rendering chart webapp"), so that
// the parent names it if the child dies. Outside a child it does nothing.
func Describe(what string) {
	if !IsChild() {
		return
	}
	fmt.Fprintln(os.Stderr, notePrefix+strings.ReplaceAll(what, "\n", " "))
}

// serve bounds the process, runs job on the input read from stdin and
// writes the envelope to stdout; it returns the exit code.
func serve(job Job, stdin io.Reader, stdout io.Writer) int {
	timeout, err := bound()
	if err != nil {
		fmt.Fprintln(os.Stderr, "sandbox:", err)
		return 3
	}
	// The parent kills the child at the deadline; this is for a child
	// whose parent is gone.
	time.AfterFunc(timeout+5*time.Second, func() { os.Exit(4) })
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	in, err := io.ReadAll(stdin)
	if err != nil {
		fmt.Fprintln(os.Stderr, "sandbox: reading input:", err)
		return 3
	}
	env := run(ctx, job, in)
	if err := json.NewEncoder(stdout).Encode(env); err != nil {
		fmt.Fprintln(os.Stderr, "sandbox: writing result:", err)
		return 3
	}
	return 0
}

// run runs job, turning its error or panic into the envelope's error.
func run(ctx context.Context, job Job, in []byte) (env envelope) {
	defer func() {
		if r := recover(); r != nil {
			env = envelope{Error: &jobError{Message: fmt.Sprintf("panic: %v", r)}}
		}
	}()
	out, err := job(ctx, in)
	if err != nil {
		je := &jobError{Message: err.Error()}
		if f := failure.As(err); f != nil {
			je.Reason = f.Reason
		}
		var need *Need
		if errors.As(err, &need) {
			je.Need = need
		}
		return envelope{Error: je}
	}
	data, err := json.Marshal(out)
	if err != nil {
		return envelope{Error: &jobError{Message: fmt.Sprintf("encoding the result: %v", err)}}
	}
	return envelope{Result: data}
}

// bound applies the limits of the environment to this process and returns
// its timeout.
func bound() (time.Duration, error) {
	memory, err := strconv.ParseInt(os.Getenv(envMemory), 10, 64)
	if err != nil || memory <= 0 {
		return 0, fmt.Errorf("invalid %s %q", envMemory, os.Getenv(envMemory))
	}
	timeout, err := time.ParseDuration(os.Getenv(envTimeout))
	if err != nil || timeout <= 0 {
		return 0, fmt.Errorf("invalid %s %q", envTimeout, os.Getenv(envTimeout))
	}
	lim := &syscall.Rlimit{Cur: uint64(memory), Max: uint64(memory)}
	if err := syscall.Setrlimit(syscall.RLIMIT_DATA, lim); err != nil {
		return 0, fmt.Errorf("setting RLIMIT_DATA: %w", err)
	}
	// The collector works harder as the heap nears the hard bound, so
	// that work that fits is not killed for garbage it left.
	debug.SetMemoryLimit(softMemory(memory))
	debug.SetMaxStack(int(maxStack(memory)))
	runtime.GOMAXPROCS(1)
	if err := syscall.Setpriority(syscall.PRIO_PROCESS, 0, childPriority); err != nil && !errors.Is(err, syscall.EACCES) {
		return 0, fmt.Errorf("lowering priority: %w", err)
	}
	return timeout, nil
}
