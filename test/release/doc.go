// Package release tests a release end to end: it runs internal/release for
// the host's platform, pushes the manager's image to a registry on
// loopback, checks the pulled image's config, runs the entrypoint from the
// unpacked image file system (chrooted into it, as the image's user, when
// the test runs as root) and applies rukpak.yaml with server-side apply to a
// fresh kube-apiserver (envtest), where every object must be accepted.
package release
