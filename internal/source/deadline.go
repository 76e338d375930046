package source

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/rukpak/rukpak/api/v1alpha2"
	"github.com/rukpak/rukpak/pkg/failure"
)

// DefaultDeadline is how long resolving or unpacking one source may take
// unless the manager is told otherwise.
const DefaultDeadline = 5 * time.Minute

// errDeadline is the cause of a source's context when its deadline passes,
// which tells it apart from the caller's context ending.
var errDeadline = errors.New("source deadline exceeded")

// WithDeadline returns a copy of r in which resolving and unpacking each
// source must finish within d (d <= 0 means DefaultDeadline). A source that
// stalls — a server that accepts the connection and then trickles or never
// answers — fails with a terminal ResourceLimit failure naming the source
// and the deadline, and gives its reconcile worker back.
func (r Registry) WithDeadline(d time.Duration) Registry {
	if d <= 0 {
		d = DefaultDeadline
	}
	out := make(Registry, len(r))
	for t, s := range r {
		if ds, ok := s.(*deadlined); ok {
			s = ds.inner
		}
		out[t] = &deadlined{inner: s, d: d}
	}
	return out
}

// deadlined bounds the time of every call of another Source.
type deadlined struct {
	inner Source
	d     time.Duration
}

var (
	_ Source    = (*deadlined)(nil)
	_ Floating  = (*deadlined)(nil)
	_ Successor = (*deadlined)(nil)
	_ Versioned = (*deadlined)(nil)
	_ Reporter  = (*deadlined)(nil)
)

// Floating reports what the wrapped source reports; false when it pins
// nothing over the network.
func (s *deadlined) Floating(src v1alpha2.BundleSource) bool {
	f, ok := s.inner.(Floating)
	return ok && f.Floating(src)
}

// Resolve resolves src with the wrapped source within the deadline.
func (s *deadlined) Resolve(ctx context.Context, src v1alpha2.BundleSource) (v1alpha2.BundleSource, error) {
	dctx, cancel := context.WithTimeoutCause(ctx, s.d, errDeadline)
	defer cancel()
	out, err := s.inner.Resolve(dctx, src)
	if err != nil {
		return v1alpha2.BundleSource{}, s.check(ctx, dctx, "resolving", src, err)
	}
	return out, nil
}

// ResolveFrom resolves src from installed with the wrapped source within
// the deadline; a wrapped source that is no Successor resolves src as
// Resolve does.
func (s *deadlined) ResolveFrom(ctx context.Context, src v1alpha2.BundleSource, installed *v1alpha2.BundleSource) (v1alpha2.BundleSource, error) {
	succ, ok := s.inner.(Successor)
	if !ok {
		return s.Resolve(ctx, src)
	}
	dctx, cancel := context.WithTimeoutCause(ctx, s.d, errDeadline)
	defer cancel()
	out, err := succ.ResolveFrom(dctx, src, installed)
	if err != nil {
		return v1alpha2.BundleSource{}, s.check(ctx, dctx, "resolving", src, err)
	}
	return out, nil
}

// SelectedVersion is the wrapped source's, when it is Versioned; it reads
// the pin only.
func (s *deadlined) SelectedVersion(pinned v1alpha2.BundleSource) string {
	if v, ok := s.inner.(Versioned); ok {
		return v.SelectedVersion(pinned)
	}
	return ""
}

// PinnedVersion is the wrapped source's, when it is a Reporter; it reads
// the pin only.
func (s *deadlined) PinnedVersion(pinned v1alpha2.BundleSource) string {
	if v, ok := s.inner.(Reporter); ok {
		return v.PinnedVersion(pinned)
	}
	return ""
}

// Unpack unpacks src with the wrapped source within the deadline.
func (s *deadlined) Unpack(ctx context.Context, src v1alpha2.BundleSource, dir string) error {
	dctx, cancel := context.WithTimeoutCause(ctx, s.d, errDeadline)
	defer cancel()
	if err := s.inner.Unpack(dctx, src, dir); err != nil {
		return s.check(ctx, dctx, "fetching", src, err)
	}
	return nil
}

// check turns err into a deadline failure when the deadline (and not the
// caller's context) ended the call: whatever the source made of the
// cancelled context, the deadline is what the user must hear about.
func (s *deadlined) check(parent, dctx context.Context, op string, src v1alpha2.BundleSource, err error) error {
	// A connection given the same deadline (the SSH dialer's) can time
	// out a moment before the context's timer fires: a deadline that has
	// passed counts as well.
	deadline, _ := dctx.Deadline()
	if parent.Err() == nil && (errors.Is(context.Cause(dctx), errDeadline) || !time.Now().Before(deadline)) {
		return failure.New(v1alpha2.ReasonResourceLimit, "%s %s took longer than the deadline of %s for one source",
			op, Describe(src), s.d)
	}
	return err
}

// Describe names src for messages: its type and what it points to, without
// any password a URL may hold.
func Describe(src v1alpha2.BundleSource) string {
	switch {
	case src.Image != nil:
		return describeImage(src.Image)
	case src.Git != nil:
		return describeGit(src.Git)
	case src.HTTP != nil:
		return "http source " + RedactURL(src.HTTP.URL)
	case src.HelmRepository != nil:
		return "chart " + src.HelmRepository.Chart + " of Helm repository " + RedactURL(src.HelmRepository.URL)
	case src.Catalog != nil:
		return "package " + src.Catalog.Package + " of catalog " + src.Catalog.Image
	case len(src.ConfigMaps) > 0:
		names := make([]string, len(src.ConfigMaps))
		for i := range src.ConfigMaps {
			names[i] = src.ConfigMaps[i].ConfigMap.Name
		}
		return fmt.Sprintf("ConfigMaps %s in %s", strings.Join(names, ", "), v1alpha2.SystemNamespace)
	case src.Upload != nil:
		return "upload " + src.Upload.Digest
	}
	return "source of type " + string(src.Type)
}

// describeImage names an image source: its ref, and the tag its versions
// resolved to or else the versions.
func describeImage(img *v1alpha2.ImageSource) string {
	switch {
	case img.ResolvedTag != "":
		return "image " + img.Ref + ":" + img.ResolvedTag
	case img.Versions != "":
		return fmt.Sprintf("image %s (versions %q)", img.Ref, img.Versions)
	}
	return "image " + img.Ref
}

// describeGit names a git source: its repository, and the tag its semver
// constraint resolved to or else the constraint.
func describeGit(g *v1alpha2.GitSource) string {
	out := "git repository " + RedactURL(g.Repository)
	switch {
	case g.ResolvedTag != "":
		return out + " at tag " + g.ResolvedTag
	case g.Ref.Semver != "":
		return fmt.Sprintf("%s (semver %q)", out, g.Ref.Semver)
	}
	return out
}

// RedactURL returns raw without the password it may hold; a URL that does
// not parse but holds an "@" is not repeated at all.
func RedactURL(raw string) string {
	u, err := url.Parse(raw)
	switch {
	case err == nil && u.User != nil:
		return u.Redacted()
	case err == nil || !strings.Contains(raw, "@"):
		return raw
	}
	return "(invalid URL)"
}
