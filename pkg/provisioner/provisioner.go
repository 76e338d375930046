// Package provisioner is what a provisioner is made of: the
// ProvisionerClass controllerName it serves and the format (package
// github.com/rukpak/rukpak/pkg/format) that turns its bundles' content into
// objects, with the spec.config fields that format reads. A Set of them is
// what one manager (package github.com/rukpak/rukpak/pkg/manager) runs; the
// rest — sources, content store, preflights, apply, drift, health,
// rollback — is the manager's.
package provisioner

import (
	"context"
	"encoding/json"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rukpak/rukpak/api/v1alpha2"
	"github.com/rukpak/rukpak/pkg/failure"
	"github.com/rukpak/rukpak/pkg/format"
)

// Provisioner is one served controllerName and the format its content is in.
type Provisioner struct {
	// ControllerName is the ProvisionerClass controllerName served.
	ControllerName string
	// Format turns unpacked content into objects.
	Format format.Format
	// Takes lists the spec.config fields the format reads; setting any
	// other is refused, so that, say, Helm values given to a plain bundle
	// are not silently ignored.
	Takes ConfigFields
	// Capabilities is set when the format's output depends on what the
	// cluster serves (Helm's .Capabilities).
	Capabilities bool
	// RenderOnce is set when the format's output can differ between two
	// renders of the same content and config (Helm: random functions,
	// genCA, lookup): each revision's first render is kept in the cluster
	// and every later apply of that revision (drift correction, a restart,
	// another replica, a rollback) applies exactly the kept objects.
	// Deterministic formats need not set it: rendering them again gives
	// the same objects.
	RenderOnce bool
	// Parameters are the spec.parameters of the ProvisionerClass a
	// BundleDeployment or Bundle names, as ForClass found them (nil when
	// unset); the format receives them as format.Config.Parameters.
	Parameters map[string]any
}

// ConfigFields are spec.config fields a format reads.
type ConfigFields struct {
	// WatchNamespaces is spec.config.watchNamespaces (registry+v1).
	WatchNamespaces bool
	// Values is spec.config.values and valuesFrom (Helm).
	Values bool
}

// CheckConfig refuses a spec.config that sets fields the provisioner's
// format does not read, with reason InvalidConfig naming the field.
func (p Provisioner) CheckConfig(cfg *v1alpha2.BundleConfig) error {
	if cfg == nil {
		return nil
	}
	if len(cfg.WatchNamespaces) > 0 && !p.Takes.WatchNamespaces {
		return failure.New(v1alpha2.ReasonInvalidConfig,
			"spec.config.watchNamespaces is for registry+v1 bundles; controller %s does not read it", p.ControllerName)
	}
	if (cfg.Values != nil || len(cfg.ValuesFrom) > 0) && !p.Takes.Values {
		return failure.New(v1alpha2.ReasonInvalidConfig,
			"spec.config.values and valuesFrom are for Helm charts; controller %s does not read them", p.ControllerName)
	}
	return nil
}

// Set is the provisioners one manager runs, by controllerName.
type Set map[string]Provisioner

// Serves reports whether controllerName is served.
func (s Set) Serves(controllerName string) bool {
	_, ok := s[controllerName]
	return ok
}

// ForClass returns the provisioner serving the ProvisionerClass className,
// with the class's spec.parameters. ok is false when the class does not exist or names a controller this
// manager does not run: such objects belong to someone else and are left
// alone.
func (s Set) ForClass(ctx context.Context, r client.Reader, className string) (p Provisioner, ok bool, err error) {
	pc := &v1alpha2.ProvisionerClass{}
	if err := r.Get(ctx, client.ObjectKey{Name: className}, pc); err != nil {
		if apierrors.IsNotFound(err) {
			return Provisioner{}, false, nil
		}
		return Provisioner{}, false, fmt.Errorf("getting ProvisionerClass %q: %w", className, err)
	}
	p, ok = s[pc.Spec.ControllerName]
	if !ok || pc.Spec.Parameters == nil || len(pc.Spec.Parameters.Raw) == 0 {
		return p, ok, nil
	}
	if err := json.Unmarshal(pc.Spec.Parameters.Raw, &p.Parameters); err != nil {
		return Provisioner{}, false, failure.New(v1alpha2.ReasonInvalidConfig, "ProvisionerClass %s: spec.parameters: %v", className, err)
	}
	return p, true, nil
}
