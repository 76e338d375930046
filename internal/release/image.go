package release

import (
	"archive/tar"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// The image's user and paths.
const (
	// UID and GID are the numeric user and group the manager runs as:
	// not root, so that runAsNonRoot can check it without /etc/passwd.
	UID = 65532
	GID = 65532
	// User is the image config's User.
	User = "65532:65532"
	// Entrypoint is the path of the manager's binary in the image.
	Entrypoint = "/rukpak"
	// StorageDir is the manager's default --storage-dir, owned by UID.
	StorageDir = "/var/cache/rukpak"
	// WorkingDir is the image config's WorkingDir.
	WorkingDir = "/"
)

// ImageMeta describes the image BuildImage makes.
type ImageMeta struct {
	// Release is the release's version, such as v0.3.0.
	Release string
	// Commit is the git commit the binaries were built from.
	Commit string
	// Created is the time recorded in the config and on every file; the
	// commit's time makes the image reproducible.
	Created time.Time
	// Source is the URL of the source repository, for the
	// org.opencontainers.image.source label.
	Source string
}

// labels are the OCI annotations put on each image config and the index.
func (m ImageMeta) labels() map[string]string {
	l := map[string]string{
		"org.opencontainers.image.title":    "rukpak",
		"org.opencontainers.image.version":  m.Release,
		"org.opencontainers.image.revision": m.Commit,
		"org.opencontainers.image.created":  m.Created.UTC().Format(time.RFC3339),
	}
	if m.Source != "" {
		l["org.opencontainers.image.source"] = m.Source
	}
	return l
}

// BuildImage makes a multi-arch OCI image index of the manager from
// binaries, a statically linked manager per linux platform. Each image has
// two layers on an empty base: a skeleton (/etc/passwd and /etc/group
// naming the nonroot user, /tmp, /home/nonroot and StorageDir) and the
// binary at Entrypoint; it runs as User in WorkingDir.
func BuildImage(binaries map[Platform]string, platforms []Platform, meta ImageMeta) (v1.ImageIndex, error) {
	if len(platforms) == 0 {
		return nil, fmt.Errorf("building image: no platforms")
	}
	skeleton, err := layerFromTar(func(tw *tar.Writer) error { return writeSkeleton(tw, meta.Created) })
	if err != nil {
		return nil, fmt.Errorf("building image skeleton layer: %w", err)
	}
	idx := mutate.IndexMediaType(empty.Index, types.OCIImageIndex)
	idx = mutate.Annotations(idx, meta.labels()).(v1.ImageIndex)
	for _, p := range platforms {
		if p.OS != "linux" {
			return nil, fmt.Errorf("building image for %s: the manager's image is linux only", p)
		}
		bin, ok := binaries[p]
		if !ok {
			return nil, fmt.Errorf("building image for %s: no binary", p)
		}
		img, err := platformImage(skeleton, bin, p, meta)
		if err != nil {
			return nil, fmt.Errorf("building image for %s: %w", p, err)
		}
		cf, err := img.ConfigFile()
		if err != nil {
			return nil, fmt.Errorf("building image for %s: %w", p, err)
		}
		idx = mutate.AppendManifests(idx, mutate.IndexAddendum{
			Add:        img,
			Descriptor: v1.Descriptor{Platform: cf.Platform()},
		})
	}
	return idx, nil
}

// platformImage is the image of one platform.
func platformImage(skeleton v1.Layer, bin string, p Platform, meta ImageMeta) (v1.Image, error) {
	binLayer, err := layerFromTar(func(tw *tar.Writer) error { return writeBinary(tw, bin, meta.Created) })
	if err != nil {
		return nil, fmt.Errorf("binary layer: %w", err)
	}
	img := mutate.MediaType(empty.Image, types.OCIManifestSchema1)
	img = mutate.ConfigMediaType(img, types.OCIConfigJSON)
	img, err = mutate.Append(img,
		mutate.Addendum{Layer: skeleton, History: v1.History{Created: v1.Time{Time: meta.Created}, CreatedBy: "rukpak release: skeleton", Comment: "/etc/passwd, /etc/group, /tmp, " + StorageDir}},
		mutate.Addendum{Layer: binLayer, History: v1.History{Created: v1.Time{Time: meta.Created}, CreatedBy: "rukpak release: manager", Comment: Entrypoint}},
	)
	if err != nil {
		return nil, fmt.Errorf("appending layers: %w", err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, fmt.Errorf("reading config: %w", err)
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture = p.OS, p.Arch
	if p.Arch == "arm64" {
		cf.Variant = "v8"
	}
	cf.Author = "rukpak"
	cf.Config.Entrypoint = []string{Entrypoint}
	cf.Config.Cmd = nil
	cf.Config.User = User
	cf.Config.WorkingDir = WorkingDir
	cf.Config.Env = []string{"PATH=/", "HOME=/home/nonroot"}
	cf.Config.Labels = meta.labels()
	img, err = mutate.ConfigFile(img, cf)
	if err != nil {
		return nil, fmt.Errorf("setting config: %w", err)
	}
	img, err = mutate.CreatedAt(img, v1.Time{Time: meta.Created})
	if err != nil {
		return nil, fmt.Errorf("setting creation time: %w", err)
	}
	return img, nil
}

// layerFromTar builds a gzip-compressed OCI layer from the tar write
// writes; the compressed bytes are kept in memory once computed, so that
// writing the archive and pushing compress the binary only once.
func layerFromTar(write func(*tar.Writer) error) (v1.Layer, error) {
	opener := func() (io.ReadCloser, error) {
		pr, pw := io.Pipe()
		go func() {
			tw := tar.NewWriter(pw)
			err := write(tw)
			if err == nil {
				err = tw.Close()
			}
			pw.CloseWithError(err)
		}()
		return pr, nil
	}
	return tarball.LayerFromOpener(opener, tarball.WithMediaType(types.OCILayer), tarball.WithCompressedCaching)
}

// writeSkeleton writes the directories and files the manager expects of a
// root file system.
func writeSkeleton(tw *tar.Writer, mtime time.Time) error {
	dirs := []struct {
		name     string
		mode     int64
		uid, gid int
	}{
		{"etc/", 0o755, 0, 0},
		{"home/", 0o755, 0, 0},
		{"home/nonroot/", 0o700, UID, GID},
		{"tmp/", 0o1777, 0, 0},
		{"var/", 0o755, 0, 0},
		{"var/cache/", 0o755, 0, 0},
		{"var/cache/rukpak/", 0o700, UID, GID},
	}
	for _, d := range dirs {
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: d.name, Mode: d.mode, Uid: d.uid, Gid: d.gid, ModTime: mtime, Format: tar.FormatPAX}); err != nil {
			return fmt.Errorf("writing %s: %w", d.name, err)
		}
	}
	files := []struct{ name, content string }{
		{"etc/passwd", fmt.Sprintf("root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:%d:%d:nonroot:/home/nonroot:/sbin/nologin\n", UID, GID)},
		{"etc/group", fmt.Sprintf("root:x:0:\nnonroot:x:%d:\n", GID)},
	}
	for _, f := range files {
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: f.name, Mode: 0o644, Size: int64(len(f.content)), ModTime: mtime, Format: tar.FormatPAX}); err != nil {
			return fmt.Errorf("writing %s: %w", f.name, err)
		}
		if _, err := io.Copy(tw, bytes.NewReader([]byte(f.content))); err != nil {
			return fmt.Errorf("writing %s: %w", f.name, err)
		}
	}
	return nil
}

