package memlimit

import (
	"context"
	"runtime/debug"
	"runtime/metrics"
	"time"
)

// Near is the share of the soft limit at which the live heap is reported
// as near it: past it, the garbage collector runs more and more often,
// and once the live heap is over the limit it runs back to back (up to
// half the process's CPU), so every reconcile costs more.
const Near = 0.8

// clear is the share below which a live heap reported near the limit is
// no longer, so that one that hovers around Near is reported once.
const clear = 0.7

// liveHeapMetric is what the last garbage collection found live.
const liveHeapMetric = "/gc/heap/live:bytes"

// nearLimit decides whether to report a live heap of live bytes against
// a soft limit: report when it reaches Near of the limit while not
// reported; reported stays true until the heap falls below clear of it.
// A limit of 0 or less (none) is never near.
func nearLimit(live, limit int64, reported bool) (report, nowReported bool) {
	if limit <= 0 {
		return false, false
	}
	switch {
	case float64(live) >= Near*float64(limit):
		return !reported, true
	case float64(live) < clear*float64(limit):
		return false, false
	}
	return false, reported
}

// Watch looks at the live heap every interval until ctx is done, and
// calls near with it and the soft limit in effect each time it comes
// near that limit (Near), once until it falls well below it again.
func Watch(ctx context.Context, every time.Duration, near func(live, limit int64)) {
	sample := []metrics.Sample{{Name: liveHeapMetric}}
	t := time.NewTicker(every)
	defer t.Stop()
	reported := false
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		metrics.Read(sample)
		if sample[0].Value.Kind() != metrics.KindUint64 {
			return
		}
		live := int64(sample[0].Value.Uint64())
		limit := debug.SetMemoryLimit(-1)
		var report bool
		if report, reported = nearLimit(live, limit, reported); report {
			near(live, limit)
		}
	}
}
