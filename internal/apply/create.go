package apply

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/csaupgrade"
)

// asMetadata asks the API server to answer with the object's metadata only
// (as protobuf, else JSON), as the metadata client does.
const asMetadata = "application/vnd.kubernetes.protobuf;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1"

// MetadataClient is the metadata client an Engine writes through, which
// can also create objects and is answered with their metadata only.
type MetadataClient struct {
	metadata.Interface
	rest rest.Interface
}

// NewMetadataClient returns a MetadataClient for cfg over hc.
func NewMetadataClient(cfg *rest.Config, hc *http.Client) (*MetadataClient, error) {
	md, err := metadata.NewForConfigAndClient(cfg, hc)
	if err != nil {
		return nil, err
	}
	rc := metadata.ConfigFor(cfg)
	rc.GroupVersion, rc.APIPath = &schema.GroupVersion{}, "/"
	r, err := rest.RESTClientForConfigAndClient(rc, hc)
	if err != nil {
		return nil, fmt.Errorf("creating REST client: %w", err)
	}
	return &MetadataClient{Interface: md, rest: r}, nil
}

// create posts body (JSON) as a new object of resource in namespace ns.
func (m *MetadataClient) create(ctx context.Context, resource schema.GroupVersionResource, ns, fieldManager string, body []byte) (*metav1.PartialObjectMetadata, error) {
	path := []string{"api"}
	if resource.Group != "" {
		path = []string{"apis", resource.Group}
	}
	path = append(path, resource.Version)
	if ns != "" {
		path = append(path, "namespaces", ns)
	}
	res := m.rest.Post().AbsPath(append(path, resource.Resource)...).
		SetHeader("Content-Type", "application/json").SetHeader("Accept", asMetadata).
		Param("fieldManager", fieldManager).Body(body).Do(ctx)
	if err := res.Error(); err != nil {
		return nil, err
	}
	obj, err := res.Get()
	if err != nil {
		return nil, err
	}
	out, ok := obj.(*metav1.PartialObjectMetadata)
	if !ok {
		return nil, fmt.Errorf("the API server answered a create with %T, not the object's metadata", obj)
	}
	return out, nil
}

// createsFirst reports whether a direct apply creates it with a create
// request rather than reading whether it exists first: an object of the
// second phase, not a hook, and not one the owner already holds (which
// most likely exists). A create fails if the object exists, so the
// existence check and the write are one request, with no moment between
// them for another writer to create the object.
func createsFirst(p *run, it item) bool {
	return p.direct && it.phase == phaseRest && it.hook == nil && (p.collisions == nil || !p.collisions.Owned[it.id.Key()])
}

// created is the outcome of createOrTake for one object.
type created struct {
	obj *metav1.PartialObjectMetadata
	// before is the resourceVersion of an object that existed ("" when
	// it was created).
	before string
	// collision says why an object that existed may not be taken.
	collision collision
}

// createOrTake creates it's object; if it exists, it checks it against
// the plan's collision rules as a dry-run would have, and applies it (or
// replaces it, for an immutable field that may be) when the plan may take
// it.
func (e *Engine) createOrTake(ctx context.Context, p *run, it item) (created, error) {
	body, err := json.Marshal(it.obj.Object)
	if err != nil {
		return created{}, fmt.Errorf("encoding object %s: %w", it.id, err)
	}
	_, resource, err := e.resourceOf(it)
	if err != nil {
		return created{}, err
	}
	obj, err := e.meta.create(ctx, resource, it.id.Namespace, e.opts.FieldManager, body)
	if !apierrors.IsAlreadyExists(err) {
		return created{obj: obj}, err
	}
	cur, err := e.existing(ctx, it)
	if err != nil {
		return created{}, fmt.Errorf("reading %s, which exists: %w", it.id, err)
	}
	if cur.GetResourceVersion() == "" {
		return created{}, fmt.Errorf("object %s existed when created and was gone when read", it.id)
	}
	out := created{before: cur.GetResourceVersion()}
	if out.collision, err = e.collision(ctx, p, it, cur); err != nil || out.collision.why != "" {
		return out, err
	}
	out.obj, err = e.applyOrReplace(ctx, it)
	return out, err
}

// undoCreates deletes the objects at idx that this apply created (their
// UIDs in uids), as a refused plan leaves nothing it wrote in that phase.
// It returns the indexes it could not delete.
func (e *Engine) undoCreates(ctx context.Context, p *run, idx []int, uids []types.UID) ([]int, error) {
	var left []int
	var errs []error
	for _, i := range idx {
		if uids[i] == "" {
			continue
		}
		it := p.items[i]
		ri, _, err := e.resourceOf(it)
		if err == nil {
			err = ri.Delete(ctx, it.id.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uids[i]}})
		}
		if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
			left = append(left, i)
			errs = append(errs, fmt.Errorf("deleting %s, created before the collision: %w", it.id, err))
		}
	}
	return left, errors.Join(errs...)
}

// createdBy reports whether obj's managed fields still hold fields that
// manager set when it created the object (an Update entry): they were
// never applied, so an apply that drops them would not remove them.
func createdBy(obj *metav1.PartialObjectMetadata, manager string) bool {
	for _, f := range obj.GetManagedFields() {
		if f.Manager == manager && f.Operation == metav1.ManagedFieldsOperationUpdate && f.Subresource == "" {
			return true
		}
	}
	return false
}

// takeOverCreated moves the fields the engine's field manager set when it
// created it's object into its apply entry (client-go's csaupgrade, as
// kubectl does when it moves an object to server-side apply), so that the
// apply that follows removes those of them the revision no longer has.
// The move is conditional on the object's resourceVersion.
func (e *Engine) takeOverCreated(ctx context.Context, it item) error {
	live, err := e.existing(ctx, it)
	if err != nil || live.GetResourceVersion() == "" {
		return err
	}
	live.SetGroupVersionKind(it.id.GroupVersionKind())
	patch, err := csaupgrade.UpgradeManagedFieldsPatch(live, sets.New(e.opts.FieldManager), e.opts.FieldManager)
	if err != nil || patch == nil {
		return err
	}
	ri, _, err := e.resourceOf(it)
	if err != nil {
		return err
	}
	if _, err := ri.Patch(ctx, it.id.Name, types.JSONPatchType, patch, metav1.PatchOptions{FieldManager: e.opts.FieldManager}); err != nil {
		return fmt.Errorf("moving the fields of %s set at its creation to server-side apply: %w", it.id, err)
	}
	return nil
}

// resourceOf returns the metadata client of it's resource (in its
// namespace, for a namespaced kind) and the resource: those Prepare found,
// from the RESTMapper for a kind the cluster served then, from the
// bundle's CRD for a kind the bundle defines. Nothing asks the RESTMapper
// again, so a kind whose CRD is Established is written even while
// discovery does not show it yet.
func (e *Engine) resourceOf(it item) (metadata.ResourceInterface, schema.GroupVersionResource, error) {
	ri := e.meta.Resource(it.resource)
	if it.id.Namespace != "" {
		return ri.Namespace(it.id.Namespace), it.resource, nil
	}
	return ri, it.resource, nil
}
