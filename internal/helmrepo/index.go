// Package helmrepo reads what a Helm chart repository publishes: the
// versions of one chart in the repository's index.yaml, and the one a
// version constraint selects.
//
// An index is untrusted input, and public ones are tens of megabytes
// (about 2,000 versions of hundreds of charts). ReadIndex never holds
// the whole index, decoded or not: it streams the index's lines (block
// YAML, as Helm writes it) or its tokens (JSON, which Helm also reads),
// keeps only the entries of the chart it is asked for, and decodes each
// of them on its own, so that an entry that does not parse is skipped
// with a warning, as Helm skips entries that do not validate. Its bounds
// are the bytes it reads (Limits.MaxBytes), the bytes of one entry and
// the entries of the chart, and the context's deadline.
package helmrepo

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	repov1 "helm.sh/helm/v4/pkg/repo/v1"
	"sigs.k8s.io/yaml"
)

// Limits bound what ReadIndex reads.
type Limits struct {
	// MaxBytes bounds the index's bytes.
	MaxBytes int64
	// MaxEntryBytes bounds one entry (one version of the chart).
	MaxEntryBytes int
	// MaxVersions bounds the entries of the chart.
	MaxVersions int
}

// DefaultLimits read the largest public indexes (about 50 MB) and a
// chart's every version.
var DefaultLimits = Limits{MaxBytes: 128 << 20, MaxEntryBytes: 256 << 10, MaxVersions: 20_000}

// ErrTooLarge is wrapped by ReadIndex's error when an index is over its
// limits.
var ErrTooLarge = errors.New("index over its limits")

// Chart is what an index says of one chart.
type Chart struct {
	// Name is the chart's name.
	Name string
	// Versions are the chart's entries that parse and validate, in the
	// order of the index.
	Versions []*repov1.ChartVersion
	// Skipped says, for each entry left out, which and why.
	Skipped []string
}

// ReadIndex reads the entries of chart from an index, within lim. A chart
// the index does not have is an error naming it.
func ReadIndex(ctx context.Context, r io.Reader, chart string, lim Limits) (*Chart, error) {
	lr := &limitedReader{r: r, max: lim.MaxBytes}
	br := bufio.NewReaderSize(lr, 64<<10)
	first, err := firstByte(br)
	if err != nil {
		return nil, err
	}
	ir := &indexReader{ctx: ctx, lim: lim, chart: &Chart{Name: chart}}
	if first == '{' {
		err = ir.readJSON(br)
	} else {
		err = ir.readYAML(br)
	}
	if err != nil {
		return nil, err
	}
	if ir.apiVersion == "" {
		return nil, fmt.Errorf("index.yaml: %w", repov1.ErrNoAPIVersion)
	}
	if !ir.found {
		return nil, fmt.Errorf("index.yaml: %w: %q", repov1.ErrNoChartName, chart)
	}
	return ir.chart, nil
}

// firstByte peeks at the first byte that is not white space.
func firstByte(br *bufio.Reader) (byte, error) {
	for {
		b, err := br.ReadByte()
		if err != nil {
			if errors.Is(err, io.EOF) {
				return 0, fmt.Errorf("index.yaml: %w", repov1.ErrEmptyIndexYaml)
			}
			return 0, fmt.Errorf("reading index.yaml: %w", err)
		}
		switch b {
		case ' ', '\t', '\r', '\n':
			continue
		}
		return b, br.UnreadByte()
	}
}

// limitedReader fails a read past max bytes.
type limitedReader struct {
	r   io.Reader
	n   int64
	max int64
}

func (l *limitedReader) Read(p []byte) (int, error) {
	n, err := l.r.Read(p)
	l.n += int64(n)
	if l.max > 0 && l.n > l.max {
		return n, fmt.Errorf("index.yaml: %w: more than %d bytes", ErrTooLarge, l.max)
	}
	return n, err
}

// indexReader collects the entries of one chart.
type indexReader struct {
	ctx        context.Context
	lim        Limits
	chart      *Chart
	apiVersion string
	found      bool
	entries    int
}

// checkEvery is how many lines or tokens are read between looks at the
// context.
const checkEvery = 4096

// entry decodes one entry of the chart (YAML or JSON) as Helm does, and
// keeps it or says why it is skipped.
func (ir *indexReader) entry(data []byte) error {
	if err := ir.count(); err != nil {
		return err
	}
	if ir.lim.MaxEntryBytes > 0 && len(data) > ir.lim.MaxEntryBytes {
		ir.skipLarge()
		return nil
	}
	cv := &repov1.ChartVersion{}
	if err := yaml.Unmarshal(data, cv); err != nil {
		ir.skip(fmt.Sprintf("entry %d: %v", ir.entries, err))
		return nil
	}
	if cv.Metadata == nil {
		ir.skip(fmt.Sprintf("entry %d: empty", ir.entries))
		return nil
	}
	if cv.APIVersion == "" {
		cv.APIVersion = "v1"
	}
	if err := cv.Validate(); err != nil && !strings.HasPrefix(err.Error(), "validation: more than one dependency with name or alias") {
		ir.skip(fmt.Sprintf("entry %d (version %q): %v", ir.entries, cv.Version, err))
		return nil
	}
	if cv.Name != ir.chart.Name {
		ir.skip(fmt.Sprintf("entry %d (version %q): names chart %q", ir.entries, cv.Version, cv.Name))
		return nil
	}
	ir.chart.Versions = append(ir.chart.Versions, cv)
	return nil
}

