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
	// objects, when positive, is how many objects the revision holds.
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
// Bundles it concerns, one patch per Bundle that changed: the newest
// revision's unpack result and object count, and outcomes. Bundles this
// BundleDeployment does not control are never written. It is the only
// writer of its revisions' status (the Bundle controller leaves them
// alone), so the unpack result and the outcome cost one write together.
func (r *Reconciler) reportBundles(ctx context.Context, s *scope) {
	names := map[string]bool{}
	for name := range s.reports {
		names[name] = true
	}
	if s.bundle != nil {
		names[s.bundle.Name] = true
	}
	for name := range names {
		if err := r.reportBundle(ctx, s, name); err != nil {
			log.FromContext(ctx).Error(err, "reporting Bundle status", "bundle", name)
		}
	}
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
	st := &b.Status
	if s.bundle != nil && name == s.bundle.Name {
		r.unpackResult(s, b)
	}
	if rep := s.reports[name]; rep != nil {
		if rep.objects > 0 {
			st.ObjectCount = int32(rep.objects)
		}
		if rep.installed && st.InstalledAt == nil {
			now := metav1.NewTime(time.Now().UTC().Truncate(time.Second))
			st.InstalledAt = &now
		}
		if rep.decided {
			st.Outcome, st.OutcomeMessage = rep.outcome, rep.message
		}
	}
	if equality.Semantic.DeepEqual(base.Status, b.Status) {
		return nil
	}
	if err := r.Client.Status().Patch(ctx, b, client.MergeFrom(base)); err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	return nil
}

// unpackResult sets the newest revision's unpack fields: its pinned
// sources, content digest and URL, or why it did not unpack.
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
