// Package http reads bundle content from a .tar.gz archive served over
// HTTP(S): the http source type.
//
// The source is a pipeline of two steps:
//
//  1. Resolve pins a floating source (one without sha256) by downloading
//     the archive and hashing it; a source with sha256 is returned as it is,
//     without any request.
//  2. Unpack downloads the archive into a temporary file next to the
//     destination while hashing it, refuses it unless its sha256 is the
//     pinned one (DigestMismatch), and only then extracts it with the
//     archive package, whose rules refuse hostile archives.
//
// Credentials come from a Secret in the system namespace (a bearer token, or
// a username and password), CA bundles from another, both read through
// credentials.Reader; neither ever appears in a message. A missing archive
// (404, 410) is a terminal SourceNotFound failure, refused credentials (401,
// 403), a download over the size limit and other client errors are terminal
// UnpackFailed failures; server errors, timeouts and connection failures are
// returned as transient errors, to be retried with backoff.
package http
