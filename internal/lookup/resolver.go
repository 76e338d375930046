package lookup

import (
	"context"
	"encoding/json"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	apipath "k8s.io/apimachinery/pkg/api/validation/path"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rukpak/rukpak/api/v1alpha2"
	"github.com/rukpak/rukpak/pkg/failure"
	"github.com/rukpak/rukpak/pkg/format"
)

// listPageSize is how many objects one request of a list lookup reads:
// a list is read page by page, and reading stops once it is over the
// bound on answers.
const listPageSize = 250

// Resolver answers lookups by reading the cluster as one identity. It is
// safe for concurrent use.
type Resolver struct {
	reader client.Reader
	mapper meta.RESTMapper
	limits Limits
	// pageSize is how many objects a request of a list reads.
	pageSize int64
}

// NewResolver returns a Resolver reading with reader and mapping kinds to
// resources with mapper, within limits (zero fields are defaults). reader
// should act as the install identity (an impersonating client) and not be
// a cache: lookups read what the identity may read, as it is now.
func NewResolver(reader client.Reader, mapper meta.RESTMapper, limits Limits) *Resolver {
	return &Resolver{reader: reader, mapper: mapper, limits: limits.withDefaults(), pageSize: listPageSize}
}

// Limits returns r's limits, defaults filled in.
func (r *Resolver) Limits() Limits { return r.limits }

// Answer reads q and returns its answer as Helm's lookup would: the
// object; for a list (q.Name "") {"apiVersion", "kind": Kind+"List",
// "items"} of the objects in q.Namespace, or in all namespaces when it is
// ""; format.LookupNotFound when it does not exist. q.Namespace is ignored
// for a cluster-scoped kind. Objects lose metadata.managedFields. An
// answer over Limits.MaxBytes is a failure (see answer).
func (r *Resolver) Answer(ctx context.Context, q format.LookupQuery) (json.RawMessage, error) {
	return r.answer(ctx, q, r.limits.MaxBytes)
}

// answer is Answer with at most room bytes for the answer. A query the
// identity may not make, of a kind the cluster does not serve or with
// arguments that cannot name an object is a *failure.Error naming it;
// other errors of the API server are returned wrapped, to be retried.
func (r *Resolver) answer(ctx context.Context, q format.LookupQuery, room int64) (json.RawMessage, error) {
	gv, err := schema.ParseGroupVersion(q.APIVersion)
	if err != nil || q.APIVersion == "" {
		return nil, failure.New(v1alpha2.ReasonRenderFailed, "%s: invalid apiVersion %q", q, q.APIVersion)
	}
	if msg := invalidArgument(q); msg != "" {
		return nil, failure.New(v1alpha2.ReasonRenderFailed, "%s: %s", q, msg)
	}
	gvk := gv.WithKind(q.Kind)
	mapping, err := r.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if meta.IsNoMatchError(err) {
		return nil, failure.New(v1alpha2.ReasonUnknownKind, "%s: kind %s of %s is not served by the cluster", q, q.Kind, q.APIVersion)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: finding the resource of kind %s: %w", q, gvk, err)
	}
	namespace := q.Namespace
	if mapping.Scope.Name() != meta.RESTScopeNameNamespace {
		namespace = "" // as Helm: the namespace of a cluster-scoped kind is ignored
	}
	res := target{query: q, resource: mapping.Resource, namespace: namespace, namespaced: mapping.Scope.Name() == meta.RESTScopeNameNamespace}
	var raw json.RawMessage
	if q.IsList() {
		raw, err = r.list(ctx, res, gvk, room)
	} else {
		raw, err = r.get(ctx, res, gvk)
	}
	if err != nil {
		return nil, err
	}
	if int64(len(raw)) > room {
		return nil, overBytes(q, r.limits.MaxBytes)
	}
	return raw, nil
}

// invalidArgument says why q's kind, name or namespace cannot name
// anything on the API server ("" when they can); client-go refuses such
// requests, which fails Helm's lookup.
func invalidArgument(q format.LookupQuery) string {
	if q.Kind == "" {
		return "no kind"
	}
	if q.Name != "" {
		if msgs := apipath.IsValidPathSegmentName(q.Name); len(msgs) > 0 {
			return fmt.Sprintf("invalid name %q: %s", q.Name, msgs[0])
		}
	}
	if q.Namespace != "" {
		if msgs := apipath.IsValidPathSegmentName(q.Namespace); len(msgs) > 0 {
			return fmt.Sprintf("invalid namespace %q: %s", q.Namespace, msgs[0])
		}
	}
	return ""
}

