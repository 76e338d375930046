package bundledeployment

import (
	"context"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/rukpak/rukpak/api/v1alpha2"
	"github.com/rukpak/rukpak/internal/contentserver"
	"github.com/rukpak/rukpak/internal/history"
	"github.com/rukpak/rukpak/internal/message"
	"github.com/rukpak/rukpak/internal/ownership"
	"github.com/rukpak/rukpak/pkg/failure"
)

// bundleReport is what one reconcile learned about one of the
// BundleDeployment's Bundles, written to its status at the end.
type bundleReport struct {
	// outcome and message, when decided, are what became of the revision.
	outcome, message string
	decided          bool
	// installed is set when the revision was first installed now.
	installed bool
	// objects, when positive, is how many objects the revision has.
	objects int
}

// report returns the report of Bundle name, made on first use.
func (s *scope) report(name string) *bundleReport {
	if s.reports == nil {
		s.reports = map[string]*bundleReport{}
	}
	if s.reports[name] == nil {
		s.reports[name] = &bundleReport{}
	}
	return s.reports[name]
}

// decide records what became of revision name (see the Outcome constants).
func (s *scope) decide(name, outcome, message string) {
	rep := s.report(name)
	rep.outcome, rep.message, rep.decided = outcome, shorten(message), true
}

// reportBundles writes what the reconcile learned to the status of the
// Bundles it concerns, one patch per Bundle whose status changes. A
// revision is born complete (createBundle) and history (package history)
// reads what its creation and the BundleDeployment's status imply, so a
// normal install writes no Bundle status: only what history would not
// show is written (reportStatus). Bundles this BundleDeployment does not
// control are never written. It is the only writer of its revisions'
// status (the Bundle controller leaves them alone).
func (r *Reconciler) reportBundles(ctx context.Context, s *scope) {
	names := map[string]bool{}
	for name := range s.reports {
		names[name] = true
	}
	if s.bundle != nil && s.bundle.Spec.Unpacked == nil {
		// Created before revisions were born complete: its unpack result
		// goes to status, as it did then.
		names[s.bundle.Name] = true
	}
	if prev := s.replaced(); prev != "" {
		names[prev] = true
	}
	for name := range names {
		if err := r.reportBundle(ctx, s, name); err != nil {
			log.FromContext(ctx).Error(err, "reporting Bundle status", "bundle", name)
		}
	}
}

// replaced returns the revision that was the active one when the
// reconcile began and is not now (upgraded from or rolled back from), ""
// for none.
func (s *scope) replaced() string {
	if prev := s.written.ActiveBundle; prev != "" && prev != s.facts.active {
		return prev
	}
	return ""
}

func (r *Reconciler) reportBundle(ctx context.Context, s *scope, name string) error {
	b := &v1alpha2.Bundle{}
	if err := r.Client.Get(ctx, client.ObjectKey{Name: name}, b); err != nil {
		return client.IgnoreNotFound(err)
	}
	if !ownership.Controlled(s.bd, b) || !b.DeletionTimestamp.IsZero() {
		return nil
	}
	base := b.DeepCopy()
	if s.bundle != nil && name == s.bundle.Name && b.Spec.Unpacked == nil {
		r.unpackResult(s, b)
	}
	reportStatus(b, revisionFacts{
		report:      s.reports[name],
		created:     s.created && s.bundle != nil && name == s.bundle.Name,
		replaced:    name == s.replaced(),
		wasHealthy:  name == s.written.LastHealthyBundle || name == s.facts.lastHealthy,
		lastHealthy: s.facts.lastHealthy,
		now:         metav1.NewTime(time.Now().UTC().Truncate(time.Second)),
	})
	if equality.Semantic.DeepEqual(base.Status, b.Status) {
		return nil
	}
	if err := r.Client.Status().Patch(ctx, b, client.MergeFrom(base)); err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	return nil
}

