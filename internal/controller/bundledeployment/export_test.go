package bundledeployment

import (
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rukpak/rukpak/internal/crdsafety"
)

// Internals the package's external tests use.
var ReadForHealth = readForHealth

// Thresholds of ReadForHealth.
const (
	ListAtLeast = listAtLeast
	ListPage    = listPage
)

// NewCustomResourceLister is the lister the CRD upgrade check uses.
func NewCustomResourceLister(manager, install client.Reader) crdsafety.Lister {
	return customResourceLister{manager: manager, install: install}
}
