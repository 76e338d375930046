package ui

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rukpak/rukpak/api/v1alpha2"
	"github.com/rukpak/rukpak/internal/approval"
	"github.com/rukpak/rukpak/internal/history"
	"github.com/rukpak/rukpak/internal/objdiff"
	"github.com/rukpak/rukpak/internal/review"
)

// statusOf is the HTTP status of a page that failed with err: the API
// server's own for its refusals, 500 otherwise.
func statusOf(err error) int {
	if errors.Is(err, approval.ErrNotAwaited) {
		return http.StatusConflict
	}
	var st apierrors.APIStatus
	if errors.As(err, &st) && st.Status().Code >= 400 {
		return int(st.Status().Code)
	}
	return http.StatusInternalServerError
}

// overviewPage is the data of the overview.
type overviewPage struct {
	page
	Filters                     filters
	States, Classes, Namespaces []string
	Rows                        []row
	// Total is how many BundleDeployments the user may see.
	Total int
	// BundlesError says why revisions could not be listed (the newest
	// revision column then shows the active one).
	BundlesError string
}

// overview lists every BundleDeployment the user may list.
func (s *Server) overview(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	pg := s.page("BundleDeployments")
	bds := &v1alpha2.BundleDeploymentList{}
	if err := s.opts.Client.List(ctx, bds); err != nil {
		s.fail(w, "BundleDeployments", err)
		return
	}
	p := overviewPage{page: pg, States: states, Total: len(bds.Items)}
	q := r.URL.Query()
	p.Filters = filters{State: q.Get("state"), Class: q.Get("class"), Namespace: q.Get("namespace"), Text: q.Get("q")}
	bundles := &v1alpha2.BundleList{}
	if err := s.opts.Client.List(ctx, bundles, client.HasLabels{v1alpha2.LabelBundleDeployment}); err != nil {
		p.BundlesError = err.Error()
	}
	for _, bd := range bds.Items {
		p.Classes = append(p.Classes, bd.Spec.ProvisionerClassName)
		p.Namespaces = append(p.Namespaces, bd.Spec.InstallNamespace)
	}
	slices.Sort(p.Classes)
	slices.Sort(p.Namespaces)
	p.Classes, p.Namespaces = slices.Compact(p.Classes), slices.Compact(p.Namespaces)
	p.Rows = overviewRows(bds.Items, bundles.Items, p.Filters)
	s.render(w, http.StatusOK, "overview", p)
}

// detailPage is the data of one BundleDeployment's page.
type detailPage struct {
	page
	BD          *v1alpha2.BundleDeployment
	State       string
	Conditions  []metav1.Condition
	Sources     []string
	Pinned      []string
	Revisions   []revision
	Timeline    []event
	Annotations []keyValue
	// Held is set when a revision awaits approval.
	Held bool
	// Objects are the installed objects and their health; ObjectCount
	// is how many the inventory holds.
	Objects     []object
	ObjectCount int
	// RevisionsError, EventsError and ObjectsError say why those could
	// not be read.
	RevisionsError, EventsError, ObjectsError string
}

// keyValue is one annotation or label.
type keyValue struct{ Key, Value string }

// detail shows one BundleDeployment.
func (s *Server) detail(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	name := r.PathValue("name")
	pg := s.page(name)
	pg.Follows = name
	bd := &v1alpha2.BundleDeployment{}
	if err := s.opts.Client.Get(ctx, client.ObjectKey{Name: name}, bd); err != nil {
		s.fail(w, name, err)
		return
	}
	p := detailPage{page: pg, BD: bd, State: State(bd), Conditions: bd.Status.Conditions}
	p.Held = p.State == StateHeld
	for _, src := range bd.Spec.Sources {
		p.Sources = append(p.Sources, history.SourceSummary(src))
	}
	for _, src := range bd.Status.ResolvedSources {
		p.Pinned = append(p.Pinned, history.SourceSummary(src))
	}
	for _, k := range slices.Sorted(maps.Keys(bd.Annotations)) {
		p.Annotations = append(p.Annotations, keyValue{Key: k, Value: bd.Annotations[k]})
	}
	revs, err := history.Revisions(ctx, s.opts.Client, bd)
	if err != nil {
		p.RevisionsError = err.Error()
	}
	events, err := s.eventsOf(ctx, bd)
	if err != nil {
		p.EventsError = err.Error()
	}
	if p.Objects, p.ObjectCount, err = s.installed(ctx, bd); err != nil {
		p.ObjectsError = err.Error()
	}
	p.Revisions = revisionsOf(bd, revs)
	p.Timeline = timeline(bd, revs, events, s.opts.Now())
	s.render(w, http.StatusOK, "detail", p)
}

