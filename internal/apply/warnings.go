package apply

import (
	"context"
	"sync"

	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/log"
)

// maxWarnings bounds the warnings collected for one apply.
const maxWarnings = 20

// warningsKey is the context key of a warning collector.
type warningsKey struct{}

// collector gathers the distinct warnings of the requests made with one
// context.
type collector struct {
	mu   sync.Mutex
	seen map[string]bool
	msgs []string
}

// CollectWarnings returns a context whose requests through a client that
// uses WarningHandler gather the API server's warnings, and a function
// returning them (distinct, in order of arrival, at most 20).
func CollectWarnings(ctx context.Context) (context.Context, func() []string) {
	c := &collector{seen: map[string]bool{}}
	return context.WithValue(ctx, warningsKey{}, c), func() []string {
		c.mu.Lock()
		defer c.mu.Unlock()
		return append([]string(nil), c.msgs...)
	}
}

// WarningHandler hands API server warnings (the Warning response header,
// e.g. a deprecated API or field) to the collector of the request's
// context, or logs them when there is none. Set it as the
// WarningHandlerWithContext of the rest.Config the Engine's clients use.
type WarningHandler struct{}

var _ rest.WarningHandlerWithContext = WarningHandler{}

// HandleWarningHeaderWithContext implements rest.WarningHandlerWithContext.
func (WarningHandler) HandleWarningHeaderWithContext(ctx context.Context, code int, _ string, text string) {
	if code != 299 || text == "" {
		return
	}
	c, ok := ctx.Value(warningsKey{}).(*collector)
	if !ok {
		log.FromContext(ctx).Info("API server warning", "warning", text)
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.seen[text] || len(c.msgs) >= maxWarnings {
		return
	}
	c.seen[text] = true
	c.msgs = append(c.msgs, text)
}
