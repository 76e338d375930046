package renderstore

import (
	"crypto/sha256"
	"encoding/hex"
	"strconv"
	"strings"
)

const (
	// namePrefix starts the name of every chunk Secret.
	namePrefix = "render-"
	// maxName is the longest name of an object (a DNS subdomain).
	maxName = 253
	// indexReserve is the room a chunk's "-<index>" takes at most (see
	// maxChunksCap).
	indexReserve = 6
	// maxLabelValue is the longest label value.
	maxLabelValue = 63
	// hashLen is how many hex digits of a name's sha256 tell a shortened
	// name apart.
	hashLen = 16
)

// chunkName is the name of chunk i of bundle's render:
// render-<bundle>-<i>. A Bundle name too long for that (Bundles have at
// most 63 characters, but the Store takes any name) is shortened to a
// prefix and a hash of the whole name.
func chunkName(bundle string, i int) string {
	return namePrefix + shorten(bundle, maxName-len(namePrefix)-indexReserve) + "-" + strconv.Itoa(i)
}

// labelValue is the LabelRenderOf value of bundle's chunks.
func labelValue(bundle string) string { return shorten(bundle, maxLabelValue) }

// shorten returns name when it has at most max characters, and otherwise
// a prefix of it and hashLen hex digits of its sha256, max characters in
// all. name is a DNS subdomain; the prefix loses trailing '-' and '.' so
// that the result is one too (and a valid label value).
func shorten(name string, max int) string {
	if len(name) <= max {
		return name
	}
	sum := sha256.Sum256([]byte(name))
	prefix := strings.TrimRight(name[:max-hashLen-1], "-.")
	return prefix + "-" + hex.EncodeToString(sum[:])[:hashLen]
}

// chunkIndex returns i when name is chunkName(bundle, i).
func chunkIndex(bundle, name string) (int, bool) {
	rest, ok := strings.CutPrefix(name, strings.TrimSuffix(chunkName(bundle, 0), "0"))
	if !ok {
		return 0, false
	}
	i, err := strconv.Atoi(rest)
	if err != nil || i < 0 || strconv.Itoa(i) != rest {
		return 0, false
	}
	return i, true
}