// count counts an entry of the chart against Limits.MaxVersions.
func (ir *indexReader) count() error {
	ir.entries++
	if ir.lim.MaxVersions > 0 && ir.entries > ir.lim.MaxVersions {
		return fmt.Errorf("index.yaml: chart %q: %w: more than %d versions", ir.chart.Name, ErrTooLarge, ir.lim.MaxVersions)
	}
	return nil
}

func (ir *indexReader) skipLarge() {
	ir.skip(fmt.Sprintf("entry %d: larger than %d bytes", ir.entries, ir.lim.MaxEntryBytes))
}

// maxSkipped bounds the warnings kept of one index.
const maxSkipped = 20

func (ir *indexReader) skip(why string) {
	if len(ir.chart.Skipped) < maxSkipped {
		ir.chart.Skipped = append(ir.chart.Skipped, why)
	}
}

// readJSON streams a JSON index's tokens, decoding only the chart's
// entries.
func (ir *indexReader) readJSON(r io.Reader) error {
	dec := json.NewDecoder(r)
	if err := expectDelim(dec, '{'); err != nil {
		return err
	}
	for dec.More() {
		key, err := stringToken(dec)
		if err != nil {
			return err
		}
		switch key {
		case "apiVersion":
			if err := dec.Decode(&ir.apiVersion); err != nil {
				return fmt.Errorf("index.yaml: apiVersion: %w", err)
			}
		case "entries":
			if err := ir.jsonEntries(dec); err != nil {
				return err
			}
		default:
			if err := ir.skipValue(dec); err != nil {
				return err
			}
		}
	}
	return nil
}

func (ir *indexReader) jsonEntries(dec *json.Decoder) error {
	if err := expectDelim(dec, '{'); err != nil {
		return err
	}
	for dec.More() {
		name, err := stringToken(dec)
		if err != nil {
			return err
		}
		if name != ir.chart.Name {
			if err := ir.skipValue(dec); err != nil {
				return err
			}
			continue
		}
		ir.found = true
		if err := expectDelim(dec, '['); err != nil {
			return err
		}
		for dec.More() {
			if err := ir.ctx.Err(); err != nil {
				return fmt.Errorf("reading index.yaml: %w", err)
			}
			var raw json.RawMessage
			if err := dec.Decode(&raw); err != nil {
				return fmt.Errorf("index.yaml: chart %q: %w", name, err)
			}
			if err := ir.entry(raw); err != nil {
				return err
			}
		}
		if err := expectDelim(dec, ']'); err != nil {
			return err
		}
	}
	return expectDelim(dec, '}')
}

// skipValue reads past one value, token by token.
func (ir *indexReader) skipValue(dec *json.Decoder) error {
	depth := 0
	for n := 0; ; n++ {
		if n%checkEvery == 0 {
			if err := ir.ctx.Err(); err != nil {
				return fmt.Errorf("reading index.yaml: %w", err)
			}
		}
		t, err := dec.Token()
		if err != nil {
			return fmt.Errorf("index.yaml: %w", err)
		}
		if d, ok := t.(json.Delim); ok {
			switch d {
			case '{', '[':
				depth++
			default:
				depth--
			}
		}
		if depth == 0 {
			return nil
		}
	}
}

func expectDelim(dec *json.Decoder, want json.Delim) error {
	t, err := dec.Token()
	if err != nil {
		return fmt.Errorf("index.yaml: %w", err)
	}
	if d, ok := t.(json.Delim); !ok || d != want {
		return fmt.Errorf("index.yaml: %v where %v was expected", t, want)
	}
	return nil
}

func stringToken(dec *json.Decoder) (string, error) {
	t, err := dec.Token()
	if err != nil {
		return "", fmt.Errorf("index.yaml: %w", err)
	}
	s, ok := t.(string)
	if !ok {
		return "", fmt.Errorf("index.yaml: %v where a key was expected", t)
	}
	return s, nil
}

