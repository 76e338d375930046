package upload

import (
	"encoding/json"
	"regexp"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// FieldManager is the field manager of every write a Store makes. It is
// part of the mark of what rukpak wrote: GC deletes a ConfigMap only when
// this manager set its chunk or manifest label (see written).
const FieldManager = "rukpak-upload"

var (
	chunkNamePattern    = regexp.MustCompile(`^upload-chunk-[0-9a-f]{64}$`)
	manifestNamePattern = regexp.MustCompile(`^upload-[0-9a-f]{64}$`)
)

// writtenChunk reports whether obj is a chunk a Store wrote: a name of the
// chunk pattern, LabelChunk "true", set by FieldManager.
func writtenChunk(obj metav1.Object) bool {
	return chunkNamePattern.MatchString(obj.GetName()) &&
		obj.GetLabels()[LabelChunk] == "true" &&
		fieldSetBy(obj, "f:labels", LabelChunk, FieldManager)
}

// writtenManifest reports whether obj is a manifest a Store wrote: a name
// of the manifest pattern, LabelManifest matching that name, set by
// FieldManager.
func writtenManifest(obj metav1.Object) bool {
	name := obj.GetName()
	return manifestNamePattern.MatchString(name) &&
		obj.GetLabels()[LabelManifest] == manifestLabel(name[len(ManifestName("")):]) &&
		fieldSetBy(obj, "f:labels", LabelManifest, FieldManager)
}

// fieldSetBy reports whether the managedFields of obj record manager as an
// owner of key in the metadata map field ("f:labels" or "f:annotations").
func fieldSetBy(obj metav1.Object, field, key, manager string) bool {
	for _, e := range obj.GetManagedFields() {
		if e.Manager != manager || e.FieldsV1 == nil {
			continue
		}
		var fields struct {
			Metadata map[string]map[string]json.RawMessage `json:"f:metadata"`
		}
		if err := json.Unmarshal(e.FieldsV1.Raw, &fields); err != nil {
			continue
		}
		if _, ok := fields.Metadata[field]["f:"+key]; ok {
			return true
		}
	}
	return false
}
