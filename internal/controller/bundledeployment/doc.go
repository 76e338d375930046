// Package bundledeployment reconciles BundleDeployments: the desired,
// continuously managed install of a bundle.
//
// One reconcile is a pipeline of phases, in order:
//
//  1. resolve: pin the sources (content digests, later image digests and
//     commits) and derive the revision name <bd>-<hash>;
//  2. bundle: make sure the immutable Bundle of that revision exists;
//  3. content: make sure its content is in the content store;
//  4. install: render objects with the class's format, validate them with a
//     server-side dry-run, record the union of old and new inventory, apply
//     them with server-side apply, prune what the new revision dropped and
//     record the new inventory — or, when the revision is already applied,
//     put back objects that were deleted or edited (drift);
//  5. history: delete Bundles beyond revisionHistoryLimit.
//
// Deletion runs its own phases: prune every inventoried object (CRDs per
// spec.deletionPolicy), delete the inventory and the Bundles, drop the
// finalizer. A paused BundleDeployment makes no writes at all.
package bundledeployment
