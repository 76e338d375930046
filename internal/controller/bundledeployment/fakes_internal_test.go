package bundledeployment

import (
	"context"
	"errors"
	"sync"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/rukpak/rukpak/api/v1alpha2"
	"github.com/rukpak/rukpak/internal/apply"
	"github.com/rukpak/rukpak/internal/approval"
	"github.com/rukpak/rukpak/internal/identity"
	"github.com/rukpak/rukpak/internal/inventory"
	"github.com/rukpak/rukpak/internal/objectwatch"
	"github.com/rukpak/rukpak/internal/ownership"
	"github.com/rukpak/rukpak/internal/planner"
	"github.com/rukpak/rukpak/internal/review"
)

// The fast tier's harness of the steps: a Reconciler whose dependencies
// are fakes (no API server), over a controller-runtime fake client that
// has the BundleDeployment's class.

// fakeRenderer renders each revision to the objects it lists by name.
type fakeRenderer map[string][]*unstructured.Unstructured

var _ revisionRenderer = fakeRenderer{}

// Render implements revisionRenderer.
func (f fakeRenderer) Render(_ context.Context, _ *scope, ref revisionRef, _ renderMode) (renderResult, error) {
	objs, ok := f[ref.bundle]
	if !ok {
		return renderResult{}, errors.New("no such revision")
	}
	return renderResult{objects: deepCopies(objs)}, nil
}

// fakeReviewer returns its review, or its error, and counts its reviews.
type fakeReviewer struct {
	rev     v1alpha2.RevisionReview
	err     error
	reviews int
}

var _ reviewer = (*fakeReviewer)(nil)

// CheckCost implements reviewer.
func (f *fakeReviewer) CheckCost([]*unstructured.Unstructured) error { return nil }

// Compute implements reviewer.
func (f *fakeReviewer) Compute(context.Context, review.Input) (*v1alpha2.RevisionReview, error) {
	f.reviews++
	if f.err != nil {
		return nil, f.err
	}
	rev := f.rev
	return &rev, nil
}

// fakeEngine records what it applies, as the install identity, and reads
// from its reader.
type fakeEngine struct {
	mu      sync.Mutex
	reader  client.Reader
	applied [][]inventory.ID
	// pruned are the ids of each Prune; pruneErr, when set, is what the
	// next Prune returns, having deleted nothing.
	pruned   [][]inventory.ID
	pruneErr error
}

var _ revisionEngine = (*fakeEngine)(nil)

// Apply implements revisionEngine: every object is configured, at
// resourceVersion "2".
func (f *fakeEngine) Apply(_ context.Context, plan *apply.Plan, _ apply.ApplyOptions) (*apply.ChangeSet, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.applied = append(f.applied, plan.IDs())
	cs := &apply.ChangeSet{}
	for _, e := range plan.Entries() {
		cs.Entries = append(cs.Entries, apply.Change{ID: e.ID, Resource: e.Resource, Action: apply.Configured, ResourceVersion: "2", Hash: e.Hash})
	}
	return cs, nil
}

// Prune implements revisionEngine: every object is deleted.
func (f *fakeEngine) Prune(_ context.Context, _ string, ids []inventory.ID, _ apply.PruneOptions) (*apply.ChangeSet, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.pruneErr; err != nil {
		f.pruneErr = nil
		return nil, err
	}
	f.pruned = append(f.pruned, ids)
	cs := &apply.ChangeSet{}
	for _, id := range ids {
		cs.Entries = append(cs.Entries, apply.Change{ID: id, Action: apply.Deleted})
	}
	return cs, nil
}

// EnsureNamespace implements revisionEngine.
func (f *fakeEngine) EnsureNamespace(context.Context, string) error { return nil }

// Reader implements revisionEngine.
func (f *fakeEngine) Reader() client.Reader { return f.reader }

// noWatches is drift watches that show nothing: every object is read.
type noWatches struct{}

// Get implements watchedObjects.
func (noWatches) Get(objectwatch.Key, string, string) (*metav1.PartialObjectMetadata, bool) {
	return nil, false
}

// Ensure implements watchedObjects.
func (noWatches) Ensure(string, []objectwatch.Key) error { return nil }

// Await implements watchedObjects.
func (noWatches) Await(context.Context, string, []objectwatch.Key) error { return nil }

// fakeHealthReader reads the objects it has, by name; the others are not
// there.
type fakeHealthReader map[string]*unstructured.Unstructured

