package approval

import (
	"context"
	"fmt"
	"slices"
	"strings"

	authorizationv1 "k8s.io/api/authorization/v1"
	authorizationv1client "k8s.io/client-go/kubernetes/typed/authorization/v1"

	"github.com/rukpak/rukpak/api/v1alpha2"
	"github.com/rukpak/rukpak/internal/failure"
	"github.com/rukpak/rukpak/internal/permissions"
)

// The identity a BundleDeployment without spec.serviceAccount installs as,
// unless Checker says otherwise. config/policy names the same one.
const (
	DefaultManagerNamespace      = v1alpha2.SystemNamespace
	DefaultManagerServiceAccount = "rukpak-manager"
)

// mastersGroup passes every authorization check of the API server.
const mastersGroup = "system:masters"

// Requester returns who last created or changed bd's spec, from the
// requested-by annotations. ok is false when bd has no (or an empty)
// core.rukpak.io/requested-by annotation.
func Requester(bd *v1alpha2.BundleDeployment) (user string, groups []string, ok bool) {
	annotations := bd.GetAnnotations()
	user = annotations[v1alpha2.AnnotationRequestedBy]
	if user == "" {
		return "", nil, false
	}
	for _, g := range strings.Split(annotations[v1alpha2.AnnotationRequestedByGroups], ",") {
		if g != "" {
			groups = append(groups, g)
		}
	}
	return user, groups, true
}

// Checker re-checks, at reconcile time, that the requester may impersonate
// the install identity and use the class.
type Checker struct {
	// Reviews creates SubjectAccessReviews.
	Reviews authorizationv1client.SubjectAccessReviewInterface
	// ManagerNamespace and ManagerServiceAccount name the identity
	// BundleDeployments without spec.serviceAccount install as
	// (DefaultManagerNamespace, DefaultManagerServiceAccount when empty).
	ManagerNamespace, ManagerServiceAccount string
}

// Check returns nil when the requester of bd may impersonate its install
// identity and use its ProvisionerClass. Otherwise it returns a
// *failure.Error with reason v1alpha2.ReasonNotAuthorized whose message
// names the user, the verb and the object, as the admission denial does. A
// BundleDeployment without the requested-by annotation is refused the same
// way. A requester in group system:masters is allowed without reviews.
// Errors of the reviews themselves are returned wrapped; they are not
// failures.
func (c *Checker) Check(ctx context.Context, bd *v1alpha2.BundleDeployment) error {
	user, groups, ok := Requester(bd)
	if !ok {
		return failure.New(v1alpha2.ReasonNotAuthorized,
			"BundleDeployment %q has no %s annotation, so rukpak cannot tell who asked for this install: "+
				"the admission policies of config/policy (rukpak-requested-by, rukpak-install-authorization) are not installed, "+
				"or the BundleDeployment predates them; install them (they are part of config/default), then re-apply its spec "+
				"or run `kubectl annotate bundledeployment %s %s=$USER --overwrite` (the policy records the real user after checking their permissions)",
			bd.Name, v1alpha2.AnnotationRequestedBy, bd.Name, v1alpha2.AnnotationRequestedBy)
	}
	if slices.Contains(groups, mastersGroup) {
		return nil
	}
	for _, r := range c.reviews(bd) {
		allowed, err := c.allowed(ctx, user, groups, r.attributes)
		if err != nil {
			return err
		}
		if !allowed {
			return failure.New(v1alpha2.ReasonNotAuthorized, "%s", r.denied(user))
		}
	}
	return nil
}

// review is one permission a requester needs, and how to say it is missing.
type review struct {
	attributes *authorizationv1.ResourceAttributes
	denied     func(user string) string
}

func (c *Checker) reviews(bd *v1alpha2.BundleDeployment) []review {
	namespace, name, namesSA := c.identity(bd)
	impersonate := review{
		attributes: &authorizationv1.ResourceAttributes{
			Verb: "impersonate", Group: "", Resource: "serviceaccounts", Namespace: namespace, Name: name,
		},
		denied: func(user string) string {
			how := fmt.Sprintf(`grant it with a Role in namespace %q allowing verb "impersonate" on serviceaccounts with resourceNames [%q], bound to the user or one of their groups`, namespace, name)
			what := ""
			if !namesSA {
				what = " (it sets no spec.serviceAccount, so it installs as the rukpak manager)"
				how += ", or set spec.serviceAccount to a ServiceAccount the user may impersonate"
			}
			return fmt.Sprintf(`user %q, who last changed this BundleDeployment's spec (annotation %s), may not impersonate serviceaccounts %q in namespace %q, the identity it installs as%s; %s`,
				user, v1alpha2.AnnotationRequestedBy, name, namespace, what, how)
		},
	}
	class := bd.Spec.ProvisionerClassName
	use := review{
		attributes: &authorizationv1.ResourceAttributes{
			Verb: "use", Group: v1alpha2.GroupVersion.Group, Resource: "provisionerclasses", Name: class,
		},
		denied: func(user string) string {
			return fmt.Sprintf(`user %q, who last changed this BundleDeployment's spec (annotation %s), may not use provisionerclasses %q; grant it with a ClusterRole allowing verb "use" on provisionerclasses (apiGroups [%q]) with resourceNames [%q], bound to the user or one of their groups`,
				user, v1alpha2.AnnotationRequestedBy, class, v1alpha2.GroupVersion.Group, class)
		},
	}
	return []review{impersonate, use}
}

// identity returns the ServiceAccount bd installs as, and whether bd names
// it itself.
func (c *Checker) identity(bd *v1alpha2.BundleDeployment) (namespace, name string, namesSA bool) {
	if sa := bd.Spec.ServiceAccount; sa != nil && sa.Name != "" {
		return bd.Spec.InstallNamespace, sa.Name, true
	}
	namespace, name = c.ManagerNamespace, c.ManagerServiceAccount
	if namespace == "" {
		namespace = DefaultManagerNamespace
	}
	if name == "" {
		name = DefaultManagerServiceAccount
	}
	return namespace, name, false
}

func (c *Checker) allowed(ctx context.Context, user string, groups []string, attrs *authorizationv1.ResourceAttributes) (bool, error) {
	reviews := permissions.Checker{Reviews: c.Reviews}
	ok, err := reviews.Allowed(ctx, permissions.Subject{User: user, Groups: groups}, *attrs)
	if err != nil {
		return false, fmt.Errorf("reviewing whether %q may %s %s %q: %w", user, attrs.Verb, attrs.Resource, attrs.Name, err)
	}
	return ok, nil
}
