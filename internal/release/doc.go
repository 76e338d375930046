// Package release makes a rukpak release without a container runtime. Run
// does, in order:
//
//  1. BuildBinary cross-compiles the manager (cmd/rukpak) statically
//     (CGO_ENABLED=0, -trimpath) for each image platform, stamping the
//     release and commit into package version;
//  2. BuildImage puts each binary on an empty base (a skeleton layer with
//     /etc/passwd, /tmp and the store directory, and a layer with the
//     binary) with go-containerregistry, as a non-root (65532:65532) OCI
//     image, and joins them in one multi-arch index;
//  3. WriteOCIArchive writes the index as a tarball of an OCI image layout,
//     and Push pushes it to a registry when one is given;
//  4. Manifest builds config/default with kustomize (krusty, in memory),
//     pinning the manager's image to the index's digest: rukpak.yaml;
//  5. BuildBinary cross-compiles rukpakctl for each CLI platform;
//  6. WriteChecksums lists the SHA-256 of every file in SHA256SUMS.
//
// docs/release.md describes how a release is made with it (hack/release,
// `make release`).
package release