// eventsOf lists the events about bd: in every namespace when the user
// may, else in default, where events about cluster-scoped objects go.
func (s *Server) eventsOf(ctx context.Context, bd *v1alpha2.BundleDeployment) ([]corev1.Event, error) {
	sel := fields.SelectorFromSet(fields.Set{"involvedObject.kind": v1alpha2.BundleDeploymentKind, "involvedObject.name": bd.Name})
	list := &corev1.EventList{}
	err := s.opts.Client.List(ctx, list, client.MatchingFieldsSelector{Selector: sel})
	if apierrors.IsForbidden(err) {
		err = s.opts.Client.List(ctx, list, client.InNamespace(metav1.NamespaceDefault), client.MatchingFieldsSelector{Selector: sel})
	}
	if err != nil {
		return nil, err
	}
	return slices.DeleteFunc(list.Items, func(e corev1.Event) bool { return e.InvolvedObject.UID != "" && e.InvolvedObject.UID != bd.UID }), nil
}

// reviewPage is the data of a revision's review.
type reviewPage struct {
	page
	BD                            *v1alpha2.BundleDeployment
	Review                        *v1alpha2.BundleDeploymentReview
	Policy                        string
	Added, Removed, ClusterScoped []string
	Changed                       []v1alpha2.ReviewObjectChange
	Gained, Lost                  []grant
	Needed, Unneeded              []string
	Surface                       []v1alpha2.ReviewSurfaceChange
	Diffs                         []objdiff.SideBySide
	// Unmodeled are the first objects whose power the review does not
	// judge (each counted as growing power), of UnmodeledCount.
	Unmodeled      []v1alpha2.ReviewObjectChange
	UnmodeledCount int
	DiffError      string
	// CanApprove is set when the revision awaits approval and a
	// SelfSubjectAccessReview allows the user verb approve on it.
	CanApprove bool
	// ApproveDenied says why the user may not approve (the
	// SelfSubjectAccessReview's answer).
	ApproveDenied string
	// CSRF is the form's token.
	CSRF string
	// Flash is the outcome of an approval: Approved names the revision,
	// Refused holds the API server's message.
	Approved, Refused string
}

// review shows the review of bd's newest reviewed revision.
func (s *Server) review(w http.ResponseWriter, r *http.Request) {
	p, err := s.loadReview(r.Context(), r.PathValue("name"))
	if err != nil {
		s.fail(w, r.PathValue("name"), err)
		return
	}
	p.Approved = r.URL.Query().Get("approved")
	s.render(w, http.StatusOK, "review", p)
}

