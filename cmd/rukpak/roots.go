package main

// The release image is built on an empty base (docs/release.md): it has no
// /etc/ssl/certs. This bundles Mozilla's root certificates into the binary;
// Go uses them only when the system has no roots of its own, so the
// manager can still reach registries, git and HTTP servers over TLS.
import _ "golang.org/x/crypto/x509roots/fallback"
