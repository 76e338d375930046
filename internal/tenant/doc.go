// Package tenant says whose work something is, so that what the manager
// shares among teams — the content store, the child processes bundles are
// rendered in, source fetches in flight — is bounded per tenant as well as
// in total, and one team cannot take all of it.
//
// A tenant is the namespace of a BundleDeployment's install identity: its
// spec.installNamespace, where its spec.serviceAccount lives. Every
// BundleDeployment that installs as the manager itself (no
// spec.serviceAccount, only in the cluster-admin mode), and every Bundle no
// BundleDeployment controls, belongs to one tenant of its own, Manager:
// whoever creates those may act as the manager, and shares one tenant's
// bounds so that they cannot starve the teams either.
//
// The controllers put a revision's tenant in the context of the work they
// do for it (WithContext); Slots bounds work by the tenant it finds there
// (From).
package tenant
