package archive

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// tentry is one entry of a test archive.
type tentry struct {
	name  string
	typ   byte
	mode  int64
	body  string
	zeros int64 // a regular file's size beyond body, written as zeros
	link  string
}

func file(name, body string) tentry {
	return tentry{name: name, typ: tar.TypeReg, mode: 0o644, body: body}
}

func fileWithMode(name, body string, mode int64) tentry {
	return tentry{name: name, typ: tar.TypeReg, mode: mode, body: body}
}

func zeros(name string, n int64) tentry {
	return tentry{name: name, typ: tar.TypeReg, mode: 0o644, zeros: n}
}

func dirEntry(name string) tentry { return tentry{name: name, typ: tar.TypeDir, mode: 0o755} }

func symlink(name, target string) tentry {
	return tentry{name: name, typ: tar.TypeSymlink, mode: 0o777, link: target}
}

func hardlink(name, target string) tentry {
	return tentry{name: name, typ: tar.TypeLink, mode: 0o644, link: target}
}

func special(name string, typ byte) tentry { return tentry{name: name, typ: typ, mode: 0o644} }

// epoch is the modification time of every entry, for reproducible archives.
var epoch = time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)

// writeTar writes entries as a tar stream to w.
func writeTar(w io.Writer, entries []tentry) error {
	tw := tar.NewWriter(w)
	for _, e := range entries {
		hdr := &tar.Header{Name: e.name, Typeflag: e.typ, Mode: e.mode, Linkname: e.link, ModTime: epoch}
		if e.typ == tar.TypeReg {
			hdr.Size = int64(len(e.body)) + e.zeros
		}
		if err := tw.WriteHeader(hdr); err != nil {
			return err
		}
		if _, err := io.WriteString(tw, e.body); err != nil {
			return err
		}
		if _, err := io.CopyN(tw, zeroReader{}, e.zeros); err != nil {
			return err
		}
	}
	return tw.Close()
}

type zeroReader struct{}

func (zeroReader) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}

func tarBytes(t testing.TB, entries []tentry) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := writeTar(&buf, entries); err != nil {
		t.Fatalf("writing tar: %v", err)
	}
	return buf.Bytes()
}

func gz(t testing.TB, data []byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	if _, err := zw.Write(data); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func gunzip(t testing.TB, data []byte) []byte {
	t.Helper()
	zr, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	out, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// streamTarGz returns the compressed archive of entries, produced as it is
// read, for archives too large to hold. Closing it stops the producer.
func streamTarGz(entries []tentry) io.ReadCloser {
	pr, pw := io.Pipe()
	go func() {
		zw, _ := gzip.NewWriterLevel(pw, gzip.BestCompression)
		err := writeTar(zw, entries)
		if err == nil {
			err = zw.Close()
		}
		_ = pw.CloseWithError(err)
	}()
	return pr
}

// tree describes what is under dir: path → "-rw-r--r-- content",
// "drwxr-xr-x" or "L target".
func tree(t testing.TB, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == dir {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		info, err := d.Info()
		if err != nil {
			return err
		}
		switch {
		case info.Mode()&fs.ModeSymlink != 0:
			target, err := os.Readlink(p)
			out[filepath.ToSlash(rel)] = "L " + target
			return err
		case info.IsDir():
			out[filepath.ToSlash(rel)] = info.Mode().String()
		default:
			data, err := os.ReadFile(p)
			out[filepath.ToSlash(rel)] = info.Mode().String() + " " + string(data)
			return err
		}
		return nil
	})
	if err != nil {
		t.Fatalf("reading %s: %v", dir, err)
	}
	return out
}
