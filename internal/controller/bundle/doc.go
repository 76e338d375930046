// Package bundle reconciles Bundles made on their own: it re-checks that
// whoever wrote a Bundle may use its class, Secrets and ConfigMaps,
// unpacks its (pinned or floating) sources into the content store once,
// reports the content digest and object count in the status, and removes
// the content from the store when the last Bundle using it is deleted.
//
// Revisions of a BundleDeployment (a Bundle whose controller reference
// names one) are unpacked and rendered by the BundleDeployment controller
// before it creates them, born complete (spec.unpacked records their
// content); this controller only removes their content when they are
// deleted. A revision orphaned from its BundleDeployment whose recorded
// content is in the store is left as it is.
package bundle
