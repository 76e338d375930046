// Package image reads bundle content from an OCI image (or a Docker v2
// image, or a Helm chart stored as an OCI artifact) in a container
// registry, with go-containerregistry: no container runtime, no local image
// store, nothing on disk but the content itself.
//
// The source is a pipeline:
//
//  1. Floating: a ref by digest, or a tag ref with the digest field set, is
//     fixed; a tag ref alone, or a repository with versions, is floating.
//  2. Resolve pins a tag to the digest of what it points to (a manifest or
//     a multi-platform index) with one HEAD request, or a GET when the
//     registry does not answer HEAD usefully. With versions, it first
//     lists the repository's tags (bounded in tags, pages and bytes, see
//     tags.go) and takes the newest that is a version in the constraint
//     (package versionrange), recorded as resolvedTag. A source pinned
//     already makes no request at all.
//  3. Unpack fetches repository@digest — never the tag — and refuses a
//     manifest that does not match the digest. An index is narrowed to the
//     image of the source's platform (or the manager's). The image's layers
//     are then extracted in order into the directory with the archive
//     package, applying OCI whiteouts, within one byte and file budget for
//     the whole image (see budget). A Helm chart artifact is unpacked from
//     its single chart layer instead. Every blob is verified against its
//     digest. With verify.cosign, a cosign signature of the pinned digest
//     is required first, before the image's manifest or any layer is read:
//     made with a public key (verify.go) or keyless, checked offline
//     against a sigstore trusted root with sigstore-go (keyless.go).
//
// Credentials are read with credentials.Reader from rukpak-system only: a
// kubernetes.io/dockerconfigjson pull Secret, whose entry for the image's
// registry (and the longest matching repository path) authenticates the
// requests, and a CA Secret for TLS. A source that reads images of its
// own (an oci:// Helm repository) may give, per call (WithAuth), a Secret
// of username and password or a registry token in place of the pull
// Secret. insecureSkipTLSVerify turns off certificate verification and
// also allows plain-HTTP registries (sending the credentials unencrypted).
//
// Errors that retrying cannot fix (an unparsable ref or platform,
// authentication refused, image or tag not found, a digest mismatch, no
// image for the platform, content the archive package refuses) are terminal
// failures with a condition reason; network errors and registry server
// errors are returned wrapped, to be retried. Messages never contain
// credentials.
package image
