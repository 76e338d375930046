// Package upload keeps archives uploaded with `rukpakctl run` in the cluster,
// so that they survive manager restarts and serve every manager replica.
//
// An upload is a deterministic .tar.gz (see Pack) named by its digest
// ("sha256:<hex>" of the compressed bytes). A Store keeps it in one namespace
// as:
//
//   - chunks: immutable ConfigMaps named upload-chunk-<sha256 of the chunk>,
//     labelled LabelChunk, each holding ChunkSize bytes of the archive (the
//     last one less). Chunks are content-addressed, so identical content
//     uploaded twice, or by two BundleDeployments, is stored once;
//   - a manifest: an immutable ConfigMap named upload-<hex>, labelled
//     LabelManifest, listing the chunks in order and the archive's size,
//     and annotated with every user who uploaded it (Uploaders).
//
// The life of an upload is a pipeline:
//
//  1. Pack writes the archive of a directory to a temporary file, hashing it
//     (rukpakctl run), which sends it to the manager's upload endpoint
//     (package contentserver).
//  2. Store.Put, in the manager, writes the chunks, then the manifest: a
//     manifest exists only when every chunk it lists was written. It
//     records the uploader; a user who did not upload the digest before
//     must send the bytes (the digest alone proves nothing). Users need
//     no write access to ConfigMaps in the Store's namespace.
//  3. Store.Open streams the archive back, chunk by chunk, verifying every
//     chunk and the whole archive against their digests.
//  4. Store.GC deletes the manifests no Bundle uses and the chunks no manifest
//     lists, sparing what was written or reused within a grace period (an
//     upload in progress). It deletes only what a Store wrote: the name of a
//     chunk (manifest), and its label set by FieldManager as managedFields
//     record; a ConfigMap someone else labelled is never deleted.
//
// Reads go through an uncached reader: chunks are large and must never sit in
// an informer cache (a manager excludes LabelChunk objects from its cache).
package upload
