package registryv1

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"strings"

	"sigs.k8s.io/yaml"

	"github.com/rukpak/rukpak/api/v1alpha2"
	"github.com/rukpak/rukpak/pkg/failure"
)

// Files and keys of a bundle's metadata/ directory.
const (
	// AnnotationsFile holds the bundle's annotations, among them its media
	// type and manifests directory.
	AnnotationsFile = "metadata/annotations.yaml"
	// DependenciesFile lists what must be installed before the bundle.
	DependenciesFile = "metadata/dependencies.yaml"
	// MediaTypeAnnotation names the bundle's format.
	MediaTypeAnnotation = "operators.operatorframework.io.bundle.mediatype.v1"
	// ManifestsAnnotation names the directory holding the manifests.
	ManifestsAnnotation = "operators.operatorframework.io.bundle.manifests.v1"
	// MediaType is the value of MediaTypeAnnotation this format reads.
	MediaType = "registry+v1"
)

// defaultManifestsDir is where the manifests are when AnnotationsFile does
// not say otherwise; it is also the directory plain.Format reads.
const defaultManifestsDir = "manifests"

// maxMetadataBytes bounds each metadata file read.
const maxMetadataBytes = 1 << 20

// bundleMetadata is what metadata/ says about a bundle.
type bundleMetadata struct {
	// manifestsDir is the clean path of the manifests directory.
	manifestsDir string
	// dependencies are the entries of DependenciesFile.
	dependencies []dependency
}

// annotationsDoc is the content of AnnotationsFile.
type annotationsDoc struct {
	Annotations map[string]string `json:"annotations"`
}

// dependenciesDoc is the content of DependenciesFile.
type dependenciesDoc struct {
	Dependencies []dependency `json:"dependencies"`
}

// dependency is one entry of DependenciesFile, such as an olm.package or
// olm.gvk the bundle needs.
type dependency struct {
	Type  string          `json:"type"`
	Value json.RawMessage `json:"value"`
}

// String returns the type and the value in compact JSON, shortened.
func (d dependency) String() string {
	s := d.Type
	if len(d.Value) > 0 {
		s += " " + shortJSON(d.Value, 80)
	}
	return s
}

// readMetadata reads metadata/annotations.yaml and
// metadata/dependencies.yaml; both are optional.
func readMetadata(fsys fs.FS) (bundleMetadata, error) {
	meta := bundleMetadata{manifestsDir: defaultManifestsDir}
	var ann annotationsDoc
	if _, err := readYAML(fsys, AnnotationsFile, &ann); err != nil {
		return meta, err
	}
	if mt, ok := ann.Annotations[MediaTypeAnnotation]; ok && mt != MediaType {
		return meta, failure.New(v1alpha2.ReasonInvalidContent, "%s: %s is %q, not %q: this is not a registry+v1 bundle",
			AnnotationsFile, MediaTypeAnnotation, mt, MediaType)
	}
	if dir, ok := ann.Annotations[ManifestsAnnotation]; ok {
		clean, err := manifestsDir(fsys, dir)
		if err != nil {
			return meta, err
		}
		meta.manifestsDir = clean
	}
	var deps dependenciesDoc
	if _, err := readYAML(fsys, DependenciesFile, &deps); err != nil {
		return meta, err
	}
	meta.dependencies = deps.Dependencies
	return meta, nil
}

// manifestsDir checks the manifests directory named in AnnotationsFile and
// returns its clean path: a directory inside the bundle, reached without
// symlinks.
func manifestsDir(fsys fs.FS, dir string) (string, error) {
	clean := path.Clean(strings.TrimSpace(dir))
	if strings.HasPrefix(clean, "/") || !fs.ValidPath(clean) || clean == "." {
		return "", failure.New(v1alpha2.ReasonInvalidContent,
			"%s: %s is %q, which is not a directory inside the bundle", AnnotationsFile, ManifestsAnnotation, dir)
	}
	for p := clean; p != "."; p = path.Dir(p) {
		info, err := fs.Lstat(fsys, p)
		if errors.Is(err, fs.ErrNotExist) {
			continue // reported as a missing directory when reading
		}
		if err != nil {
			return "", fmt.Errorf("reading %s: %w", p, err)
		}
		if info.Mode()&fs.ModeSymlink != 0 {
			return "", failure.New(v1alpha2.ReasonInvalidContent,
				"%s: %s is %q, but %s is a symlink", AnnotationsFile, ManifestsAnnotation, dir, p)
		}
	}
	return clean, nil
}

// readYAML decodes the YAML file p of fsys into v. A missing file is not
// an error: found is false.
func readYAML(fsys fs.FS, p string, v any) (found bool, err error) {
	info, err := fs.Lstat(fsys, p)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("reading %s: %w", p, err)
	case !info.Mode().IsRegular():
		return false, failure.New(v1alpha2.ReasonInvalidContent, "%s: not a regular file", p)
	case info.Size() > maxMetadataBytes:
		return false, failure.New(v1alpha2.ReasonInvalidContent, "%s: file is over the limit of %d bytes", p, maxMetadataBytes)
	}
	f, err := fsys.Open(p)
	if err != nil {
		return false, fmt.Errorf("reading %s: %w", p, err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxMetadataBytes+1))
	if err != nil {
		return false, fmt.Errorf("reading %s: %w", p, err)
	}
	if len(data) > maxMetadataBytes {
		return false, failure.New(v1alpha2.ReasonInvalidContent, "%s: file is over the limit of %d bytes", p, maxMetadataBytes)
	}
	if err := unmarshalYAML(data, v); err != nil {
		return false, failure.New(v1alpha2.ReasonInvalidContent, "%s: %s", p, describeDecodeError("", err))
	}
	return true, nil
}

// unmarshalYAML decodes data into v, turning a panic of the parser on
// hostile input into an error.
func unmarshalYAML(data []byte, v any) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("YAML parser failed: %v", r)
		}
	}()
	return yaml.Unmarshal(data, v)
}

// shortJSON returns raw compacted, cut to at most n bytes.
func shortJSON(raw json.RawMessage, n int) string {
	s := string(raw)
	var buf bytes.Buffer
	if json.Compact(&buf, raw) == nil {
		s = buf.String()
	}
	if len(s) <= n {
		return s
	}
	return strings.ToValidUTF8(s[:n], "") + "…"
}
