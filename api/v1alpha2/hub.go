package v1alpha2

// Hub marks Bundle as the version others convert to and from (the storage
// version; see package api/v1alpha1).
func (*Bundle) Hub() {}

// Hub marks BundleDeployment as the version others convert to and from.
func (*BundleDeployment) Hub() {}
