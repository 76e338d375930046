package bundledeployment

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rukpak/rukpak/api/v1alpha2"
	"github.com/rukpak/rukpak/internal/builtins"
	"github.com/rukpak/rukpak/internal/lookup"
	"github.com/rukpak/rukpak/internal/ownership"
	"github.com/rukpak/rukpak/internal/renderstore"
	"github.com/rukpak/rukpak/pkg/failure"
	"github.com/rukpak/rukpak/pkg/format"
)

// renderMode says what a render of a revision may do when its provisioner
// renders once (provisioner.Provisioner.RenderOnce) and no render is stored.
type renderMode int

const (
	// renderAndStore renders the revision, answering Helm's lookup as the
	// install identity, and stores the render: a revision about to be
	// applied.
	renderAndStore renderMode = iota
	// renderOnly renders without storing it, offline (lookup finds
	// nothing): a revision read only to know which objects it has.
	renderOnly
)

// revisionRenderer renders the objects of a revision (render).
type revisionRenderer interface {
	Render(ctx context.Context, s *scope, ref revisionRef, mode renderMode) (renderResult, error)
}

// formatRenderer is the revisionRenderer of the Reconciler's content
// store, the class's format and the stored renders (render).
type formatRenderer struct{ r *Reconciler }

var _ revisionRenderer = formatRenderer{}

// Render implements revisionRenderer.
func (f formatRenderer) Render(ctx context.Context, s *scope, ref revisionRef, mode renderMode) (renderResult, error) {
	return f.r.render(ctx, s, ref, mode)
}

// renderFormatVersion names, in a stored render, what made it.
const renderFormatVersion = "rukpak/v1"

// render returns the objects of revision ref. Deterministic formats are
// rendered every time. A format that renders once is rendered the first
// time its revision is applied, with Helm's release semantics (lookup
// answered from the cluster as the install identity, .Release.IsUpgrade
// and .Release.Revision), and the render is stored in the cluster (package
// renderstore); every later apply of the revision — drift correction, a
// restart, another replica, a rollback — applies the stored objects. A
// stored render that is lost or damaged is rendered again with a Warning event.
//
// A render is stored only once its revision passed the permission
// preflight (authorization passed before anything was rendered): render
// returns it as pending (renderResult.pending), and storePending stores
// it when the preflight passes, before the revision is reviewed or
// applied. A revision the preflight refuses stores nothing, and is
// rendered again when it is tried again.
func (r *Reconciler) render(ctx context.Context, s *scope, ref revisionRef, mode renderMode) (renderResult, error) {
	prov := s.prov
	fsys, err := r.Unpacker.Store().FS(ref.digest)
	if err != nil {
		return renderResult{}, fmt.Errorf("opening content %s: %w", ref.digest, err)
	}
	cfg, err := builtins.FormatConfig(prov, s.bd.Name, s.bd.Spec.InstallNamespace, ref.config, ref.values, r.Cluster)
	if err != nil {
		return renderResult{}, err
	}
	if !prov.RenderOnce || r.Renders == nil {
		objs, err := prov.Format.Objects(ctx, fsys, cfg)
		return renderResult{objects: objs}, err
	}
	var b *v1alpha2.Bundle
	if ref.number == 0 {
		// The revision's Bundle exists: its render may be stored.
		if b, err = r.revisionBundle(ctx, s, ref.bundle); err != nil {
			return renderResult{}, err
		}
		if objs, ok, err := r.storedRender(ctx, s, b, ref); ok || err != nil {
			return renderResult{objects: objs}, err
		}
	}
	if mode == renderOnly {
		objs, err := prov.Format.Objects(ctx, fsys, cfg)
		return renderResult{objects: objs}, err
	}
	number := ref.number
	if b != nil {
		number = ownership.RevisionNumber(b)
	}
	active := s.facts.active
	cfg.Release = format.Release{IsUpgrade: active != "" && active != ref.bundle, Revision: max(1, number)}
	objs, answers, err := lookup.Render(ctx, prov.Format, fsys, cfg, r.lookupResolver(s))
	if err != nil {
		return renderResult{}, err
	}
	return renderResult{objects: deepCopies(objs), pending: &renderstore.Render{
		Revision: ref.bundle, ContentDigest: ref.digest, FormatVersion: renderFormatVersion, Objects: objs, Answers: answers,
		ReleaseRevision: cfg.Release.Revision, Upgrade: cfg.Release.IsUpgrade,
	}}, nil
}

// renderResult is what render made of a revision.
type renderResult struct {
	// objects are the revision's objects, the caller's to change.
	objects []*unstructured.Unstructured
	// pending is the render made by this call of a format that renders
	// once, to be stored once the revision passes the permission
	// preflight (storePending); nil when the render was stored already,
	// or is not to be stored.
	pending *renderstore.Render
}

// storePending stores the pending render of p (rendered.pending, made in
// this reconcile), whose revision passed the permission preflight, and
// lets go of it: it is stored once. When another render of it was stored
// meanwhile (another replica), that one is the revision's: the reconcile
// fails, to apply it the next time.
func (r *Reconciler) storePending(ctx context.Context, s *scope, p *rendered) error {
	if p == nil || p.pending == nil {
		return nil
	}
	pending, revision := p.pending, p.bundle
	p.pending = nil
	b, err := r.revisionBundle(ctx, s, revision)
	if err != nil {
		return err
	}
	_, other, err := r.storeRender(ctx, s, b, *pending)
	if err != nil {
		return err
	}
	if other {
		return fmt.Errorf("another render of revision %s was kept meanwhile: it is applied next", revision)
	}
	return nil
}

