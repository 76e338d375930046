// Package values resolves the Helm values of a BundleDeployment: the
// documents named by spec.config.valuesFrom (ConfigMaps and Secrets in the
// system namespace), in order, then spec.config.values, deep-merged into one
// map, and a digest of the result that goes into the revision hash so that a
// change of values is an upgrade.
package values

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/rukpak/rukpak/api/v1alpha2"
	"github.com/rukpak/rukpak/pkg/failure"
)

// DefaultKey is the key of a valuesFrom object read when none is named.
const DefaultKey = "values.yaml"

// maxValuesBytes bounds one values document.
const maxValuesBytes = 1 << 20

// Kinds of valuesFrom references.
const (
	KindConfigMap = "ConfigMap"
	KindSecret    = "Secret"
)

// Resolved are the values a revision renders with.
type Resolved struct {
	// Values is the merged map; nil when the config sets no values.
	Values map[string]any
	// Digest is "sha256:<hex>" over the canonical JSON of Values; "" when
	// there are none.
	Digest string
	// Secrets are the values read from Secrets, to be redacted from any
	// message (see Redact): every string and number of a Secret's document
	// of at least MinSecretLen characters, longest first.
	Secrets []string
}

// Resolve reads cfg's valuesFrom from namespace through r and merges them,
// then cfg.Values, in order: later documents win, maps merge key by key,
// anything else (lists included) is replaced. A missing object or key, or a
// document that is not a YAML object, is a *failure.Error with reason
// InvalidConfig naming the reference.
func Resolve(ctx context.Context, r client.Reader, namespace string, cfg *v1alpha2.BundleConfig) (Resolved, error) {
	if cfg == nil || (cfg.Values == nil && len(cfg.ValuesFrom) == 0) {
		return Resolved{}, nil
	}
	merged := map[string]any{}
	var secrets []string
	for i, ref := range cfg.ValuesFrom {
		doc, err := read(ctx, r, namespace, ref)
		if err != nil {
			return Resolved{}, fmt.Errorf("spec.config.valuesFrom[%d]: %w", i, err)
		}
		if ref.Kind == KindSecret {
			secrets = append(secrets, secretStrings(doc)...)
		}
		merged = Merge(merged, doc)
	}
	if cfg.Values != nil && len(cfg.Values.Raw) > 0 {
		doc, err := parse(cfg.Values.Raw)
		if err != nil {
			return Resolved{}, failure.New(v1alpha2.ReasonInvalidConfig, "spec.config.values: %v", err)
		}
		merged = Merge(merged, doc)
	}
	b, err := json.Marshal(merged) // map keys are sorted: canonical
	if err != nil {
		return Resolved{}, fmt.Errorf("encoding values: %w", err)
	}
	sum := sha256.Sum256(b)
	res := Resolved{Values: merged, Digest: "sha256:" + hex.EncodeToString(sum[:]), Secrets: normalize(secrets)}
	return res, nil
}

// ReadFile reads a values file (for rukpakctl render --values).
func ReadFile(path string) (map[string]any, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading values file: %w", err)
	}
	doc, err := parse(data)
	if err != nil {
		return nil, fmt.Errorf("values file %s: %w", path, err)
	}
	return doc, nil
}

// read returns the values document ref names.
func read(ctx context.Context, r client.Reader, namespace string, ref v1alpha2.ValuesReference) (map[string]any, error) {
	key := ref.Key
	if key == "" {
		key = DefaultKey
	}
	what := fmt.Sprintf("%s %s/%s key %q", ref.Kind, namespace, ref.Name, key)
	var data []byte
	var found bool
	switch ref.Kind {
	case KindConfigMap:
		cm := &corev1.ConfigMap{}
		if err := r.Get(ctx, client.ObjectKey{Namespace: namespace, Name: ref.Name}, cm); err != nil {
			return nil, notFound(err, what)
		}
		var s string
		s, found = cm.Data[key]
		data = []byte(s)
		if !found {
			data, found = cm.BinaryData[key]
		}
	case KindSecret:
		sec := &corev1.Secret{}
		if err := r.Get(ctx, client.ObjectKey{Namespace: namespace, Name: ref.Name}, sec); err != nil {
			return nil, notFound(err, what)
		}
		data, found = sec.Data[key]
	default:
		return nil, failure.New(v1alpha2.ReasonInvalidConfig, "kind %q is neither ConfigMap nor Secret", ref.Kind)
	}
	if !found {
		return nil, failure.New(v1alpha2.ReasonInvalidConfig, "%s: no such key", what)
	}
	doc, err := parse(data)
	if err != nil {
		msg := err.Error()
		if ref.Kind == KindSecret {
			// A parser may quote what it could not read.
			msg = Redact(msg, secretFields(data))
		}
		return nil, failure.New(v1alpha2.ReasonInvalidConfig, "%s: %s", what, msg)
	}
	return doc, nil
}

// notFound turns a missing object into a terminal failure and wraps others.
func notFound(err error, what string) error {
	if apierrors.IsNotFound(err) {
		return failure.New(v1alpha2.ReasonInvalidConfig, "%s: object not found", what)
	}
	return fmt.Errorf("reading %s: %w", what, err)
}

// parse reads one YAML (or JSON) object; an empty document is an empty map.
func parse(data []byte) (map[string]any, error) {
	if len(data) > maxValuesBytes {
		return nil, fmt.Errorf("values are %d bytes, over the limit of %d", len(data), maxValuesBytes)
	}
	var v any
	if err := yaml.Unmarshal(data, &v); err != nil {
		return nil, fmt.Errorf("not valid YAML: %w", err)
	}
	switch m := v.(type) {
	case nil:
		return map[string]any{}, nil
	case map[string]any:
		return m, nil
	default:
		return nil, fmt.Errorf("values must be a YAML object, not %T", v)
	}
}

// Merge merges src over dst and returns dst: a key whose values are maps on
// both sides is merged recursively; any other value of src replaces dst's
// (a list is replaced, not appended to; an explicit null is kept so that the
// chart's defaults can be deleted, as Helm does). src's maps are copied, so
// later merges never write into src.
func Merge(dst, src map[string]any) map[string]any {
	if dst == nil {
		dst = make(map[string]any, len(src))
	}
	for k, sv := range src {
		sm, srcIsMap := sv.(map[string]any)
		dm, dstIsMap := dst[k].(map[string]any)
		switch {
		case srcIsMap && dstIsMap:
			dst[k] = Merge(dm, sm)
		case srcIsMap:
			dst[k] = Merge(nil, sm)
		default:
			dst[k] = sv
		}
	}
	return dst
}
