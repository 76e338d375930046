package lookup

import (
	"fmt"

	"github.com/rukpak/rukpak/internal/limits"
)

// Defaults of Limits.
const (
	// DefaultMaxQueries is the most distinct lookups one render may make.
	DefaultMaxQueries = 64
	// DefaultMaxBytes is the most the answers of one render may hold
	// together, as JSON: 4 MiB.
	DefaultMaxBytes int64 = 4 << 20
	// DefaultMaxPasses is the most times a chart is rendered to learn
	// what it looks up (each pass may find lookups that depend on the
	// answers of the previous one).
	DefaultMaxPasses = 8
)

// Limits bound what answering one render's lookups may cost the manager
// and the API server. A zero field means its default.
type Limits struct {
	// MaxQueries is the most distinct queries of a render.
	MaxQueries int
	// MaxBytes is the most bytes of JSON the answers of a render may hold
	// together, lists included.
	MaxBytes int64
	// MaxPasses is the most times a render is run.
	MaxPasses int
}

// DefaultLimits returns the default limits.
func DefaultLimits() Limits {
	return Limits{MaxQueries: DefaultMaxQueries, MaxBytes: DefaultMaxBytes, MaxPasses: DefaultMaxPasses}
}

// withDefaults returns l with every zero field set to its default.
func (l Limits) withDefaults() Limits {
	d := DefaultLimits()
	l.MaxQueries = limits.PositiveOr(l.MaxQueries, d.MaxQueries)
	l.MaxBytes = limits.PositiveOr(l.MaxBytes, d.MaxBytes)
	l.MaxPasses = limits.PositiveOr(l.MaxPasses, d.MaxPasses)
	return l
}

// bytesString says n bytes in the largest binary unit that divides it.
func bytesString(n int64) string {
	for _, u := range []struct {
		shift uint
		name  string
	}{{30, "GiB"}, {20, "MiB"}, {10, "KiB"}} {
		if n >= 1<<u.shift && n%(1<<u.shift) == 0 {
			return fmt.Sprintf("%d %s", n>>u.shift, u.name)
		}
	}
	return fmt.Sprintf("%d bytes", n)
}
