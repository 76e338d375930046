package approval

import (
	"context"
	"fmt"
	"slices"

	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	authorizationv1client "k8s.io/client-go/kubernetes/typed/authorization/v1"

	"github.com/rukpak/rukpak/api/v1alpha2"
	"github.com/rukpak/rukpak/internal/permissions"
	"github.com/rukpak/rukpak/internal/refs"
	"github.com/rukpak/rukpak/pkg/failure"
)

// The identity a BundleDeployment without spec.serviceAccount installs as,
// unless Checker says otherwise. config/policy names the same one.
const (
	DefaultManagerNamespace      = v1alpha2.SystemNamespace
	DefaultManagerServiceAccount = "rukpak-manager"
)

// mastersGroup passes every authorization check of the API server.
const mastersGroup = "system:masters"

// Checker re-checks, at reconcile time, that the requester of a
// BundleDeployment may impersonate its install identity and use its class
// and every Secret and ConfigMap its spec names, and that the requester of
// a Bundle may use its class, Secrets and ConfigMaps.
type Checker struct {
	// Reviews creates SubjectAccessReviews.
	Reviews authorizationv1client.SubjectAccessReviewInterface
	// ManagerNamespace and ManagerServiceAccount name the identity
	// BundleDeployments without spec.serviceAccount install as
	// (DefaultManagerNamespace, DefaultManagerServiceAccount when empty).
	ManagerNamespace, ManagerServiceAccount string
	// TrustedUsers are the user names of the manager itself: a Bundle it
	// created (for a BundleDeployment, whose requester is checked) is not
	// checked again.
	TrustedUsers []string
	// Uploads tells who uploaded the uploads a spec names. Without it no
	// one counts as an uploader: only a grant of use on uploads/HEX (or
	// system:masters) allows naming an upload.
	Uploads Uploaders
}

// Check returns nil when the requester of bd may impersonate its install
// identity, use its ProvisionerClass, use every Secret and ConfigMap its
// spec names (refs.List) and every upload it names: the requester or the
// ServiceAccount bd installs as uploaded it (Uploads), or the requester
// may use uploads/HEX (group core.rukpak.io). Otherwise it returns a *failure.Error with
// reason v1alpha2.ReasonNotAuthorized whose message names the user, the
// verb and the object (and the field naming it), as the admission denial
// does. A BundleDeployment without the requested-by annotation is refused
// the same way. A requester in group system:masters is allowed without
// reviews. Errors of the reviews themselves are returned wrapped; they are
// not failures.
func (c *Checker) Check(ctx context.Context, bd *v1alpha2.BundleDeployment) error {
	return c.check(ctx, bd, v1alpha2.BundleDeploymentKind, c.bundleDeploymentReviews(bd))
}

// CheckBundle is Check for a Bundle: its requester must be allowed to use
// its class, every Secret and ConfigMap it names and every upload it names
// (uploaded by the requester, or granted; a Bundle installs nothing, so no
// identity is checked). A Bundle the manager created itself
// (its requester is one of TrustedUsers) is allowed without reviews: the
// manager writes Bundles only for BundleDeployments whose requester Check
// allowed.
func (c *Checker) CheckBundle(ctx context.Context, b *v1alpha2.Bundle) error {
	if user, _, ok := Requester(b); ok && slices.Contains(c.TrustedUsers, user) {
		return nil
	}
	reviews := c.useReviews(b.Spec.ProvisionerClassName, refs.List(b.Spec.Sources, b.Spec.Config))
	return c.check(ctx, b, v1alpha2.BundleKind, append(reviews, uploadReviews(b.Spec.Sources, "")...))
}