// readYAML streams the lines of a block-style YAML index. The keys of
// the document start at column 0; entries' keys (the charts) at one
// indentation; a chart's sequence of entries is indented as much or
// more, each entry starting with "- " at the sequence's indentation.
// Lines of an entry are indented deeper than its dash (YAML requires it
// of block scalars and continued plain scalars too), so the entry ends
// at the next line at its dash's indentation or less.
func (ir *indexReader) readYAML(r io.Reader) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), max(ir.lim.MaxEntryBytes, 64<<10))
	const (
		top = iota
		entries
		inChart
		otherChart
	)
	state, keyIndent, itemIndent := top, -1, -1
	var item bytes.Buffer
	tooLarge := false
	flush := func() error {
		if item.Len() == 0 {
			return nil
		}
		defer func() { item.Reset(); tooLarge = false }()
		if tooLarge {
			if err := ir.count(); err != nil {
				return err
			}
			ir.skipLarge()
			return nil
		}
		data := item.Bytes()
		// "- key: value": the dash becomes a space, and the entry a mapping.
		data[0] = ' '
		return ir.entry(data)
	}
	for n := 1; sc.Scan(); n++ {
		if n%checkEvery == 0 {
			if err := ir.ctx.Err(); err != nil {
				return fmt.Errorf("reading index.yaml: %w", err)
			}
		}
		// The lines of other charts are looked at as bytes, never copied.
		line := sc.Bytes()
		trimmed := bytes.TrimLeft(line, " ")
		indent := len(line) - len(trimmed)
		blank := len(bytes.TrimSpace(trimmed)) == 0
		dash := len(trimmed) > 0 && trimmed[0] == '-'
		if blank || (trimmed[0] == '#' && (state != inChart || indent <= itemIndent)) {
			if state == inChart && item.Len() > 0 {
				item.WriteString("\n")
			}
			continue
		}
		if trimmed[0] == '\t' {
			return fmt.Errorf("index.yaml: line %d: a tab in indentation", n)
		}
		if indent == 0 {
			if err := flush(); err != nil {
				return err
			}
			text := string(trimmed)
			if text == "---" || text == "..." {
				continue
			}
			key, value, ok := mappingKey(text)
			if !ok {
				return fmt.Errorf("index.yaml: line %d: not a key of the index (an index in flow style is not read; Helm writes block style)", n)
			}
			state = top
			switch key {
			case "apiVersion":
				ir.apiVersion = strings.Trim(value, `"'`)
			case "entries":
				if value != "" && value != "{}" {
					return fmt.Errorf("index.yaml: line %d: entries in flow style are not read (Helm writes block style)", n)
				}
				state, keyIndent = entries, -1
			}
			continue
		}
		switch state {
		case top:
			continue // a value of another top-level key
		case entries, otherChart:
			if keyIndent < 0 {
				keyIndent = indent
			}
			if indent != keyIndent || dash {
				continue // the entries of another chart
			}
		case inChart:
			if itemIndent < 0 {
				if !dash || indent < keyIndent {
					return fmt.Errorf("index.yaml: line %d: the entries of chart %q are not a block sequence", n, ir.chart.Name)
				}
				itemIndent = indent
			}
			if indent > itemIndent || (indent == itemIndent && dash) {
				if indent == itemIndent && (len(trimmed) == 1 || trimmed[1] == ' ') {
					if err := flush(); err != nil {
						return err
					}
				}
				if ir.lim.MaxEntryBytes > 0 && item.Len() > ir.lim.MaxEntryBytes {
					tooLarge = true // skipped when flushed
					continue
				}
				// Dedent by the sequence's indentation: the entry starts at
				// column 0.
				item.Write(line[itemIndent:])
				item.WriteString("\n")
				continue
			}
			// The chart's entries end: this line is the next chart's key.
			if err := flush(); err != nil {
				return err
			}
		}
		// A chart's key, at the entries' indentation.
		key, value, ok := mappingKey(string(trimmed))
		if !ok {
			return fmt.Errorf("index.yaml: line %d: not a chart's key", n)
		}
		if key != ir.chart.Name {
			state = otherChart
			continue
		}
		ir.found = true
		if value == "[]" {
			state = otherChart
			continue
		}
		if value != "" {
			return fmt.Errorf("index.yaml: line %d: the entries of chart %q are not a block sequence", n, key)
		}
		state, itemIndent = inChart, -1
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return fmt.Errorf("index.yaml: %w: a line longer than %d bytes", ErrTooLarge, max(ir.lim.MaxEntryBytes, 64<<10))
		}
		return fmt.Errorf("reading index.yaml: %w", err)
	}
	return flush()
}

// mappingKey splits a line "key: value" (the key plain or quoted).
func mappingKey(s string) (key, value string, ok bool) {
	if strings.HasPrefix(s, `"`) || strings.HasPrefix(s, `'`) {
		q := s[:1]
		end := strings.Index(s[1:], q)
		if end < 0 {
			return "", "", false
		}
		key, rest := s[1:1+end], s[2+end:]
		if !strings.HasPrefix(rest, ":") {
			return "", "", false
		}
		return key, strings.TrimSpace(rest[1:]), true
	}
	i := strings.Index(s, ":")
	if i <= 0 || (len(s) > i+1 && s[i+1] != ' ') {
		return "", "", false
	}
	return s[:i], strings.TrimSpace(stripComment(s[i+1:])), true
}

// stripComment drops a trailing " # comment" of a plain value.
func stripComment(s string) string {
	if i := strings.Index(s, " #"); i >= 0 {
		return s[:i]
	}
	return s
}
