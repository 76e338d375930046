// Package sandbox runs work on untrusted content (rendering a Helm chart,
// building a kustomization) in a child process of the current binary, so
// that content that loops, allocates without bound or recurses too deep
// kills the child, not the manager.
//
// The child is the running executable itself (os.Executable), started with
// an environment variable that names a job. A package that offers a job
// calls ServeIfChild from an init function: in the child it runs the job
// and exits before main (or a test's TestMain) starts; in every other
// process it returns at once. So the manager, rukpakctl and test binaries
// that import such a package all work as their own sandbox.
//
// One run is a pipeline:
//
//  1. The parent waits for one of Limits.Concurrency slots, so that a few
//     children at most compete with the manager for the CPU and their
//     memory stays under Concurrency times Limits.Memory, and for one of
//     the Limits.TenantConcurrency slots of the tenant its context
//     carries (package tenant), so that no tenant holds them all. Every
//     child waits, whatever it runs and however often the same input ran
//     before; work done in the caller's process takes a slot with Acquire.
//  2. It starts the child in a process group of its own with a minimal
//     environment and writes the job's input to its stdin as JSON.
//  3. The child, before reading any input, bounds itself: RLIMIT_DATA to
//     Limits.Memory (the Go heap cannot grow past it: an allocation over
//     it is a fatal "out of memory"), a Go memory limit under it (the
//     collector works harder before the hard bound is hit), a maximum
//     goroutine stack (deep template recursion is a fatal "stack
//     overflow" instead of gigabytes of stack), one processor and a lower
//     CPU priority, and a deadline of its own in case the parent is gone.
//  4. The child runs the job and writes its result, or the error the job
//     returned with its condition reason, to stdout as JSON, then exits.
//     A job that needs something only the parent has (a *Need) sends what
//     it needs, as JSON, and the parent's Run returns that *Need.
//  5. The parent reads at most Limits.MaxOutputBytes of output, kills the
//     whole process group once the child has used Limits.Timeout of CPU
//     time (or taken ten times that by the clock), and turns a child that
//     died or was killed into a *failure.Error with reason ResourceLimit
//     whose message names the limit ("rendering chart x exceeded the
//     memory limit of 512 MiB", "... did not finish within 30s of CPU
//     time").
//
// A child may Describe what it is doing (say, which chart it renders), so
// that the parent names it if the child dies.
package sandbox
