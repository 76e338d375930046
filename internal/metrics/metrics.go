// Package metrics defines rukpak's Prometheus metrics, registered in
// controller-runtime's registry and served by the manager's metrics
// endpoint (behind authentication and authorization). docs/metrics.md lists
// them with example alerts.
package metrics

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/rukpak/rukpak/api/v1alpha2"
)

// Operations of RevisionsTotal.
const (
	// OperationInstall is the first revision of a BundleDeployment.
	OperationInstall = "install"
	// OperationUpgrade is a later one.
	OperationUpgrade = "upgrade"
)

// Labels of RenderDocuments.
const (
	// DocumentsParsed are documents a sandboxed child parsed.
	DocumentsParsed = "parsed"
	// DocumentsReused are documents whose value was remembered from an
	// earlier render.
	DocumentsReused = "reused"
)

// Events of UpgradesTotal.
const (
	// UpgradeAvailable is a newest version found other than the one
	// installed.
	UpgradeAvailable = "available"
	// UpgradeApplied is the installed version changed by an install of
	// the newest revision.
	UpgradeApplied = "applied"
	// UpgradeHeld is the newest version waiting: for an approval, or
	// after it failed.
	UpgradeHeld = "held"
)

var (
	// RevisionsTotal counts revisions installed, by class and operation.
	RevisionsTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "rukpak_revisions_installed_total",
		Help: "Revisions installed, by ProvisionerClass and operation (install: the first revision; upgrade: a later one).",
	}, []string{"class", "operation"})
	// RollbacksTotal counts rollbacks to the last healthy revision.
	RollbacksTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "rukpak_rollbacks_total",
		Help: "Rollbacks to the last healthy revision, by ProvisionerClass and why (the failed revision's reason).",
	}, []string{"class", "reason"})
	// FailuresTotal counts revisions that failed, by reason.
	FailuresTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "rukpak_revision_failures_total",
		Help: "Revisions that failed to install, by ProvisionerClass and reason (the Installed condition's).",
	}, []string{"class", "reason"})
	// AwaitingApprovalTotal counts revisions held for an approval
	// (spec.upgrade.approval), once per revision.
	AwaitingApprovalTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "rukpak_revisions_awaiting_approval_total",
		Help: "Revisions held until approved (spec.upgrade.approval), by ProvisionerClass; counted once per revision.",
	}, []string{"class"})
	// UpgradesTotal counts the versions BundleDeployments following a
	// range found, installed and held, once per version (and cause).
	UpgradesTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "rukpak_upgrades_total",
		Help: "Versions selected from a range, by ProvisionerClass and event (available: a newest version other than the one installed was found; applied: the installed version changed; held: the newest version waits for approval or failed); counted once per version.",
	}, []string{"class", "event"})
	// ApplySeconds is how long applying a revision took.
	ApplySeconds = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "rukpak_apply_duration_seconds",
		Help:    "Time to apply one revision's objects (validation, writes, hooks), by ProvisionerClass and result.",
		Buckets: []float64{0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300},
	}, []string{"class", "result"})
	// DriftCorrectionsTotal counts objects restored after someone changed
	// or deleted them.
	DriftCorrectionsTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "rukpak_drift_corrections_total",
		Help: "Managed objects restored after they were changed or deleted outside rukpak, by ProvisionerClass.",
	}, []string{"class"})
	// SourceFetchSeconds is how long fetching one source took.
	SourceFetchSeconds = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "rukpak_source_fetch_duration_seconds",
		Help:    "Time to fetch and unpack one source, by source type and result.",
		Buckets: []float64{0.01, 0.05, 0.1, 0.5, 1, 5, 15, 60, 300},
	}, []string{"type", "result"})
	// SourceFetchBytes counts the bytes of content unpacked.
	SourceFetchBytes = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "rukpak_source_fetch_bytes_total",
		Help: "Bytes of content unpacked from sources, by source type.",
	}, []string{"type"})
	// SourceResolutions counts the resolutions of floating sources (tags,
	// branches, ranges), by source type and how they were answered.
	SourceResolutions = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "rukpak_source_resolutions_total",
		Help: "Resolutions of floating sources (tags, branches, version ranges), by source type and outcome: looked-up (a request to the repository) or shared (answered by a lookup of the same source with the same credentials made within the last interval).",
	}, []string{"type", "outcome"})
	// RenderDocuments counts the YAML documents of large plain bundles
	// rendered, by whether they were parsed or their value reused.
	RenderDocuments = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "rukpak_render_documents_total",
		Help: "YAML documents of plain bundles rendered in a sandboxed child, by result: parsed (by the child), or reused (the value of a document with the same bytes, parsed before).",
	}, []string{"result"})
)

