// Package store is rukpak's content store: unpacked bundle trees on local
// disk, addressed by a digest of their content.
//
// A tree goes through the store as a pipeline, in order:
//
//  1. NewStaging hands out a fresh, empty staging directory inside the
//     store, so that the final move is a rename on one filesystem.
//  2. The caller writes the tree into it (sources unpack there).
//  3. Commit hashes the tree (see Commit for what the digest covers) and
//     renames the staging directory to the tree's content address. Identical
//     content committed twice, even concurrently, ends up stored once.
//  4. Has and FS find and read committed trees (and record that they were
//     used); Delete removes them.
//
// With a quota (WithQuota), Commit first makes room: it evicts committed
// trees that no revision references (SetInUse says which are referenced),
// least recently used first. A tree larger than the quota, or one that
// would not fit even after evicting every unreferenced tree, is refused
// with a terminal ResourceLimit failure naming the quota, and nothing is
// evicted for it. The size of a tree is the bytes of its regular files.
//
// On disk the store is laid out as
//
//	<dir>/sha256/<hex>/   committed trees
//	<dir>/staging/<rand>/ staging directories and trees being deleted
//
// A committed tree appears under its address in a single rename and leaves
// it in a single rename, so a tree seen under its address is always whole.
// Staging directories left over by a crash are removed by New.
package store
