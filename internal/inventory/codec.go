package inventory

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
)

// maxDecoded bounds what one inventory may decompress to (64 MiB, about a
// million objects), so a corrupted or hostile chunk cannot exhaust memory.
const maxDecoded = 64 << 20

// keepField ends the line of a record that keeps its object.
const keepField = "keep"

// gzipWriters reuses compressors: each one allocates about a megabyte of
// state, and inventories are encoded on every install. They compress at
// gzip.BestSpeed: an inventory (IDs and hashes) shrinks about as much as at
// the default level (7 % larger at 10,000 objects) in half the time (most
// of the default level's time for an install's 10 objects is resetting its
// hash tables). BenchmarkEncode measures both.
var gzipWriters = sync.Pool{New: func() any {
	zw, _ := gzip.NewWriterLevel(nil, gzip.BestSpeed) // a valid level: no error
	return zw
}}

// encode writes ids one per line as group|version|kind|namespace|name,
// followed by |hash|resourceVersion|generation for an ID with a record in
// recs (and |keep for a record that keeps its object), and gzips the
// result. Kubernetes names and kinds cannot contain '|'
// or '\n'; hashes and resourceVersions are written by rukpak.
func encode(ids []ID, recs map[ID]Record) ([]byte, error) {
	var buf bytes.Buffer
	zw := gzipWriters.Get().(*gzip.Writer)
	defer gzipWriters.Put(zw)
	zw.Reset(&buf)
	w := bufio.NewWriter(zw)
	var line []byte
	for _, id := range ids {
		line = append(line[:0], id.Group...)
		line = append(append(line, '|'), id.Version...)
		line = append(append(line, '|'), id.Kind...)
		line = append(append(line, '|'), id.Namespace...)
		line = append(append(line, '|'), id.Name...)
		if rec, ok := recs[id.Key()]; ok && rec.valid() {
			line = append(append(line, '|'), rec.Hash...)
			line = append(append(line, '|'), rec.ResourceVersion...)
			line = strconv.AppendInt(append(line, '|'), rec.Generation, 10)
			if rec.Keep {
				line = append(append(line, '|'), keepField...)
			}
		}
		if _, err := w.Write(append(line, '\n')); err != nil {
			return nil, fmt.Errorf("encoding inventory: %w", err)
		}
	}
	if err := w.Flush(); err != nil {
		return nil, fmt.Errorf("encoding inventory: %w", err)
	}
	if err := zw.Close(); err != nil {
		return nil, fmt.Errorf("compressing inventory: %w", err)
	}
	return buf.Bytes(), nil
}

// decode reverses encode. Lines without a record (written before records
// existed, or for objects not applied yet) are IDs only.
func decode(data []byte) ([]ID, map[ID]Record, error) {
	zr, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		return nil, nil, fmt.Errorf("decompressing inventory: %w", err)
	}
	raw, err := io.ReadAll(io.LimitReader(zr, maxDecoded+1))
	if err != nil {
		return nil, nil, fmt.Errorf("decompressing inventory: %w", err)
	}
	if len(raw) > maxDecoded {
		return nil, nil, fmt.Errorf("inventory decompresses to more than %d bytes", maxDecoded)
	}
	var ids []ID
	recs := map[ID]Record{}
	for i, line := range strings.Split(string(raw), "\n") {
		if line == "" {
			continue
		}
		f := strings.Split(line, "|")
		if (len(f) != 5 && len(f) != 8 && (len(f) != 9 || f[8] != keepField)) || f[2] == "" || f[4] == "" {
			return nil, nil, fmt.Errorf("inventory line %d is malformed: %q", i+1, line)
		}
		id := ID{Group: f[0], Version: f[1], Kind: f[2], Namespace: f[3], Name: f[4]}
		ids = append(ids, id)
		if len(f) >= 8 {
			gen, err := strconv.ParseInt(f[7], 10, 64)
			rec := Record{Hash: f[5], ResourceVersion: f[6], Generation: gen, Keep: len(f) == 9}
			if err != nil || !rec.valid() {
				return nil, nil, fmt.Errorf("inventory line %d has a malformed record: %q", i+1, line)
			}
			recs[id.Key()] = rec
		}
	}
	return ids, recs, nil
}
