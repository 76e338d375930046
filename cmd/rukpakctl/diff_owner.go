package main

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/metadata"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rukpak/rukpak/api/v1alpha2"
	"github.com/rukpak/rukpak/internal/apply"
	"github.com/rukpak/rukpak/internal/history"
	"github.com/rukpak/rukpak/internal/inventory"
	"github.com/rukpak/rukpak/internal/ownership"
	"github.com/rukpak/rukpak/pkg/format"
)

// nextRevision stands for the name of a revision not stamped out yet, in
// the revision annotation of hooks and run-once Jobs.
const nextRevision = "(next revision)"

// owner is the BundleDeployment of the diffed spec as the cluster knows
// it, and the revision the spec would be.
type owner struct {
	name string
	// installNamespace is the spec's install namespace.
	installNamespace string
	// uid is the UID of the BundleDeployment of that name; empty when
	// there is none (the spec would be a first install).
	uid types.UID
	// revision names the revision: its Bundle, for a BundleDeployment
	// diffed by name that has one, else nextRevision.
	revision string
	// release is the revision as a Helm chart sees it: its number, and
	// whether it upgrades an installed one.
	release format.Release
	// hooks are the Helm hooks the manager runs when it applies the
	// revision: install hooks for a first install, upgrade hooks for a
	// new revision over an installed one, none for the active revision
	// applied again (sameRevision).
	hooks apply.HookRun
	// sameRevision is set when the revision is the active one.
	sameRevision bool
	// collisionProtection is the spec's policy for objects that exist and
	// are not the BundleDeployment's.
	collisionProtection v1alpha2.CollisionProtection
	// deleteCRDs is set when dropped CRDs are deleted (spec.deletionPolicy).
	deleteCRDs bool
}

// ownerOf finds the BundleDeployment of in on the cluster (in.bd itself
// when it was read by name) and the revision in.bd's spec would be: for a
// BundleDeployment read by name, its newest Bundle (the content diff
// renders), else the next one.
func ownerOf(ctx context.Context, stderr io.Writer, cl *cluster, in input) (owner, error) {
	o := owner{name: in.bd.Name, installNamespace: in.bd.Spec.InstallNamespace, revision: nextRevision, hooks: apply.HooksInstall, collisionProtection: in.bd.Spec.CollisionProtection,
		deleteCRDs: in.bd.Spec.DeletionPolicy != nil && in.bd.Spec.DeletionPolicy.CRDs == v1alpha2.CRDDeletionPolicyDelete}
	live := in.bd
	if !in.onCluster {
		live = &v1alpha2.BundleDeployment{}
		err := cl.client.Get(ctx, client.ObjectKey{Name: in.bd.Name}, live)
		if apierrors.IsNotFound(err) {
			return o, nil
		}
		if err != nil {
			return o, fmt.Errorf("getting BundleDeployment %s: %w", in.bd.Name, err)
		}
	}
	o.uid = live.UID
	revs, err := history.Revisions(ctx, cl.client, live)
	if apierrors.IsForbidden(err) {
		fmt.Fprintf(stderr, "note: the revisions (Bundles) of BundleDeployment %s cannot be listed (%v): the spec is diffed as a new revision\n", o.name, err)
		revs, err = nil, nil
	}
	if err != nil {
		return o, err
	}
	active := live.Status.ActiveBundle
	if active != "" {
		o.hooks = apply.HooksUpgrade
	}
	if in.onCluster && len(revs) > 0 {
		newest := &revs[len(revs)-1]
		o.revision = newest.Name
		o.release = format.Release{IsUpgrade: active != "" && active != newest.Name, Revision: max(1, ownership.RevisionNumber(newest))}
		if newest.Name == active {
			o.sameRevision, o.hooks = true, apply.HooksNone
		}
		return o, nil
	}
	highest := 0
	for i := range revs {
		highest = max(highest, ownership.RevisionNumber(&revs[i]))
	}
	o.release = format.Release{IsUpgrade: active != "", Revision: highest + 1}
	return o, nil
}

// installed is what a BundleDeployment has installed now.
type installed struct {
	ids []inventory.ID
	// keep holds, by ID.Key(), the objects applied with
	// helm.sh/resource-policy: keep, which a revision that drops them
	// leaves in place.
	keep map[inventory.ID]bool
}

