package upload

import (
	"archive/tar"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"time"
)

// Archive is a packed directory in a temporary file. Read it from the start;
// Close removes the file.
type Archive struct {
	// Digest is "sha256:<hex>" of the compressed bytes.
	Digest string
	// Size is the number of compressed bytes.
	Size int64

	f *os.File
}

// Read reads the archive.
func (a *Archive) Read(p []byte) (int, error) { return a.f.Read(p) }

// Close closes and removes the temporary file.
func (a *Archive) Close() error {
	err := a.f.Close()
	if rmErr := os.Remove(a.f.Name()); rmErr != nil && !errors.Is(rmErr, fs.ErrNotExist) {
		err = errors.Join(err, rmErr)
	}
	return err
}

// Pack writes a deterministic .tar.gz of dir to a temporary file: the same
// files with the same content and executable bits always give the same
// digest. Entries come in filepath.WalkDir order (lexical in every
// directory), with slash-separated paths relative to dir, zero modification
// times, owners and owner names, and modes reduced to 0755 (directories and
// files with an executable bit) or 0644. dir itself may be a symbolic link;
// anything below it that is neither a regular file nor a directory (symbolic
// links, devices, sockets, pipes) is refused, naming its path.
func Pack(dir string) (*Archive, error) {
	root, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return nil, fmt.Errorf("packing %s: %w", dir, err)
	}
	f, err := os.CreateTemp("", "rukpak-upload-*.tar.gz")
	if err != nil {
		return nil, fmt.Errorf("packing %s: %w", dir, err)
	}
	a := &Archive{f: f}
	if err := a.write(dir, root); err != nil {
		_ = a.Close()
		return nil, fmt.Errorf("packing %s: %w", dir, err)
	}
	return a, nil
}

// write packs root into the file and rewinds it.
func (a *Archive) write(dir, root string) error {
	h := sha256.New()
	counter := &countWriter{w: io.MultiWriter(a.f, h)}
	zw := gzip.NewWriter(counter)
	tw := tar.NewWriter(zw)
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p == root {
			return nil
		}
		rel, err := filepath.Rel(root, p)
		if err != nil {
			return err
		}
		return addEntry(tw, p, filepath.Join(dir, rel), filepath.ToSlash(rel), d)
	})
	if err != nil {
		return err
	}
	if err := tw.Close(); err != nil {
		return fmt.Errorf("writing archive: %w", err)
	}
	if err := zw.Close(); err != nil {
		return fmt.Errorf("compressing archive: %w", err)
	}
	if _, err := a.f.Seek(0, io.SeekStart); err != nil {
		return fmt.Errorf("rewinding archive: %w", err)
	}
	a.Digest = digestPrefix + hex.EncodeToString(h.Sum(nil))
	a.Size = counter.n
	return nil
}

// addEntry writes the file or directory at path p under the name name;
// shown is the path as the user sees it, for errors.
func addEntry(tw *tar.Writer, p, shown, name string, d fs.DirEntry) error {
	info, err := d.Info()
	if err != nil {
		return err
	}
	hdr := &tar.Header{Name: name, ModTime: time.Unix(0, 0), Mode: 0o644}
	switch {
	case info.IsDir():
		hdr.Typeflag, hdr.Name, hdr.Mode = tar.TypeDir, name+"/", 0o755
	case info.Mode().IsRegular():
		hdr.Typeflag, hdr.Size = tar.TypeReg, info.Size()
		if info.Mode().Perm()&0o111 != 0 {
			hdr.Mode = 0o755
		}
	default:
		return fmt.Errorf("%s is a %s: only regular files and directories can be uploaded", shown, kind(info.Mode()))
	}
	if err := tw.WriteHeader(hdr); err != nil {
		return fmt.Errorf("writing archive entry %s: %w", name, err)
	}
	if hdr.Typeflag != tar.TypeReg {
		return nil
	}
	f, err := os.Open(p)
	if err != nil {
		return err
	}
	defer func() { _ = f.Close() }()
	if _, err := io.CopyN(tw, f, hdr.Size); err != nil {
		return fmt.Errorf("reading %s (did it change while it was packed?): %w", shown, err)
	}
	return nil
}

// kind names a file mode that is neither a regular file nor a directory.
func kind(m fs.FileMode) string {
	switch {
	case m&fs.ModeSymlink != 0:
		return "symbolic link"
	case m&fs.ModeDevice != 0:
		return "device"
	case m&fs.ModeNamedPipe != 0:
		return "named pipe"
	case m&fs.ModeSocket != 0:
		return "socket"
	}
	return "special file"
}

// countWriter counts the bytes written through it.
type countWriter struct {
	w io.Writer
	n int64
}

func (c *countWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}
