package shard

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/rukpak/rukpak/api/v1alpha2"
)

// FieldManager is the field manager of the ShardAvailable conditions the
// Reporter writes (server-side apply of that condition alone).
const FieldManager = "rukpak-shards"

// ReportEvery is how often the Reporter looks at the sharded
// BundleDeployments and the shards' Leases in its cache.
const ReportEvery = 5 * time.Second

// unserved is rukpak_bundledeployments_unserved.
var unserved = prometheus.NewGaugeVec(prometheus.GaugeOpts{
	Name: "rukpak_bundledeployments_unserved",
	Help: "BundleDeployments whose core.rukpak.io/shard label names a shard no running manager serves, by the shard named (reported by the manager started without --shard).",
}, []string{"shard"})

func init() { ctrlmetrics.Registry.MustRegister(unserved) }

// Reporter says, on each BundleDeployment whose shard label names no live
// shard, that nothing reconciles it: the condition ShardAvailable=False
// (reason ShardNotRunning), a warning event and the metric
// rukpak_bundledeployments_unserved. It never reconciles them. The
// manager started without --shard runs it, on its leader.
type Reporter struct {
	// Cache holds the sharded BundleDeployments' metadata and the
	// shards' Leases (ReporterCacheOptions).
	Cache syncedReader
	// API reads a BundleDeployment before its condition is written, and
	// writes it.
	API client.Client
	// Recorder emits the events.
	Recorder events.EventRecorder
	// Namespace holds the shards' Leases.
	Namespace string
	// Every is how often it looks (ReportEvery when 0); Grace how long a
	// BundleDeployment stays unserved before it is reported (AnnounceEvery
	// when 0), so that a shard starting with its first BundleDeployments
	// is not reported.
	Every, Grace time.Duration

	mu sync.Mutex
	// since is when each unserved BundleDeployment was first seen so;
	// reported what was last reported of it.
	since    map[types.UID]time.Time
	reported map[types.UID]string
}

// syncedReader is a cache: a reader that can be waited for.
type syncedReader interface {
	client.Reader
	WaitForCacheSync(ctx context.Context) bool
}

var (
	_ manager.Runnable               = (*Reporter)(nil)
	_ manager.LeaderElectionRunnable = (*Reporter)(nil)
)

// NeedLeaderElection is true: only the leader reports.
func (r *Reporter) NeedLeaderElection() bool { return true }

// Start reports until ctx ends.
func (r *Reporter) Start(ctx context.Context) error {
	r.mu.Lock()
	r.since, r.reported = map[types.UID]time.Time{}, map[types.UID]string{}
	r.mu.Unlock()
	if !r.Cache.WaitForCacheSync(ctx) {
		return nil // ctx ended
	}
	wait.UntilWithContext(ctx, func(ctx context.Context) {
		if err := r.report(ctx, time.Now()); err != nil {
			log.FromContext(ctx).WithName("shard").Error(err, "reporting unserved BundleDeployments")
		}
	}, cmpDuration(r.Every, ReportEvery))
	return nil
}

// report looks once, at now.
func (r *Reporter) report(ctx context.Context, now time.Time) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	leases := &coordinationv1.LeaseList{}
	if err := r.Cache.List(ctx, leases, client.InNamespace(r.Namespace), client.MatchingLabelsSelector{Selector: Sharded()}); err != nil {
		return fmt.Errorf("listing shard Leases: %w", err)
	}
	bds := &metav1.PartialObjectMetadataList{}
	bds.SetGroupVersionKind(v1alpha2.GroupVersion.WithKind("BundleDeploymentList"))
	if err := r.Cache.List(ctx, bds, client.MatchingLabelsSelector{Selector: Sharded()}); err != nil {
		return fmt.Errorf("listing sharded BundleDeployments: %w", err)
	}
	live := Live(leases.Items, now)
	counts := map[string]float64{}
	seen := map[types.UID]bool{}
	var errs []error
	for i := range bds.Items {
		bd := &bds.Items[i]
		s, _ := Of(bd)
		why := Unserved(s, live)
		if why == "" {
			continue
		}
		seen[bd.UID] = true
		counts[s]++
		first, ok := r.since[bd.UID]
		if !ok {
			r.since[bd.UID] = now
			first = now
		}
		if now.Sub(first) < cmpDuration(r.Grace, AnnounceEvery) || r.reported[bd.UID] == why {
			continue
		}
		if err := r.say(ctx, bd.Name, s, why); err != nil {
			errs = append(errs, err)
			continue
		}
		r.reported[bd.UID] = why
	}
	for uid := range r.since {
		if !seen[uid] {
			delete(r.since, uid)
			delete(r.reported, uid)
		}
	}
	unserved.Reset()
	for s, n := range counts {
		unserved.WithLabelValues(s).Set(n)
	}
	if len(errs) > 0 {
		return fmt.Errorf("%d BundleDeployment(s) not reported, first: %w", len(errs), errs[0])
	}
	return nil
}

// say writes the condition on BundleDeployment name, labelled with shard
// in the cache, unless it says so already, and emits the event.
func (r *Reporter) say(ctx context.Context, name, shard, why string) error {
	bd := &v1alpha2.BundleDeployment{}
	if err := r.API.Get(ctx, client.ObjectKey{Name: name}, bd); err != nil {
		return client.IgnoreNotFound(err)
	}
	if s, ok := Of(bd); !ok || s != shard {
		return nil // relabelled since: the next look judges it
	}
	c := meta.FindStatusCondition(bd.Status.Conditions, v1alpha2.TypeShardAvailable)
	if c != nil && c.Status == metav1.ConditionFalse && c.Reason == v1alpha2.ReasonShardNotRunning && c.Message == why && c.ObservedGeneration == bd.Generation {
		return nil
	}
	cond := metav1.Condition{Type: v1alpha2.TypeShardAvailable, Status: metav1.ConditionFalse, Reason: v1alpha2.ReasonShardNotRunning,
		Message: why, ObservedGeneration: bd.Generation, LastTransitionTime: metav1.Now()}
	if c != nil && c.Status == metav1.ConditionFalse {
		cond.LastTransitionTime = c.LastTransitionTime
	}
	patch, err := json.Marshal(map[string]any{
		"apiVersion": v1alpha2.GroupVersion.String(), "kind": "BundleDeployment",
		"metadata": map[string]any{"name": name, "uid": bd.UID},
		"status":   map[string]any{"conditions": []metav1.Condition{cond}},
	})
	if err != nil {
		return err
	}
	if err := r.API.Status().Patch(ctx, bd, client.RawPatch(types.ApplyPatchType, patch), client.FieldOwner(FieldManager), client.ForceOwnership); err != nil {
		return fmt.Errorf("writing %s on BundleDeployment %s: %w", v1alpha2.TypeShardAvailable, name, err)
	}
	r.Recorder.Eventf(bd, nil, corev1.EventTypeWarning, v1alpha2.ReasonShardNotRunning, "Report", "%s", why)
	return nil
}
