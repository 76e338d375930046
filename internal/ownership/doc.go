// Package ownership decides whether a Bundle is a revision of a
// BundleDeployment, so that rukpak installs, re-applies, rolls back to and
// deletes only Bundles a BundleDeployment created itself.
//
// A Bundle's name alone proves nothing: anyone allowed to write Bundles can
// plant one under the name the next revision will get (the name is a hash
// of the spec), and anyone allowed to write a BundleDeployment's status can
// point status.activeBundle or status.lastHealthyBundle at another team's
// Bundle. A Bundle is a revision of a BundleDeployment only when all of
// these hold:
//
//  1. its controller ownerReference is the BundleDeployment, with its UID
//     (a BundleDeployment deleted and created again under the same name
//     has another UID);
//  2. it is labelled for the BundleDeployment and named like its revisions
//     (the BundleDeployment's name, '-', ten hex digits);
//  3. it was written by rukpak itself, when the writers are known (the
//     requested-by annotation the admission policy sets from the request);
//  4. for the revision about to be installed, its spec (class, sources,
//     config) equals the pinned one; for earlier revisions, its class is
//     the BundleDeployment's.
package ownership
