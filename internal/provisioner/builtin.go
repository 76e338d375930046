package provisioner

import (
	"github.com/rukpak/rukpak/api/v1alpha2"
	"github.com/rukpak/rukpak/internal/format/helm"
	"github.com/rukpak/rukpak/internal/format/plain"
	"github.com/rukpak/rukpak/internal/format/registryv1"
)

// Builtin returns the provisioners rukpak ships, by controllerName: plain
// manifests (and kustomizations), OLM registry+v1 bundles and Helm charts.
func Builtin() Set {
	return Set{
		v1alpha2.ControllerPlain: {ControllerName: v1alpha2.ControllerPlain, Format: plain.New()},
		v1alpha2.ControllerRegistry: {
			ControllerName: v1alpha2.ControllerRegistry,
			Format:         registryv1.New(),
			Takes:          ConfigFields{WatchNamespaces: true},
		},
		v1alpha2.ControllerHelm: {
			ControllerName: v1alpha2.ControllerHelm,
			Format:         helm.New(),
			Takes:          ConfigFields{Values: true},
			Capabilities:   true,
		},
	}
}