func (c *Checker) check(ctx context.Context, obj metav1.Object, kind string, reviews []review) error {
	user, groups, ok := Requester(obj)
	if !ok {
		return failure.New(v1alpha2.ReasonNotAuthorized,
			"%s %q has no %s annotation, so rukpak cannot tell who asked for it: "+
				"the admission policies of config/policy (rukpak-requested-by, rukpak-install-authorization) are not installed, "+
				"or the %s predates them; install them (they are part of config/default), then re-apply its spec "+
				"or run `kubectl annotate %s %s %s=$USER --overwrite` (the policy records the real user after checking their permissions)",
			kind, obj.GetName(), v1alpha2.AnnotationRequestedBy, kind, lower(kind), obj.GetName(), v1alpha2.AnnotationRequestedBy)
	}
	if slices.Contains(groups, mastersGroup) {
		return nil
	}
	who := fmt.Sprintf(`user %q, who last changed this BundleDeployment's spec (annotation %s),`, user, v1alpha2.AnnotationRequestedBy)
	if kind == v1alpha2.BundleKind {
		who = fmt.Sprintf(`user %q, who created this Bundle (annotation %s),`, user, v1alpha2.AnnotationRequestedBy)
	}
	for _, r := range reviews {
		if r.upload != nil {
			uploaded, err := c.uploadedBy(ctx, r.upload, user)
			if err != nil {
				return err
			}
			if uploaded {
				continue
			}
		}
		allowed, err := c.allowed(ctx, user, groups, r.attributes)
		if err != nil {
			return err
		}
		if !allowed {
			return failure.New(v1alpha2.ReasonNotAuthorized, "%s %s", who, r.denied)
		}
	}
	return nil
}

func lower(kind string) string {
	if kind == v1alpha2.BundleKind {
		return "bundle"
	}
	return "bundledeployment"
}

// review is one permission a requester needs, and how to say it is
// missing (after "user U, who …,").
type review struct {
	attributes *authorizationv1.ResourceAttributes
	denied     string
	// upload, for the review of an upload, allows without the review
	// when the requester or the identity uploaded it.
	upload *uploadRef
}

func (c *Checker) bundleDeploymentReviews(bd *v1alpha2.BundleDeployment) []review {
	namespace, name, namesSA := c.identity(bd)
	how := fmt.Sprintf(`grant it with a Role in namespace %q allowing verb "impersonate" on serviceaccounts with resourceNames [%q], bound to the user or one of their groups`, namespace, name)
	what := ""
	if !namesSA {
		what = " (it sets no spec.serviceAccount, so it installs as the rukpak manager)"
		how += ", or set spec.serviceAccount to a ServiceAccount the user may impersonate"
	}
	impersonate := review{
		attributes: &authorizationv1.ResourceAttributes{
			Verb: "impersonate", Group: "", Resource: "serviceaccounts", Namespace: namespace, Name: name,
		},
		denied: fmt.Sprintf(`may not impersonate serviceaccounts %q in namespace %q, the identity it installs as%s; %s`, name, namespace, what, how),
	}
	identity := ""
	if namesSA {
		identity = "system:serviceaccount:" + namespace + ":" + name
	}
	reviews := append([]review{impersonate}, c.useReviews(bd.Spec.ProvisionerClassName, refs.List(bd.Spec.Sources, bd.Spec.Config))...)
	return append(reviews, uploadReviews(bd.Spec.Sources, identity)...)
}

// useReviews are the reviews of verb use on the class and on every
// Secret and ConfigMap of list (each object once, at the first field
// naming it).
func (c *Checker) useReviews(class string, list []refs.Ref) []review {
	out := []review{{
		attributes: &authorizationv1.ResourceAttributes{
			Verb: "use", Group: v1alpha2.GroupVersion.Group, Resource: "provisionerclasses", Name: class,
		},
		denied: fmt.Sprintf(`may not use provisionerclasses %q; grant it with a ClusterRole allowing verb "use" on provisionerclasses (apiGroups [%q]) with resourceNames [%q], bound to the user or one of their groups`,
			class, v1alpha2.GroupVersion.Group, class),
	}}
	for _, r := range refs.Distinct(list) {
		out = append(out, review{
			attributes: &authorizationv1.ResourceAttributes{
				Verb: "use", Group: "", Resource: string(r.Resource), Namespace: v1alpha2.SystemNamespace, Name: r.Name,
			},
			denied: UseDenied(r),
		})
	}
	return out
}

