package bundledeployment

import (
	"context"
	"fmt"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rukpak/rukpak/api/v1alpha2"
	"github.com/rukpak/rukpak/internal/apply"
	"github.com/rukpak/rukpak/internal/permissions"
	"github.com/rukpak/rukpak/pkg/failure"
)

// Recheck intervals of refusals an admin fixes outside the
// BundleDeployment (RBAC changes trigger no reconcile).
const (
	// permissionsRecheck: a revision refused for missing permissions, or
	// a requester not authorized, is checked again this often.
	permissionsRecheck = 30 * time.Second
	// firstPermissionsRecheck is the first recheck after such a refusal.
	firstPermissionsRecheck = 3 * time.Second
)

// preflight checks that the install identity may do everything the apply
// engine does to every object of plan; if not, nothing is applied and the
// refusal lists the missing rules. The manager's own identity is not
// checked (it runs in the explicit cluster-admin mode).
func (r *Reconciler) preflight(ctx context.Context, s *scope, plan *apply.Plan) error {
	if r.Permissions == nil || s.as.id.IsManager() {
		return nil
	}
	res := plan.Resources()
	targets := make([]permissions.Target, len(res))
	for i, o := range res {
		targets[i] = permissions.Target{Resource: o.Resource, Namespace: o.ID.Namespace, Name: o.ID.Name}
	}
	subject := permissions.ServiceAccount(s.as.id.Namespace, s.as.id.Name)
	var listed permissions.RulesReviewer
	if s.as.client != nil {
		listed = rulesOf(s.as.client)
	}
	missing, err := r.Permissions.MissingListed(ctx, subject, targets, listed)
	if err != nil {
		return fmt.Errorf("checking the permissions of %s: %w", s.as.id, err)
	}
	if len(missing) > 0 {
		return failure.New(v1alpha2.ReasonMissingPermissions, "%s", permissions.Message(subject, missing))
	}
	return nil
}

// rulesOf lists the rules of the identity c impersonates, with a
// SelfSubjectRulesReview (every authenticated user may create one).
func rulesOf(c client.Client) permissions.RulesReviewer {
	return func(ctx context.Context, namespace string) (*authorizationv1.SubjectRulesReviewStatus, error) {
		review := &authorizationv1.SelfSubjectRulesReview{Spec: authorizationv1.SelfSubjectRulesReviewSpec{Namespace: namespace}}
		if err := c.Create(ctx, review); err != nil {
			return nil, fmt.Errorf("listing the rules of namespace %s: %w", namespace, err)
		}
		return &review.Status, nil
	}
}

// adminRecheck is when a refusal that waits for an admin is checked
// again: soon the first time (RBAC just created with the BundleDeployment
// can take a moment to reach the authorizer), then every
// permissionsRecheck.
func adminRecheck(bd *v1alpha2.BundleDeployment, err error) time.Duration {
	if c := meta.FindStatusCondition(bd.Status.Conditions, v1alpha2.TypeInstalled); c == nil || c.Reason != failure.Reason(err, "") {
		return firstPermissionsRecheck
	}
	return permissionsRecheck
}

// waitsForAdmin reports whether an install error is a refusal an admin
// fixes outside the BundleDeployment (RBAC): not a failed revision,
// checked again now and then. (NotAuthorized and ServiceAccountRequired
// stop the reconcile before any install.)
func waitsForAdmin(err error) bool {
	return failure.Reason(err, "") == v1alpha2.ReasonMissingPermissions
}
