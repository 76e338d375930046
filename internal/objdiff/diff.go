package objdiff

import (
	"bytes"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/pmezard/go-difflib/difflib"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

// contextLines is how many unchanged lines surround a change, as in
// diff -u.
const contextLines = 3

// Object is one object of a diff: as it is (Live) and as it would be
// (Merged); nil on the side where it does not exist.
type Object struct {
	// Name is the object's name in the header (see Name).
	Name string
	// Live is the object as it is on the cluster; nil when it does not
	// exist (it is added).
	Live *unstructured.Unstructured
	// Merged is the object as it would be; nil when it would be deleted.
	Merged *unstructured.Unstructured
}

// Write writes the diff of every object of objs that changes to w, sorted
// by name, each side normalized (Normalize) and Secrets masked
// (MaskSecrets), and returns how many objects change.
func Write(w io.Writer, objs []Object) (changed int, err error) {
	sorted := slices.Clone(objs)
	slices.SortStableFunc(sorted, func(a, b Object) int { return strings.Compare(a.Name, b.Name) })
	for _, o := range sorted {
		live, merged := MaskSecrets(Normalize(o.Live), Normalize(o.Merged))
		ok, err := writeOne(w, o.Name, live, merged)
		if err != nil {
			return changed, err
		}
		if ok {
			changed++
		}
	}
	return changed, nil
}

// writeOne writes the unified diff of live and merged (already normalized
// and masked) under name, and reports whether they differ.
func writeOne(w io.Writer, name string, live, merged *unstructured.Unstructured) (bool, error) {
	a, err := toYAML(live)
	if err != nil {
		return false, fmt.Errorf("printing live %s: %w", name, err)
	}
	b, err := toYAML(merged)
	if err != nil {
		return false, fmt.Errorf("printing merged %s: %w", name, err)
	}
	if a == b {
		return false, nil
	}
	from, to := "live/"+name, "merged/"+name
	var buf bytes.Buffer
	fmt.Fprintf(&buf, "diff -u -N %s %s\n", from, to)
	err = difflib.WriteUnifiedDiff(&buf, difflib.UnifiedDiff{
		A: lines(a), B: lines(b), FromFile: from, ToFile: to, Context: contextLines,
	})
	if err != nil {
		return false, fmt.Errorf("diffing %s: %w", name, err)
	}
	if _, err := w.Write(buf.Bytes()); err != nil {
		return false, fmt.Errorf("writing the diff of %s: %w", name, err)
	}
	return true, nil
}

// toYAML prints obj as YAML, keys sorted; nil is the empty text.
func toYAML(obj *unstructured.Unstructured) (string, error) {
	if obj == nil {
		return "", nil
	}
	data, err := yaml.Marshal(obj.Object)
	return string(data), err
}

// lines splits text into lines, each with its newline.
func lines(text string) []string {
	if text == "" {
		return nil
	}
	out := strings.SplitAfter(text, "\n")
	if out[len(out)-1] == "" {
		out = out[:len(out)-1]
	} else {
		out[len(out)-1] += "\n"
	}
	return out
}
