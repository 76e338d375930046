// Package bundle reconciles Bundles: it re-checks that whoever wrote a
// Bundle may use its class, Secrets and ConfigMaps (unless the manager
// wrote it for a BundleDeployment), unpacks its (pinned or floating)
// sources into the content store once, reports the content digest
// and object count in the status, and removes the content from the store
// when the last Bundle using it is deleted.
package bundle
