// Package upload reads bundle content uploaded with `rukpakctl run` from the
// in-cluster chunk store (internal/upload).
//
// The source is a pipeline of two steps:
//
//  1. Resolve checks that the upload exists; the digest in the source is
//     the pin already, so the source comes back unchanged.
//  2. Unpack streams the upload's chunks, verifying each and the whole
//     archive against their digests, into the archive extractor, which
//     refuses unsafe entries and enforces size limits.
package upload
