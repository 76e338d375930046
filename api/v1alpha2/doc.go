// Package v1alpha2 contains the API of the core.rukpak.io group: the
// BundleDeployment (the desired, continuously managed install), the Bundle
// (one immutable, unpacked revision of content) and the ProvisionerClass
// (which provisioner serves which objects).
//
// +kubebuilder:object:generate=true
// +groupName=core.rukpak.io
package v1alpha2
