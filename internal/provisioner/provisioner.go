// Package provisioner composes what one provisioner is made of — the
// ProvisionerClass it serves (by controllerName), the sources it can read and
// the format it turns content into objects with — and answers, for a class
// name, whether this manager serves it.
package provisioner

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rukpak/rukpak/api/v1alpha2"
	"github.com/rukpak/rukpak/internal/clusterinfo"
	"github.com/rukpak/rukpak/internal/failure"
	"github.com/rukpak/rukpak/internal/format"
	"github.com/rukpak/rukpak/internal/values"
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
}

// FormatConfig is what p's format renders a revision with: the install's
// name and namespace, spec.config, the resolved Helm values and, when the
// format needs them and cluster is not nil, the cluster's capabilities.
// The values read from Secrets are to be redacted from errors: vals.Secrets,
// or, when vals carries none and cfg names a Secret, every string of vals.
func (p Provisioner) FormatConfig(release, installNamespace string, cfg *v1alpha2.BundleConfig, vals values.Resolved, cluster *clusterinfo.Reader) (format.Config, error) {
	fc := format.Config{InstallNamespace: installNamespace, ReleaseName: release, Bundle: cfg, Values: vals.Values, Redact: redactions(cfg, vals)}
	if p.Capabilities && cluster != nil {
		caps, err := cluster.Capabilities()
		if err != nil {
			return format.Config{}, fmt.Errorf("reading cluster capabilities: %w", err)
		}
		fc.Capabilities = caps
	}
	return fc, nil
}

// redactions returns the strings of vals that came from Secrets.
func redactions(cfg *v1alpha2.BundleConfig, vals values.Resolved) []string {
	if len(vals.Secrets) > 0 {
		return vals.Secrets
	}
	if cfg == nil {
		return nil
	}
	for _, ref := range cfg.ValuesFrom {
		if ref.Kind == values.KindSecret {
			return values.AllStrings(vals.Values)
		}
	}
	return nil
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

// ForClass returns the provisioner serving the ProvisionerClass className.
// ok is false when the class does not exist or names a controller this
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
	return p, ok, nil
}
