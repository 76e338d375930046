package registryv1

import (
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/rukpak/rukpak/api/v1alpha2"
	"github.com/rukpak/rukpak/pkg/failure"
)

// InstallMode is how many namespaces an operator watches, as named in a
// CSV's spec.installModes.
type InstallMode string

// The install modes, in the order messages list them.
const (
	// AllNamespaces: the operator watches every namespace
	// (spec.config.watchNamespaces empty).
	AllNamespaces InstallMode = "AllNamespaces"
	// OwnNamespace: the operator watches the install namespace only
	// (spec.config.watchNamespaces is [installNamespace]).
	OwnNamespace InstallMode = "OwnNamespace"
	// SingleNamespace: the operator watches one other namespace.
	SingleNamespace InstallMode = "SingleNamespace"
	// MultiNamespace: the operator watches several namespaces.
	MultiNamespace InstallMode = "MultiNamespace"
)

// installModes lists the install modes in message order.
var installModes = []InstallMode{AllNamespaces, OwnNamespace, SingleNamespace, MultiNamespace}

// SelectInstallMode returns the install mode watchNamespaces selects for an
// operator installed in installNamespace, and the namespaces it targets
// (sorted; [""] for AllNamespaces). A watchNamespaces entry that is not a
// namespace name, or is listed twice, is an InvalidConfig failure.
func SelectInstallMode(installNamespace string, watchNamespaces []string) (InstallMode, []string, error) {
	seen := map[string]bool{}
	for i, ns := range watchNamespaces {
		if errs := validation.IsDNS1123Label(ns); len(errs) > 0 {
			return "", nil, failure.New(v1alpha2.ReasonInvalidConfig,
				"spec.config.watchNamespaces[%d] %q is not a valid namespace name: %s", i, ns, strings.Join(errs, "; "))
		}
		if seen[ns] {
			return "", nil, failure.New(v1alpha2.ReasonInvalidConfig,
				"spec.config.watchNamespaces lists namespace %q twice", ns)
		}
		seen[ns] = true
	}
	switch {
	case len(watchNamespaces) == 0:
		return AllNamespaces, []string{""}, nil
	case len(watchNamespaces) == 1 && watchNamespaces[0] == installNamespace:
		return OwnNamespace, []string{installNamespace}, nil
	case len(watchNamespaces) == 1:
		return SingleNamespace, []string{watchNamespaces[0]}, nil
	}
	targets := slices.Clone(watchNamespaces)
	slices.Sort(targets)
	return MultiNamespace, targets, nil
}

// supportedModes returns the install modes the CSV supports, in message
// order. Unknown types are ignored.
func (c *clusterServiceVersion) supportedModes() []InstallMode {
	var out []InstallMode
	for _, m := range installModes {
		for _, im := range c.Spec.InstallModes {
			if im.Type == string(m) && im.Supported {
				out = append(out, m)
				break
			}
		}
	}
	return out
}

// checkInstallMode refuses mode if the CSV does not support it. A CSV that
// supports no mode at all is invalid content.
func (c *clusterServiceVersion) checkInstallMode(mode InstallMode, installNamespace string) error {
	supported := c.supportedModes()
	if slices.Contains(supported, mode) {
		return nil
	}
	if len(supported) == 0 {
		return invalidCSV(c.Metadata.Name, "spec.installModes supports no install mode; it must support at least one of %s",
			joinModes(installModes))
	}
	hints := make([]string, len(supported))
	for i, m := range supported {
		hints[i] = modeHint(m, installNamespace)
	}
	return failure.New(v1alpha2.ReasonUnsupportedInstallMode,
		"%s %s does not support %s; it supports %s: set spec.config.watchNamespaces to %s",
		csvKind, c.Metadata.Name, mode, joinModes(supported), strings.Join(hints, ", or "))
}

// modeHint says how spec.config.watchNamespaces selects mode.
func modeHint(mode InstallMode, installNamespace string) string {
	switch mode {
	case AllNamespaces:
		return "nothing (empty) for AllNamespaces"
	case OwnNamespace:
		return fmt.Sprintf("[%s] for OwnNamespace", installNamespace)
	case SingleNamespace:
		return "one other namespace for SingleNamespace"
	default:
		return "several namespaces for MultiNamespace"
	}
}

// joinModes joins modes with commas.
func joinModes(modes []InstallMode) string {
	s := make([]string, len(modes))
	for i, m := range modes {
		s[i] = string(m)
	}
	return strings.Join(s, ", ")
}
