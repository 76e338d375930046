package kustomize

import (
	"path"
	"regexp"
	"strings"
)

// scpUser matches the user of an SCP-style git address such as
// "git@github.com:org/repo", which kustomize clones.
var scpUser = regexp.MustCompile(`^[a-z][a-z0-9-]*@`)

// remotePrefixes start the entries kustomize fetches over the network or
// clones with git (or might, in some version): URL schemes, the "git::"
// forcing prefix and the GitHub shorthands.
var remotePrefixes = []string{
	"http:", "https:", "ssh:", "git:", "file:", "git::",
	"github.com/", "github.com:",
}

// isRemote reports whether entry, a path field of a kustomization, would
// make kustomize fetch a URL or clone a git repository. It errs on the side
// of refusing: any "://", any URL scheme kustomize knows, "user@" and the
// GitHub shorthands count, whatever the case and surrounding blanks.
func isRemote(entry string) bool {
	s := strings.ToLower(strings.TrimSpace(entry))
	if strings.Contains(s, "://") || scpUser.MatchString(s) {
		return true
	}
	for _, p := range remotePrefixes {
		if strings.HasPrefix(s, p) {
			return true
		}
	}
	return false
}

// refKind says why an entry cannot be used.
type refKind int

const (
	// refLocal is a relative path inside the bundle.
	refLocal refKind = iota
	// refRemote is a URL or a git repository.
	refRemote
	// refAbsolute is an absolute path.
	refAbsolute
	// refOutside is a relative path that leaves the bundle.
	refOutside
)

// resolve returns the bundle path that entry, a path field of the
// kustomization in directory dir, names, and whether it is one.
func resolve(dir, entry string) (string, refKind) {
	switch {
	case isRemote(entry):
		return "", refRemote
	case path.IsAbs(entry) || strings.HasPrefix(entry, `\`):
		return "", refAbsolute
	}
	p := path.Join(dir, entry)
	if p == ".." || strings.HasPrefix(p, "../") {
		return "", refOutside
	}
	return p, refLocal
}
