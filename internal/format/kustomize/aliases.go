package kustomize

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"strings"

	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"

	"github.com/rukpak/rukpak/api/v1alpha2"
	"github.com/rukpak/rukpak/pkg/failure"
)

// aliases refuses the file at p when one of its YAML documents uses
// aliases so much that expanding them would blow up (a "billion laughs"
// document). kustomize keeps a file's YAML as a node tree and expands
// aliases as it builds, so such a file would only stop at the render's
// memory or time limit, with a message that names no file; the decoder
// used here counts the expansion and gives up early. Only files with both
// an anchor and an alias are decoded.
func (c *checker) aliases(p string) error {
	if c.checked[p] {
		return nil
	}
	c.checked[p] = true
	data, err := c.b.read(p)
	if err != nil {
		return err
	}
	if !bytes.Contains(data, []byte("&")) || !bytes.Contains(data, []byte("*")) {
		return nil
	}
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	for n := 1; ; n++ {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return nil //nolint:nilerr // not YAML kustomize can read either: it says so
		}
		var v any
		if err := yaml.Unmarshal(doc, &v); err != nil && strings.Contains(err.Error(), "excessive aliasing") {
			return failure.New(v1alpha2.ReasonInvalidContent, "%s: document %d: %v", p, n, err)
		}
	}
}
