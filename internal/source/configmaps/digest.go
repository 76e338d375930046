package configmaps

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"hash"
	"sort"

	corev1 "k8s.io/api/core/v1"
)

// digestVersion starts every ConfigMap digest, so that another encoding
// (with another version) cannot produce digests equal to this one's.
const digestVersion = "rukpak-configmap-v1"

// Digest returns the content digest ("sha256:<hex>") of a ConfigMap: a
// sha256 over a version tag, then every key of data and then every key of
// binaryData in sorted order, each as a section name ("data" or
// "binaryData"), the key and the value, every field prefixed with its
// length. The same key and value in data and in binaryData give different
// digests. Names, labels and other metadata are not part of the digest.
func Digest(cm *corev1.ConfigMap) string {
	h := sha256.New()
	field(h, []byte(digestVersion))
	for _, k := range sortedKeys(cm.Data) {
		field(h, []byte("data"))
		field(h, []byte(k))
		field(h, []byte(cm.Data[k]))
	}
	for _, k := range sortedKeys(cm.BinaryData) {
		field(h, []byte("binaryData"))
		field(h, []byte(k))
		field(h, cm.BinaryData[k])
	}
	return "sha256:" + hex.EncodeToString(h.Sum(nil))
}

// field writes the length of b as 8 bytes big-endian, then b.
func field(h hash.Hash, b []byte) {
	var n [8]byte
	binary.BigEndian.PutUint64(n[:], uint64(len(b)))
	h.Write(n[:])
	h.Write(b)
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
