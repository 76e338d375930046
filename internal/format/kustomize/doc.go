// Package kustomize builds the kustomization at the root of an untrusted
// bundle with the kustomize API, entirely in memory and without network
// access.
//
// Build is a pipeline, in this order:
//
//  1. Open the bundle for reading through a read-only file system of
//     this package (not kustomize's in-memory one, which refuses names
//     such as "high-availability-1.21+"): a path is looked up, and a file
//     read, only when the build asks for it, so what the kustomization
//     does not reach is never read and may have any name or content.
//     What is read is held in memory, once per file, within Limits (bytes
//     per file, bytes and files in total); a symlink or special file the
//     build reaches is refused. Nothing outside the bundle is visible.
//  2. Check every kustomization the root reaches through resources, bases
//     and components, before kustomize sees any of them: every entry that
//     names a file or directory must be a relative path inside the bundle
//     (no URL, no git repository, no absolute path), Helm charts are
//     refused, generators, transformers and validators must be inline or
//     files (a directory's configuration is only known after a build, so
//     it cannot be checked), and the work the build implies, counting a
//     base once per use, must stay within Limits.
//  3. Build with krusty on that file system: files may only be loaded
//     from the kustomization's own directory and below, plugins are
//     restricted to kustomize's builtins (no exec, Go or container
//     functions), Helm is disabled.
//  4. Convert the result, in kustomize's output order, to unstructured
//     objects.
//
// Failures that are the bundle's fault are terminal failure.Errors:
// InvalidContent for limits, symlinks and references out of the bundle
// (kept by the file system even where kustomize's message would hide it),
// UnsupportedFeature for Helm charts and plugin configurations built from a
// directory, RenderFailed with kustomize's own message (which names the
// file) when the build fails. Only errors reading the bundle's own file
// system (and cancellation) are not failure.Errors, so they are retried.
package kustomize
