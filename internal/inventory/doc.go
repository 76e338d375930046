// Package inventory records which objects each BundleDeployment manages, as
// compact IDs (group, version, kind, namespace, name), so that pruning is a
// set difference and deletion knows everything to remove.
//
// An inventory is stored gzip-compressed in ConfigMaps of the system
// namespace named inventory-<owner>-<n>, each chunk well below the 1 MiB
// object limit; 10,000 objects fit in one small ConfigMap. Saves that do
// not change the inventory make no request.
package inventory
