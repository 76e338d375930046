// Package catalog reads an operator catalog in the File-Based Catalog
// format (the blobs of schema olm.package, olm.channel, olm.bundle and
// olm.deprecations that operator catalogs ship under /configs) and picks
// the bundle of a package to install, as OLM v1 resolves a
// ClusterExtension: only bundles in the named channels (or in any
// channel), in the version range, and — when a bundle is installed and
// upgrade edges are required — only the installed bundle or one of its
// successors along the catalog's edges (an entry that replaces it, skips
// it, or whose skipRange includes its version); of those, the newest
// version that is not deprecated, else the newest.
//
// A catalog is untrusted input: Parse reads it within bounds of bytes
// and blobs, skips blobs of schemas it does not know, and names the file
// of a blob that does not parse.
package catalog

import (
	"github.com/Masterminds/semver/v3"
)

// The schemas of File-Based Catalog blobs this package reads.
const (
	SchemaPackage      = "olm.package"
	SchemaChannel      = "olm.channel"
	SchemaBundle       = "olm.bundle"
	SchemaDeprecations = "olm.deprecations"
)

// The bundle properties this package reads.
const (
	// PropertyPackage holds a bundle's package name and version.
	PropertyPackage = "olm.package"
	// PropertyPackageRequired and PropertyGVKRequired declare a
	// dependency on another package or API: rukpak installs no
	// dependencies, so such a bundle is refused.
	PropertyPackageRequired = "olm.package.required"
	PropertyGVKRequired     = "olm.gvk.required"
)

// Catalog is what a File-Based Catalog says of its packages.
type Catalog struct {
	// Packages by name.
	Packages map[string]*Package
}

// Package is one package of a catalog: its channels and bundles.
type Package struct {
	Name           string
	DefaultChannel string
	// Channels by name.
	Channels map[string]*Channel
	// Bundles by name.
	Bundles map[string]*Bundle
	// Deprecated is the message of the package's deprecation, if any.
	Deprecated string
}

// Channel is an upgrade graph: its entries name bundles and the
// bundles each one upgrades from.
type Channel struct {
	Name    string
	Entries []Entry
	// Deprecated is the message of the channel's deprecation, if any.
	Deprecated string
}

// Entry is one bundle of a channel and its upgrade edges.
type Entry struct {
	// Name is the bundle's name.
	Name string `json:"name"`
	// Replaces names the bundle this one upgrades from.
	Replaces string `json:"replaces,omitempty"`
	// Skips names more bundles this one upgrades from.
	Skips []string `json:"skips,omitempty"`
	// SkipRange is a range of versions this one upgrades from.
	SkipRange string `json:"skipRange,omitempty"`
}

// Bundle is one bundle of a package: its image and version.
type Bundle struct {
	Name    string
	Package string
	// Image is the bundle's image reference (registry+v1 content).
	Image   string
	Version *semver.Version
	// Requires lists the dependencies the bundle declares (the values of
	// its olm.package.required and olm.gvk.required properties), which
	// rukpak does not install.
	Requires []string
	// Deprecated is the message of the bundle's deprecation, if any.
	Deprecated string
}
