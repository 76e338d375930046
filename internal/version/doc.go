// Package version tells which release of rukpak a binary is: the release
// and commit the release build stamps in with the linker
// (-X github.com/rukpak/rukpak/internal/version.release=… and …commit=…),
// or, for a plain `go build`, "devel" and the VCS information Go records in
// the binary (runtime/debug.ReadBuildInfo), and the Go version that built it.
package version
