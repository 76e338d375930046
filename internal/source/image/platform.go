package image

import (
	"maps"
	"slices"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/rukpak/rukpak/api/v1alpha2"
	"github.com/rukpak/rukpak/pkg/failure"
)

// parsePlatform parses spec ("os/arch[/variant]"), or def when spec is
// empty. A malformed platform is a terminal failure.
func parsePlatform(spec, def string) (v1.Platform, error) {
	s := spec
	if s == "" {
		s = def
	}
	parts := strings.Split(s, "/")
	if len(parts) < 2 || len(parts) > 3 || slices.Contains(parts, "") {
		return v1.Platform{}, failure.New(v1alpha2.ReasonUnpackFailed, "platform %q is not of the form os/arch[/variant]", s)
	}
	p := v1.Platform{OS: parts[0], Architecture: parts[1]}
	if len(parts) == 3 {
		p.Variant = parts[2]
	}
	return p, nil
}

// selectImage returns the digest of the first image of idx for want. A
// platform without a variant matches any variant of its os and arch. No
// match is a terminal failure naming subject (the index) and listing the
// platforms it has.
func selectImage(idx v1.ImageIndex, want v1.Platform, subject string) (v1.Hash, error) {
	m, err := idx.IndexManifest()
	if err != nil {
		return v1.Hash{}, err
	}
	available := map[string]bool{}
	for _, d := range m.Manifests {
		if d.Platform == nil || (d.MediaType != "" && !d.MediaType.IsImage()) {
			continue
		}
		if matches(*d.Platform, want) {
			return d.Digest, nil
		}
		if d.Platform.OS != "unknown" { // attestation manifests
			available[formatPlatform(*d.Platform)] = true
		}
	}
	list := slices.Sorted(maps.Keys(available))
	has := "none"
	if len(list) > 0 {
		has = strings.Join(list, ", ")
	}
	return v1.Hash{}, failure.New(v1alpha2.ReasonUnpackFailed,
		"%s has no image for platform %s (it has: %s)", subject, formatPlatform(want), has)
}

// matches reports whether have satisfies want. arm64's variant v8 is its
// default, so it equals no variant.
func matches(have, want v1.Platform) bool {
	if have.OS != want.OS || have.Architecture != want.Architecture {
		return false
	}
	return want.Variant == "" || normalVariant(have) == normalVariant(want)
}

func normalVariant(p v1.Platform) string {
	if p.Architecture == "arm64" && p.Variant == "v8" {
		return ""
	}
	return p.Variant
}

// formatPlatform returns p as os/arch[/variant].
func formatPlatform(p v1.Platform) string {
	s := p.OS + "/" + p.Architecture
	if p.Variant != "" {
		s += "/" + p.Variant
	}
	return s
}
