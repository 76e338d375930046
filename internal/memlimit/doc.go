// Package memlimit picks the manager's soft memory limit (the Go runtime's
// GOMEMLIMIT): what a flag or the GOMEMLIMIT variable says, else a share
// of the memory its cgroup may use, else a fixed default. Under the limit
// the garbage collector runs as usual; near it, it runs more often, so a
// burst of work costs CPU rather than growing the process until it is
// killed. It also sets the garbage collector's target percentage (GOGC),
// lower than the runtime's default, since the manager's heap is mostly
// caches that stay.
package memlimit
