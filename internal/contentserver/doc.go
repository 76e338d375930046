// Package contentserver is the manager's HTTP endpoint for content: it
// serves the unpacked content of Bundles, so that other consumers can read
// exactly what a revision holds, and takes uploads (`rukpakctl run`), which
// the manager stores itself so that no user needs write access to
// ConfigMaps in rukpak-system.
//
// Every request carries `Authorization: Bearer TOKEN`, a token for
// Audience: the server asks a TokenReview with spec.audiences [Audience]
// and accepts the token only when it is authenticated for that audience
// (else 401). A kubeconfig's token for the API server, or a token for any
// other service, is refused; and a token made for the content server is
// refused by the API server, so a server that is handed one cannot use it
// there.
//
// GET /bundles/NAME, in order:
//
//  1. authenticate the token, else 401;
//  2. authorize the user with a SubjectAccessReview for verb get on
//     bundles/content (group core.rukpak.io) named NAME, else 403 naming the
//     missing permission;
//  3. stream the Bundle's content from the content store as a gzipped tar
//     (deterministic: sorted paths, no timestamps or owners).
//
// PUT /uploads/sha256:HEX (with WithUploads), in order:
//
//  1. a malformed digest is 400; authenticate the token, else 401;
//  2. authorize the user for verb create on the virtual resource uploads
//     (group core.rukpak.io), else 403 naming the permission;
//  3. refuse a Content-Length over the store's limit (413) before reading,
//     and more than a few uploads at once (429);
//  4. store the body with upload.Store.Put, which writes the
//     content-addressed chunks as the manager, enforces the size limit
//     (413), checks the digest before the manifest is written (422) and
//     records the user as an uploader of it (the manager's re-check lets
//     an uploader name the upload: package approval); an upload this user
//     stored already is not read again (idempotent), one stored only by
//     others is read and checked like a new one, so that knowing a digest
//     makes no one its uploader;
//  5. answer 200 with an UploadResult.
//
// Review results are cached briefly per token, so a client reading many
// Bundles does not cost two API requests each.
package contentserver
