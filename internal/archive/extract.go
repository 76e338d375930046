package archive

import (
	"archive/tar"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
)

const (
	dirMode  fs.FileMode = 0o755
	fileMode fs.FileMode = 0o644
	execMode fs.FileMode = 0o755
)

// extractor writes the entries of one archive under root.
type extractor struct {
	root    *os.Root
	src     *sourceReader
	limits  Limits
	layer   bool // apply whiteouts; entries may replace directories
	entries int
	bytes   int64
	// pathBytes is the length of the paths created so far (MaxPathBytes).
	pathBytes int64
	// dirs holds the paths checked to be real directories (not links); it
	// is reset whenever something is removed.
	dirs map[string]bool
	// written holds the paths this archive wrote: whiteouts only remove
	// what earlier layers wrote. Kept only for layers.
	written map[string]bool
}

func newExtractor(root *os.Root, src *sourceReader, opts Options) *extractor {
	return &extractor{
		root:    root,
		src:     src,
		limits:  opts.Limits.withDefaults(),
		layer:   opts.Whiteouts,
		dirs:    map[string]bool{},
		written: map[string]bool{},
	}
}

// entry extracts the entry hdr, whose content r holds.
func (x *extractor) entry(hdr *tar.Header, r io.Reader) error {
	raw := hdr.Name
	x.entries++
	if x.entries > x.limits.MaxFiles {
		return refuse(raw, "the archive has more than %d entries, the limit", x.limits.MaxFiles)
	}
	switch hdr.Typeflag {
	case tar.TypeXGlobalHeader:
		return nil // metadata only
	case tar.TypeChar:
		return refuse(raw, "character devices are not allowed")
	case tar.TypeBlock:
		return refuse(raw, "block devices are not allowed")
	case tar.TypeFifo:
		return refuse(raw, "FIFOs are not allowed")
	case tar.TypeDir, tar.TypeReg, tar.TypeGNUSparse, tar.TypeSymlink, tar.TypeLink:
	default:
		return refuse(raw, "entry type %q is not supported", hdr.Typeflag)
	}
	name, err := CleanEntryPath(raw)
	if err != nil {
		return err
	}
	if err := x.countPath(raw, name); err != nil {
		return err
	}
	if x.layer && isWhiteout(name) {
		return x.whiteout(raw, name)
	}
	if name == "." {
		if hdr.Typeflag == tar.TypeDir {
			return nil
		}
		return refuse(raw, "only a directory may name the destination itself")
	}
	if err := x.parents(raw, name); err != nil {
		return err
	}
	switch hdr.Typeflag {
	case tar.TypeDir:
		err = x.dir(raw, name)
	case tar.TypeReg, tar.TypeGNUSparse: // sparse files read expanded
		err = x.file(hdr, name, r)
	case tar.TypeSymlink:
		err = x.symlink(raw, name, hdr.Linkname)
	case tar.TypeLink:
		err = x.hardlink(raw, name, hdr.Linkname)
	}
	if err == nil && x.layer {
		x.markWritten(name)
	}
	return err
}

// markWritten records that this layer wrote name, and so its parents too.
func (x *extractor) markWritten(name string) {
	for p := name; p != "."; p = path.Dir(p) {
		x.written[p] = true
	}
}

// dir makes the directory name, unless there is one already.
func (x *extractor) dir(raw, name string) error {
	fi, err := x.root.Lstat(name)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return x.mkdir(raw, name)
	case err != nil:
		return fmt.Errorf("archive entry %q: %w", raw, err)
	case fi.IsDir():
		x.dirs[name] = true
		return nil
	case !x.layer:
		return refuse(raw, "a directory cannot replace the %s the archive wrote before", kind(fi))
	}
	if err := x.remove(raw, name); err != nil {
		return err
	}
	return x.mkdir(raw, name)
}

// mkdir makes the directory name (whose parent exists) with mode 0755.
func (x *extractor) mkdir(raw, name string) error {
	if err := x.root.Mkdir(name, dirMode); err != nil {
		return fmt.Errorf("archive entry %q: creating directory %s: %w", raw, name, err)
	}
	if err := x.root.Chmod(name, dirMode); err != nil { // independent of the umask
		return fmt.Errorf("archive entry %q: %w", raw, err)
	}
	x.dirs[name] = true
	if x.layer {
		x.written[name] = true
	}
	return nil
}

