package bundledeployment

import (
	"context"
	"fmt"
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rukpak/rukpak/api/v1alpha2"
	"github.com/rukpak/rukpak/internal/ownership"
	"github.com/rukpak/rukpak/internal/values"
	"github.com/rukpak/rukpak/pkg/failure"
)

// defaultPollInterval is how often floating sources are re-resolved when
// spec.pollInterval is not set.
const defaultPollInterval = 5 * time.Minute

// resolve pins the sources and names the revision. Floating sources (image
// tags, git branches, URLs without sha256) are looked up again only every
// pollInterval; in between, the pins in status.resolvedSources are reused.
func (r *Reconciler) resolve(ctx context.Context, s *scope) (bool, error) {
	bd := s.bd
	interval := defaultPollInterval
	if bd.Spec.PollInterval != nil && bd.Spec.PollInterval.Duration > 0 {
		// Objects stored before the schema's minimum may be shorter.
		interval = max(bd.Spec.PollInterval.Duration, v1alpha2.MinPollInterval)
	}
	floating := r.Sources.Floating(bd.Spec.Sources)
	var age time.Duration
	reuse := false
	if floating && bd.Status.LastResolvedTime != nil {
		age = time.Since(bd.Status.LastResolvedTime.Time)
		reuse = age >= 0 && age < interval
	}
	pinned, err := r.Sources.Resolve(ctx, bd.Spec.Sources, bd.Status.ResolvedSources, reuse)
	if err != nil {
		s.unpackErr = err
		return false, retryUnpack(err)
	}
	if floating {
		if !reuse {
			now := metav1.Now()
			bd.Status.LastResolvedTime = &now
			age = 0
		}
		s.requeueAfter = interval - age
	} else {
		bd.Status.LastResolvedTime = nil
	}
	s.pinned = pinned
	s.bd.Status.ResolvedSources = pinned
	if err := r.resolveValues(ctx, s); err != nil {
		return false, err
	}
	if s.installErr != nil {
		return false, nil
	}
	s.revision = revisionName(s.bd, pinned, s.values.Digest)
	return true, nil
}

// resolveValues checks spec.config against the class and reads the Helm
// values (valuesFrom, then values). A config that is wrong stops the
// revision with Installed=False; drift of the revision already applied is
// still corrected, with the values it was applied with.
func (r *Reconciler) resolveValues(ctx context.Context, s *scope) error {
	err := s.prov.CheckConfig(s.bd.Spec.Config)
	if err == nil {
		s.values, err = values.Resolve(ctx, r.Client, v1alpha2.SystemNamespace, s.bd.Spec.Config)
	}
	if err == nil {
		return nil
	}
	if failure.As(err) == nil {
		return err
	}
	s.installErr = err
	if st := r.state(s.bd.Name); st != nil && st.bundle != "" {
		return r.correctDrift(ctx, s, st)
	}
	return nil
}

// revisionName is the name of bd's revision of pinned with the resolved
// values' digest (see ownership.RevisionName).
func revisionName(bd *v1alpha2.BundleDeployment, pinned []v1alpha2.BundleSource, valuesDigest string) string {
	return ownership.RevisionName(bd.Name, v1alpha2.BundleSpec{ProvisionerClassName: bd.Spec.ProvisionerClassName, Sources: pinned, Config: bd.Spec.Config}, valuesDigest)
}

// findBundle looks up the revision's Bundle. One that exists must be this
// BundleDeployment's own, with exactly the pinned spec (useBundle); one
// that does not is created, born complete, once its content is unpacked
// (createBundle).
func (r *Reconciler) findBundle(ctx context.Context, s *scope) (bool, error) {
	b := &v1alpha2.Bundle{}
	err := r.Client.Get(ctx, client.ObjectKey{Name: s.revision}, b)
	if apierrors.IsNotFound(err) {
		return true, nil
	}
	if err != nil {
		s.unpackErr = fmt.Errorf("getting Bundle %s: %w", s.revision, err)
		return false, s.unpackErr
	}
	return r.useBundle(ctx, s, b)
}