// writeBinary writes the manager's binary, owned by root and not writable
// by the user it runs as.
func writeBinary(tw *tar.Writer, bin string, mtime time.Time) error {
	f, err := os.Open(bin)
	if err != nil {
		return fmt.Errorf("opening %s: %w", bin, err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return fmt.Errorf("reading %s: %w", bin, err)
	}
	if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: Entrypoint[1:], Mode: 0o755, Size: fi.Size(), ModTime: mtime, Format: tar.FormatPAX}); err != nil {
		return fmt.Errorf("writing %s: %w", Entrypoint, err)
	}
	if _, err := io.Copy(tw, f); err != nil {
		return fmt.Errorf("writing %s from %s: %w", Entrypoint, bin, err)
	}
	return nil
}

// Push pushes idx to ref (repository:tag) with the credentials of the
// default keychain (docker config, credential helpers). Registries on
// loopback are reached over plain HTTP, as go-containerregistry does.
func Push(ctx context.Context, idx v1.ImageIndex, ref string) (name.Digest, error) {
	tag, err := name.NewTag(ref)
	if err != nil {
		return name.Digest{}, fmt.Errorf("parsing image reference %q: %w", ref, err)
	}
	if err := remote.WriteIndex(tag, idx, remote.WithContext(ctx), remote.WithAuthFromKeychain(authn.DefaultKeychain)); err != nil {
		return name.Digest{}, fmt.Errorf("pushing %s: %w", ref, err)
	}
	d, err := idx.Digest()
	if err != nil {
		return name.Digest{}, fmt.Errorf("digest of the index: %w", err)
	}
	return tag.Context().Digest(d.String()), nil
}