// loadReview reads the review page of BundleDeployment name.
func (s *Server) loadReview(ctx context.Context, name string) (reviewPage, error) {
	pg := s.page("Review of " + name)
	pg.Follows = name
	bd := &v1alpha2.BundleDeployment{}
	if err := s.opts.Client.Get(ctx, client.ObjectKey{Name: name}, bd); err != nil {
		return reviewPage{}, err
	}
	p := reviewPage{page: pg, BD: bd, Review: bd.Status.Review, Policy: policyText(bd), CSRF: s.csrf}
	rv := bd.Status.Review
	if rv == nil {
		return p, nil
	}
	o := rv.Review.Objects
	for _, x := range o.Added {
		p.Added = append(p.Added, review.ObjectText(x))
	}
	for _, x := range o.Removed {
		p.Removed = append(p.Removed, review.ObjectText(x))
	}
	for _, x := range rv.Review.APISurface.ClusterScoped {
		p.ClusterScoped = append(p.ClusterScoped, review.ObjectText(x))
	}
	p.Changed = o.Changed
	p.Gained, p.Lost = grantsOf(rv.Review.RBAC.Gained), grantsOf(rv.Review.RBAC.Lost)
	for _, x := range rv.Review.Identity.Needed {
		p.Needed = append(p.Needed, review.RuleText(x))
	}
	for _, x := range rv.Review.Identity.Unneeded {
		p.Unneeded = append(p.Unneeded, review.RuleText(x))
	}
	surf := rv.Review.APISurface
	p.Surface = slices.Concat(surf.Webhooks, surf.APIServices, surf.CRDs, surf.AdmissionPolicies)
	p.Unmodeled, p.UnmodeledCount = surf.Unmodeled, int(surf.UnmodeledCount)
	if !rv.Approved {
		if err := s.mayApprove(ctx, &p); err != nil {
			return p, err
		}
	}
	if s.opts.Differ != nil && (!rv.Approved || rv.Revision != bd.Status.ActiveBundle) {
		dctx, cancel := context.WithTimeout(ctx, s.opts.DiffTimeout)
		defer cancel()
		objs, err := s.opts.Differ(dctx, name)
		if err == nil {
			p.Diffs, err = objdiff.SideBySides(objs)
		}
		if err != nil {
			p.DiffError = err.Error()
		}
	}
	return p, nil
}

// policyText is bd's approval policy as the review page shows it: the
// spec's, and the one in force when a lowering of it is not
// (status.approvalPolicy).
func policyText(bd *v1alpha2.BundleDeployment) string {
	asked := bd.Spec.Upgrade.Approval()
	if inForce := bd.Status.ApprovalPolicy; inForce.Rank() > asked.Rank() {
		return fmt.Sprintf("%s in force: the spec's %s is a lowering not made by an approver", inForce, asked)
	}
	return string(asked)
}

// mayApprove asks the API server whether the user may approve p's
// BundleDeployment, and fills CanApprove or ApproveDenied.
func (s *Server) mayApprove(ctx context.Context, p *reviewPage) error {
	if s.opts.ReadOnly {
		p.ApproveDenied = "rukpakctl ui runs with --read-only"
		return nil
	}
	ssar := &authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{
		ResourceAttributes: &authorizationv1.ResourceAttributes{Group: v1alpha2.GroupVersion.Group, Resource: "bundledeployments",
			Name: p.BD.Name, Verb: v1alpha2.VerbApprove},
	}}
	if err := s.opts.Client.Create(ctx, ssar); err != nil {
		// Shown on the page instead of the button; the page still renders.
		p.ApproveDenied = "cannot check whether you may approve: " + err.Error()
		return nil //nolint:nilerr // see above
	}
	p.CanApprove = ssar.Status.Allowed && !ssar.Status.Denied
	if !p.CanApprove {
		p.ApproveDenied = "you may not approve revisions of BundleDeployment " + p.BD.Name + " (verb " + v1alpha2.VerbApprove + " on bundledeployments)"
		if ssar.Status.Reason != "" {
			p.ApproveDenied += ": " + ssar.Status.Reason
		}
	}
	return nil
}

// approve approves the revision whose approval digest the form names (the
// one the page showed), with approval.Approve as rukpakctl approve does:
// a revision that replaced it since, even under the same name, is not
// approved. A refusal is shown on the review page as the API server gave
// it.
func (s *Server) approve(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("name")
	if s.opts.ReadOnly {
		http.Error(w, "refused: rukpakctl ui runs with --read-only", http.StatusForbidden)
		return
	}
	digest := r.PostForm.Get("digest")
	if digest == "" {
		http.Error(w, "refused: the form names no approval digest", http.StatusBadRequest)
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), 30*time.Second)
	defer cancel()
	a, err := approval.Approve(ctx, s.opts.Client, name, digest)
	if err == nil {
		http.Redirect(w, r, "/t/"+s.token+"/bd/"+url.PathEscape(name)+"/review?"+url.Values{"approved": {a.Revision}}.Encode(), http.StatusSeeOther)
		return
	}
	p, lerr := s.loadReview(ctx, name)
	if lerr != nil {
		s.fail(w, name, err)
		return
	}
	p.Refused = err.Error()
	s.render(w, statusOf(err), "review", p)
}
