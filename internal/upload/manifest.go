package upload

import (
	"fmt"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// Info describes a stored upload.
type Info struct {
	// Digest is the archive's digest, "sha256:<hex>".
	Digest string
	// Size is the archive's size in bytes (compressed).
	Size int64
	// Chunks is how many chunks hold the archive.
	Chunks int
}

// chunkRef is one entry of a manifest.
type chunkRef struct {
	hex  string // sha256 of the chunk's bytes
	size int64
}

// manifest lists the chunks of one upload in order.
type manifest struct {
	digest string
	size   int64
	chunks []chunkRef
	// uploaders are the users who uploaded it (uploadersOf), when read
	// from a stored manifest.
	uploaders []string
}

func (m *manifest) info() Info {
	return Info{Digest: m.digest, Size: m.size, Chunks: len(m.chunks)}
}

// configMap returns the immutable manifest ConfigMap of m, recording
// uploader; hex is m's digest without its prefix. The chunks are listed one
// a line as "<hex> <size>".
func (m *manifest) configMap(namespace, hex, uploader string) *corev1.ConfigMap {
	var b strings.Builder
	for _, c := range m.chunks {
		fmt.Fprintf(&b, "%s %d\n", c.hex, c.size)
	}
	return &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{
			Name:        ManifestName(hex),
			Namespace:   namespace,
			Labels:      map[string]string{LabelManifest: manifestLabel(hex)},
			Annotations: map[string]string{uploaderKey(uploader): uploader},
		},
		Immutable: ptr.To(true),
		Data: map[string]string{
			formatKey: manifestFormat,
			digestKey: m.digest,
			sizeKey:   strconv.FormatInt(m.size, 10),
			chunksKey: b.String(),
		},
	}
}

// parseManifest reads a manifest ConfigMap. The sizes of the chunks must add
// up to the archive's size.
func parseManifest(cm *corev1.ConfigMap) (*manifest, error) {
	if f := cm.Data[formatKey]; f != manifestFormat {
		return nil, fmt.Errorf("manifest %s has format %q, want %q", cm.Name, f, manifestFormat)
	}
	m := &manifest{digest: cm.Data[digestKey]}
	hex, err := ParseDigest(m.digest)
	if err != nil {
		return nil, fmt.Errorf("manifest %s: %w", cm.Name, err)
	}
	if cm.Name != ManifestName(hex) {
		return nil, fmt.Errorf("manifest %s lists the digest %s of another upload", cm.Name, m.digest)
	}
	if m.size, err = strconv.ParseInt(cm.Data[sizeKey], 10, 64); err != nil || m.size < 0 {
		return nil, fmt.Errorf("manifest %s has an invalid size %q", cm.Name, cm.Data[sizeKey])
	}
	var sum int64
	for i, line := range strings.Split(strings.TrimSuffix(cm.Data[chunksKey], "\n"), "\n") {
		if line == "" && m.size == 0 {
			continue
		}
		c, err := parseChunkRef(line)
		if err != nil {
			return nil, fmt.Errorf("manifest %s, chunk %d: %w", cm.Name, i, err)
		}
		m.chunks = append(m.chunks, c)
		sum += c.size
	}
	if sum != m.size {
		return nil, fmt.Errorf("manifest %s: the chunks hold %d bytes, but the archive has %d", cm.Name, sum, m.size)
	}
	return m, nil
}

func parseChunkRef(line string) (chunkRef, error) {
	hex, size, ok := strings.Cut(line, " ")
	if !ok || !hexDigest.MatchString(hex) {
		return chunkRef{}, fmt.Errorf("invalid entry %q: want \"<hex sha256> <size>\"", line)
	}
	n, err := strconv.ParseInt(size, 10, 64)
	if err != nil || n <= 0 || n > ChunkSize {
		return chunkRef{}, fmt.Errorf("invalid entry %q: the size must be 1 to %d", line, ChunkSize)
	}
	return chunkRef{hex: hex, size: n}, nil
}
