package renderstore

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"io"
	"unicode/utf8"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	utiljson "k8s.io/apimachinery/pkg/util/json"
)

// encodingVersion is the version of the payload this build writes and
// reads.
const encodingVersion = 1

// payload is the JSON document of a render (see the package doc).
type payload struct {
	Version         int               `json:"version"`
	Revision        string            `json:"revision"`
	BundleUID       types.UID         `json:"bundleUID"`
	ContentDigest   string            `json:"contentDigest,omitempty"`
	FormatVersion   string            `json:"formatVersion,omitempty"`
	ReleaseRevision int               `json:"releaseRevision"`
	Upgrade         bool              `json:"upgrade"`
	Objects         []object          `json:"objects"`
	Answers         map[string]string `json:"answers,omitempty"`
}

// object is one rendered object. It decodes as unstructured objects do:
// integers as int64, other numbers as float64.
type object map[string]any

// UnmarshalJSON decodes an object with the number rules of unstructured
// objects.
func (o *object) UnmarshalJSON(b []byte) error {
	var m map[string]any
	if err := utiljson.Unmarshal(b, &m); err != nil {
		return err
	}
	if m == nil {
		return errors.New("an object is null")
	}
	*o = m
	return nil
}

// encoded is a render's payload.
type encoded struct {
	// data is the compressed payload, sum its sha256.
	data []byte
	sum  [sha256.Size]byte
	// jsonSum is the sha256 of the uncompressed JSON, and jsonSize its
	// length: two builds of rukpak may compress the same JSON differently.
	jsonSum  [sha256.Size]byte
	jsonSize int64
}

// errOverLimit stops an encoding that goes over its limit.
var errOverLimit = errors.New("over the limit")

// limitWriter counts and hashes what it is given and fails past max bytes.
type limitWriter struct {
	w   io.Writer
	h   hash.Hash
	n   int64
	max int64
}

func (l *limitWriter) Write(p []byte) (int, error) {
	if l.n += int64(len(p)); l.n > l.max {
		return 0, errOverLimit
	}
	l.h.Write(p)
	return l.w.Write(p)
}

// encode returns r's payload, refusing with ErrTooLarge JSON of more than
// maxSize bytes.
func encode(r *Render, maxSize int64) (*encoded, error) {
	p := payload{
		Version:         encodingVersion,
		Revision:        r.Revision,
		BundleUID:       r.BundleUID,
		ContentDigest:   r.ContentDigest,
		FormatVersion:   r.FormatVersion,
		ReleaseRevision: r.ReleaseRevision,
		Upgrade:         r.Upgrade,
		Objects:         make([]object, len(r.Objects)),
	}
	for i, obj := range r.Objects {
		if obj == nil || obj.Object == nil {
			return nil, fmt.Errorf("encoding the render of %s: object %d is nil", r.Revision, i)
		}
		p.Objects[i] = obj.Object
	}
	if len(r.Answers) > 0 {
		p.Answers = make(map[string]string, len(r.Answers))
		for k, v := range r.Answers {
			// Kept as a string, the answer is read back byte for byte;
			// a string holds valid UTF-8 only.
			if !json.Valid(v) || !utf8.Valid(v) {
				return nil, fmt.Errorf("encoding the render of %s: lookup answer %q is not valid JSON", r.Revision, k)
			}
			p.Answers[k] = string(v)
		}
	}
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	lw := &limitWriter{w: zw, h: sha256.New(), max: maxSize}
	enc := json.NewEncoder(lw)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(p); err != nil {
		if errors.Is(err, errOverLimit) {
			return nil, fmt.Errorf("render of %s encodes to more than %d bytes: %w", r.Revision, maxSize, ErrTooLarge)
		}
		return nil, fmt.Errorf("encoding the render of %s: %w", r.Revision, err)
	}
	if err := zw.Close(); err != nil {
		return nil, fmt.Errorf("compressing the render of %s: %w", r.Revision, err)
	}
	e := &encoded{data: buf.Bytes(), sum: sha256.Sum256(buf.Bytes()), jsonSize: lw.n}
	lw.h.Sum(e.jsonSum[:0])
	return e, nil
}

// decoded is a decoded payload with the size and sha256 of its JSON.
type decoded struct {
	render   *Render
	jsonSize int64
	jsonSum  [sha256.Size]byte
}

// countingReader counts and hashes what is read through it.
type countingReader struct {
	r io.Reader
	h hash.Hash
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	c.h.Write(p[:n])
	return n, err
}

// decode decodes the payload data of the render of revision, decompressing
// at most maxSize bytes. Its errors are *CorruptError.
func decode(revision string, data []byte, maxSize int64) (*decoded, error) {
	zr, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		return nil, corrupt(revision, -1, ProblemUndecodable, "decompressing: %v", err)
	}
	cr := &countingReader{r: io.LimitReader(zr, maxSize+1), h: sha256.New()}
	dec := json.NewDecoder(cr)
	var p payload
	err = dec.Decode(&p)
	if err == nil {
		// Only white space may follow; reading to the end also makes gzip
		// check its CRC.
		if err = dec.Decode(&json.RawMessage{}); errors.Is(err, io.EOF) {
			err = nil
		} else if err == nil {
			err = errors.New("more than one JSON document")
		}
	}
	if cr.n > maxSize {
		return nil, corrupt(revision, -1, ProblemTooLarge, "it decompresses to more than %d bytes", maxSize)
	}
	if err != nil {
		return nil, corrupt(revision, -1, ProblemUndecodable, "decoding: %v", err)
	}
	if p.Version != encodingVersion {
		return nil, corrupt(revision, -1, ProblemUnsupported, "encoding version %d, this build reads %d", p.Version, encodingVersion)
	}
	r := &Render{
		Revision:        p.Revision,
		BundleUID:       p.BundleUID,
		ContentDigest:   p.ContentDigest,
		FormatVersion:   p.FormatVersion,
		ReleaseRevision: p.ReleaseRevision,
		Upgrade:         p.Upgrade,
		Objects:         make([]*unstructured.Unstructured, len(p.Objects)),
	}
	for i, obj := range p.Objects {
		if obj == nil {
			return nil, corrupt(revision, -1, ProblemUndecodable, "object %d is null", i)
		}
		r.Objects[i] = &unstructured.Unstructured{Object: obj}
	}
	if len(p.Answers) > 0 {
		r.Answers = make(map[string]json.RawMessage, len(p.Answers))
		for k, v := range p.Answers {
			r.Answers[k] = json.RawMessage(v)
		}
	}
	d := &decoded{render: r, jsonSize: cr.n}
	cr.h.Sum(d.jsonSum[:0])
	return d, nil
}

// split cuts data into chunks of at most size bytes; empty data is one
// empty chunk.
func split(data []byte, size int) [][]byte {
	out := [][]byte{}
	for len(data) > size {
		out = append(out, data[:size:size])
		data = data[size:]
	}
	return append(out, data)
}
