// Package objdiff prints what a change of Kubernetes objects would do as
// unified diffs, one per object, the way kubectl diff shows them. It is a
// pipeline, in order:
//
//  1. Normalize each side (the object as it is, and as it would be):
//     drop what the API server keeps for itself (managedFields,
//     resourceVersion, generation, uid, creationTimestamp, selfLink) and
//     status, which applying a spec does not write;
//  2. Mask Secrets: every value of data and stringData becomes ***, or
//     *** (before) and *** (after) where it changes, so the diff says which
//     keys change and never what they hold;
//  3. print each side as YAML (keys sorted) and diff the lines, with a
//     header naming the object as kubectl diff does
//     (diff -u -N live/<group.version.Kind.namespace.name> merged/…);
//     an object that does not exist on one side is all + or all -.
//
// Objects are written sorted by that name, so the output is stable. The
// line diff is github.com/pmezard/go-difflib's. SideBySides runs steps 1
// and 2 the same way and returns the lines of step 3 paired in two
// columns (rukpakctl ui's review page).
package objdiff
