package planner

import (
	"context"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rukpak/rukpak/api/v1alpha2"
	"github.com/rukpak/rukpak/internal/apply"
	"github.com/rukpak/rukpak/internal/servingcert"
	"github.com/rukpak/rukpak/pkg/failure"
)

// EngineOptions returns the apply engine's options that name rukpak's
// API: its field manager (v1alpha2.FieldManager), the kind of the objects
// that own plans (v1alpha2.BundleDeploymentKind) and the labels and
// annotations the engine writes and reads. Callers add the rest
// (Concurrency, the timeouts, Events, KindNotServed).
func EngineOptions() apply.Options {
	return apply.Options{
		FieldManager: v1alpha2.FieldManager,
		OwnerKind:    v1alpha2.BundleDeploymentKind,
		Keys: apply.Keys{
			OwnerKind:          v1alpha2.LabelOwnerKind,
			OwnerName:          v1alpha2.LabelOwnerName,
			OwnerUID:           v1alpha2.LabelOwnerUID,
			Revision:           v1alpha2.AnnotationRevision,
			ReplaceOnImmutable: v1alpha2.AnnotationReplaceOnImmutable,
			Optional:           v1alpha2.AnnotationOptional,
		},
	}
}

// Preparer turns objects into a plan: the apply engine.
type Preparer interface {
	// Prepare places, labels and checks objs as owner's (see
	// apply.Engine.Prepare).
	Prepare(objs []*unstructured.Unstructured, installNamespace string, owner apply.Owner) (*apply.Plan, error)
}

var _ Preparer = (*apply.Engine)(nil)

// Revision is what a plan is made of.
type Revision struct {
	// Objects are the revision's objects as its format rendered them.
	// FillCerts fills their serving certificates in: they are changed.
	Objects []*unstructured.Unstructured
	// Owner is who applies the plan: the BundleDeployment (its name and
	// UID) and the revision.
	Owner apply.Owner
	// InstallNamespace is the BundleDeployment's spec.installNamespace.
	InstallNamespace string
	// DriftIgnore is the BundleDeployment's spec.driftIgnore.
	DriftIgnore []v1alpha2.DriftIgnoreRule
	// Certs is how serving certificates are filled in.
	Certs Certs
}

// Plan runs the pipeline (see the package doc) over rev with e and
// returns the plan. A failure of Prepare is returned as the engine's
// (an *apply.Error for content it refuses); an invalid drift ignore path
// is a failure.Error of reason InvalidConfig.
func Plan(ctx context.Context, e Preparer, rev Revision) (*apply.Plan, error) {
	if err := FillCerts(ctx, rev.InstallNamespace, rev.Objects, rev.Certs); err != nil {
		return nil, err
	}
	plan, err := e.Prepare(rev.Objects, rev.InstallNamespace, rev.Owner)
	if err != nil {
		return nil, err
	}
	rules, err := IgnoreRules(rev.DriftIgnore)
	if err != nil {
		return nil, err
	}
	return plan.WithIgnored(append(rules, plan.AutoscalerRules()...)), nil
}

// IgnoreRules turns spec.driftIgnore into the apply engine's rules; a
// path that is not a JSON pointer is a failure of reason InvalidConfig
// naming it.
func IgnoreRules(in []v1alpha2.DriftIgnoreRule) ([]apply.IgnoreRule, error) {
	out := make([]apply.IgnoreRule, 0, len(in))
	for i, r := range in {
		rule := apply.IgnoreRule{Group: r.Group, Kind: r.Kind, Name: r.Name, Namespace: r.Namespace}
		for j, p := range r.Paths {
			path, err := apply.ParsePointer(p)
			if err != nil {
				return nil, failure.New(v1alpha2.ReasonInvalidConfig, "spec.driftIgnore[%d].paths[%d]: %v", i, j, err)
			}
			rule.Paths = append(rule.Paths, path)
		}
		out = append(out, rule)
	}
	return out, nil
}

// Certs is how FillCerts fills in serving certificates.
type Certs struct {
	// Reader returns the reader of the live certificate Secrets (the
	// install identity's, or the user's); it is called only when an
	// object asks for a certificate. Nil reads none: every certificate
	// is new.
	Reader func() (client.Reader, error)
	// Now is the clock certificates are judged and issued by; time.Now
	// when nil.
	Now func() time.Time
	// Options are the certificates' lifetimes.
	Options servingcert.Options
	// Unreadable, when set, is told that the Secrets may not be read
	// (the API server forbids it), and new certificates are issued; when
	// nil, such a read fails.
	Unreadable func(error)
	// Due, when set, is told when the certificates filled in are next
	// due (servingcert.Result.Next).
	Due func(time.Time)
}

// FillCerts completes objs, a revision's objects in namespace (its
// install namespace), with the serving certificates and CA bundles they
// ask for (see package servingcert): the live certificate Secrets are
// kept while good, so that rendering again changes nothing until a
// certificate is due, and new ones are issued where they are missing or
// due.
func FillCerts(ctx context.Context, namespace string, objs []*unstructured.Unstructured, c Certs) error {
	names := servingcert.Requested(objs, namespace)
	if len(names) == 0 {
		return nil
	}
	live := servingcert.Live{}
	if c.Reader != nil {
		r, err := c.Reader()
		if err != nil {
			return err
		}
		live, err = servingcert.Load(ctx, r, namespace, names)
		if apierrors.IsForbidden(err) && c.Unreadable != nil {
			c.Unreadable(err)
			live, err = servingcert.Live{}, nil
		}
		if err != nil {
			return err
		}
	}
	now := time.Now
	if c.Now != nil {
		now = c.Now
	}
	res, err := servingcert.Fill(objs, namespace, live, now(), c.Options)
	if err != nil {
		return fmt.Errorf("serving certificates: %w", err)
	}
	if c.Due != nil {
		c.Due(res.Next)
	}
	return nil
}
