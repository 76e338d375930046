package catalog

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"sort"
	"strings"

	utilyaml "k8s.io/apimachinery/pkg/util/yaml"

	"github.com/rukpak/rukpak/internal/versionrange"
)

// Limits bound what Parse reads of a catalog.
type Limits struct {
	// MaxBytes bounds the bytes of all files together.
	MaxBytes int64
	// MaxBlobs bounds the blobs of all files together.
	MaxBlobs int
}

// DefaultLimits are generous for public catalogs (operatorhub.io's is
// about 60 MB in some 20,000 blobs) and bound what one tenant's catalog
// can make the manager read.
var DefaultLimits = Limits{MaxBytes: 128 << 20, MaxBlobs: 200_000}

// ErrTooLarge is wrapped by Parse's error when a catalog is over its
// limits.
var ErrTooLarge = errors.New("catalog over its limits")

// meta is the part of a blob every schema has.
type meta struct {
	Schema  string `json:"schema"`
	Name    string `json:"name"`
	Package string `json:"package"`
}

type packageBlob struct {
	Name           string `json:"name"`
	DefaultChannel string `json:"defaultChannel"`
}

type channelBlob struct {
	Name    string  `json:"name"`
	Package string  `json:"package"`
	Entries []Entry `json:"entries"`
}

type property struct {
	Type  string          `json:"type"`
	Value json.RawMessage `json:"value"`
}

type bundleBlob struct {
	Name       string     `json:"name"`
	Package    string     `json:"package"`
	Image      string     `json:"image"`
	Properties []property `json:"properties"`
}

type deprecationsBlob struct {
	Package string `json:"package"`
	Entries []struct {
		Reference struct {
			Schema string `json:"schema"`
			Name   string `json:"name"`
		} `json:"reference"`
		Message string `json:"message"`
	} `json:"entries"`
}

// Parse reads every file of fsys (a catalog's configs directory) as a
// stream of JSON or YAML blobs, within lim. Blobs of other schemas are
// skipped. An error names the file and the blob at fault.
func Parse(fsys fs.FS, lim Limits) (*Catalog, error) {
	r := &reader{lim: lim, cat: &Catalog{Packages: map[string]*Package{}}}
	if err := fs.WalkDir(fsys, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() || strings.HasPrefix(path.Base(p), ".") {
			return nil
		}
		return r.file(fsys, p)
	}); err != nil {
		return nil, err
	}
	if err := r.link(); err != nil {
		return nil, err
	}
	return r.cat, nil
}

// reader collects the blobs of a catalog's files.
type reader struct {
	lim          Limits
	bytes        int64
	blobs        int
	cat          *Catalog
	channels     []channelBlob
	channelFiles []string
	bundles      []*Bundle
	bundleFiles  []string
	deprecations []deprecationsBlob
}

// limitedReader counts the bytes of all files against the limit.
type limitedReader struct {
	r    io.Reader
	read *int64
	max  int64
}

func (l *limitedReader) Read(p []byte) (int, error) {
	n, err := l.r.Read(p)
	*l.read += int64(n)
	if l.max > 0 && *l.read > l.max {
		return n, fmt.Errorf("%w: more than %d bytes", ErrTooLarge, l.max)
	}
	return n, err
}

func (r *reader) file(fsys fs.FS, name string) error {
	f, err := fsys.Open(name)
	if err != nil {
		return fmt.Errorf("opening %s: %w", name, err)
	}
	defer f.Close()
	dec := utilyaml.NewYAMLOrJSONDecoder(&limitedReader{r: f, read: &r.bytes, max: r.lim.MaxBytes}, 4096)
	for i := 1; ; i++ {
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			if errors.Is(err, ErrTooLarge) {
				return fmt.Errorf("%s: %w", name, err)
			}
			return fmt.Errorf("%s: blob %d: %w", name, i, err)
		}
		if len(raw) == 0 || string(raw) == "null" {
			continue
		}
		r.blobs++
		if r.lim.MaxBlobs > 0 && r.blobs > r.lim.MaxBlobs {
			return fmt.Errorf("%s: %w: more than %d blobs", name, ErrTooLarge, r.lim.MaxBlobs)
		}
		if err := r.blob(name, raw); err != nil {
			return fmt.Errorf("%s: blob %d: %w", name, i, err)
		}
	}
}

