// Package sandboxed runs the built-in formats (plain, registry+v1, Helm)
// where a hostile bundle cannot hurt the process that asks for its
// objects: in a child process bounded by package sandbox, with the
// Secrets' values redacted from every error that comes back.
//
// Objects is a pipeline:
//
//  1. Find the directory the content is in (the content store hands out
//     os.DirFS trees; any other fs.FS is first copied to a temporary
//     directory).
//  2. Send the directory, the format's name and the format.Config to a
//     child of the running executable (the job this package registers in
//     its init function), which renders with the named format and sends
//     back the objects, or the failure with its reason.
//  3. A child over its memory or time limit is a failure with reason
//     ResourceLimit naming the limit and what it was rendering (the chart,
//     the kustomization); ordinary render errors keep their reasons.
//  4. Redact Config.Redact (the values read from Secrets) from the error,
//     whatever produced it. A render that needs the answers of lookups
//     (a *format.LookupsNeeded, sent by the child as a sandbox.Need) is
//     returned as such, unredacted, for the caller to answer.
//
// A plain bundle of YAML files over 1 MiB takes another way: the manager
// splits its files into documents (plain.ObjectsParsedBy), children parse
// the documents whose bytes it has not parsed before, several chunks at
// once, and the values of the others come from a memo kept by digest.
//
// Every render takes one of the runner's slots, of the tenant its context
// carries (package tenant): a child's, of the tenant's share and of the
// total, or, for a small plain bundle or remembered documents decoded in
// this process, one of the tenant's share taken with Runner.Acquire (no
// child starts, so it waits behind no other tenant's). Content that
// rendered before (drift correction, a BundleDeployment created again)
// waits like any other: the slots bound what children use together.
//
// Without a sandbox.Runner, the format runs in this process (step 2 and 3
// are skipped); redaction still applies.
package sandboxed
