package builtins

import (
	"fmt"

	"github.com/rukpak/rukpak/api/v1alpha2"
	"github.com/rukpak/rukpak/internal/clusterinfo"
	"github.com/rukpak/rukpak/internal/values"
	"github.com/rukpak/rukpak/pkg/format"
	"github.com/rukpak/rukpak/pkg/provisioner"
)

// FormatConfig is what p's format renders a revision with: the install's
// name and namespace, spec.config, the class's parameters, the resolved
// Helm values and, when the
// format needs them and cluster is not nil, the cluster's capabilities.
// The values read from Secrets are to be redacted from errors: vals.Secrets,
// or, when vals carries none and cfg names a Secret, every string of vals.
func FormatConfig(p provisioner.Provisioner, release, installNamespace string, cfg *v1alpha2.BundleConfig, vals values.Resolved, cluster *clusterinfo.Reader) (format.Config, error) {
	fc := format.Config{InstallNamespace: installNamespace, ReleaseName: release, Bundle: cfg, Parameters: p.Parameters, Values: vals.Values, Redact: redactions(cfg, vals)}
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
