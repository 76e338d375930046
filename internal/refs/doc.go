// Package refs lists the Secrets and ConfigMaps a BundleDeployment's or a
// Bundle's spec names — source credentials and CA bundles, cosign keys and
// trusted roots, configMaps sources and Helm valuesFrom — each with the
// field that names it, in the
// order the admission policy rukpak-install-authorization (config/policy)
// checks them. Upload sources name no object a user chooses (their chunks
// are content-addressed and written by rukpak) and are not listed.
package refs
