package git

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/go-git/go-billy/v5/osfs"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/cache"
	"github.com/go-git/go-git/v5/plumbing/format/packfile"
	"github.com/go-git/go-git/v5/plumbing/storer"
	"github.com/go-git/go-git/v5/storage/filesystem"

	"github.com/rukpak/rukpak/api/v1alpha2"
	"github.com/rukpak/rukpak/pkg/failure"
)

const (
	// objectCacheSize bounds the memory go-git keeps decoded objects in.
	objectCacheSize = 8 * cache.MiByte
	// largeObject is the size above which go-git streams an object from
	// the pack instead of reading it into memory.
	largeObject = 1 << 20
	// inflatedFactor is how many times the cap on the tree the objects of
	// all packs of one operation may inflate to: a fetch of history holds
	// older versions of the tree too.
	inflatedFactor = 4
	// objectSlack is what an object may inflate to beyond the cap on the
	// tree: commits and trees are not files of the tree, and a tree
	// listing many entries is large.
	objectSlack = 4 << 20
)

// diskStorage is a bare repository in a temporary directory on disk, into
// which fetched packs are written only after checking what they inflate
// to: go-git's pack parser holds whole objects (and delta targets) in
// memory, so a pack of a few megabytes that inflates to gigabytes (the
// same object compressed, a delta copying its base over and over) must
// be refused before go-git reads it.
type diskStorage struct {
	*filesystem.Storage
	dir       string
	repo      string
	maxObject int64 // each object, and each delta's target
	maxTotal  int64 // all objects of all packs
	total     int64
}

var _ storer.PackfileWriter = (*diskStorage)(nil)

// newDiskStorage creates a repository in a new directory under parent, for
// a tree of at most maxTree bytes.
func newDiskStorage(parent, repo string, maxTree int64) (*diskStorage, error) {
	dir, err := os.MkdirTemp(parent, ".git-")
	if err != nil {
		return nil, fmt.Errorf("creating a temporary repository for %s: %w", repo, err)
	}
	fs := osfs.New(dir)
	sto := filesystem.NewStorageWithOptions(fs, cache.NewObjectLRU(objectCacheSize), filesystem.Options{
		LargeObjectThreshold: largeObject,
	})
	maxObject := maxTree + objectSlack
	return &diskStorage{Storage: sto, dir: dir, repo: repo, maxObject: maxObject, maxTotal: inflatedFactor * maxObject}, nil
}

// Remove deletes the repository.
func (s *diskStorage) Remove() error {
	_ = s.Close()
	if err := os.RemoveAll(s.dir); err != nil {
		return fmt.Errorf("removing the temporary repository of %s: %w", s.repo, err)
	}
	return nil
}

// PackfileWriter returns a writer that keeps the pack in a file of its own
// and, on Close, hands it to go-git only if checkPack accepts it.
func (s *diskStorage) PackfileWriter() (io.WriteCloser, error) {
	f, err := os.CreateTemp(s.dir, "incoming-*.pack")
	if err != nil {
		return nil, fmt.Errorf("creating a file for the pack of %s: %w", s.repo, err)
	}
	return &checkedPack{f: f, sto: s}, nil
}

// checkedPack is a pack being received.
type checkedPack struct {
	f   *os.File
	sto *diskStorage
}

func (p *checkedPack) Write(b []byte) (int, error) { return p.f.Write(b) }

// Close checks the pack and writes it into the repository.
func (p *checkedPack) Close() (err error) {
	defer func() {
		_ = p.f.Close()
		_ = os.Remove(p.f.Name())
	}()
	if _, err := p.f.Seek(0, io.SeekStart); err != nil {
		return fmt.Errorf("reading the pack of %s: %w", p.sto.repo, err)
	}
	if err := p.sto.checkPack(p.f); err != nil {
		return err
	}
	if _, err := p.f.Seek(0, io.SeekStart); err != nil {
		return fmt.Errorf("reading the pack of %s: %w", p.sto.repo, err)
	}
	w, err := p.sto.Storage.PackfileWriter()
	if err != nil {
		return fmt.Errorf("storing the pack of %s: %w", p.sto.repo, err)
	}
	if _, err := io.Copy(w, bufio.NewReader(p.f)); err != nil {
		_ = w.Close()
		return fmt.Errorf("storing the pack of %s: %w", p.sto.repo, err)
	}
	if err := w.Close(); err != nil {
		return fmt.Errorf("storing the pack of %s: %w", p.sto.repo, err)
	}
	return nil
}

// errInflated stops the inflation of an object that is over a cap.
var errInflated = errors.New("object inflates over the cap")

// checkPack reads every object of the pack in f, inflating it without
// keeping it, and refuses the pack when an object, a delta's target or
// all objects together are over the caps.
func (s *diskStorage) checkPack(f *os.File) error {
	sc := packfile.NewScanner(f)
	_, count, err := sc.Header()
	if err != nil {
		return failure.New(v1alpha2.ReasonUnpackFailed, "repository %s sent a pack that is not valid: %v", s.repo, err)
	}
	for i := range count {
		oh, err := sc.NextObjectHeader()
		if err != nil {
			return failure.New(v1alpha2.ReasonUnpackFailed, "repository %s sent a pack that is not valid: object %d: %v", s.repo, i, err)
		}
		w := &inflated{max: s.maxObject}
		if _, _, err := sc.NextObject(w); err != nil && !w.over {
			return failure.New(v1alpha2.ReasonUnpackFailed, "repository %s sent a pack that is not valid: object %d: %v", s.repo, i, err)
		}
		size := w.n
		if oh.Type.IsDelta() {
			size = max(size, w.target())
		}
		size = max(size, oh.Length)
		if w.over || size > s.maxObject {
			return failure.New(v1alpha2.ReasonResourceLimit,
				"repository %s: object %d of the pack inflates to more than the limit of %d bytes", s.repo, i, s.maxObject)
		}
		s.total += size
		if s.total > s.maxTotal {
			return failure.New(v1alpha2.ReasonResourceLimit,
				"repository %s: the objects fetched inflate to more than the limit of %d bytes", s.repo, s.maxTotal)
		}
	}
	return nil
}

// inflated counts the bytes of one inflated object, failing past max, and
// keeps its first bytes: a delta starts with the sizes of its base and of
// its target.
type inflated struct {
	max  int64
	n    int64
	over bool
	head []byte
}

func (w *inflated) Write(p []byte) (int, error) {
	if len(w.head) < 2*binaryVarintMax {
		w.head = append(w.head, p[:min(len(p), 2*binaryVarintMax-len(w.head))]...)
	}
	w.n += int64(len(p))
	if w.n > w.max {
		w.over = true
		return 0, errInflated
	}
	return len(p), nil
}

// binaryVarintMax is the most bytes a size in a delta header takes.
const binaryVarintMax = 10

// target returns the size of the target a delta declares (the second
// varint of its header), or 0 when the header is cut short.
func (w *inflated) target() int64 {
	b := w.head
	var sizes [2]int64
	for k := range sizes {
		var v uint64
		var shift uint
		for {
			if len(b) == 0 || shift > 63 {
				return 0
			}
			c := b[0]
			b = b[1:]
			v |= uint64(c&0x7f) << shift
			shift += 7
			if c&0x80 == 0 {
				break
			}
		}
		if v > 1<<62 {
			v = 1 << 62
		}
		sizes[k] = int64(v)
	}
	return sizes[1]
}

// hasObject reports whether sto holds the object h of any type.
func hasObject(sto storer.EncodedObjectStorer, h plumbing.Hash) bool {
	return sto.HasEncodedObject(h) == nil
}
