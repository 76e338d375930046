package upload

import (
	"fmt"
	"regexp"
	"strings"
	"time"
)

// Labels and annotations of the ConfigMaps a Store writes.
const (
	// LabelChunk ("true") marks a chunk ConfigMap. A manager must exclude
	// such ConfigMaps from its informer caches.
	LabelChunk = "core.rukpak.io/upload-chunk"
	// LabelManifest marks a manifest ConfigMap; its value is the first 63
	// hex digits of the upload's digest (a label value holds at most 63
	// characters).
	LabelManifest = "core.rukpak.io/upload"
	// annotationUsed is when a Put last reused an existing chunk or
	// manifest (RFC 3339); it restarts the object's grace period.
	annotationUsed = "core.rukpak.io/upload-used"
)

// Sizes and periods.
const (
	// ChunkSize is the size of every chunk but the last: well under the
	// 1 MiB limit of a ConfigMap.
	ChunkSize = 512 << 10
	// DefaultMaxSize is the largest archive (compressed) a Store accepts.
	DefaultMaxSize = 128 << 20
	// DefaultGracePeriod is how long GC spares a chunk or manifest after it
	// was written or reused, whether or not anything references it.
	DefaultGracePeriod = 10 * time.Minute
	// DefaultConcurrency is how many chunks Put writes at once.
	DefaultConcurrency = 8
	// prefetch is how many chunks Open reads ahead.
	prefetch = 4
)

// Keys of the ConfigMaps' data.
const (
	// chunkKey holds a chunk's bytes in binaryData.
	chunkKey = "chunk"
	// manifestFormat is the value of formatKey in every manifest.
	manifestFormat = "rukpak-upload-v1"
	formatKey      = "format"
	digestKey      = "digest"
	sizeKey        = "size"
	chunksKey      = "chunks"
)

const digestPrefix = "sha256:"

var hexDigest = regexp.MustCompile(`^[0-9a-f]{64}$`)

// ParseDigest returns the hex part of an upload digest "sha256:<hex>".
func ParseDigest(digest string) (string, error) {
	hex, ok := strings.CutPrefix(digest, digestPrefix)
	if !ok || !hexDigest.MatchString(hex) {
		return "", fmt.Errorf("invalid upload digest %q: want sha256:<64 lowercase hex digits>", digest)
	}
	return hex, nil
}

// ManifestName is the name of the manifest ConfigMap of the upload with the
// given hex digest.
func ManifestName(hex string) string { return "upload-" + hex }

// ChunkName is the name of the chunk ConfigMap with the given hex sha256.
func ChunkName(hex string) string { return "upload-chunk-" + hex }

// manifestLabel is the LabelManifest value of the upload with hex digest.
func manifestLabel(hex string) string { return hex[:63] }