// file writes the regular file hdr describes at name.
func (x *extractor) file(hdr *tar.Header, name string, r io.Reader) error {
	raw := hdr.Name
	if hdr.Size > x.limits.MaxFileBytes {
		return refuse(raw, "file of %d bytes is larger than the limit of %d bytes per file", hdr.Size, x.limits.MaxFileBytes)
	}
	if x.bytes+hdr.Size > x.limits.MaxBytes {
		return refuse(raw, "the files of the archive exceed the limit of %d bytes in all", x.limits.MaxBytes)
	}
	x.bytes += hdr.Size
	if err := x.replace(raw, name); err != nil {
		return err
	}
	mode := fileMode
	if hdr.Mode&0o111 != 0 {
		mode = execMode
	}
	// O_EXCL: the path was cleared, and a link put there since would make
	// the open fail rather than be followed.
	f, err := x.root.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode)
	if err != nil {
		return fmt.Errorf("archive entry %q: creating %s: %w", raw, name, err)
	}
	_, err = io.Copy(f, r)
	if err != nil {
		_ = f.Close()
		return x.src.classify(fmt.Sprintf("archive entry %q", raw), err)
	}
	err = f.Chmod(mode) // independent of the umask
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("archive entry %q: writing %s: %w", raw, name, err)
	}
	return nil
}

// symlink makes name a symbolic link to target.
func (x *extractor) symlink(raw, name, target string) error {
	if rule := checkSymlinkTarget(name, target); rule != "" {
		return refuse(raw, "%s", rule)
	}
	if err := x.replace(raw, name); err != nil {
		return err
	}
	if err := x.root.Symlink(target, name); err != nil {
		return fmt.Errorf("archive entry %q: %w", raw, err)
	}
	return nil
}

// hardlink makes name a hard link to target, a regular file the archive
// (or an earlier layer) wrote, reached without links. The target's size
// counts against Limits.MaxBytes again for every link.
func (x *extractor) hardlink(raw, name, target string) error {
	t, rule := cleanRelative(target)
	if rule != "" {
		return refuse(raw, "hard link target %q %s", target, rule)
	}
	p, state, err := x.inspectParents(t)
	if err != nil {
		return fmt.Errorf("archive entry %q: %w", raw, err)
	}
	if state == parentSymlink {
		return refuse(raw, "hard link target %q goes through symbolic link %q; links are never followed", target, p)
	}
	fi, err := x.root.Lstat(t)
	if state != parentsOK || t == "." || err != nil || !fi.Mode().IsRegular() {
		return refuse(raw, "hard link target %q is not a regular file of the archive", target)
	}
	if t == name {
		return nil
	}
	// A link costs nothing on disk, but whoever reads the tree reads the
	// target's bytes once per name: count them as a file of that size.
	if x.bytes+fi.Size() > x.limits.MaxBytes {
		return refuse(raw, "hard link to %q (%d bytes) makes the files of the archive exceed the limit of %d bytes in all; hard links count their target's size",
			target, fi.Size(), x.limits.MaxBytes)
	}
	x.bytes += fi.Size()
	if err := x.replace(raw, name); err != nil {
		return err
	}
	if err := x.root.Link(t, name); err != nil {
		return fmt.Errorf("archive entry %q: %w", raw, err)
	}
	return nil
}

// replace clears name for a file or link: an existing file or link is
// removed (never written through); a directory only in a layer.
func (x *extractor) replace(raw, name string) error {
	fi, err := x.root.Lstat(name)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil
	case err != nil:
		return fmt.Errorf("archive entry %q: %w", raw, err)
	case fi.IsDir() && !x.layer:
		return refuse(raw, "a file cannot replace the directory the archive wrote before")
	}
	return x.remove(raw, name)
}

// remove removes name and everything under it.
func (x *extractor) remove(raw, name string) error {
	clear(x.dirs)
	if err := x.root.RemoveAll(name); err != nil {
		return fmt.Errorf("archive entry %q: removing %s: %w", raw, name, err)
	}
	return nil
}

// kind names the type of a file for messages.
func kind(fi fs.FileInfo) string {
	switch {
	case fi.Mode()&fs.ModeSymlink != 0:
		return "symbolic link"
	case fi.IsDir():
		return "directory"
	case fi.Mode().IsRegular():
		return "file"
	}
	return "special file"
}

// countPath counts a path the archive creates against MaxPathBytes.
func (x *extractor) countPath(raw, name string) error {
	x.pathBytes += int64(len(name))
	if x.pathBytes > x.limits.MaxPathBytes {
		return refuse(raw, "the paths of the archive (entries and the directories they imply) exceed the limit of %d bytes in all", x.limits.MaxPathBytes)
	}
	return nil
}