// installedObjects reads what o has installed: its inventory, from the
// system namespace; when the kubeconfig's user may not read it, the
// objects labelled as o's (a note on stderr says so).
func installedObjects(ctx context.Context, stderr io.Writer, cl *cluster, o owner) (installed, error) {
	if o.uid == "" {
		return installed{}, nil
	}
	store := inventory.NewStore(cl.client, cl.client, v1alpha2.SystemNamespace)
	inv := inventory.Owner{Name: o.name, UID: o.uid}
	ids, err := store.Load(ctx, inv)
	if err == nil {
		recs, err := store.Records(ctx, inv)
		if err != nil {
			return installed{}, err
		}
		keep := map[inventory.ID]bool{}
		for id, rec := range recs {
			keep[id.Key()] = rec.Keep
		}
		return installed{ids: ids, keep: keep}, nil
	}
	if !apierrors.IsForbidden(err) && !apierrors.IsUnauthorized(err) {
		return installed{}, err
	}
	fmt.Fprintf(stderr, "note: the inventory of BundleDeployment %s cannot be read (%v); listing the objects labelled as its own instead\n", o.name, err)
	return labelledObjects(ctx, stderr, cl, o)
}

// labelledObjects lists the objects of every listable resource the cluster
// serves that are labelled as o's: in every namespace, or, for a user who
// may not list a resource in all of them, in the install namespace.
// Resources the user may not list are noted on stderr.
func labelledObjects(ctx context.Context, stderr io.Writer, cl *cluster, o owner) (installed, error) {
	md, err := metadata.NewForConfig(cl.cfg)
	if err != nil {
		return installed{}, fmt.Errorf("creating metadata client: %w", err)
	}
	lists, err := cl.clientset.Discovery().ServerPreferredResources()
	if err != nil && !discovery.IsGroupDiscoveryFailedError(err) {
		return installed{}, fmt.Errorf("discovering the cluster's resources: %w", err)
	}
	if err != nil {
		fmt.Fprintf(stderr, "note: %v; objects of those groups are not listed\n", err)
	}
	selector := labels.SelectorFromSet(labels.Set{v1alpha2.LabelOwnerKind: v1alpha2.BundleDeploymentKind, v1alpha2.LabelOwnerName: o.name}).String()
	out := installed{keep: map[inventory.ID]bool{}}
	var forbidden, partial []string
	for _, list := range lists {
		gv, err := schema.ParseGroupVersion(list.GroupVersion)
		if err != nil {
			continue
		}
		for _, r := range list.APIResources {
			if strings.Contains(r.Name, "/") || !slices.Contains(r.Verbs, "list") {
				continue
			}
			res := md.Resource(gv.WithResource(r.Name))
			opts := metav1.ListOptions{LabelSelector: selector}
			items, err := res.List(ctx, opts)
			if apierrors.IsForbidden(err) && r.Namespaced {
				items, err = res.Namespace(o.installNamespace).List(ctx, opts)
				if err == nil {
					partial = append(partial, gv.WithResource(r.Name).GroupResource().String())
				}
			}
			switch {
			case apierrors.IsForbidden(err):
				forbidden = append(forbidden, gv.WithResource(r.Name).GroupResource().String())
				continue
			case apierrors.IsNotFound(err), apierrors.IsMethodNotSupported(err):
				continue
			case err != nil:
				return installed{}, fmt.Errorf("listing %s labelled as BundleDeployment %s's: %w", gv.WithResource(r.Name).GroupResource(), o.name, err)
			}
			for _, item := range items.Items {
				if uid := item.Labels[v1alpha2.LabelOwnerUID]; uid != "" && uid != string(o.uid) {
					continue
				}
				id := inventory.ID{Group: gv.Group, Version: gv.Version, Kind: r.Kind, Namespace: item.Namespace, Name: item.Name}
				out.ids = append(out.ids, id)
				if strings.EqualFold(strings.TrimSpace(item.Annotations[v1alpha2.AnnotationResourcePolicy]), v1alpha2.ResourcePolicyKeep) {
					out.keep[id.Key()] = true
				}
			}
		}
	}
	if len(partial) > 0 {
		fmt.Fprintf(stderr, "note: you may list %s only in namespace %s: objects of those kinds elsewhere that the bundle no longer has are not shown\n", someOf(partial), o.installNamespace)
	}
	if len(forbidden) > 0 {
		fmt.Fprintf(stderr, "note: you may not list %s: objects of those kinds that the bundle no longer has are not shown\n", someOf(forbidden))
	}
	return out, nil
}

// maxNamed is how many resources a note names.
const maxNamed = 6

// someOf names up to maxNamed of names, sorted, and how many more there
// are.
func someOf(names []string) string {
	names = slices.Sorted(slices.Values(names))
	if len(names) <= maxNamed {
		return strings.Join(names, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(names[:maxNamed], ", "), len(names)-maxNamed)
}