var _ healthReader = fakeHealthReader{}

// Read implements healthReader.
func (f fakeHealthReader) Read(_ context.Context, _ client.Reader, _ string, ids []inventory.ID, visit func(inventory.ID, *unstructured.Unstructured)) error {
	for _, id := range ids {
		visit(id, f[id.Name])
	}
	return nil
}

// testMapper serves ConfigMaps, Deployments and ClusterRoles.
func testMapper() meta.RESTMapper {
	m := meta.NewDefaultRESTMapper(nil)
	m.Add(schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}, meta.RESTScopeNamespace)
	m.Add(schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}, meta.RESTScopeNamespace)
	m.Add(schema.GroupVersionKind{Group: "rbac.authorization.k8s.io", Version: "v1", Kind: "ClusterRole"}, meta.RESTScopeRoot)
	return m
}

// stepsHarness is a Reconciler of fakes and what a test looks at.
type stepsHarness struct {
	r        *Reconciler
	engine   *fakeEngine
	reviewer *fakeReviewer
	inv      *fakeInventory
	events   *events.FakeRecorder
}

// newStepsHarness makes a Reconciler whose renderer renders revisions to
// objs, whose reviewer returns rev, and whose client has the class "cls"
// and live.
func newStepsHarness(t *testing.T, objs fakeRenderer, rev v1alpha2.RevisionReview, live ...client.Object) *stepsHarness {
	t.Helper()
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	if err := v1alpha2.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	class := &v1alpha2.ProvisionerClass{ObjectMeta: metav1.ObjectMeta{Name: "cls"}}
	c := fake.NewClientBuilder().WithScheme(scheme).WithRESTMapper(testMapper()).WithObjects(append(live, class)...).Build()
	h := &stepsHarness{
		engine:   &fakeEngine{reader: c},
		reviewer: &fakeReviewer{rev: rev},
		inv:      &fakeInventory{},
		events:   events.NewFakeRecorder(100),
	}
	h.r = New(Options{
		Client:    c,
		APIReader: c,
		Engine:    apply.New(c, c, nil, testMapper(), planner.EngineOptions()),
		Recorder:  h.events,
		// Approvals by members of system:masters need no
		// SubjectAccessReview.
		Approval: &approval.Checker{},
	})
	h.r.inv = h.inv
	h.r.renderer = objs
	h.r.reviewer = h.reviewer
	h.r.watched = noWatches{}
	return h
}

// scope is a reconcile's scope of bd, acting as the manager through the
// fake engine.
func (h *stepsHarness) scope(bd *v1alpha2.BundleDeployment) *scope {
	return &scope{bd: bd, mem: &remembered{}, as: &actor{id: identity.Manager, engine: h.engine}, written: bd.Status.DeepCopy()}
}

// configMap is a ConfigMap of namespace ns.
func configMap(name string, data map[string]any) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": name, "namespace": "ns"},
		"data":     data,
	}}
}

// testBD is a BundleDeployment of class cls under approval policy.
func testBD(policy v1alpha2.ApprovalPolicy) *v1alpha2.BundleDeployment {
	return &v1alpha2.BundleDeployment{
		ObjectMeta: metav1.ObjectMeta{Name: "app", UID: "uid-app", Generation: 1},
		Spec: v1alpha2.BundleDeploymentSpec{
			ProvisionerClassName: "cls", InstallNamespace: "ns",
			Upgrade: &v1alpha2.UpgradePolicy{ApprovalPolicy: policy},
		},
	}
}

// approvalDigestOf is the approval digest gate binds revision ref,
// rendered to objs, to.
func approvalDigestOf(t *testing.T, ref revisionRef, objs []*unstructured.Unstructured) string {
	t.Helper()
	var contents []map[string]any
	for _, o := range objs {
		contents = append(contents, o.Object)
	}
	d, err := ownership.ObjectsDigest(contents)
	if err != nil {
		t.Fatal(err)
	}
	return ownership.ApprovalDigest(ref.spec, ref.digest, d)
}

// approve makes bd carry an approval of digest by a member of
// system:masters.
func approve(bd *v1alpha2.BundleDeployment, digest string) {
	bd.Annotations = map[string]string{
		v1alpha2.AnnotationApproveRevision:  digest,
		v1alpha2.AnnotationApprovedBy:       "approver",
		v1alpha2.AnnotationApprovedByGroups: approval.EncodeGroups([]string{"system:masters"}),
	}
}
