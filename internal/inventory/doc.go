// Package inventory records which objects each BundleDeployment manages, as
// compact IDs (group, version, kind, namespace, name), so that pruning is a
// set difference and deletion knows everything to remove.
//
// An inventory is stored gzip-compressed in ConfigMaps of the system
// namespace named inventory-<owner's UID>[-<n>], each chunk well below the
// 1 MiB object limit; 10,000 objects fit in one small ConfigMap. Saves that
// do not change the inventory make no request. Inventories belong to a
// BundleDeployment's UID, not its name: one created under the name of a
// deleted BundleDeployment does not see the old one's inventory.
//
// Objects a BundleDeployment leaves in place for others (kept on delete or
// on prune) are listed, by UID, in its release record (released-<UID>),
// through which — and only through which — another BundleDeployment takes
// them over, once (see Store.Release, Store.Take and Store.Settle).
package inventory
