package bundledeployment

import (
	"context"
	"fmt"
	"strconv"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/rukpak/rukpak/api/v1alpha2"
	"github.com/rukpak/rukpak/internal/apply"
	"github.com/rukpak/rukpak/internal/approval"
	"github.com/rukpak/rukpak/internal/contentserver"
	"github.com/rukpak/rukpak/internal/ownership"
	"github.com/rukpak/rukpak/internal/renderstore"
)

// rendered is a revision rendered and made a plan (planDigest). The one
// rendered when its Bundle was created, or for its review, is handed to
// the install step of the same reconcile (planOf), so that a revision is
// rendered once.
type rendered struct {
	bundle, digest string
	// spec is the revision's spec digest, objects the digest of its
	// rendered objects (planDigest).
	spec, objects string
	plan          *apply.Plan
	// pending is the render made here of a format that renders once, to
	// be stored once the revision passes the permission preflight
	// (storePending); nil when there is none to store.
	pending *renderstore.Render
	// err is why the revision could not be rendered or planned.
	err error
}

// createBundle creates the Bundle of a revision that has none, born
// complete: its content is unpacked (ensureContent) and rendered before
// the Bundle is created, and what a status write would have said — the
// content digest and URL and the object count — is recorded in
// spec.unpacked, which only the manager may set. The Bundle carries the
// revision's number (label core.rukpak.io/revision). Content that does
// not render still gets its Bundle (without an object count): the install
// step reports why it cannot be installed, as for any revision.
//
// The Bundle exists before anything of the revision is applied: until a
// first install records its inventory, its Bundle says what it may have
// written (install.go, earlierRevisionIDs).
func (r *Reconciler) createBundle(ctx context.Context, s *scope) (bool, error) {
	if s.bundle != nil {
		return true, nil
	}
	number, err := r.nextRevisionNumber(ctx, s)
	if err != nil {
		s.unpackErr = err
		return false, err
	}
	ref := revisionRef{bundle: s.revision, spec: s.specDigest, digest: s.digest, config: s.bd.Spec.Config, values: s.values, upgrade: true, number: number}
	s.rendered = r.planDigest(ctx, s, ref, renderAndStore)
	plan, perr := s.rendered.plan, s.rendered.err
	record := &v1alpha2.UnpackRecord{ContentDigest: s.digest}
	if r.ContentURL != "" {
		record.ContentURL = contentserver.URL(r.ContentURL, s.revision)
	}
	if perr == nil {
		record.ObjectCount = int32(len(plan.IDs()))
	}
	spec := r.wantSpec(s)
	spec.Unpacked = record
	b := &v1alpha2.Bundle{
		ObjectMeta: metav1.ObjectMeta{
			Name: s.revision,
			Labels: map[string]string{
				v1alpha2.LabelBundleDeployment: s.bd.Name,
				v1alpha2.LabelRevision:         strconv.Itoa(number),
			},
			Annotations: approval.RequesterAnnotations(r.Self),
			Finalizers:  []string{v1alpha2.FinalizerContent},
		},
		Spec: spec,
	}
	shardBundle(s.bd, b)
	if err := controllerutil.SetControllerReference(s.bd, b, r.Client.Scheme()); err != nil {
		return false, fmt.Errorf("owning Bundle %s: %w", s.revision, err)
	}
	err = r.Client.Create(ctx, b)
	if apierrors.IsAlreadyExists(err) {
		// Created since the cache was read (by this process, or
		// planted): used only if it is this BundleDeployment's. The
		// cache does not show it yet: read from the API server.
		s.rendered = nil
		var reader client.Reader = r.Client
		if r.APIReader != nil {
			reader = r.APIReader
		}
		existing := &v1alpha2.Bundle{}
		if err := reader.Get(ctx, client.ObjectKey{Name: s.revision}, existing); err != nil {
			s.unpackErr = fmt.Errorf("getting Bundle %s: %w", s.revision, err)
			return false, s.unpackErr
		}
		return r.useBundle(ctx, s, existing)
	}
	if err != nil {
		s.unpackErr = fmt.Errorf("creating Bundle %s: %w", s.revision, err)
		return false, s.unpackErr
	}
	s.mem.number = number
	s.bundle = b
	s.created = true
	// A render made here (s.rendered.pending) is stored once the revision
	// passes the permission preflight (storePending).
	return true, nil
}

// planOf returns revision ref rendered and planned: the one rendered when
// its Bundle was created (or its review was made) in this reconcile,
// handed over once and let go of by the scope, else a new render
// (planDigest). Its err says why it could not be.
func (r *Reconciler) planOf(ctx context.Context, s *scope, ref revisionRef) *rendered {
	if p := s.rendered; p != nil && p.bundle == ref.bundle && p.spec == ref.spec && p.digest == ref.digest {
		s.rendered = nil
		return p
	}
	return r.planDigest(ctx, s, ref, renderAndStore)
}

// nextRevisionNumber is the number of bd's next revision (see
// ownership.NextRevisionNumber), from its Bundles in the cache and the
// number this process handed out last.
func (r *Reconciler) nextRevisionNumber(ctx context.Context, s *scope) (int, error) {
	bd := s.bd
	bundles, err := r.bundlesLabelled(ctx, bd.Name)
	if err != nil {
		return 0, fmt.Errorf("numbering the revision: %w", err)
	}
	return ownership.NextRevisionNumber(bd, bundles, r.bundleWriters(), s.mem.number), nil
}
