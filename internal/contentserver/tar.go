package contentserver

import (
	"archive/tar"
	"compress/gzip"
	"fmt"
	"io"
	"io/fs"
)

// writeTarGz writes the tree of fsys to w as a gzipped tar with sorted
// paths and no timestamps or owners, so equal trees give equal bytes.
func writeTarGz(w io.Writer, fsys fs.FS) error {
	zw := gzip.NewWriter(w)
	tw := tar.NewWriter(zw)
	err := fs.WalkDir(fsys, ".", func(path string, d fs.DirEntry, err error) error {
		if err != nil || path == "." {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		hdr := &tar.Header{Name: path, Mode: 0o644, Format: tar.FormatPAX}
		switch {
		case d.IsDir():
			hdr.Typeflag, hdr.Name, hdr.Mode = tar.TypeDir, path+"/", 0o755
		case info.Mode().IsRegular():
			hdr.Typeflag, hdr.Size = tar.TypeReg, info.Size()
			if info.Mode()&0o111 != 0 {
				hdr.Mode = 0o755
			}
		default:
			return fmt.Errorf("%s is not a regular file or directory", path)
		}
		if err := tw.WriteHeader(hdr); err != nil {
			return err
		}
		if hdr.Typeflag != tar.TypeReg {
			return nil
		}
		f, err := fsys.Open(path)
		if err != nil {
			return err
		}
		defer f.Close()
		_, err = io.Copy(tw, f)
		return err
	})
	if err != nil {
		return fmt.Errorf("writing content: %w", err)
	}
	if err := tw.Close(); err != nil {
		return fmt.Errorf("writing content: %w", err)
	}
	return zw.Close()
}
