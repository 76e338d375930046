package bundledeployment

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rukpak/rukpak/api/v1alpha2"
	"github.com/rukpak/rukpak/internal/inventory"
)

const (
	// listAtLeast is how many objects of one kind in one namespace a
	// health check reads with a list of the owner's objects rather than
	// one request each: a big bundle's 2,000 Deployments are 4 lists, not
	// 2,000 reads.
	listAtLeast = 8
	// listPage is the most objects one list request returns.
	listPage = 500
)

// healthGroup is the objects of one kind in one namespace.
type healthGroup struct {
	gvk       schema.GroupVersionKind
	namespace string
}

// readForHealth reads the objects ids as reader (the install identity)
// for a health check of owner's revision, and calls visit with each (nil
// when it is not there). Kinds with at least listAtLeast objects in a
// namespace are listed by the owner label, a page at a time, so that no
// more than a page is in memory at once; the others are read one by one.
func readForHealth(ctx context.Context, reader client.Reader, owner string, ids []inventory.ID, visit func(inventory.ID, *unstructured.Unstructured)) error {
	groups := map[healthGroup][]inventory.ID{}
	for _, id := range ids {
		g := healthGroup{gvk: id.GroupVersionKind(), namespace: id.Namespace}
		groups[g] = append(groups[g], id)
	}
	for g, members := range groups {
		if len(members) < listAtLeast {
			for _, id := range members {
				obj := &unstructured.Unstructured{}
				obj.SetGroupVersionKind(id.GroupVersionKind())
				err := reader.Get(ctx, client.ObjectKey{Namespace: id.Namespace, Name: id.Name}, obj)
				switch {
				case apierrors.IsNotFound(err):
					visit(id, nil)
				case err != nil:
					return fmt.Errorf("reading %s for its health: %w", id, err)
				default:
					visit(id, obj)
				}
			}
			continue
		}
		if err := listForHealth(ctx, reader, owner, g, members, visit); err != nil {
			return err
		}
	}
	return nil
}

// listForHealth lists owner's objects of g and visits those among
// members, then the members not listed as not there. Objects that carry
// the owner label but are not members (another revision's, or a
// stranger's copy of the label) are ignored.
func listForHealth(ctx context.Context, reader client.Reader, owner string, g healthGroup, members []inventory.ID, visit func(inventory.ID, *unstructured.Unstructured)) error {
	want := make(map[string]inventory.ID, len(members))
	for _, id := range members {
		want[id.Name] = id
	}
	opts := []client.ListOption{client.MatchingLabels{v1alpha2.LabelOwnerName: owner}, client.Limit(listPage)}
	if g.namespace != "" {
		opts = append(opts, client.InNamespace(g.namespace))
	}
	cont := ""
	for {
		list := &unstructured.UnstructuredList{}
		list.SetGroupVersionKind(g.gvk.GroupVersion().WithKind(g.gvk.Kind + "List"))
		if err := reader.List(ctx, list, append(opts, client.Continue(cont))...); err != nil {
			where := "cluster-wide"
			if g.namespace != "" {
				where = "in namespace " + g.namespace
			}
			return fmt.Errorf("listing %s %s for their health: %w", g.gvk.Kind, where, err)
		}
		for i := range list.Items {
			if id, ok := want[list.Items[i].GetName()]; ok {
				delete(want, id.Name)
				visit(id, &list.Items[i])
			}
		}
		if cont = list.GetContinue(); cont == "" {
			break
		}
	}
	for _, id := range members {
		if _, missing := want[id.Name]; missing {
			visit(id, nil)
		}
	}
	return nil
}
