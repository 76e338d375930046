// Package catalog reads the bundle of a package that an operator catalog
// selects: the catalog source type.
//
// The source is a pipeline:
//
//  1. Resolve pins the catalog image to a digest with the image source
//     (its pull secret, CA and TLS settings).
//  2. It reads the catalog of that digest from a cache shared by every
//     source of the manager that reads it with the same credentials (pull
//     secret, CA secret, TLS verification: an image named by digest is
//     pinned without a request, so a parse must not answer a source whose
//     credentials the registry was never shown); on a miss it pulls the catalog image with
//     image.Source.Pull (within bounds of layer bytes and unpacked
//     bytes), reads the directory that the image's label
//     operators.operatorframework.io.index.configs.v1 names (/configs
//     when it has none) and parses it with package internal/catalog
//     within catalog.Limits. The cache keeps the few catalogs used last
//     and drops older ones.
//  3. It selects a bundle with catalog.Resolve: the newest bundle of the
//     source's channels and version range that the upgrade edge policy
//     allows from the installed bundle (ResolveFrom; Resolve knows of no
//     installed bundle). A bundle that declares dependencies is refused
//     (DependenciesUnsupported): rukpak installs none.
//  4. It pins the bundle's image to a digest with the image source and
//     returns the source with resolvedBundle, resolvedVersion,
//     resolvedImage (repository@digest) and catalogDigest set. A source
//     pinned already is returned as it is, without any request.
//  5. Unpack unpacks the pinned bundle image with the image source, as an
//     image source of a registry+v1 bundle is unpacked.
//
// Glossary: the catalog image holds the File-Based Catalog; a bundle
// image holds one bundle (manifests/ and metadata/); a pin is a value set
// on a resolved source that makes it yield the same content again.
package catalog
