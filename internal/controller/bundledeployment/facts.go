package bundledeployment

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/rukpak/rukpak/api/v1alpha2"
)

// statusFacts are what one reconcile knows of its BundleDeployment's
// revisions, sources and failures: observe starts them from the status as
// observed (and what this process applied last), the steps change them
// through the methods below as they learn, and computeStatus projects
// them into the status fields (projectFacts). Steps read them, never the
// status fields they stand for: the status is the observed input only.
type statusFacts struct {
	// active is the revision installed now (status.activeBundle).
	active string
	// lastHealthy is the last revision found healthy
	// (status.lastHealthyBundle).
	lastHealthy string
	// failed is the revision that failed and is not retried until the
	// spec or the retry annotation changes (status.failedBundle,
	// failedRetry, failedGeneration); the zero value for none.
	failed failedMark
	// installedObjects is how many objects the active revision has
	// (status.installedObjects).
	installedObjects int32
	// skipped are the optional objects the active revision left out
	// because their kind is not served (status.skippedObjects).
	skipped []v1alpha2.ObjectReference
	// keptCRDs are the CRDs the revision applied last, a rollback, left
	// at their newer definition (status.keptCRDs).
	keptCRDs []string
	// resolved are the pinned sources (status.resolvedSources), and
	// lastResolved when floating ones were last looked up
	// (status.lastResolvedTime; nil when none float).
	resolved     []v1alpha2.BundleSource
	lastResolved *metav1.Time
	// unpublished are the versions the sources selected that the last
	// lookup found no longer published (status.unpublishedVersions).
	unpublished []v1alpha2.UnpublishedVersion
	// installedVersion is the version the active revision's sources
	// selected (status.installedVersion), newestVersion the one the
	// newest revision's sources selected when last resolved
	// (status.newestVersion); "" when none selects one (versions.go).
	installedVersion, newestVersion string
	// approvalPolicy is the spec.upgrade.approval in force
	// (status.approvalPolicy; "" for Automatic): a lowering is in force
	// only once made by a user who may approve (policyInForce).
	approvalPolicy v1alpha2.ApprovalPolicy
}

// failedMark names a revision marked failed, and what retries it: the
// retry annotation's value and the generation it failed at.
type failedMark struct {
	bundle     string
	retry      string
	generation int64
}

// observe returns the facts the status records, as a reconcile starts. What this
// process applied last (applied, nil for nothing) is the active revision,
// whatever the status says: the cached status may lag behind its own last
// write.
func observe(status *v1alpha2.BundleDeploymentStatus, applied *appliedState) statusFacts {
	st := status.DeepCopy()
	f := statusFacts{
		active:           st.ActiveBundle,
		lastHealthy:      st.LastHealthyBundle,
		failed:           failedMark{bundle: st.FailedBundle, retry: st.FailedRetry, generation: st.FailedGeneration},
		installedObjects: st.InstalledObjects,
		skipped:          st.SkippedObjects,
		keptCRDs:         st.KeptCRDs,
		resolved:         st.ResolvedSources,
		lastResolved:     st.LastResolvedTime,
		unpublished:      st.UnpublishedVersions,
		installedVersion: st.InstalledVersion,
		newestVersion:    st.NewestVersion,
		approvalPolicy:   st.ApprovalPolicy,
	}
	if applied != nil {
		f.active = applied.bundle
	}
	return f
}

// projectFacts sets the status fields f stands for. It is pure, and
// computeStatus is its only caller.
func projectFacts(status *v1alpha2.BundleDeploymentStatus, f statusFacts) {
	status.ActiveBundle = f.active
	status.LastHealthyBundle = f.lastHealthy
	status.FailedBundle, status.FailedRetry, status.FailedGeneration = f.failed.bundle, f.failed.retry, f.failed.generation
	status.InstalledObjects = f.installedObjects
	status.SkippedObjects = f.skipped
	status.KeptCRDs = f.keptCRDs
	status.ResolvedSources = f.resolved
	status.ApprovalPolicy = f.approvalPolicy
	status.LastResolvedTime = f.lastResolved
	status.UnpublishedVersions = f.unpublished
	status.InstalledVersion, status.NewestVersion = f.installedVersion, f.newestVersion
}

// activated records that revision, whose sources selected version (""
// for none), became the active one with objects objects (an install, or a
// rollback to it).
func (f *statusFacts) activated(revision string, objects int, version string) {
	f.active = revision
	f.installedObjects = int32(objects)
	f.installedVersion = version
}

// keep records the CRDs the revision just applied left at their newer
// definition (none but for a rollback), at most maxKeptReported of them.
func (f *statusFacts) keep(kept []keptCRD) {
	f.keptCRDs = nil
	for _, k := range kept[:min(len(kept), maxKeptReported)] {
		f.keptCRDs = append(f.keptCRDs, k.name)
	}
}
