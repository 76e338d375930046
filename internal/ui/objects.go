package ui

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rukpak/rukpak/api/v1alpha2"
	"github.com/rukpak/rukpak/internal/health"
	"github.com/rukpak/rukpak/internal/inventory"
)

// maxObjects is how many installed objects a BundleDeployment's page reads
// and shows (one GET each).
const maxObjects = 100

// object is one installed object and its health.
type object struct {
	ID string
	// Health is Healthy, Missing, "present" (a kind without a health
	// check), "unreadable: …" or the reason the probe failed.
	Health string
	// Tone is good, bad or unknown, as conditions' (tone).
	Tone string
}

// installed reads the objects of bd's inventory (the active revision's,
// as the manager records them) and checks each with the manager's health
// probes and bd's own; it returns how many the inventory holds.
func (s *Server) installed(ctx context.Context, bd *v1alpha2.BundleDeployment) ([]object, int, error) {
	store := inventory.NewStore(s.opts.Client, s.opts.Client, v1alpha2.SystemNamespace)
	ids, err := store.Load(ctx, inventory.Owner{Name: bd.Name, UID: bd.UID})
	if err != nil {
		return nil, 0, fmt.Errorf("reading the inventory of BundleDeployment %s: %w", bd.Name, err)
	}
	var probes []v1alpha2.Probe
	if bd.Spec.HealthChecks != nil {
		probes = bd.Spec.HealthChecks.Probes
	}
	checker, err := health.NewChecker(probes)
	if err != nil {
		checker = nil // the manager reports a bad probe in the conditions
	}
	ids = inventory.Sorted(ids)
	out := make([]object, 0, min(len(ids), maxObjects))
	for _, id := range ids[:min(len(ids), maxObjects)] {
		out = append(out, s.objectHealth(ctx, checker, id))
	}
	return out, len(ids), nil
}

// objectHealth reads object id and checks it.
func (s *Server) objectHealth(ctx context.Context, checker *health.Checker, id inventory.ID) object {
	o := object{ID: id.String(), Tone: "unknown"}
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(id.GroupVersionKind())
	switch err := s.opts.Client.Get(ctx, client.ObjectKey{Namespace: id.Namespace, Name: id.Name}, u); {
	case client.IgnoreNotFound(err) != nil:
		o.Health = "unreadable: " + err.Error()
		return o
	case err != nil:
		o.Health, o.Tone = "Missing", "bad"
		return o
	}
	if !checker.Relevant(u.GroupVersionKind().GroupKind()) {
		o.Health, o.Tone = "present (no health check for its kind)", "good"
		return o
	}
	if r := checker.Check(u); r.Healthy {
		o.Health, o.Tone = "Healthy", "good"
	} else {
		o.Health, o.Tone = r.Reason, "bad"
	}
	return o
}
