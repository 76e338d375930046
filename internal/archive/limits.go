package archive

import "github.com/rukpak/rukpak/internal/limits"

// Default limits; see Limits.
const (
	defaultMaxBytes     int64 = 1 << 30
	defaultMaxFiles           = 100_000
	defaultMaxFileBytes int64 = 512 << 20
	defaultMaxRatio     int64 = 200
	defaultMaxPathBytes int64 = 32 << 20
)

// ratioGrace is the number of uncompressed bytes a gzip stream may produce
// before MaxRatio is enforced: tiny archives of small files are mostly tar
// padding and compress far better than 200:1.
const ratioGrace = 1 << 20

// Limits bound what one archive may make Untar write. A zero (or negative)
// field takes its default.
type Limits struct {
	// MaxBytes is the total size of the regular files written; default 1 GiB.
	MaxBytes int64
	// MaxFiles is the number of entries of any type; default 100_000.
	MaxFiles int
	// MaxFileBytes is the size of one regular file; default 512 MiB.
	MaxFileBytes int64
	// MaxPathBytes is the total length of the paths the archive creates
	// (its entries and the parent directories they imply); default 32 MiB.
	// It bounds the memory extraction keeps about paths, which the size of
	// the files does not: a small archive of deeply nested long names
	// would otherwise grow it to gigabytes.
	MaxPathBytes int64
	// MaxRatio is the ratio of uncompressed to compressed bytes a gzip stream
	// may reach once it has produced more than 1 MiB; default 200.
	MaxRatio int64
}

// DefaultLimits returns the default limits.
func DefaultLimits() Limits {
	return Limits{
		MaxBytes:     defaultMaxBytes,
		MaxFiles:     defaultMaxFiles,
		MaxFileBytes: defaultMaxFileBytes,
		MaxRatio:     defaultMaxRatio,
		MaxPathBytes: defaultMaxPathBytes,
	}
}

// withDefaults returns l with every unset field set to its default.
func (l Limits) withDefaults() Limits {
	d := DefaultLimits()
	l.MaxBytes = limits.PositiveOr(l.MaxBytes, d.MaxBytes)
	l.MaxFiles = limits.PositiveOr(l.MaxFiles, d.MaxFiles)
	l.MaxFileBytes = limits.PositiveOr(l.MaxFileBytes, d.MaxFileBytes)
	l.MaxPathBytes = limits.PositiveOr(l.MaxPathBytes, d.MaxPathBytes)
	l.MaxRatio = limits.PositiveOr(l.MaxRatio, d.MaxRatio)
	return l
}

// Options configure an extraction.
type Options struct {
	// Limits bound what the archive may write.
	Limits Limits
	// Whiteouts applies OCI/AUFS whiteouts (".wh.NAME" deletes NAME already
	// in dir from an earlier layer; ".wh..wh..opq" empties the directory of
	// what earlier layers wrote) — for image layers applied in order onto one
	// dir. With it, an entry may also replace a directory with a file or a
	// file with a directory; without it, such an entry is refused.
	Whiteouts bool
}
