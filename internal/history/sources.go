package history

import (
	"cmp"
	"net/url"
	"strings"

	"github.com/rukpak/rukpak/api/v1alpha2"
)

// SourcesSummary is a short description of pinned sources, one per
// source, joined by "; ".
func SourcesSummary(srcs []v1alpha2.BundleSource) string {
	parts := make([]string, 0, len(srcs))
	for _, s := range srcs {
		parts = append(parts, SourceSummary(s))
	}
	return strings.Join(parts, "; ")
}

// SourceSummary describes one source by its type, location and pin, with
// credentials and the query of an HTTP URL left out.
func SourceSummary(s v1alpha2.BundleSource) string {
	switch {
	case s.Type == v1alpha2.SourceTypeImage && s.Image != nil:
		ref, pin, _ := strings.Cut(s.Image.Ref, "@")
		if s.Image.Digest != "" {
			pin = s.Image.Digest
		}
		if s.Image.ResolvedTag != "" {
			ref += ":" + s.Image.ResolvedTag
		}
		if pin == "" && s.Image.Versions != "" {
			return "image " + ref + " (versions " + s.Image.Versions + ")"
		}
		if pin == "" {
			return "image " + ref
		}
		return "image " + ref + "@" + ShortDigest(pin)
	case s.Type == v1alpha2.SourceTypeGit && s.Git != nil:
		g := s.Git
		if c := cmp.Or(g.ResolvedCommit, g.Ref.Commit); c != "" {
			out := "git " + g.Repository + "@" + c[:min(12, len(c))]
			if g.ResolvedTag != "" {
				out += " (tag " + g.ResolvedTag + ")"
			}
			return out
		}
		if g.Ref.Semver != "" {
			return "git " + g.Repository + " (semver " + g.Ref.Semver + ")"
		}
		return "git " + g.Repository + "@" + cmp.Or(g.Ref.Tag, g.Ref.Branch)
	case s.Type == v1alpha2.SourceTypeHTTP && s.HTTP != nil:
		out := "http " + RedactURL(s.HTTP.URL)
		if s.HTTP.SHA256 != "" {
			out += " " + ShortDigest("sha256:"+s.HTTP.SHA256)
		}
		return out
	case s.Type == v1alpha2.SourceTypeHelmRepository && s.HelmRepository != nil:
		h := s.HelmRepository
		out := "helmRepository " + RedactURL(h.URL) + " " + h.Chart
		if h.ResolvedVersion != "" {
			return out + "@" + h.ResolvedVersion
		}
		if h.Version != "" {
			return out + "@" + h.Version
		}
		return out
	case s.Type == v1alpha2.SourceTypeCatalog && s.Catalog != nil:
		c := s.Catalog
		out := "catalog " + c.Image + " " + c.Package
		if c.ResolvedBundle != "" {
			return out + "@" + c.ResolvedVersion + " (" + c.ResolvedBundle + ")"
		}
		if c.Version != "" {
			return out + "@" + c.Version
		}
		return out
	case s.Type == v1alpha2.SourceTypeConfigMaps:
		names := make([]string, 0, len(s.ConfigMaps))
		for _, cm := range s.ConfigMaps {
			names = append(names, cm.ConfigMap.Name)
		}
		return "configMaps " + strings.Join(names, ",")
	case s.Type == v1alpha2.SourceTypeUpload && s.Upload != nil:
		return "upload " + ShortDigest(s.Upload.Digest)
	}
	return string(s.Type)
}

// ShortDigest shortens "alg:hex" to its first 12 hex digits.
func ShortDigest(d string) string {
	alg, hex, ok := strings.Cut(d, ":")
	if !ok {
		alg, hex = "", d
	}
	if len(hex) > 12 {
		hex = hex[:12] + "…"
	}
	if alg == "" {
		return hex
	}
	return alg + ":" + hex
}

// RedactURL drops credentials and the query (signed URLs carry tokens
// there).
func RedactURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return raw
	}
	u.User = nil
	if u.RawQuery != "" {
		u.RawQuery = "…"
	}
	u.Fragment, u.RawFragment = "", ""
	return u.String()
}