// useBundle makes b, the Bundle found under the revision's name, the
// revision's Bundle when this BundleDeployment created it with the pinned
// spec.
func (r *Reconciler) useBundle(ctx context.Context, s *scope, b *v1alpha2.Bundle) (bool, error) {
	if err := ownership.CheckSpec(s.bd, b, r.wantSpec(s), r.bundleWriters()); err != nil {
		// Planted under the revision's name by someone else: never used,
		// never deleted. Its writer (or the garbage collector, for one
		// left by a deleted BundleDeployment of the same name) removes it.
		s.unpackErr = err
		s.installErr = err
		r.Recorder.Eventf(s.bd, nil, corev1.EventTypeWarning, v1alpha2.ReasonBundleNotOwned, "Install", "%v", err)
		s.requeueWithin(notOwnedRecheck)
		if st := r.state(s.bd.Name); st != nil && st.bundle != "" && st.bundle == s.bd.Status.ActiveBundle {
			return false, r.correctDrift(ctx, s, st)
		}
		return false, nil
	}
	s.bundle = b
	return true, nil
}

// wantSpec is the spec of the revision about to be installed: class,
// pinned sources and config.
func (r *Reconciler) wantSpec(s *scope) v1alpha2.BundleSpec {
	return v1alpha2.BundleSpec{ProvisionerClassName: s.bd.Spec.ProvisionerClassName, Sources: s.pinned, Config: s.bd.Spec.Config}
}

// notOwnedRecheck is how often a revision whose name is taken by a Bundle
// this BundleDeployment did not create looks again.
const notOwnedRecheck = 30 * time.Second

// bundleWriters are the user names a Bundle a BundleDeployment uses must
// have been written by (the manager's own), when known.
func (r *Reconciler) bundleWriters() []string {
	if r.Approval == nil {
		return nil
	}
	return r.Approval.TrustedUsers
}

// ensureContent makes sure the revision's content is in the store: the
// content its Bundle records, or, for a revision without a Bundle yet, its
// pinned sources unpacked now. Content that cannot be unpacked leaves no
// Bundle behind: the Unpacked condition says why, and the next try creates
// the Bundle once it unpacks.
func (r *Reconciler) ensureContent(ctx context.Context, s *scope) (bool, error) {
	known := ""
	if s.bundle != nil {
		known = s.bundle.ContentDigest()
	}
	digest, err := r.Unpacker.Ensure(ctx, s.revision, s.pinned, known)
	if err != nil {
		s.unpackErr = err
		return false, retryUnpack(err)
	}
	s.digest = digest
	return true, nil
}

// cleanupHistory deletes this BundleDeployment's Bundles beyond
// revisionHistoryLimit, oldest first; the active and the newest revision are
// always kept.
func (r *Reconciler) cleanupHistory(ctx context.Context, s *scope) (bool, error) {
	list := &v1alpha2.BundleList{}
	if err := r.Client.List(ctx, list, client.MatchingLabels{v1alpha2.LabelBundleDeployment: s.bd.Name}); err != nil {
		return false, fmt.Errorf("listing Bundles: %w", err)
	}
	limit := int(ptr.Deref(s.bd.Spec.RevisionHistoryLimit, 3))
	keep := map[string]bool{s.bd.Status.ActiveBundle: true, s.bd.Status.LastHealthyBundle: true, s.revision: true}
	if st := r.state(s.bd.Name); st != nil {
		// Status can be written by others: what this process applied is
		// kept whatever status says.
		keep[st.bundle] = true
	}
	var old []v1alpha2.Bundle
	for _, b := range list.Items {
		// Only Bundles this BundleDeployment controls are its history; a
		// Bundle someone else labelled is not deleted.
		if !keep[b.Name] && b.DeletionTimestamp.IsZero() && ownership.Controlled(s.bd, &b) {
			old = append(old, b)
		}
	}
	if len(old) <= limit {
		return true, nil
	}
	sort.Slice(old, func(i, j int) bool {
		return old[i].CreationTimestamp.Before(&old[j].CreationTimestamp) ||
			(old[i].CreationTimestamp.Equal(&old[j].CreationTimestamp) && old[i].Name < old[j].Name)
	})
	for i := range old[:len(old)-limit] {
		if err := r.Client.Delete(ctx, &old[i]); client.IgnoreNotFound(err) != nil {
			return false, fmt.Errorf("deleting old Bundle %s: %w", old[i].Name, err)
		}
	}
	return true, nil
}

// retryUnpack returns the error of a failed resolve or unpack so that it is
// retried with exponential backoff (up to about 16 minutes apart): even a
// terminal failure of a source (unknown tag, bad credentials, a missing
// ConfigMap) is often fixed outside the spec — the tag is pushed, the Secret
// corrected. The condition already says why.
func retryUnpack(err error) error {
	if f := failure.As(err); f != nil {
		return fmt.Errorf("%s: %w", f.Reason, err)
	}
	return err
}
