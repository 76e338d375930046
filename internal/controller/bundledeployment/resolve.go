package bundledeployment

import (
	"context"
	"fmt"
	"slices"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rukpak/rukpak/api/v1alpha2"
	"github.com/rukpak/rukpak/internal/message"
	"github.com/rukpak/rukpak/internal/ownership"
	"github.com/rukpak/rukpak/internal/source"
	"github.com/rukpak/rukpak/internal/values"
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
	if last, ok := lastLookup(s.facts.lastResolved, s.mem.lookedUp); floating && ok {
		age = time.Since(last)
		reuse = age >= 0 && age < interval
	}
	installed, err := r.installedSources(ctx, s)
	if err != nil {
		return false, s.sourceFailed(stageResolve, err)
	}
	res, err := r.Sources.ResolveFrom(ctx, bd.Spec.Sources, s.facts.resolved, reuse, installed)
	if err != nil {
		return false, s.sourceFailed(stageResolve, err)
	}
	pinned := res.Pinned
	if floating {
		if !reuse {
			now := metav1.Now()
			s.mem.lookedUp = now.Time
			if pinsChanged(s.facts.lastResolved, s.facts.resolved, pinned) {
				s.facts.lastResolved = &now
			}
			age = 0
			r.noteUnpublished(s, res.Unpublished)
		}
		s.requeueAfter = interval - age
	} else {
		s.facts.lastResolved = nil
		s.facts.unpublished = nil
	}
	s.pinned = pinned
	s.facts.resolved = pinned
	s.facts.newestVersion = r.versionOf(pinned)
	if err := r.resolveValues(ctx, s); err != nil {
		return false, err
	}
	if s.installErr != nil {
		return false, nil
	}
	s.revision = revisionName(s.bd, pinned, s.values.Digest)
	s.specDigest = ownership.SpecDigest(r.wantSpec(s), s.values.Digest)
	r.knowInstalledVersion(ctx, s, installed)
	return true, nil
}

// lastLookup is when the floating sources were last looked up: by this
// process (lookedUp, zero when it has not yet), or else when their pins
// last changed (status.lastResolvedTime, nil when never); ok is false
// when neither is known.
func lastLookup(changed *metav1.Time, lookedUp time.Time) (time.Time, bool) {
	switch {
	case changed != nil && changed.After(lookedUp):
		return changed.Time, true
	case !lookedUp.IsZero():
		return lookedUp, true
	}
	return time.Time{}, false
}

// pinsChanged reports whether a lookup that pinned the sources to pinned
// changes status.lastResolvedTime: when there was none, or the pins
// differ from those recorded. A lookup that finds the same pins again is
// remembered by this process alone, so that BundleDeployments that follow
// sources nobody publishes to write nothing, however short their
// pollInterval.
func pinsChanged(last *metav1.Time, recorded, pinned []v1alpha2.BundleSource) bool {
	return last == nil || !equality.Semantic.DeepEqual(recorded, pinned)
}

// installedSources returns the pinned sources of the active revision,
// from which a source that follows upgrade edges (a catalog) resolves; nil
// when no source follows edges, no revision is active, or its Bundle is
// gone or is not this BundleDeployment's (then the whole range is
// selected from, as for a first install). A Bundle the cache does not
// show yet (just created) is read from the API server; an error reading
// it fails the resolve, to be retried, rather than resolve without edges.
func (r *Reconciler) installedSources(ctx context.Context, s *scope) ([]v1alpha2.BundleSource, error) {
	follows := false
	for _, src := range s.bd.Spec.Sources {
		follows = follows || src.Type == v1alpha2.SourceTypeCatalog
	}
	if !follows {
		return nil, nil
	}
	srcs, err := r.activeSources(ctx, s, true)
	if err != nil {
		return nil, fmt.Errorf("upgrade edges start from the active revision's sources: %w", err)
	}
	return srcs, nil
}

// activeSources returns the pinned sources of the active revision; nil
// when no revision is active, or its Bundle is gone or is not this
// BundleDeployment's. With uncached, a Bundle the cache does not show yet
// (just created) is read from the API server.
func (r *Reconciler) activeSources(ctx context.Context, s *scope, uncached bool) ([]v1alpha2.BundleSource, error) {
	if s.facts.active == "" {
		return nil, nil
	}
	b := &v1alpha2.Bundle{}
	key := client.ObjectKey{Name: s.facts.active}
	err := r.Client.Get(ctx, key, b)
	if apierrors.IsNotFound(err) && uncached && r.APIReader != nil {
		err = r.APIReader.Get(ctx, key, b)
	}
	switch {
	case apierrors.IsNotFound(err):
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("reading the active revision %s: %w", s.facts.active, err)
	case ownership.Check(s.bd, b, r.bundleWriters()) != nil:
		return nil, nil
	}
	return b.Spec.Sources, nil
}

// noteUnpublished records the versions the sources' lookup found no
// longer published (source.Resolution): status.unpublishedVersions until
// the next lookup, and a Warning event when one is new.
func (r *Reconciler) noteUnpublished(s *scope, found []source.Unpublished) {
	before := s.facts.unpublished
	s.facts.unpublished = nil
	for _, u := range found[:min(len(found), maxUnpublishedReported)] {
		// The versions are what a tenant's repository publishes: cut to
		// the schema's bound, or the whole status patch would be refused.
		version, _ := message.Cut(u.Version, maxVersionLength)
		newest, _ := message.Cut(u.Newest, maxVersionLength)
		v := v1alpha2.UnpublishedVersion{Source: int32(u.Source), Version: version, Newest: newest}
		s.facts.unpublished = append(s.facts.unpublished, v)
		if !slices.Contains(before, v) {
			r.Recorder.Eventf(s.bd, nil, corev1.EventTypeWarning, v1alpha2.ReasonNoLongerPublished, "Resolve", "%s", u)
		}
	}
}

// Bounds of status.unpublishedVersions (its schema's maxItems, and its
// versions' maxLength).
const (
	maxUnpublishedReported = 16
	maxVersionLength       = 128
)

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
	return s.refused(err)
}

// revisionName is the name of bd's revision of pinned with the resolved
// values' digest (see ownership.RevisionName, or the namer a test set).
func revisionName(bd *v1alpha2.BundleDeployment, pinned []v1alpha2.BundleSource, valuesDigest string) string {
	name := ownership.RevisionName
	if f := forgedNamer.Load(); f != nil {
		name = *f
	}
	return name(bd.Name, v1alpha2.BundleSpec{ProvisionerClassName: bd.Spec.ProvisionerClassName, Sources: pinned, Config: bd.Spec.Config}, valuesDigest)
}

// revisionNamer names a revision of BundleDeployment bdName
// (ownership.RevisionName's signature).
type revisionNamer func(bdName string, spec v1alpha2.BundleSpec, valuesDigest string) string

// forgedNamer, when set, names revisions instead of ownership.RevisionName.
// Only tests set it (export_test.go), to forge two revisions whose names
// collide and show that nothing a revision is trusted for depends on its
// name: approvals, memos and applied state bind to full digests.
var forgedNamer atomic.Pointer[revisionNamer]
