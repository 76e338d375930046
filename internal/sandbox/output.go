package sandbox

import (
	"bytes"
	"errors"
	"os/exec"
	"strings"
	"sync"
	"syscall"
)

// cappedBuffer keeps what the child writes to stdout up to limit bytes;
// past it, it keeps nothing more and calls onOverflow once.
type cappedBuffer struct {
	mu         sync.Mutex
	buf        bytes.Buffer
	limit      int64
	over       bool
	onOverflow func()
}

// Write keeps p if it fits.
func (b *cappedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.over {
		return len(p), nil
	}
	if int64(b.buf.Len())+int64(len(p)) > b.limit {
		b.over = true
		b.buf = bytes.Buffer{}
		if b.onOverflow != nil {
			b.onOverflow()
		}
		return len(p), nil
	}
	return b.buf.Write(p)
}

func (b *cappedBuffer) overflowed() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.over
}

// Bytes returns what was kept.
func (b *cappedBuffer) Bytes() []byte {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Bytes()
}

// maxStderr is how much of the start of a child's stderr is kept: the Go
// runtime's fatal error or a panic comes first, the goroutines after.
const maxStderr = 2 << 10

// stderrLog keeps the start of a child's stderr and, apart, the last line
// it wrote with Describe.
type stderrLog struct {
	mu      sync.Mutex
	partial []byte
	last    string
	head    []byte
}

// Write splits p into lines.
func (l *stderrLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	data := append(l.partial, p...)
	for {
		i := bytes.IndexByte(data, '\n')
		if i < 0 {
			break
		}
		l.line(data[:i])
		data = data[i+1:]
	}
	// A line longer than what is kept is kept in part.
	if len(data) > maxStderr {
		l.line(data)
		data = nil
	}
	l.partial = append([]byte(nil), data...)
	return len(p), nil
}

// line records one line of stderr.
func (l *stderrLog) line(s []byte) {
	if what, ok := strings.CutPrefix(string(s), notePrefix); ok {
		l.last = what
		return
	}
	if room := maxStderr - len(l.head); room > 0 {
		l.head = append(l.head, s[:min(len(s), room)]...)
		l.head = append(l.head, '\n')
	}
}

// doing returns what the child last said it does.
func (l *stderrLog) doing() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.last
}

// start returns the start of the child's stderr.
func (l *stderrLog) start() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	s := string(l.head)
	if len(s) < maxStderr {
		s += string(l.partial[:min(len(l.partial), maxStderr-len(s))])
	}
	return strings.TrimSpace(s)
}

// What made a child die.
const (
	causeOther = iota
	causeMemory
	causeStack
)

// cause tells why the child ended: the Go runtime's fatal errors name it,
// and a child killed by SIGKILL that the runner did not kill was killed
// for its memory (the kernel's OOM killer, a cgroup's limit).
//
// A child that died of a fault in the Go runtime itself (the runtime
// prints "SIGSEGV: segmentation violation" and exits 2; a fault in Go
// code would have been a panic the child recovers) after its peak RSS
// passed the soft memory limit it runs under also ran out of memory: some
// of the runtime's allocations (Go 1.26's GC work queues) do not check
// that the system gave them memory, and fault on nil rather than throw
// "out of memory".
func cause(res *result, memory int64) int {
	switch s := res.stderr; {
	case strings.Contains(s, "stack overflow"), strings.Contains(s, "goroutine stack exceeds"):
		return causeStack
	case strings.Contains(s, "out of memory"), strings.Contains(s, "cannot allocate memory"):
		return causeMemory
	case runtimeFault(s) && res.maxRSS >= softMemory(memory):
		return causeMemory
	}
	var exit *exec.ExitError
	if errors.As(res.waitErr, &exit) {
		if ws, ok := exit.Sys().(syscall.WaitStatus); ok && ws.Signaled() && ws.Signal() == syscall.SIGKILL {
			return causeMemory
		}
	}
	return causeOther
}

// runtimeFault tells whether stderr starts with the Go runtime's report of
// a signal it could not turn into a panic.
func runtimeFault(stderr string) bool {
	for _, sig := range []string{"SIGSEGV: ", "SIGBUS: "} {
		if strings.HasPrefix(stderr, sig) {
			return true
		}
	}
	return false
}