// storedRender returns the stored render of ref, when there is one of this
// Bundle and content; ok is false when the revision must be rendered (a
// Warning event says why, for a revision that was applied before).
func (r *Reconciler) storedRender(ctx context.Context, s *scope, b *v1alpha2.Bundle, ref revisionRef) (objs []*unstructured.Unstructured, ok bool, err error) {
	kept, err := r.Renders.Load(ctx, ref.bundle)
	switch {
	case err == nil && kept.BundleUID == b.UID && kept.ContentDigest == ref.digest:
		return kept.Objects, true, nil
	case err == nil:
		r.Recorder.Eventf(s.bd, nil, corev1.EventTypeWarning, renderstore.EventRenderCorrupt, "Install",
			"the kept render of revision %s is of another Bundle or content (%s, not %s): rendering it again, so what its templates generate (passwords, certificates) may change",
			ref.bundle, kept.ContentDigest, ref.digest)
		return nil, false, r.Renders.Delete(ctx, ref.bundle)
	case renderstore.Reason(err) == renderstore.EventRenderLost:
		if r.wasApplied(s, ref.bundle) {
			r.Recorder.Eventf(s.bd, nil, corev1.EventTypeWarning, renderstore.EventRenderLost, "Install",
				"the kept render of revision %s is missing: rendering it again, so what its templates generate (passwords, certificates) may change", ref.bundle)
		}
		return nil, false, nil
	case renderstore.Reason(err) == renderstore.EventRenderCorrupt:
		r.Recorder.Eventf(s.bd, nil, corev1.EventTypeWarning, renderstore.EventRenderCorrupt, "Install",
			"the kept render of revision %s cannot be used (%v): rendering it again, so what its templates generate (passwords, certificates) may change", ref.bundle, err)
		return nil, false, nil
	}
	return nil, false, fmt.Errorf("reading the kept render of revision %s: %w", ref.bundle, err)
}

// storeRender stores rendered as the render of Bundle b and returns its
// objects. When another render of b was stored meanwhile (another replica,
// or a reconcile that raced this one), that one is the revision's, and
// other is set.
func (r *Reconciler) storeRender(ctx context.Context, s *scope, b *v1alpha2.Bundle, rendered renderstore.Render) (objs []*unstructured.Unstructured, other bool, err error) {
	err = r.Renders.Save(ctx, b, rendered)
	if errors.Is(err, renderstore.ErrExists) {
		kept, lerr := r.Renders.Load(ctx, b.Name)
		if lerr != nil {
			return nil, true, fmt.Errorf("reading the render of revision %s kept meanwhile: %w", b.Name, lerr)
		}
		return kept.Objects, true, nil
	}
	if errors.Is(err, renderstore.ErrQuota) {
		// Not applied: a revision is applied only with its render stored.
		return nil, false, failure.New(v1alpha2.ReasonResourceLimit, "the render of revision %s cannot be kept: %v", b.Name, err)
	}
	if errors.Is(err, renderstore.ErrTooLarge) {
		// It can never be stored: applied as rendered, and rendered again
		// by every later apply, as by a format that renders every time.
		r.Recorder.Eventf(s.bd, nil, corev1.EventTypeWarning, renderstore.EventRenderNotSaved, "Install",
			"the render of revision %s is too large to keep (%v): it is applied, and rendered again whenever it is applied again", b.Name, err)
		return deepCopies(rendered.Objects), false, nil
	}
	if err != nil {
		// Not applied before it is stored: retried.
		return nil, false, fmt.Errorf("keeping the render of revision %s: %w", b.Name, err)
	}
	return deepCopies(rendered.Objects), false, nil
}

// wasApplied reports whether revision name was applied before, so that a
// stored render of it should exist.
func (r *Reconciler) wasApplied(s *scope, name string) bool {
	if st := s.mem.applied; st != nil && st.bundle == name {
		return true
	}
	return name == s.facts.active || name == s.facts.lastHealthy
}

// revisionBundle returns Bundle name: the scope's when it is that one.
func (r *Reconciler) revisionBundle(ctx context.Context, s *scope, name string) (*v1alpha2.Bundle, error) {
	if s.bundle != nil && s.bundle.Name == name {
		return s.bundle, nil
	}
	b := &v1alpha2.Bundle{}
	if err := r.Client.Get(ctx, client.ObjectKey{Name: name}, b); err != nil {
		return nil, fmt.Errorf("reading Bundle %s: %w", name, err)
	}
	return b, nil
}

// lookupResolver answers Helm's lookup as s's install identity, uncached.
func (r *Reconciler) lookupResolver(s *scope) *lookup.Resolver {
	var c client.Reader = r.APIReader
	if s.as.client != nil {
		c = s.as.client
	}
	return lookup.NewResolver(c, r.Client.RESTMapper(), lookup.DefaultLimits())
}

// deepCopies copies objs, which callers change (certificates are filled
// in) while a stored render may be shared.
func deepCopies(objs []*unstructured.Unstructured) []*unstructured.Unstructured {
	out := make([]*unstructured.Unstructured, len(objs))
	for i, o := range objs {
		out[i] = o.DeepCopy()
	}
	return out
}