func (r *reader) blob(file string, raw json.RawMessage) error {
	var m meta
	if err := json.Unmarshal(raw, &m); err != nil {
		return fmt.Errorf("not an object: %w", err)
	}
	switch m.Schema {
	case SchemaPackage:
		var b packageBlob
		if err := json.Unmarshal(raw, &b); err != nil {
			return fmt.Errorf("%s: %w", m.Schema, err)
		}
		if b.Name == "" {
			return fmt.Errorf("%s without a name", m.Schema)
		}
		if _, dup := r.cat.Packages[b.Name]; dup {
			return fmt.Errorf("package %q declared twice", b.Name)
		}
		r.cat.Packages[b.Name] = &Package{Name: b.Name, DefaultChannel: b.DefaultChannel,
			Channels: map[string]*Channel{}, Bundles: map[string]*Bundle{}}
	case SchemaChannel:
		var b channelBlob
		if err := json.Unmarshal(raw, &b); err != nil {
			return fmt.Errorf("%s: %w", m.Schema, err)
		}
		if b.Name == "" || b.Package == "" {
			return fmt.Errorf("%s without a name or a package", m.Schema)
		}
		r.channels, r.channelFiles = append(r.channels, b), append(r.channelFiles, file)
	case SchemaBundle:
		b, err := parseBundle(raw)
		if err != nil {
			return err
		}
		r.bundles, r.bundleFiles = append(r.bundles, b), append(r.bundleFiles, file)
	case SchemaDeprecations:
		var b deprecationsBlob
		if err := json.Unmarshal(raw, &b); err != nil {
			return fmt.Errorf("%s: %w", m.Schema, err)
		}
		r.deprecations = append(r.deprecations, b)
	}
	return nil
}

func parseBundle(raw json.RawMessage) (*Bundle, error) {
	var b bundleBlob
	if err := json.Unmarshal(raw, &b); err != nil {
		return nil, fmt.Errorf("%s: %w", SchemaBundle, err)
	}
	if b.Name == "" || b.Package == "" {
		return nil, fmt.Errorf("%s without a name or a package", SchemaBundle)
	}
	out := &Bundle{Name: b.Name, Package: b.Package, Image: b.Image}
	for _, p := range b.Properties {
		switch p.Type {
		case PropertyPackage:
			var v struct {
				PackageName string `json:"packageName"`
				Version     string `json:"version"`
			}
			if err := json.Unmarshal(p.Value, &v); err != nil {
				return nil, fmt.Errorf("bundle %q: property %s: %w", b.Name, p.Type, err)
			}
			ver, err := versionrange.Version(v.Version)
			if err != nil {
				return nil, fmt.Errorf("bundle %q: version %q: %w", b.Name, v.Version, err)
			}
			out.Version = ver
		case PropertyPackageRequired, PropertyGVKRequired:
			out.Requires = append(out.Requires, p.Type+" "+strings.TrimSpace(string(p.Value)))
		}
	}
	if out.Version == nil {
		return nil, fmt.Errorf("bundle %q has no %s property with its version", b.Name, PropertyPackage)
	}
	return out, nil
}

// link puts channels, bundles and deprecations into their packages.
func (r *reader) link() error {
	for i, b := range r.bundles {
		p := r.cat.Packages[b.Package]
		if p == nil {
			return fmt.Errorf("%s: bundle %q of package %q, which the catalog does not declare", r.bundleFiles[i], b.Name, b.Package)
		}
		if _, dup := p.Bundles[b.Name]; dup {
			return fmt.Errorf("%s: bundle %q declared twice", r.bundleFiles[i], b.Name)
		}
		p.Bundles[b.Name] = b
	}
	for i, c := range r.channels {
		p := r.cat.Packages[c.Package]
		if p == nil {
			return fmt.Errorf("%s: channel %q of package %q, which the catalog does not declare", r.channelFiles[i], c.Name, c.Package)
		}
		if _, dup := p.Channels[c.Name]; dup {
			return fmt.Errorf("%s: channel %q of package %q declared twice", r.channelFiles[i], c.Name, c.Package)
		}
		for _, e := range c.Entries {
			if e.SkipRange != "" {
				if _, err := parseSkipRange(e.SkipRange); err != nil {
					return fmt.Errorf("%s: channel %q, entry %q: %w", r.channelFiles[i], c.Name, e.Name, err)
				}
			}
		}
		p.Channels[c.Name] = &Channel{Name: c.Name, Entries: c.Entries}
	}
	for _, d := range r.deprecations {
		p := r.cat.Packages[d.Package]
		if p == nil {
			continue
		}
		for _, e := range d.Entries {
			switch e.Reference.Schema {
			case SchemaPackage:
				p.Deprecated = e.Message
			case SchemaChannel:
				if c := p.Channels[e.Reference.Name]; c != nil {
					c.Deprecated = e.Message
				}
			case SchemaBundle:
				if b := p.Bundles[e.Reference.Name]; b != nil {
					b.Deprecated = e.Message
				}
			}
		}
	}
	return nil
}

// ChannelNames returns the names of p's channels, sorted.
func (p *Package) ChannelNames() []string {
	names := make([]string, 0, len(p.Channels))
	for n := range p.Channels {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}
