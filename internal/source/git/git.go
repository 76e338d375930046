package git

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/rukpak/rukpak/api/v1alpha2"
	"github.com/rukpak/rukpak/internal/source"
	"github.com/rukpak/rukpak/internal/source/credentials"
	"github.com/rukpak/rukpak/pkg/failure"
)

// Default caps of one unpacked source.
const (
	// DefaultMaxBytes is the default cap on the total size of the files
	// written (256 MiB).
	DefaultMaxBytes int64 = 256 << 20
	// DefaultMaxFiles is the default cap on the number of files and
	// directories written.
	DefaultMaxFiles = 50000
	// DefaultMaxFetchBytes is the default cap on the bytes one resolve or
	// unpack receives from the server (256 MiB).
	DefaultMaxFetchBytes int64 = 256 << 20
)

// Source reads bundle content from git repositories. Fetched objects go to
// a temporary repository on disk, never to memory; what a fetch receives,
// what its objects inflate to and the tree written are capped.
type Source struct {
	creds    *credentials.Reader
	maxBytes int64
	maxFiles int
	maxFetch int64
	workDir  string
}

var (
	_ source.Source    = (*Source)(nil)
	_ source.Floating  = (*Source)(nil)
	_ source.Versioned = (*Source)(nil)
)

// Option configures a Source.
type Option func(*Source)

// WithMaxBytes caps the total size of the files one Unpack writes; n <= 0
// keeps the default (DefaultMaxBytes).
func WithMaxBytes(n int64) Option {
	return func(s *Source) {
		if n > 0 {
			s.maxBytes = n
		}
	}
}

// WithMaxFiles caps the number of files and directories one Unpack writes;
// n <= 0 keeps the default (DefaultMaxFiles).
func WithMaxFiles(n int) Option {
	return func(s *Source) {
		if n > 0 {
			s.maxFiles = n
		}
	}
}

// WithMaxFetchBytes caps the bytes one Resolve or Unpack receives from the
// server, over all its requests; n <= 0 keeps the default
// (DefaultMaxFetchBytes).
func WithMaxFetchBytes(n int64) Option {
	return func(s *Source) {
		if n > 0 {
			s.maxFetch = n
		}
	}
}

// WithWorkDir sets the directory in which Resolve makes the temporary
// repositories it needs (to peel a tag a server does not peel); the
// default is the system's temporary directory. Unpack makes its own next
// to the directory it unpacks into.
func WithWorkDir(dir string) Option { return func(s *Source) { s.workDir = dir } }

// New returns a Source that reads credentials and CA bundles with creds.
func New(creds *credentials.Reader, opts ...Option) *Source {
	s := &Source{creds: creds, maxBytes: DefaultMaxBytes, maxFiles: DefaultMaxFiles, maxFetch: DefaultMaxFetchBytes, workDir: os.TempDir()}
	for _, o := range opts {
		o(s)
	}
	return s
}

// Floating reports whether src names a branch or a tag that is not pinned
// to a commit yet.
func (s *Source) Floating(src v1alpha2.BundleSource) bool {
	g := src.Git
	return g != nil && g.Ref.Commit == "" && g.ResolvedCommit == ""
}

// Resolve returns a copy of src with resolvedCommit set. A source with
// ref.commit is pinned to it, and one with resolvedCommit set is returned
// as it is, both without any network request. A branch or tag is looked up
// on the server; one the server does not have is a terminal SourceNotFound
// failure. With ref.semver, the newest tag in the constraint is, and
// recorded in resolvedTag; no tag in it is a SourceNotFound failure too.
func (s *Source) Resolve(ctx context.Context, src v1alpha2.BundleSource) (v1alpha2.BundleSource, error) {
	g, err := spec(src)
	if err != nil {
		return v1alpha2.BundleSource{}, err
	}
	out := src.DeepCopy()
	switch {
	case g.Ref.Commit != "":
		if _, err := parseCommit(g.Ref.Commit); err != nil {
			return v1alpha2.BundleSource{}, err
		}
		out.Git.ResolvedCommit = g.Ref.Commit
		return *out, nil
	case g.ResolvedCommit != "":
		return *out, nil
	}
	r, err := s.connect(ctx, g)
	if err != nil {
		return v1alpha2.BundleSource{}, err
	}
	defer r.close()
	h, tag, err := r.resolve(ctx, g.Ref, s.workDir, s.maxBytes)
	if err != nil {
		return v1alpha2.BundleSource{}, err
	}
	out.Git.ResolvedCommit, out.Git.ResolvedTag = h.String(), tag
	return *out, nil
}

// Unpack fetches the pinned commit of src into a temporary repository next
// to dir (removed afterwards) and writes the tree of its directory into
// dir. A commit the server no longer has, a missing
// directory, content that does not verify against the pin, symlinks and
// content over the caps are terminal failures.
func (s *Source) Unpack(ctx context.Context, src v1alpha2.BundleSource, dir string) error {
	g, err := spec(src)
	if err != nil {
		return err
	}
	if g.ResolvedCommit == "" {
		return fmt.Errorf("git source %s is not pinned to a commit: the source must be resolved before it is unpacked", redact(g.Repository))
	}
	want, err := parseCommit(g.ResolvedCommit)
	if err != nil {
		return err
	}
	sub, err := source.CleanPath(g.Directory)
	if err != nil {
		return fmt.Errorf("directory: %w", err)
	}
	r, err := s.connect(ctx, g)
	if err != nil {
		return err
	}
	defer r.close()
	sto, err := newDiskStorage(filepath.Dir(dir), r.name, s.maxBytes)
	if err != nil {
		return err
	}
	defer func() { _ = sto.Remove() }()
	if err := r.fetchCommit(ctx, sto, fetchRef(g), want); err != nil {
		return err
	}
	commit, err := verifiedCommit(sto, want)
	if err != nil {
		return fmt.Errorf("%s: %w", r.name, err)
	}
	w := &writer{sto: sto, root: dir, repo: r.name, maxBytes: s.maxBytes, maxFiles: s.maxFiles}
	return w.writeCommit(ctx, commit, sub)
}

// fetchRef is the ref Unpack fetches the pinned commit by: the tag
// ref.semver resolved to, or ref itself.
func fetchRef(g *v1alpha2.GitSource) v1alpha2.GitRef {
	if g.Ref.Semver != "" && g.ResolvedTag != "" {
		return v1alpha2.GitRef{Tag: g.ResolvedTag}
	}
	return g.Ref
}

// spec returns the git member of src.
func spec(src v1alpha2.BundleSource) (*v1alpha2.GitSource, error) {
	if src.Git == nil {
		return nil, failure.New(v1alpha2.ReasonUnpackFailed, "source of type %s has no git member", src.Type)
	}
	return src.Git, nil
}

// parseCommit parses a full commit hash.
func parseCommit(c string) (plumbing.Hash, error) {
	if len(c) == 64 {
		return plumbing.ZeroHash, failure.New(v1alpha2.ReasonUnpackFailed, "commit %s: SHA-256 repositories are not supported", c)
	}
	if len(c) != 40 || !plumbing.IsHash(c) {
		return plumbing.ZeroHash, failure.New(v1alpha2.ReasonUnpackFailed, "commit %q is not a full 40-character hex hash", c)
	}
	return plumbing.NewHash(c), nil
}