func init() {
	ctrlmetrics.Registry.MustRegister(RevisionsTotal, RollbacksTotal, FailuresTotal, ApplySeconds,
		DriftCorrectionsTotal, SourceFetchSeconds, SourceFetchBytes, RenderDocuments, AwaitingApprovalTotal,
		SourceResolutions, UpgradesTotal)
}

// Result is the result label of err: "success" or "error".
func Result(err error) string {
	if err != nil {
		return "error"
	}
	return "success"
}

// Since observes the seconds since start in h.
func Since(h prometheus.Observer, start time.Time) { h.Observe(time.Since(start).Seconds()) }

// state is what the gauges read at scrape time.
type state struct {
	reader client.Reader
	usage  func() (used, quota int64)

	bundleDeployments *prometheus.Desc
	storeBytes        *prometheus.Desc
	storeQuota        *prometheus.Desc
}

// RegisterState registers the gauges read when scraped: BundleDeployments
// by class and Ready status (from reader, the manager's cache), and the
// content store's bytes used and quota.
func RegisterState(reader client.Reader, usage func() (used, quota int64)) error {
	c := &state{
		reader: reader,
		usage:  usage,
		bundleDeployments: prometheus.NewDesc("rukpak_bundledeployments",
			"BundleDeployments, by ProvisionerClass and the status of their Ready condition (True, False, Unknown).", []string{"class", "ready"}, nil),
		storeBytes: prometheus.NewDesc("rukpak_content_store_bytes", "Bytes of unpacked content in the content store.", nil, nil),
		storeQuota: prometheus.NewDesc("rukpak_content_store_quota_bytes", "The content store's quota in bytes (0: none).", nil, nil),
	}
	err := ctrlmetrics.Registry.Register(c)
	var again prometheus.AlreadyRegisteredError
	if errors.As(err, &again) {
		// A later manager of the same process (tests): it reports now.
		ctrlmetrics.Registry.Unregister(again.ExistingCollector)
		err = ctrlmetrics.Registry.Register(c)
	}
	if err != nil {
		return fmt.Errorf("registering metrics: %w", err)
	}
	return nil
}

// Describe implements prometheus.Collector.
func (s *state) Describe(ch chan<- *prometheus.Desc) {
	ch <- s.bundleDeployments
	ch <- s.storeBytes
	ch <- s.storeQuota
}

// Collect implements prometheus.Collector.
func (s *state) Collect(ch chan<- prometheus.Metric) {
	used, quota := s.usage()
	ch <- prometheus.MustNewConstMetric(s.storeBytes, prometheus.GaugeValue, float64(used))
	ch <- prometheus.MustNewConstMetric(s.storeQuota, prometheus.GaugeValue, float64(quota))
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	list := &v1alpha2.BundleDeploymentList{}
	if err := s.reader.List(ctx, list); err != nil {
		return
	}
	type key struct{ class, ready string }
	counts := map[key]int{}
	for _, bd := range list.Items {
		ready := "Unknown"
		if c := meta.FindStatusCondition(bd.Status.Conditions, v1alpha2.TypeReady); c != nil && c.ObservedGeneration == bd.Generation {
			ready = string(c.Status)
		}
		counts[key{Class(bd.Spec.ProvisionerClassName), ready}]++
	}
	for k, n := range counts {
		ch <- prometheus.MustNewConstMetric(s.bundleDeployments, prometheus.GaugeValue, float64(n), k.class, k.ready)
	}
}
