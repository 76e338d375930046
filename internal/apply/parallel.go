package apply

import (
	"context"
	"sync"
	"sync/atomic"
)

// each runs fn for every index on at most Concurrency goroutines, stopping
// early once fn returns false or ctx is done.
func (e *Engine) each(ctx context.Context, idx []int, fn func(i int) bool) {
	if len(idx) == 0 {
		return
	}
	var next atomic.Int64
	var stop atomic.Bool
	var wg sync.WaitGroup
	for w := 0; w < min(e.opts.Concurrency, len(idx)); w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for !stop.Load() && ctx.Err() == nil {
				n := int(next.Add(1) - 1)
				if n >= len(idx) {
					return
				}
				if !fn(idx[n]) {
					stop.Store(true)
				}
			}
		}()
	}
	wg.Wait()
}
