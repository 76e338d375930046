package sandbox

import (
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/rukpak/rukpak/internal/limits"
)

// Default limits of one child.
const (
	// DefaultMemory is the memory a child may use: 512 MiB.
	DefaultMemory int64 = 512 << 20
	// DefaultTimeout is how much CPU time a child may use.
	DefaultTimeout = 30 * time.Second
	// DefaultConcurrency is how many children run at once.
	DefaultConcurrency = 4
	// DefaultMaxOutputBytes is the most a child may write as its result:
	// 256 MiB (a Helm chart may render up to 128 MiB of YAML, which is
	// more as JSON).
	DefaultMaxOutputBytes int64 = 256 << 20
	// minMemory is the least memory a child is given, whatever it is
	// asked: the Go runtime and the binary's data need some.
	minMemory int64 = 64 << 20
)

// DefaultTenantConcurrency is how many of concurrency slots one tenant
// may hold when Limits.TenantConcurrency is 0: half, at least 1.
func DefaultTenantConcurrency(concurrency int) int {
	return max(concurrency/2, 1)
}

// Limits bound one child. A zero field means its default.
type Limits struct {
	// Memory is the most memory, in bytes, the child's heap and data may
	// take (RLIMIT_DATA).
	Memory int64
	// Timeout is how much CPU time the child may use before its process
	// group is killed (see cpu.go).
	Timeout time.Duration
	// WallTimeout is how long the child may take by the clock; 0 means
	// wallFactor times Timeout where CPU time is metered, else Timeout.
	WallTimeout time.Duration
	// Concurrency is how many children of one Runner run at once; others
	// wait for a slot.
	Concurrency int
	// TenantConcurrency is how many of those one tenant's children (see
	// package tenant) may take at once; 0 means half of Concurrency (at
	// least 1), so that one tenant never holds every slot.
	TenantConcurrency int
	// MaxOutputBytes is the most bytes the child may write as its result.
	MaxOutputBytes int64
}

// DefaultLimits returns the limits a zero Limits stands for.
func DefaultLimits() Limits {
	return Limits{
		Memory:            DefaultMemory,
		Timeout:           DefaultTimeout,
		WallTimeout:       wallTimeout(DefaultTimeout),
		Concurrency:       DefaultConcurrency,
		TenantConcurrency: DefaultTenantConcurrency(DefaultConcurrency),
		MaxOutputBytes:    DefaultMaxOutputBytes,
	}
}

// withDefaults returns l with every zero field set to its default.
func (l Limits) withDefaults() Limits {
	d := DefaultLimits()
	l.Memory = max(limits.PositiveOr(l.Memory, d.Memory), minMemory)
	l.Timeout = limits.PositiveOr(l.Timeout, d.Timeout)
	l.WallTimeout = limits.PositiveOr(l.WallTimeout, wallTimeout(l.Timeout))
	l.Concurrency = limits.PositiveOr(l.Concurrency, d.Concurrency)
	// The tenant's share defaults from, and never exceeds, the
	// concurrency actually used.
	l.TenantConcurrency = min(limits.PositiveOr(l.TenantConcurrency, DefaultTenantConcurrency(l.Concurrency)), l.Concurrency)
	l.MaxOutputBytes = limits.PositiveOr(l.MaxOutputBytes, d.MaxOutputBytes)
	return l
}

// softMemory is the soft memory limit of a child with memory bytes, the
// heap size at which its collector starts to work harder: three quarters.
func softMemory(memory int64) int64 {
	return memory * 3 / 4
}

// maxStack is the largest goroutine stack of a child with memory bytes:
// an eighth of it, at most 64 MiB.
func maxStack(memory int64) int64 {
	return min(memory/8, 64<<20)
}

// bytesString formats n bytes for a message: "512 MiB".
func bytesString(n int64) string {
	q := resource.NewQuantity(n, resource.BinarySI).String()
	for _, unit := range []string{"Ki", "Mi", "Gi", "Ti"} {
		if len(q) > len(unit) && q[len(q)-len(unit):] == unit {
			return q[:len(q)-len(unit)] + " " + unit + "B"
		}
	}
	return fmt.Sprintf("%d bytes", n)
}
