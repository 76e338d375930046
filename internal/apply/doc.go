// Package apply is rukpak's apply engine: it turns a revision's objects into
// cluster state with server-side apply under one field manager, and removes
// what a revision no longer has.
//
// Applying a Plan is a pipeline, in order:
//
//  1. Prepare (no cluster writes): place namespaced objects without a
//     namespace in the install namespace, label and annotate every object
//     with its owner and revision, refuse duplicates and kinds that neither
//     the cluster nor a CRD of the bundle defines, and sort objects into two
//     phases: CRDs and Namespaces first, then the rest;
//  2. validate every object with a server-side dry-run before the first
//     write; objects that need a CRD or Namespace of the same bundle are
//     validated right after the first phase, still before any of the second
//     phase is written;
//  3. apply the first phase in parallel (bounded), wait until its CRDs are
//     Established, then apply the second phase in parallel.
//
// Prune deletes objects in a safe order (namespaced objects, then
// cluster-scoped ones, then Namespaces, then — only when asked — CRDs), and
// only those still labelled as owned by the caller; those it is told to
// keep it leaves in place and reports Kept, with their UIDs, for the
// caller to release. ClusterRoles that kube-controller-manager's
// aggregation controller writes back right after their deletion are
// deleted again (writeback.go).
//
// Collisions decide which existing objects a plan may take over: objects
// another BundleDeployment released (left in place, recorded by the
// caller) are taken through Collisions.Take, once; see collision.go.
//
// Every write returns a ChangeSet saying what happened to each object
// (created, configured, unchanged, deleted, kept).
package apply
