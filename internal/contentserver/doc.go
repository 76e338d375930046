// Package contentserver serves the unpacked content of Bundles over HTTP, so
// that other consumers can read exactly what a revision holds.
//
// A request is handled in order:
//
//  1. GET /bundles/NAME with `Authorization: Bearer TOKEN`, else 401;
//  2. authenticate the token with a TokenReview, else 401;
//  3. authorize the user with a SubjectAccessReview for verb get on
//     bundles/content (group core.rukpak.io) named NAME, else 403 naming the
//     missing permission;
//  4. stream the Bundle's content from the content store as a gzipped tar
//     (deterministic: sorted paths, no timestamps or owners).
//
// Review results are cached briefly per token, so a client reading many
// Bundles does not cost two API requests each.
package contentserver
