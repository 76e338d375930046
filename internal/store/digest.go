package store

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"hash"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
)

// Algorithm is the digest algorithm of the store; digests read
// "sha256:<hex>".
const Algorithm = "sha256"

// treeVersion starts every tree digest, so that another encoding (with
// another version) cannot produce digests equal to this one's.
const treeVersion = "rukpak-tree-v1"

var digestPattern = regexp.MustCompile(`^sha256:[0-9a-f]{64}$`)

// ValidDigest reports whether d is a well-formed digest ("sha256:" and 64
// lowercase hex digits). Only valid digests ever become paths in the store.
func ValidDigest(d string) bool { return digestPattern.MatchString(d) }

// entry is one regular file or directory of a tree.
type entry struct {
	rel  string // slash-separated path relative to the tree root
	path string // path on disk
	dir  bool
	exec bool
	size int64
}

// scan lists the regular files and directories under root (excluding root
// itself), sorted by their slash-separated relative path. Anything else
// (symlinks, devices, sockets, pipes) is refused with an error naming it.
func scan(root string) ([]entry, error) {
	var entries []entry
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return fmt.Errorf("walking %s: %w", p, err)
		}
		if p == root {
			return nil
		}
		rel, err := filepath.Rel(root, p)
		if err != nil {
			return fmt.Errorf("relative path of %s: %w", p, err)
		}
		rel = filepath.ToSlash(rel)
		switch {
		case d.IsDir():
			entries = append(entries, entry{rel: rel, path: p, dir: true})
		case d.Type().IsRegular():
			info, err := d.Info()
			if err != nil {
				return fmt.Errorf("stat %s: %w", rel, err)
			}
			entries = append(entries, entry{rel: rel, path: p, exec: info.Mode().Perm()&0o111 != 0, size: info.Size()})
		default:
			return fmt.Errorf("%s is a %s; only regular files and directories can be stored", rel, typeName(d.Type()))
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	sort.Slice(entries, func(i, j int) bool { return entries[i].rel < entries[j].rel })
	return entries, nil
}

func typeName(m fs.FileMode) string {
	switch {
	case m&fs.ModeSymlink != 0:
		return "symlink"
	case m&fs.ModeDevice != 0:
		return "device"
	case m&fs.ModeNamedPipe != 0:
		return "named pipe"
	case m&fs.ModeSocket != 0:
		return "socket"
	default:
		return "non-regular file"
	}
}

// TreeDigest returns the digest of the tree rooted at the directory root.
//
// The digest is a sha256 over a version tag and then, for every regular file
// and directory in lexical order of their slash-separated relative paths:
// the path, the type ("d" or "f"), the executable bit ("x" or "-") and, for
// files, the content. Every field is prefixed with its length, so two
// different trees cannot encode to the same bytes. Owners, times and other
// permission bits are not part of the digest. Symlinks and other special
// files are refused.
func TreeDigest(root string) (string, error) {
	info, err := os.Lstat(root)
	if err != nil {
		return "", fmt.Errorf("stat tree root: %w", err)
	}
	if !info.IsDir() {
		return "", fmt.Errorf("tree root %s is not a directory", root)
	}
	entries, err := scan(root)
	if err != nil {
		return "", err
	}
	h := sha256.New()
	writeField(h, []byte(treeVersion))
	for _, e := range entries {
		writeField(h, []byte(e.rel))
		if e.dir {
			writeField(h, []byte("d"))
			writeField(h, []byte("-"))
			continue
		}
		writeField(h, []byte("f"))
		if e.exec {
			writeField(h, []byte("x"))
		} else {
			writeField(h, []byte("-"))
		}
		if err := hashFile(h, e); err != nil {
			return "", err
		}
	}
	return Algorithm + ":" + hex.EncodeToString(h.Sum(nil)), nil
}

// writeField writes the length of b as 8 bytes big-endian, then b.
func writeField(h hash.Hash, b []byte) {
	var n [8]byte
	binary.BigEndian.PutUint64(n[:], uint64(len(b)))
	h.Write(n[:])
	h.Write(b)
}

// hashFile writes the length-prefixed content of the file e. The length is
// taken from the stat of the scan; a file that changes size meanwhile is an
// error, as the prefix would no longer match the content.
func hashFile(h hash.Hash, e entry) error {
	f, err := os.Open(e.path)
	if err != nil {
		return fmt.Errorf("opening %s: %w", e.rel, err)
	}
	defer f.Close()
	var n [8]byte
	binary.BigEndian.PutUint64(n[:], uint64(e.size))
	h.Write(n[:])
	copied, err := io.Copy(h, io.LimitReader(f, e.size+1))
	if err != nil {
		return fmt.Errorf("reading %s: %w", e.rel, err)
	}
	if copied != e.size {
		return fmt.Errorf("%s changed size while being hashed", e.rel)
	}
	return nil
}
