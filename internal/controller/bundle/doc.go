// Package bundle reconciles Bundles made on their own: it re-checks that
// whoever wrote a Bundle may use its class, Secrets and ConfigMaps,
// unpacks its (pinned or floating) sources into the content store once,
// reports the content digest and object count in the status, and removes
// the content from the store when the last Bundle using it is deleted.
//
// Revisions of a BundleDeployment (a Bundle whose controller reference
// names one) are unpacked, rendered and reported by the BundleDeployment
// controller, in the one status write it makes per revision anyway; this
// controller only removes their content when they are deleted.
package bundle
