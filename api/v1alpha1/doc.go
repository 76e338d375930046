// Package v1alpha1 is the core.rukpak.io/v1alpha1 API of the original
// RukPak README, served for the users and scripts that follow it: a Bundle
// with spec.source and spec.provisionerClassName, and a BundleDeployment
// with spec.provisionerClassName, spec.config and spec.template (labels
// and a Bundle spec). It is not stored: the API server converts it to and
// from v1alpha2 (the storage version) through rukpak's conversion webhook
// (ConvertTo and ConvertFrom of this package), and round trips lose
// nothing: what one version cannot express is kept in an annotation.
//
// +kubebuilder:object:generate=true
// +groupName=core.rukpak.io
package v1alpha1
