package bundledeployment

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"sort"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/rukpak/rukpak/api/v1alpha2"
	"github.com/rukpak/rukpak/internal/failure"
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

// revisionName is the BundleDeployment's name plus a hash of everything that
// makes up a revision: class, pinned sources, config and the digest of the
// resolved values (so that a change of a valuesFrom object is an upgrade).
func revisionName(bd *v1alpha2.BundleDeployment, pinned []v1alpha2.BundleSource, valuesDigest string) string {
	b, _ := json.Marshal(struct {
		Class   string                  `json:"class"`
		Sources []v1alpha2.BundleSource `json:"sources"`
		Config  *v1alpha2.BundleConfig  `json:"config,omitempty"`
		Values  string                  `json:"values,omitempty"`
	}{bd.Spec.ProvisionerClassName, pinned, bd.Spec.Config, valuesDigest})
	sum := sha256.Sum256(b)
	return bd.Name + "-" + hex.EncodeToString(sum[:])[:10]
}

// ensureBundle creates the revision's Bundle unless it exists.
func (r *Reconciler) ensureBundle(ctx context.Context, s *scope) (bool, error) {
	b := &v1alpha2.Bundle{}
	err := r.Client.Get(ctx, client.ObjectKey{Name: s.revision}, b)
	if apierrors.IsNotFound(err) {
		b = &v1alpha2.Bundle{
			ObjectMeta: metav1.ObjectMeta{
				Name:       s.revision,
				Labels:     map[string]string{v1alpha2.LabelBundleDeployment: s.bd.Name},
				Finalizers: []string{v1alpha2.FinalizerContent},
			},
			Spec: v1alpha2.BundleSpec{
				ProvisionerClassName: s.bd.Spec.ProvisionerClassName,
				Sources:              s.pinned,
				Config:               s.bd.Spec.Config,
			},
		}
		if err := controllerutil.SetControllerReference(s.bd, b, r.Client.Scheme()); err != nil {
			return false, fmt.Errorf("owning Bundle %s: %w", s.revision, err)
		}
		err = r.Client.Create(ctx, b)
		if apierrors.IsAlreadyExists(err) {
			err = r.Client.Get(ctx, client.ObjectKey{Name: s.revision}, b)
		}
	}
	if err != nil {
		s.unpackErr = fmt.Errorf("creating Bundle %s: %w", s.revision, err)
		return false, s.unpackErr
	}
	if b.Labels[v1alpha2.LabelBundleDeployment] != s.bd.Name {
		s.unpackErr = failure.New(v1alpha2.ReasonUnpackFailed, "Bundle %s exists but does not belong to BundleDeployment %s", b.Name, s.bd.Name)
		return false, nil
	}
	s.bundle = b
	return true, nil
}

// ensureContent makes sure the revision's content is in the store.
func (r *Reconciler) ensureContent(ctx context.Context, s *scope) (bool, error) {
	digest, err := r.Unpacker.Ensure(ctx, s.bundle.Name, s.bundle.Spec.Sources, s.bundle.Status.ContentDigest)
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
	var old []v1alpha2.Bundle
	for _, b := range list.Items {
		if b.Name != s.bd.Status.ActiveBundle && b.Name != s.bd.Status.LastHealthyBundle && b.Name != s.revision && b.DeletionTimestamp.IsZero() {
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
