package archive

import (
	"fmt"
	"path"
	"strings"

	"github.com/rukpak/rukpak/api/v1alpha2"
	"github.com/rukpak/rukpak/pkg/failure"
)

// refuse returns the terminal failure of the entry named name (as the
// archive spells it) breaking a rule.
func refuse(name, format string, args ...any) error {
	return failure.New(v1alpha2.ReasonUnpackFailed, "archive entry %q: %s", name, fmt.Sprintf(format, args...))
}

// CleanEntryPath returns name, the path of a tar entry, cleaned and relative
// to the destination, with "." for the destination itself ("./a//b/" is
// "a/b"). An empty name, a NUL byte, an absolute name and a name that climbs
// out of the destination with ".." are refused with a terminal UnpackFailed
// failure.
func CleanEntryPath(name string) (string, error) {
	c, rule := cleanRelative(name)
	if rule != "" {
		return "", refuse(name, "path %s", rule)
	}
	return c, nil
}

// cleanRelative cleans p, a slash-separated path relative to the
// destination, or returns the rule it breaks ("is absolute", ...).
func cleanRelative(p string) (string, string) {
	switch {
	case p == "":
		return "", "is empty"
	case strings.ContainsRune(p, 0):
		return "", "contains a NUL byte"
	case strings.HasPrefix(p, "/"):
		return "", "is absolute"
	}
	c := path.Clean("/" + p)[1:] // rooted cleaning cannot climb above the root ...
	if c == "" {
		c = "."
	}
	if path.Clean(p) != c { // ... so a difference means p climbed out
		return "", "escapes the destination"
	}
	return c, ""
}

// checkSymlinkTarget returns the rule the target of a symbolic link at name
// (a cleaned path) breaks, or "". The target must be relative and, resolved
// from the link's directory, stay inside the destination. It must also not
// use ".." after a name ("a/../b"): were a a link itself, ".." would climb
// from where a points rather than from the link's directory, so only targets
// whose ".." all come first resolve the way they read. (The directories a
// link is in are never links themselves: writing through a link is refused.)
func checkSymlinkTarget(name, target string) string {
	switch {
	case target == "":
		return "symlink has no target"
	case strings.ContainsRune(target, 0):
		return fmt.Sprintf("symlink target %q contains a NUL byte", target)
	case strings.HasPrefix(target, "/"):
		return fmt.Sprintf("symlink target %q is absolute", target)
	}
	named := false
	for _, c := range strings.Split(target, "/") {
		switch c {
		case "", ".":
		case "..":
			if named {
				return fmt.Sprintf(`symlink target %q has ".." after a name, which could climb out through another link`, target)
			}
		default:
			named = true
		}
	}
	if _, rule := cleanRelative(path.Join(path.Dir(name), target)); rule != "" {
		return fmt.Sprintf("symlink target %q escapes the destination", target)
	}
	return ""
}
