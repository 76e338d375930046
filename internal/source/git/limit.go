package git

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/net/proxy"

	"github.com/rukpak/rukpak/api/v1alpha2"
	"github.com/rukpak/rukpak/pkg/failure"
)

// errOverBudget is what reads return once a server has sent more than the
// budget of an operation.
var errOverBudget = errors.New("the server sent more than the limit")

// budget counts the bytes one operation (a resolve or an unpack) receives
// from the server, over every request and connection it makes.
type budget struct {
	max      int64
	n        atomic.Int64
	exceeded atomic.Bool
}

// take counts n more bytes, failing once the total is over the budget.
func (b *budget) take(n int) error {
	if b.n.Add(int64(n)) > b.max {
		b.exceeded.Store(true)
		return errOverBudget
	}
	return nil
}

// reader counts what r reads against b.
func (b *budget) reader(r io.Reader) io.Reader { return &budgetReader{r: r, b: b} }

type budgetReader struct {
	r io.Reader
	b *budget
}

func (r *budgetReader) Read(p []byte) (int, error) {
	n, err := r.r.Read(p)
	if berr := r.b.take(n); berr != nil {
		return n, berr
	}
	return n, err
}

// op is one operation on a repository: what it may receive and until when.
type op struct {
	repo     string
	budget   *budget
	deadline time.Time // zero: none
}

// fail returns the terminal failure of an operation that went over its
// budget, or else err.
func (o *op) fail(err error) error {
	if o.budget.exceeded.Load() {
		return failure.New(v1alpha2.ReasonResourceLimit,
			"repository %s sent more than the limit of %d bytes (the cap on what one fetch may receive)", o.repo, o.budget.max)
	}
	return err
}

// SSH connections are dialled through a proxy dialer of this package, so
// that each gets the deadline and the byte budget of its operation: go-git
// dials SSH itself and bounds only the TCP connect, not the handshake or
// what follows. The "proxy" URL names the operation; the dialer connects
// directly.
const sshDialScheme = "rukpak-git-op"

var (
	opsMu  sync.Mutex
	ops    = map[string]*op{}
	nextOp atomic.Uint64
)

func init() {
	proxy.RegisterDialerType(sshDialScheme, func(u *url.URL, _ proxy.Dialer) (proxy.Dialer, error) {
		opsMu.Lock()
		o, ok := ops[u.Host]
		opsMu.Unlock()
		if !ok {
			return nil, fmt.Errorf("git operation %s is over", u.Host)
		}
		return &opDialer{op: o}, nil
	})
}

// register makes o reachable by the dialer and returns the proxy URL that
// names it, and a function that forgets it.
func register(o *op) (string, func()) {
	id := "op-" + strconv.FormatUint(nextOp.Add(1), 10)
	opsMu.Lock()
	ops[id] = o
	opsMu.Unlock()
	return sshDialScheme + "://" + id, func() {
		opsMu.Lock()
		delete(ops, id)
		opsMu.Unlock()
	}
}

// opDialer dials directly, and hands out connections whose reads and
// writes fail past the operation's deadline and whose reads count against
// its budget.
type opDialer struct{ op *op }

var _ proxy.ContextDialer = (*opDialer)(nil)

func (d *opDialer) Dial(network, addr string) (net.Conn, error) {
	return d.DialContext(context.Background(), network, addr)
}

func (d *opDialer) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	if !d.op.deadline.IsZero() {
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, d.op.deadline)
		defer cancel()
	}
	var nd net.Dialer
	c, err := nd.DialContext(ctx, network, addr)
	if err != nil {
		return nil, err
	}
	if !d.op.deadline.IsZero() {
		if err := c.SetDeadline(d.op.deadline); err != nil {
			_ = c.Close()
			return nil, fmt.Errorf("setting the deadline of the connection to %s: %w", addr, err)
		}
	}
	return &budgetConn{Conn: c, b: d.op.budget}, nil
}

// budgetConn counts what is read from a connection against a budget.
type budgetConn struct {
	net.Conn
	b *budget
}

func (c *budgetConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if berr := c.b.take(n); berr != nil {
		return n, berr
	}
	return n, err
}
