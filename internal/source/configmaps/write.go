package configmaps

import (
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/rukpak/rukpak/api/v1alpha2"
	"github.com/rukpak/rukpak/internal/source"
	"github.com/rukpak/rukpak/pkg/failure"
)

const (
	fileMode = 0o644
	dirMode  = 0o755
)

// writer writes the keys of ConfigMaps as files, remembering which ConfigMap
// wrote each file and made each directory so that conflicts name both.
type writer struct {
	dir   string
	files map[string]owner // slash path → entry that wrote the file
	dirs  map[string]owner // slash path → first entry whose path made it
}

// owner is one entry of a source's list of ConfigMaps.
type owner struct {
	entry int    // index in the list
	name  string // namespace/name of the ConfigMap
}

func newWriter(dir string) *writer {
	return &writer{dir: dir, files: map[string]owner{}, dirs: map[string]owner{}}
}

// write writes every key of cm, the entry o of the list, as a file under p.
func (w *writer) write(o owner, p string, cm *corev1.ConfigMap) error {
	name := o.name
	base, err := source.CleanPath(p)
	if err != nil {
		return fmt.Errorf("ConfigMap %s: path: %w", name, err)
	}
	if err := w.claimDirs(o, base); err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Join(w.dir, filepath.FromSlash(base)), dirMode); err != nil {
		return fmt.Errorf("ConfigMap %s: creating %s: %w", name, base, err)
	}
	for _, k := range sortedKeys(cm.Data) {
		if err := w.writeFile(o, base, k, []byte(cm.Data[k])); err != nil {
			return err
		}
	}
	for _, k := range sortedKeys(cm.BinaryData) {
		if err := w.writeFile(o, base, k, cm.BinaryData[k]); err != nil {
			return err
		}
	}
	return nil
}

// claimDirs records base and its parents as directories of o, failing when
// another entry wrote a file there.
func (w *writer) claimDirs(o owner, base string) error {
	if base == "." {
		return nil
	}
	parts := strings.Split(base, "/")
	for n := range parts {
		d := strings.Join(parts[:n+1], "/")
		if prev, ok := w.files[d]; ok {
			return conflict(prev, o, d)
		}
		if _, ok := w.dirs[d]; !ok {
			w.dirs[d] = o
		}
	}
	return nil
}

// writeFile writes the key k of o as the file base/k.
func (w *writer) writeFile(o owner, base, k string, data []byte) error {
	name := o.name
	if !validKey(k) {
		return failure.New(v1alpha2.ReasonUnpackFailed, "ConfigMap %s has key %q, which is not a plain file name", name, k)
	}
	rel := path.Join(base, k)
	if prev, ok := w.files[rel]; ok {
		if prev == o {
			return failure.New(v1alpha2.ReasonSourceConflict, "ConfigMap %s has key %q in both data and binaryData", name, k)
		}
		return conflict(prev, o, rel)
	}
	if prev, ok := w.dirs[rel]; ok {
		return conflict(prev, o, rel)
	}
	w.files[rel] = o
	f, err := os.OpenFile(filepath.Join(w.dir, filepath.FromSlash(rel)), os.O_WRONLY|os.O_CREATE|os.O_EXCL, fileMode)
	if err != nil {
		return fmt.Errorf("ConfigMap %s: creating %s: %w", name, rel, err)
	}
	_, err = f.Write(data)
	if err == nil {
		err = f.Chmod(fileMode) // independent of the umask
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("ConfigMap %s: writing %s: %w", name, rel, err)
	}
	return nil
}

// validKey reports whether a ConfigMap key can be used as a file name as is.
// The API server allows only [-._a-zA-Z0-9]+, but keys are untrusted input.
func validKey(k string) bool {
	return k != "" && k != "." && k != ".." && !strings.ContainsAny(k, "/\\\x00")
}

// conflict is the failure of two entries writing the same path.
func conflict(first, second owner, rel string) error {
	return failure.New(v1alpha2.ReasonSourceConflict, "ConfigMaps %s and %s both write %s", first.name, second.name, rel)
}