// target is what a query reads.
type target struct {
	query      format.LookupQuery
	resource   schema.GroupVersionResource
	namespace  string
	namespaced bool
}

// get reads one object.
func (r *Resolver) get(ctx context.Context, t target, gvk schema.GroupVersionKind) (json.RawMessage, error) {
	if t.namespaced && t.namespace == "" {
		// Helm asks the API server for a namespaced object outside any
		// namespace (GET /api/v1/secrets/db), which answers NotFound.
		return format.LookupNotFound, nil
	}
	obj := &unstructured.Unstructured{}
	obj.SetGroupVersionKind(gvk)
	err := r.reader.Get(ctx, client.ObjectKey{Namespace: t.namespace, Name: t.query.Name}, obj)
	if apierrors.IsNotFound(err) {
		return format.LookupNotFound, nil
	}
	if err != nil {
		return nil, readError(t, "get", err)
	}
	unstructured.RemoveNestedField(obj.Object, "metadata", "managedFields")
	raw, err := json.Marshal(obj.Object)
	if err != nil {
		return nil, fmt.Errorf("%s: encoding the answer: %w", t.query, err)
	}
	return raw, nil
}

// list reads every object of the kind, page by page, stopping once they
// are over room bytes.
func (r *Resolver) list(ctx context.Context, t target, gvk schema.GroupVersionKind, room int64) (json.RawMessage, error) {
	listKind := gvk.Kind + "List"
	items := []json.RawMessage{}
	size := int64(0)
	next := ""
	for {
		opts := []client.ListOption{client.Limit(r.pageSize)}
		if t.namespace != "" {
			opts = append(opts, client.InNamespace(t.namespace))
		}
		if next != "" {
			opts = append(opts, client.Continue(next))
		}
		page := &unstructured.UnstructuredList{}
		page.SetGroupVersionKind(gvk.GroupVersion().WithKind(listKind))
		err := r.reader.List(ctx, page, opts...)
		if apierrors.IsNotFound(err) {
			return format.LookupNotFound, nil
		}
		if err != nil {
			return nil, readError(t, "list", err)
		}
		for i := range page.Items {
			obj := page.Items[i].Object
			unstructured.RemoveNestedField(obj, "metadata", "managedFields")
			raw, err := json.Marshal(obj)
			if err != nil {
				return nil, fmt.Errorf("%s: encoding the answer: %w", t.query, err)
			}
			if size += int64(len(raw)) + 1; size > room {
				return nil, overBytes(t.query, r.limits.MaxBytes)
			}
			items = append(items, raw)
		}
		if next = page.GetContinue(); next == "" {
			break
		}
	}
	raw, err := json.Marshal(map[string]any{"apiVersion": gvk.GroupVersion().String(), "kind": listKind, "items": items})
	if err != nil {
		return nil, fmt.Errorf("%s: encoding the answer: %w", t.query, err)
	}
	return raw, nil
}

// readError is the error of reading t with verb. Forbidden and
// MethodNotSupported fail the render, as they fail helm install, with a
// message that says who may not read what; others are returned to be
// retried.
func readError(t target, verb string, err error) error {
	switch {
	case apierrors.IsForbidden(err):
		return failure.New(v1alpha2.ReasonRenderFailed, "%s: the install identity may not %s %s%s: %v",
			t.query, verb, resourceName(t.resource), where(t, verb), err)
	case apierrors.IsMethodNotSupported(err):
		return failure.New(v1alpha2.ReasonRenderFailed, "%s: %s cannot be read with %s", t.query, resourceName(t.resource), verb)
	}
	return fmt.Errorf("%s: %w", t.query, err)
}

// resourceName names a resource as RBAC rules do: "secrets",
// "deployments.apps".
func resourceName(r schema.GroupVersionResource) string {
	if r.Group == "" {
		return r.Resource
	}
	return r.Resource + "." + r.Group
}

// where says where a read of t looks, for messages.
func where(t target, verb string) string {
	switch {
	case t.namespace != "":
		return fmt.Sprintf(" in namespace %s", t.namespace)
	case t.namespaced && verb == "list":
		return " in all namespaces"
	}
	return ""
}

// overBytes is the failure of answers over the bound.
func overBytes(q format.LookupQuery, limit int64) error {
	return failure.New(v1alpha2.ReasonResourceLimit, "%s: the answers of the chart's lookups are over the limit of %s in total",
		q, bytesString(limit))
}