// revisionFacts are what a reconcile knows, at its end, of one revision.
type revisionFacts struct {
	// report is what it learned of the revision, nil for nothing.
	report *bundleReport
	// created is set when it created the revision's Bundle.
	created bool
	// replaced is set when the revision was the active one when it began
	// and is not now.
	replaced bool
	// wasHealthy is set when the revision is, or was when the reconcile
	// began, the BundleDeployment's last healthy revision.
	wasHealthy bool
	// lastHealthy is the BundleDeployment's status.lastHealthyBundle now.
	lastHealthy string
	// now is when the reconcile ends.
	now metav1.Time
}

// reportStatus sets in revision b's status what f says and history (see
// package history) would not read without it:
//
//   - objectCount, when the revision's objects are known and b does not
//     already say how many (its content did not render when b was
//     created);
//   - installedAt, when the revision was installed now, unless b was born
//     complete in this reconcile (then its creation time is when);
//   - the outcome decided now, unless it is Healthy for the revision the
//     BundleDeployment names last healthy (which reads as Healthy);
//   - once the revision is replaced as the active one: installedAt (its
//     creation time) and Healthy, when it was the last healthy revision,
//     which history reads only while it is active.
func reportStatus(b *v1alpha2.Bundle, f revisionFacts) {
	st := &b.Status
	if rep := f.report; rep != nil {
		if rep.objects > 0 && int32(rep.objects) != b.ObjectCount() {
			st.ObjectCount = int32(rep.objects)
		}
		if rep.installed && st.InstalledAt == nil && !(f.created && b.Spec.Unpacked != nil) {
			now := f.now
			st.InstalledAt = &now
		}
		implied := rep.outcome == v1alpha2.OutcomeHealthy && st.Outcome == "" && history.ImpliedHealthy(f.lastHealthy, b)
		if rep.decided && !implied {
			st.Outcome, st.OutcomeMessage = rep.outcome, rep.message
		}
	}
	if f.replaced {
		if st.InstalledAt == nil && b.Spec.Unpacked != nil {
			created := b.CreationTimestamp
			st.InstalledAt = &created
		}
		if st.Outcome == "" && f.wasHealthy {
			st.Outcome, st.OutcomeMessage = v1alpha2.OutcomeHealthy, ""
		}
	}
}

// unpackResult sets the unpack fields of the newest revision's Bundle
// when it was created before revisions were born complete (it has no
// spec.unpacked): its pinned sources, content digest and URL, or why it
// did not unpack.
func (r *Reconciler) unpackResult(s *scope, b *v1alpha2.Bundle) {
	st := &b.Status
	st.ObservedGeneration = b.Generation
	switch {
	case s.digest != "":
		st.Phase = v1alpha2.BundlePhaseUnpacked
		st.ResolvedSources = b.Spec.Sources
		st.ContentDigest = s.digest
		if r.ContentURL != "" {
			st.ContentURL = contentserver.URL(r.ContentURL, b.Name)
		}
		message.SetCondition(&st.Conditions, metav1.Condition{Type: v1alpha2.TypeUnpacked, Status: metav1.ConditionTrue,
			Reason: v1alpha2.ReasonUnpacked, Message: "content " + s.digest + " is in the content store", ObservedGeneration: b.Generation})
	case s.unpackErr != nil && st.ContentDigest == "":
		st.Phase = v1alpha2.BundlePhaseFailed
		message.SetCondition(&st.Conditions, metav1.Condition{Type: v1alpha2.TypeUnpacked, Status: metav1.ConditionFalse,
			Reason: failure.Reason(s.unpackErr, v1alpha2.ReasonUnpackFailed), Message: s.unpackErr.Error(), ObservedGeneration: b.Generation})
	}
}

// maxOutcomeMessage bounds a Bundle's status.outcomeMessage.
const maxOutcomeMessage = 1024

// shorten bounds a message written to a Bundle's status.outcomeMessage.
func shorten(msg string) string {
	if len(msg) <= maxOutcomeMessage {
		return msg
	}
	return msg[:maxOutcomeMessage-3] + "..."
}
