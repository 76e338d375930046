package release

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
)

// Defaults of Options.
var (
	// DefaultImagePlatforms are the manager image's platforms.
	DefaultImagePlatforms = []Platform{{"linux", "amd64"}, {"linux", "arm64"}}
	// DefaultCLIPlatforms are rukpakctl's platforms.
	DefaultCLIPlatforms = []Platform{{"linux", "amd64"}, {"linux", "arm64"}, {"darwin", "amd64"}, {"darwin", "arm64"}}
)

// DefaultImageRepository is where the manager's image is published when no
// registry is given.
const DefaultImageRepository = "ghcr.io/rukpak/rukpak"

// The files Run writes in Options.OutDir.
const (
	// ManifestFile is the release manifest.
	ManifestFile = "rukpak.yaml"
	// ShardsManifestFile holds three shards' managers (ShardsManifest).
	ShardsManifestFile = "rukpak-shards.yaml"
	// ImageArchiveFile is the manager's image, an OCI image layout in a tar.
	ImageArchiveFile = "rukpak-image.oci.tar"
	// ChecksumsFile lists the SHA-256 of the other files.
	ChecksumsFile = "SHA256SUMS"
)

// versionPattern is a release version: v, semver, optional pre-release.
var versionPattern = regexp.MustCompile(`^v(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)(-[0-9A-Za-z.-]+)?$`)

// Options configure Run.
type Options struct {
	// Version is the release, such as v0.3.0; it is the image's tag.
	Version string
	// Commit is the git commit; empty: HEAD of RepoRoot, with "-dirty" when
	// tracked files have changes.
	Commit string
	// Created is the time stamped on the image; zero: $SOURCE_DATE_EPOCH,
	// else the commit's time.
	Created time.Time
	// RepoRoot is the root of the rukpak module.
	RepoRoot string
	// OutDir receives the release's files; it is created if missing.
	OutDir string
	// ImageRepository is the manager image's repository; empty:
	// DefaultImageRepository.
	ImageRepository string
	// Push pushes the image to ImageRepository:Version.
	Push bool
	// ImagePlatforms are the image's platforms (linux only).
	ImagePlatforms []Platform
	// CLIPlatforms are the platforms rukpakctl is built for; none is
	// allowed.
	CLIPlatforms []Platform
	// Source is the source repository's URL, for the image's labels.
	Source string
	// Log receives progress lines; nil discards them.
	Log func(format string, args ...any)
}

// Result is what Run wrote.
type Result struct {
	// Image is the manager's image as rukpak.yaml names it.
	Image Image
	// Index is the image index.
	Index v1.ImageIndex
	// Commit is the commit stamped into the binaries.
	Commit string
	// Files are the files written to OutDir, SHA256SUMS last.
	Files []string
}

