package bundledeployment

import (
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rukpak/rukpak/api/v1alpha2"
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

// ForgeRevisionNames names revisions with forge instead of
// ownership.RevisionName until restore is called: a test forges two
// revisions whose names collide, as a search for a collision of the name's
// 40 bits would.
func ForgeRevisionNames(forge func(bdName string, spec v1alpha2.BundleSpec, valuesDigest string) string) (restore func()) {
	f := revisionNamer(forge)
	forgedNamer.Store(&f)
	return func() { forgedNamer.Store(nil) }
}
