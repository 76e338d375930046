// Package sourcekey names what sources yield for whoever asks for them: a
// digest of the sources as written (every field: URLs, ranges, pins, TLS
// settings, what they verify) and of the contents of every Secret and
// ConfigMap they name. Two requests with the same key ask the same
// servers the same question with the same credentials, so the answer to
// one may serve the other; a request whose credentials differ in any way,
// or that names none, gets another key. Package resolvecache keys the
// lookups of floating sources by it, package content the unpacks of
// pinned ones.
package sourcekey

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"hash"
	"slices"

	corev1 "k8s.io/api/core/v1"

	"github.com/rukpak/rukpak/api/v1alpha2"
	"github.com/rukpak/rukpak/internal/refs"
)

// Contents reads the Secrets and ConfigMaps sources name (in
// rukpak-system): *credentials.Reader.
type Contents interface {
	// Secret returns the Secret ref names.
	Secret(ctx context.Context, ref *v1alpha2.LocalObjectReference) (*corev1.Secret, error)
	// ConfigMap returns the ConfigMap ref names.
	ConfigMap(ctx context.Context, ref *v1alpha2.LocalObjectReference) (*corev1.ConfigMap, error)
}

// Of returns the key of srcs, reading the Secrets and ConfigMaps they name
// through contents; an error when one cannot be read (the caller then
// asks without sharing, and the source reports it).
func Of(ctx context.Context, contents Contents, srcs []v1alpha2.BundleSource) (string, error) {
	h := sha256.New()
	spec, err := json.Marshal(srcs)
	if err != nil {
		return "", fmt.Errorf("encoding sources: %w", err)
	}
	field(h, "sources", spec)
	for _, r := range refs.Distinct(refs.List(srcs, nil)) {
		ref := &v1alpha2.LocalObjectReference{Name: r.Name}
		field(h, string(r.Resource), []byte(r.Name))
		switch r.Resource {
		case refs.Secrets:
			s, err := contents.Secret(ctx, ref)
			if err != nil {
				return "", err
			}
			data(h, s.Data)
		case refs.ConfigMaps:
			cm, err := contents.ConfigMap(ctx, ref)
			if err != nil {
				return "", err
			}
			strs := make(map[string][]byte, len(cm.Data))
			for k, v := range cm.Data {
				strs[k] = []byte(v)
			}
			data(h, strs)
			data(h, cm.BinaryData)
		}
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// field writes one length-prefixed field into h, so that no two
// different sequences of fields hash alike.
func field(h hash.Hash, name string, value []byte) {
	fmt.Fprintf(h, "%s:%d:", name, len(value))
	h.Write(value)
}

// data writes a map's entries into h in key order.
func data(h hash.Hash, m map[string][]byte) {
	fmt.Fprintf(h, "entries:%d:", len(m))
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		field(h, "key", []byte(k))
		field(h, "value", m[k])
	}
}
