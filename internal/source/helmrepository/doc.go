// Package helmrepository reads a chart from a Helm chart repository: the
// helmRepository source type.
//
// The source is a pipeline of two steps:
//
//  1. Resolve reads the repository's index (url/index.yaml) through a
//     cache shared by every BundleDeployment of the manager, selects the
//     version the source asks for (package helmrepo: an exact version, or
//     the newest of a range) and pins it: the resolved version, the
//     archive's URL (relative URLs resolved against the repository's) and
//     its sha256, from the index's digest (or, for an index without one,
//     from the archive downloaded and hashed). A pinned source is returned
//     as it is, without any request.
//  2. Unpack downloads the pinned archive with the http source, which
//     refuses it unless its sha256 is the pinned one, and extracts it.
//     With verify.provenance, the archive's provenance file is checked
//     first (provenance.go): signed by a key of the keyring, for the
//     pinned archive, with Helm's provenance package.
//
// The cache is keyed by the index's URL and the credentials it is read
// with (the credential Secret's and the CA Secret's contents, and whether
// TLS is verified), so that what one set of credentials fetched never
// answers a request made with other credentials or none. An index is
// fetched at most once per MaxAge whatever the number of sources that
// follow it, with If-None-Match and If-Modified-Since, and one fetch of an
// index is in flight at a time. Each chart of an index is read once per
// fetch of it (helmrepo.ReadIndex, bounded) and kept with it.
//
// Credentials are sent to the repository's host only: an archive that the
// index places on another host is downloaded without them, as Helm does
// unless told to pass them.
//
// An oci:// repository is a registry repository of charts (oci.go), read
// with the image source (Images) under the image source's rules for pull
// secrets, TLS and cosign verification, or with the auth Secret as the
// registry's credentials (ImageOptions: username and password, or a
// registry token, in place of a pull secret): Resolve takes an exact version's
// tag, or lists the tags of url/chart and takes the newest chart version
// in range (a tag's "_" read as "+", as helm push writes them), and pins
// it to the digest of its manifest; Unpack pulls the chart by that digest.
// Tag listings are not cached: each resolve lists the tags once, with
// the credentials of the source at hand, so no cache key has credentials
// to carry on this path.
package helmrepository
