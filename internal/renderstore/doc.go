// Package renderstore keeps, in the cluster, what a revision rendered to, so
// that a format whose render is not deterministic (a Helm chart calling
// genCA, randAlphaNum or lookup) is rendered once per revision: drift
// correction, a restarted manager, another replica and a rollback apply
// exactly the stored objects, the way Helm keeps a release.
//
// # Format (encoding version 1)
//
// A render is one JSON document, compressed with gzip (default level, no
// name, no modification time):
//
//	{"version":1,
//	 "revision":"<Bundle name>", "bundleUID":"<Bundle UID>",
//	 "contentDigest":"sha256:…", "formatVersion":"…",
//	 "releaseRevision":2, "upgrade":true,
//	 "objects":[{…}, …],              // in apply order
//	 "answers":{"<key>":"<JSON text>"}} // lookup answers, each kept as the exact text given
//
// Map keys are sorted and HTML characters are not escaped, so the same
// render always encodes to the same bytes with one build of rukpak. The
// compressed payload is cut into chunks of ChunkSize bytes (900 KiB, under
// the 1 MiB limit of a Secret), each kept in an immutable Secret of type
// SecretType in the store's namespace (rukpak-system), named
// render-<bundle>-<i> for i = 0 … n-1 (a Bundle name that would make the
// name longer than 253 characters is shortened, with a hash of the whole
// name: see chunkName). Each chunk
//
//   - holds its bytes under the data key "payload";
//   - is labelled LabelRenderOf=<Bundle name> (shortened with a hash when
//     over 63 characters) and, for a Bundle of a BundleDeployment,
//     core.rukpak.io/bundle-deployment=<BundleDeployment name>;
//   - is annotated with the full Bundle name and UID, the chunk's index, the
//     chunk count, the sha256 of its own bytes and the sha256 of the whole
//     compressed payload (core.rukpak.io/render-*);
//   - has an ownerReference (not a controller) to its Bundle, so that the
//     garbage collector deletes it with the Bundle.
//
// # Verification and limits
//
// Load reads chunk 0's metadata, then (unless the render is in its cache)
// every chunk. A chunk that is missing, from another save, or whose bytes
// do not match its checksums, a payload whose sha256 does not match, one
// that does not decompress or decode, or one over the limits is reported as
// a *CorruptError (errors.Is(err, ErrCorrupt)); no stored render is
// ErrNotFound. The caller renders again, says so with a Warning event
// (EventRenderLost, EventRenderCorrupt) and saves the new render, which
// replaces a corrupt one. The checksums detect partial writes, mixed saves
// and edits; they do not stop someone who may write Secrets in
// rukpak-system from writing a consistent forgery — such a user can already
// change everything the manager reads.
//
// Decoding is bounded: at most Options.MaxSize bytes are decompressed
// (DefaultMaxSize, 256 MiB, above the 128 MiB a Helm chart may render to),
// through an io.LimitReader, and a render has at most Options.MaxChunks
// chunks (DefaultMaxChunks). Save refuses, with ErrTooLarge, what Load would
// refuse. While decoding, Load holds at most that much JSON (a bomb is
// refused once it has decompressed MaxSize bytes), besides the decoded
// objects.
//
// # Bounds per tenant
//
// Save bounds what the tenant its context carries (package tenant) keeps:
// every chunk is labelled LabelTenant, and chunk 0 carries the compressed
// payload's size. A new render is refused with a *QuotaError (ErrQuota)
// when the tenant keeps Options.TenantRenders renders already, or when
// its renders and its content in the content store (Options.ContentUsage)
// would hold more than Options.TenantQuota. TenantBytes tells the content
// store what the tenant's renders hold, so that both count against one
// quota.
//
// # Memory
//
// Chunk Secrets must stay out of the manager's informer cache (it selects
// Secrets without LabelRenderOf), so a Store reads through an uncached
// reader. Decoded renders are kept in a small LRU, bounded both in entries
// and in bytes of JSON, keyed by Bundle name and payload checksum: a Load
// of a cached render reads only chunk 0's metadata.
package renderstore
