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
	"github.com/rukpak/rukpak/pkg/format"
)

// renderMode says what a render of a revision may do when its provisioner
// renders once (provisioner.Provisioner.RenderOnce) and no render is kept.
type renderMode int

const (
	// renderAndKeep renders the revision, answering Helm's lookup as the
	// install identity, and keeps the render: a revision about to be
	// applied.
	renderAndKeep renderMode = iota
	// renderOnly renders without keeping it (and lookup finds nothing): a
	// revision read only to know which objects it has.
	renderOnly
)

// render returns the objects of revision ref. Deterministic formats are
// rendered every time. A format that renders once is rendered the first
// time its revision is applied, with Helm's release semantics (lookup
// answered from the cluster as the install identity, .Release.IsUpgrade
// and .Release.Revision), and the render is kept in the cluster (package
// renderstore); every later apply of the revision — drift correction, a
// restart, another replica, a rollback — applies the kept objects. A kept
// render that is lost or damaged is rendered again with a Warning event.
func (r *Reconciler) render(ctx context.Context, s *scope, ref revisionRef, mode renderMode) ([]*unstructured.Unstructured, error) {
	prov := s.prov
	fsys, err := r.Unpacker.Store().FS(ref.digest)
	if err != nil {
		return nil, fmt.Errorf("opening content %s: %w", ref.digest, err)
	}
	cfg, err := builtins.FormatConfig(prov, s.bd.Name, s.bd.Spec.InstallNamespace, ref.config, ref.values, r.Cluster)
	if err != nil {
		return nil, err
	}
	if !prov.RenderOnce || r.Renders == nil {
		return prov.Format.Objects(ctx, fsys, cfg)
	}
	kept, err := r.Renders.Load(ctx, ref.bundle)
	switch {
	case err == nil && kept.Digest == ref.digest:
		return deepCopies(kept.Objects), nil
	case err == nil:
		r.Recorder.Eventf(s.bd, nil, corev1.EventTypeWarning, renderstore.EventRenderLost, "Install",
			"the kept render of revision %s is of content %s, not %s: rendering it again", ref.bundle, kept.Digest, ref.digest)
	case errors.Is(err, renderstore.ErrNotFound):
		if r.wasApplied(s, ref.bundle) {
			r.Recorder.Eventf(s.bd, nil, corev1.EventTypeWarning, renderstore.EventRenderLost, "Install",
				"the kept render of revision %s is missing: rendering it again, so objects that templates generate (passwords, certificates) may change", ref.bundle)
		}
	default:
		var corrupt *renderstore.CorruptError
		if !errors.As(err, &corrupt) {
			return nil, fmt.Errorf("reading the kept render of revision %s: %w", ref.bundle, err)
		}
		r.Recorder.Eventf(s.bd, nil, corev1.EventTypeWarning, renderstore.EventRenderLost, "Install",
			"the kept render of revision %s cannot be used (%v): rendering it again, so objects that templates generate (passwords, certificates) may change", ref.bundle, err)
	}
	if mode == renderOnly {
		return prov.Format.Objects(ctx, fsys, cfg)
	}
	b := s.bundle
	if b == nil || b.Name != ref.bundle {
		if b, err = r.bundleNamed(ctx, ref.bundle); err != nil {
			return nil, err
		}
	}
	cfg.Release = format.Release{IsUpgrade: s.bd.Status.ActiveBundle != "" && s.bd.Status.ActiveBundle != ref.bundle, Revision: max(1, ownership.RevisionNumber(b))}
	objs, answers, err := lookup.Render(ctx, prov.Format, fsys, cfg, r.lookupResolver(s))
	if err != nil {
		return nil, err
	}
	if err := r.Renders.Save(ctx, b, renderstore.Render{
		Revision: ref.bundle, Digest: ref.digest, Objects: objs, Lookups: answers,
		ReleaseRevision: cfg.Release.Revision, IsUpgrade: cfg.Release.IsUpgrade,
	}); err != nil {
		return nil, fmt.Errorf("keeping the render of revision %s: %w", ref.bundle, err)
	}
	return objs, nil
}

// wasApplied reports whether revision name was applied before, so that a
// kept render of it should exist.
func (r *Reconciler) wasApplied(s *scope, name string) bool {
	if st := r.state(s.bd.Name); st != nil && st.bundle == name {
		return true
	}
	return name == s.bd.Status.ActiveBundle || name == s.bd.Status.LastHealthyBundle
}

// bundleNamed reads Bundle name.
func (r *Reconciler) bundleNamed(ctx context.Context, name string) (*v1alpha2.Bundle, error) {
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
// in) while the kept render is shared.
func deepCopies(objs []*unstructured.Unstructured) []*unstructured.Unstructured {
	out := make([]*unstructured.Unstructured, len(objs))
	for i, o := range objs {
		out[i] = o.DeepCopy()
	}
	return out
}