// UseDenied says that the requester may not use the object r names, and
// how to grant it; the admission policy says the same.
func UseDenied(r refs.Ref) string {
	return fmt.Sprintf(`may not use %s %q in namespace %q, named by %s; grant it with a Role in namespace %q allowing verb "use" on %s (apiGroups [""]) with resourceNames [%q], bound to the user or one of their groups`,
		r.Resource, r.Name, v1alpha2.SystemNamespace, r.Field, v1alpha2.SystemNamespace, r.Resource, r.Name)
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

// Approver returns the user who approved bd's revision named by the
// approve-revision annotation (the approved-by annotations admission
// records), and their groups; ok is false when there is none.
func Approver(bd *v1alpha2.BundleDeployment) (user string, groups []string, ok bool) {
	user = bd.Annotations[v1alpha2.AnnotationApprovedBy]
	if user == "" {
		return "", nil, false
	}
	return user, DecodeGroups(bd.Annotations[v1alpha2.AnnotationApprovedByGroups]), true
}

// CheckApprover returns nil when the approved-by user of bd may approve
// its revisions: verb approve on bundledeployments (group core.rukpak.io)
// named bd. Otherwise a *failure.Error with reason
// v1alpha2.ReasonNotAuthorized says who may not and how to grant it, as the
// admission denial does. A requester in group system:masters is allowed
// without a review.
func (c *Checker) CheckApprover(ctx context.Context, bd *v1alpha2.BundleDeployment) error {
	user, groups, ok := Approver(bd)
	if !ok {
		return failure.New(v1alpha2.ReasonNotAuthorized, "BundleDeployment %q has no %s annotation, so rukpak cannot tell who approved it: the admission policy rukpak-approved-by of config/policy is not installed",
			bd.Name, v1alpha2.AnnotationApprovedBy)
	}
	return c.mayApprove(ctx, bd, user, groups,
		fmt.Sprintf("who approved revision %s (annotation %s)", bd.Annotations[v1alpha2.AnnotationApproveRevision], v1alpha2.AnnotationApprovedBy))
}

// CheckMayApprove returns nil when user, of groups, may approve bd's
// revisions (verb approve on bundledeployments named bd, group
// core.rukpak.io): the test of a user who lowered bd's
// spec.upgrade.approval, which is itself an approval. Otherwise a
// *failure.Error with reason v1alpha2.ReasonNotAuthorized says who may
// not and how to grant it. Members of system:masters are allowed without
// a review.
func (c *Checker) CheckMayApprove(ctx context.Context, bd *v1alpha2.BundleDeployment, user string, groups []string) error {
	return c.mayApprove(ctx, bd, user, groups, fmt.Sprintf("who last changed its spec (annotation %s)", v1alpha2.AnnotationRequestedBy))
}

func (c *Checker) mayApprove(ctx context.Context, bd *v1alpha2.BundleDeployment, user string, groups []string, who string) error {
	if slices.Contains(groups, mastersGroup) {
		return nil
	}
	allowed, err := c.allowed(ctx, user, groups, &authorizationv1.ResourceAttributes{
		Verb: v1alpha2.VerbApprove, Group: v1alpha2.GroupVersion.Group, Resource: "bundledeployments", Name: bd.Name,
	})
	if err != nil {
		return err
	}
	if !allowed {
		return failure.New(v1alpha2.ReasonNotAuthorized,
			`user %q, %s, may not approve revisions of BundleDeployment %q; grant it with a ClusterRole allowing verb %q on bundledeployments (apiGroups [%q]) with resourceNames [%q], bound to the user or one of their groups`,
			user, who, bd.Name, v1alpha2.VerbApprove, v1alpha2.GroupVersion.Group, bd.Name)
	}
	return nil
}
