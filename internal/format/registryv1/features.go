package registryv1

import (
	"fmt"
	"strings"

	"github.com/rukpak/rukpak/api/v1alpha2"
	"github.com/rukpak/rukpak/pkg/failure"
)

// maxListed is how many items a message lists before "and N more".
const maxListed = 3

// checkSupported refuses a bundle using a feature of registry+v1 this
// format does not implement, rather than installing it without.
func checkSupported(csv *clusterServiceVersion, meta bundleMetadata) error {
	name := csv.Metadata.Name
	switch s := csv.Spec.Install.Strategy; s {
	case deploymentStrategy:
	case "":
		return invalidCSV(name, "spec.install.strategy is missing; it must be %q", deploymentStrategy)
	default:
		return unsupported(name, "uses install strategy %q (spec.install.strategy); only %q is supported",
			s, deploymentStrategy)
	}
	if deps := meta.dependencies; len(deps) > 0 {
		items := make([]string, len(deps))
		for i, d := range deps {
			items[i] = d.String()
		}
		return unsupported(name, "has dependencies in %s (%s), which are not supported: rukpak does not resolve "+
			"dependencies; install them with BundleDeployments of their own and drop the file from the bundle",
			DependenciesFile, list(items))
	}
	return nil
}

// unsupported returns an UnsupportedFeature failure about the CSV named
// name.
func unsupported(name, format string, args ...any) error {
	return failure.New(v1alpha2.ReasonUnsupportedFeature, "%s %s %s", csvKind, name, fmt.Sprintf(format, args...))
}

// list joins the first items with commas and counts the rest.
func list(items []string) string {
	if len(items) <= maxListed {
		return strings.Join(items, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(items[:maxListed], ", "), len(items)-maxListed)
}
