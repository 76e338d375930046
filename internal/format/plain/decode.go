package plain

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strconv"

	utiljson "k8s.io/apimachinery/pkg/util/json"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"

	"github.com/rukpak/rukpak/api/v1alpha2"
	"github.com/rukpak/rukpak/pkg/failure"
)

// addFunc receives each non-empty document of a file with where it starts.
type addFunc func(loc location, v any) error

// yamlDoc is a non-empty document of a YAML stream: where it starts, and
// its bytes within the stream.
type yamlDoc struct {
	loc          location
	offset, size int
}

// yamlDocuments splits the YAML stream data read from p into its
// non-empty documents, without parsing them.
//
// Documents are counted as the YAML spec does: each "---" line starts one,
// even if it stays empty, while text before the first "---" (or after a
// "..." line) is a document only if it holds more than comments.
func yamlDocuments(p string, data []byte) []yamlDoc {
	var docs []yamlDoc
	doc := 0
	start, startLine, explicit := 0, 1, false
	flush := func(end int) {
		seg := data[start:end]
		content := hasContent(seg)
		if !explicit && !content {
			return
		}
		doc++
		if content {
			docs = append(docs, yamlDoc{loc: location{path: p, doc: doc, line: startLine, item: -1}, offset: start, size: end - start})
		}
	}
	line := 1
	for pos := 0; pos < len(data); line++ {
		end, next := len(data), len(data)
		if i := bytes.IndexByte(data[pos:], '\n'); i >= 0 {
			end, next = pos+i, pos+i+1
		}
		switch marker(data[pos:end]) {
		case "---":
			flush(pos)
			start, startLine, explicit = pos, line, true
		case "...":
			flush(pos)
			start, startLine, explicit = next, line+1, false
		}
		pos = next
	}
	flush(len(data))
	return docs
}

// eachYAMLDocument calls add for each of docs, the non-empty documents of
// the YAML stream data, parsing them one at a time.
func eachYAMLDocument(data []byte, docs []yamlDoc, add addFunc) error {
	for _, d := range docs {
		var msg string
		v, err := parseDocument(data[d.offset : d.offset+d.size])
		if err != nil {
			msg = err.Error()
		}
		if err := addParsed(d.loc, v, msg, add); err != nil {
			return err
		}
	}
	return nil
}

// parseDocument parses one document of a YAML stream as kubectl's YAML
// reader hands it on: every line ends with a line break, the file's last
// line too, so a block scalar that ends the file keeps one.
func parseDocument(doc []byte) (any, error) {
	if !bytes.HasSuffix(doc, []byte("\n")) {
		doc = append(doc[:len(doc):len(doc)], '\n')
	}
	return parseYAML(doc)
}

// addParsed adds the value v of the document at loc, or fails with the
// parser's error message msg, its line numbers made the file's.
func addParsed(loc location, v any, msg string, add addFunc) error {
	if msg != "" {
		return failure.New(v1alpha2.ReasonInvalidContent, "%s: invalid YAML: %s", loc, absoluteLines(msg, loc.line))
	}
	if v == nil {
		return nil
	}
	return add(loc, v)
}

// marker returns "---" or "..." when line is a document start or end
// marker (possibly followed by a space and more), or "".
func marker(line []byte) string {
	line = bytes.TrimSuffix(line, []byte("\r"))
	if len(line) < 3 || (len(line) > 3 && line[3] != ' ' && line[3] != '\t') {
		return ""
	}
	switch m := string(line[:3]); m {
	case "---", "...":
		return m
	}
	return ""
}

// hasContent reports whether a document holds more than blank lines,
// comments and its start marker.
func hasContent(seg []byte) bool {
	for len(seg) > 0 {
		line := seg
		if i := bytes.IndexByte(seg, '\n'); i >= 0 {
			line, seg = seg[:i], seg[i+1:]
		} else {
			seg = nil
		}
		if marker(line) == "---" {
			line = line[3:]
		}
		line = bytes.TrimSpace(line)
		if len(line) > 0 && line[0] != '#' {
			return true
		}
	}
	return false
}

// parseYAML decodes one YAML document, keeping integers int64. A panic of
// the parser on hostile input is returned as an error.
func parseYAML(data []byte) (v any, err error) {
	defer func() {
		if r := recover(); r != nil {
			v, err = nil, fmt.Errorf("parser failed: %v", r)
		}
	}()
	if err := utilyaml.Unmarshal(data, &v); err != nil {
		return nil, err
	}
	return v, nil
}

// yamlLine matches the line numbers of YAML parser errors.
var yamlLine = regexp.MustCompile(`\bline (\d+)`)

// absoluteLines turns the line numbers of a parser error about a document
// starting at line first into line numbers of the file.
func absoluteLines(msg string, first int) string {
	return yamlLine.ReplaceAllStringFunc(msg, func(m string) string {
		n, err := strconv.Atoi(yamlLine.FindStringSubmatch(m)[1])
		if err != nil {
			return m
		}
		return "line " + strconv.Itoa(n+first-1)
	})
}

// eachJSONDocument calls add for each top-level value of the JSON stream
// data read from p, except null.
func eachJSONDocument(p string, data []byte, add addFunc) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	lines := lineCounter{data: data, line: 1}
	for doc := 1; ; doc++ {
		var raw json.RawMessage
		err := dec.Decode(&raw)
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			at := int64(len(data))
			if syntax := (*json.SyntaxError)(nil); errors.As(err, &syntax) {
				at = syntax.Offset
			}
			return failure.New(v1alpha2.ReasonInvalidContent, "%s: document %d: invalid JSON at line %d: %v",
				p, doc, lines.at(at), err)
		}
		loc := location{path: p, doc: doc, line: lines.at(dec.InputOffset() - int64(len(raw))), item: -1}
		var v any
		if err := utiljson.Unmarshal(raw, &v); err != nil {
			return failure.New(v1alpha2.ReasonInvalidContent, "%s: invalid JSON: %v", loc, err)
		}
		if v == nil {
			continue
		}
		if err := add(loc, v); err != nil {
			return err
		}
	}
}

// lineCounter finds the line of increasing offsets into data in linear
// time overall.
type lineCounter struct {
	data []byte
	pos  int64
	line int
}

// at returns the 1-based line of offset off, which must not be less than
// the offset of the previous call.
func (c *lineCounter) at(off int64) int {
	off = min(max(off, c.pos), int64(len(c.data)))
	c.line += bytes.Count(c.data[c.pos:off], []byte("\n"))
	c.pos = off
	return c.line
}
