package release

import (
	"archive/tar"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
)

// WriteOCIArchive writes idx to path as a tar of an OCI image layout
// (oci-layout, index.json listing one manifest per platform, blobs/): the
// "oci-archive" format that skopeo and crane read. Entries are sorted and
// carry mtime, so the same index gives the same bytes.
func WriteOCIArchive(idx v1.ImageIndex, path string, mtime time.Time) error {
	dir, err := os.MkdirTemp("", "rukpak-oci-layout-")
	if err != nil {
		return fmt.Errorf("writing OCI archive: %w", err)
	}
	defer os.RemoveAll(dir)
	if _, err := layout.Write(dir, idx); err != nil {
		return fmt.Errorf("writing OCI layout: %w", err)
	}
	var files []string
	if err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p != dir {
			files = append(files, p)
		}
		return nil
	}); err != nil {
		return fmt.Errorf("listing OCI layout: %w", err)
	}
	sort.Strings(files)
	out, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("writing OCI archive: %w", err)
	}
	tw := tar.NewWriter(out)
	for _, p := range files {
		if err := addToTar(tw, dir, p, mtime); err != nil {
			out.Close()
			return fmt.Errorf("writing OCI archive %s: %w", path, err)
		}
	}
	if err := tw.Close(); err != nil {
		out.Close()
		return fmt.Errorf("writing OCI archive %s: %w", path, err)
	}
	if err := out.Close(); err != nil {
		return fmt.Errorf("writing OCI archive %s: %w", path, err)
	}
	return nil
}

// addToTar adds the file or directory p under root to tw.
func addToTar(tw *tar.Writer, root, p string, mtime time.Time) error {
	rel, err := filepath.Rel(root, p)
	if err != nil {
		return err
	}
	fi, err := os.Lstat(p)
	if err != nil {
		return err
	}
	hdr := &tar.Header{Name: filepath.ToSlash(rel), ModTime: mtime, Format: tar.FormatPAX}
	switch {
	case fi.IsDir():
		hdr.Typeflag, hdr.Name, hdr.Mode = tar.TypeDir, hdr.Name+"/", 0o755
		return tw.WriteHeader(hdr)
	case fi.Mode().IsRegular():
		hdr.Typeflag, hdr.Mode, hdr.Size = tar.TypeReg, 0o644, fi.Size()
	default:
		return fmt.Errorf("%s: not a regular file or directory", rel)
	}
	if err := tw.WriteHeader(hdr); err != nil {
		return err
	}
	f, err := os.Open(p)
	if err != nil {
		return err
	}
	defer f.Close()
	_, err = io.Copy(tw, f)
	return err
}
