// Package content makes sure the content of a revision is in the content
// store: it unpacks pinned sources once into a staging directory, commits
// the tree under its digest and remembers the digest, so the Bundle and
// BundleDeployment controllers, which both need the content, fetch it only
// once.
//
// The store has a quota; InUse tells it which content revisions still
// reference (every Bundle's status.contentDigest, and what this process
// unpacked for Bundles it has not forgotten), so that only other content is
// evicted. Content that is gone anyway (evicted, deleted, a new disk) is
// unpacked again from the pinned sources by the next Ensure.
package content