// Run makes a release: see the package documentation for its steps.
func Run(ctx context.Context, opts Options) (*Result, error) {
	if !versionPattern.MatchString(opts.Version) {
		return nil, fmt.Errorf("release version %q: want v<major>.<minor>.<patch>[-<pre-release>], such as v0.3.0", opts.Version)
	}
	if len(opts.ImagePlatforms) == 0 {
		return nil, fmt.Errorf("release %s: no image platforms", opts.Version)
	}
	logf := opts.Log
	if logf == nil {
		logf = func(string, ...any) {}
	}
	if opts.ImageRepository == "" {
		opts.ImageRepository = DefaultImageRepository
	}
	res := &Result{Commit: opts.Commit}
	if res.Commit == "" {
		c, err := headCommit(ctx, opts.RepoRoot)
		if err != nil {
			return nil, err
		}
		res.Commit = c
	}
	created, err := creationTime(ctx, opts)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(opts.OutDir, 0o755); err != nil {
		return nil, fmt.Errorf("creating %s: %w", opts.OutDir, err)
	}
	tmp, err := os.MkdirTemp("", "rukpak-release-")
	if err != nil {
		return nil, fmt.Errorf("creating build directory: %w", err)
	}
	defer os.RemoveAll(tmp)

	binaries := map[Platform]string{}
	for _, p := range opts.ImagePlatforms {
		logf("building the manager for %s", p)
		out := filepath.Join(tmp, "rukpak-"+p.OS+"-"+p.Arch)
		if err := BuildBinary(ctx, opts.RepoRoot, "./cmd/rukpak", p, opts.Version, res.Commit, out); err != nil {
			return nil, err
		}
		binaries[p] = out
	}
	idx, err := BuildImage(binaries, opts.ImagePlatforms, ImageMeta{Release: opts.Version, Commit: res.Commit, Created: created, Source: opts.Source})
	if err != nil {
		return nil, err
	}
	digest, err := idx.Digest()
	if err != nil {
		return nil, fmt.Errorf("digest of the image index: %w", err)
	}
	res.Index = idx
	res.Image = Image{Repository: opts.ImageRepository, Tag: opts.Version, Digest: digest.String()}
	logf("writing the image %s", res.Image)
	if err := WriteOCIArchive(idx, filepath.Join(opts.OutDir, ImageArchiveFile), created); err != nil {
		return nil, err
	}
	res.Files = append(res.Files, ImageArchiveFile)
	if opts.Push {
		logf("pushing %s:%s", opts.ImageRepository, opts.Version)
		if _, err := Push(ctx, idx, opts.ImageRepository+":"+opts.Version); err != nil {
			return nil, err
		}
	}
	manifest, err := Manifest(filepath.Join(opts.RepoRoot, "config"), res.Image, opts.Version)
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(opts.OutDir, ManifestFile), manifest, 0o644); err != nil {
		return nil, fmt.Errorf("writing %s: %w", ManifestFile, err)
	}
	res.Files = append(res.Files, ManifestFile)
	shards, err := ShardsManifest(filepath.Join(opts.RepoRoot, "config"), res.Image, opts.Version)
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(opts.OutDir, ShardsManifestFile), shards, 0o644); err != nil {
		return nil, fmt.Errorf("writing %s: %w", ShardsManifestFile, err)
	}
	res.Files = append(res.Files, ShardsManifestFile)
	for _, p := range opts.CLIPlatforms {
		logf("building rukpakctl for %s", p)
		name := cliName(p)
		if err := BuildBinary(ctx, opts.RepoRoot, "./cmd/rukpakctl", p, opts.Version, res.Commit, filepath.Join(opts.OutDir, name)); err != nil {
			return nil, err
		}
		res.Files = append(res.Files, name)
	}
	if err := WriteChecksums(opts.OutDir, res.Files); err != nil {
		return nil, err
	}
	res.Files = append(res.Files, ChecksumsFile)
	return res, nil
}

// headCommit returns HEAD of the repository at dir, with "-dirty" when
// tracked files differ from it.
func headCommit(ctx context.Context, dir string) (string, error) {
	out, err := gitOutput(ctx, dir, "rev-parse", "HEAD")
	if err != nil {
		return "", err
	}
	status, err := gitOutput(ctx, dir, "status", "--porcelain", "--untracked-files=no")
	if err != nil {
		return "", err
	}
	if status != "" {
		out += "-dirty"
	}
	return out, nil
}

// creationTime is Options.Created, else $SOURCE_DATE_EPOCH, else the time
// of HEAD.
func creationTime(ctx context.Context, opts Options) (time.Time, error) {
	if !opts.Created.IsZero() {
		return opts.Created.UTC(), nil
	}
	s := os.Getenv("SOURCE_DATE_EPOCH")
	if s == "" {
		var err error
		if s, err = gitOutput(ctx, opts.RepoRoot, "log", "-1", "--format=%ct", "HEAD"); err != nil {
			return time.Time{}, err
		}
	}
	sec, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return time.Time{}, fmt.Errorf("creation time %q: %w", s, err)
	}
	return time.Unix(sec, 0).UTC(), nil
}

// gitOutput runs git in dir and returns its trimmed output.
func gitOutput(ctx context.Context, dir string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, "git", args...)
	cmd.Dir = dir
	out, err := cmd.Output()
	if err != nil {
		var stderr string
		if ee := (*exec.ExitError)(nil); errors.As(err, &ee) {
			stderr = strings.TrimSpace(string(ee.Stderr))
		}
		return "", fmt.Errorf("git %s: %w %s", strings.Join(args, " "), err, stderr)
	}
	return strings.TrimSpace(string(out)), nil
}
