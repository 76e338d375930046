package plain

import (
	"context"
	"crypto/sha256"
	"fmt"
	"io"
	"io/fs"
	"path"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/rukpak/rukpak/internal/format/kustomize"
	"github.com/rukpak/rukpak/internal/sandbox"
	"github.com/rukpak/rukpak/pkg/format"
)

// Document is one non-empty YAML document of a manifest file: where its
// bytes are, and their SHA-256.
type Document struct {
	// Path is the file, relative to the bundle root.
	Path string `json:"path"`
	// Offset and Size place the document's bytes in the file.
	Offset int64 `json:"offset"`
	Size   int64 `json:"size"`
	// SHA256 is the digest of those bytes.
	SHA256 [sha256.Size]byte `json:"sha256"`
}

// Parsed is what parsing a Document gave: its value (nil for a document
// that holds only null), or the parser's error message (Err, with line
// numbers counted from the document's first line).
type Parsed struct {
	Value any
	Err   string
}

// ParseFunc parses docs, returning one Parsed for each, in order; an
// error means none could be parsed (a child that crashed, a cancelled
// context).
type ParseFunc func(ctx context.Context, docs []Document) ([]Parsed, error)

// ReadsDocuments reports whether ObjectsParsedBy reads fsys: a bundle of
// YAML manifests in manifests/, without a kustomization or JSON files.
// Any other bundle, or one that cannot be looked at, is for Objects.
func ReadsDocuments(fsys fs.FS) bool {
	if k, err := kustomize.Find(fsys); err != nil || k != "" {
		return false
	}
	if checkManifestsDir(fsys) != nil {
		return false
	}
	onlyYAML := true
	err := fs.WalkDir(fsys, manifestsDir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && path.Ext(p) == ".json" {
			onlyYAML = false
			return fs.SkipAll
		}
		return nil
	})
	return err == nil && onlyYAML
}

// ObjectsParsedBy returns what Objects returns for a bundle that
// ReadsDocuments accepts, with the same errors, but has parse turn its
// YAML documents into values, all in one call: the files are read and
// split into documents here (within the same limits), and the documents'
// values are checked and collected here, in file and document order.
// parse may run elsewhere (a sandboxed child) and may reuse the values of
// documents with the same digest.
func (f *Format) ObjectsParsedBy(ctx context.Context, fsys fs.FS, cfg format.Config, parse ParseFunc) ([]*unstructured.Unstructured, error) {
	c := newCollector(f.Limits.withDefaults(), cfg.InstallNamespace)
	var (
		docs []Document
		locs []location // of docs
	)
	// An error reading a file is reported where Objects would report it:
	// after the documents before it, which may fail first.
	readErr := c.eachManifest(ctx, fsys, func(p string, data []byte) error {
		if path.Ext(p) == ".json" {
			return fmt.Errorf("%s: a JSON manifest; this bundle is read by Objects", p)
		}
		split, err := c.split(p, data)
		if err != nil {
			return err
		}
		for _, d := range split {
			raw := data[d.offset : d.offset+d.size]
			docs = append(docs, Document{Path: p, Offset: int64(d.offset), Size: int64(d.size), SHA256: sha256.Sum256(raw)})
			locs = append(locs, d.loc)
		}
		return nil
	})
	if len(docs) > 0 {
		parsed, err := parse(ctx, docs)
		if err != nil {
			return nil, err
		}
		if len(parsed) != len(docs) {
			return nil, fmt.Errorf("parsing %d YAML documents gave %d values", len(docs), len(parsed))
		}
		for i, loc := range locs {
			if err := addParsed(loc, parsed[i].Value, parsed[i].Err, c.add); err != nil {
				return nil, err
			}
		}
	}
	if readErr != nil {
		return nil, readErr
	}
	return c.result()
}

// ParseDocuments parses docs, reading each from fsys and checking that its
// bytes still have the digest they had when it was split off: the
// ParseFunc a sandboxed child runs. A document whose bytes cannot be read
// or changed fails the call.
func ParseDocuments(ctx context.Context, fsys fs.FS, docs []Document) ([]Parsed, error) {
	out := make([]Parsed, len(docs))
	var (
		open     fs.File
		openPath string
	)
	defer func() {
		if open != nil {
			_ = open.Close()
		}
	}()
	for i, doc := range docs {
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("parsing YAML documents: %w", err)
		}
		if open == nil || openPath != doc.Path {
			if open != nil {
				_ = open.Close()
			}
			f, err := fsys.Open(doc.Path)
			if err != nil {
				return nil, fmt.Errorf("reading %s: %w", doc.Path, err)
			}
			open, openPath = f, doc.Path
			sandbox.Describe("parsing the YAML of " + doc.Path)
		}
		at, ok := open.(io.ReaderAt)
		if !ok {
			return nil, fmt.Errorf("reading %s: the file system cannot read at an offset", doc.Path)
		}
		data := make([]byte, doc.Size)
		if _, err := at.ReadAt(data, doc.Offset); err != nil {
			return nil, fmt.Errorf("reading %s at %d: %w", doc.Path, doc.Offset, err)
		}
		if sha256.Sum256(data) != doc.SHA256 {
			return nil, fmt.Errorf("%s changed while it was read (document at offset %d)", doc.Path, doc.Offset)
		}
		v, err := parseDocument(data)
		if err != nil {
			out[i].Err = err.Error()
			continue
		}
		out[i].Value = v
	}
	return out, nil
}
