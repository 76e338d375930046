package v1alpha2

import (
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ProvisionerClassKind is the kind name of ProvisionerClass.
const ProvisionerClassKind = "ProvisionerClass"

// The built-in classes and the controller that serves them.
const (
	// ClassPlain installs plain manifests (plain+v0).
	ClassPlain = "core-rukpak-io-plain"
	// ClassRegistry installs OLM registry+v1 bundles.
	ClassRegistry = "core-rukpak-io-registry"
	// ClassHelm installs Helm charts.
	ClassHelm = "core-rukpak-io-helm"

	// ControllerPlain is the controllerName of the plain class.
	ControllerPlain = "core.rukpak.io/plain"
	// ControllerRegistry is the controllerName of the registry+v1 class.
	ControllerRegistry = "core.rukpak.io/registry"
	// ControllerHelm is the controllerName of the helm class.
	ControllerHelm = "core.rukpak.io/helm"
)

// ProvisionerClassSpec names the provisioner that owns objects of this class.
type ProvisionerClassSpec struct {
	// controllerName is the domain-prefixed name of the provisioner that
	// serves this class, e.g. core.rukpak.io/plain. It is immutable.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/[A-Za-z0-9/_.-]+$`
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="controllerName is immutable"
	ControllerName string `json:"controllerName"`

	// description says what the class is for.
	// +optional
	// +kubebuilder:validation:MaxLength=1024
	Description string `json:"description,omitempty"`

	// minimumApproval is the lowest spec.upgrade.approval a
	// BundleDeployment of this class runs under: one that asks for less
	// (or for nothing) is held as if it asked for this. Tenants who may
	// use a class cannot write it, so an admin sets here what tenants
	// cannot lower. Automatic when empty.
	// +optional
	MinimumApproval ApprovalPolicy `json:"minimumApproval,omitempty"`

	// parameters are provisioner-specific settings.
	// +optional
	// +kubebuilder:pruning:PreserveUnknownFields
	// +kubebuilder:validation:Schemaless
	// +kubebuilder:validation:Type=object
	Parameters *apiextensionsv1.JSON `json:"parameters,omitempty"`
}

// ProvisionerClassStatus is the observed state of a ProvisionerClass.
type ProvisionerClassStatus struct {
	// observedGeneration is the generation the status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// conditions hold Accepted, set by the provisioner that serves the class.
	// +optional
	// +listType=map
	// +listMapKey=type
	// +kubebuilder:validation:MaxItems=8
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// ProvisionerClass names the provisioner that serves BundleDeployments and
// Bundles of the class, like a GatewayClass.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Cluster,shortName=provclass,categories=rukpak
// +kubebuilder:printcolumn:name="Controller",type=string,JSONPath=`.spec.controllerName`
// +kubebuilder:printcolumn:name="Accepted",type=string,JSONPath=`.status.conditions[?(@.type=="Accepted")].status`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type ProvisionerClass struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec names the provisioner.
	// +required
	Spec ProvisionerClassSpec `json:"spec"`

	// status is the observed state.
	// +optional
	Status ProvisionerClassStatus `json:"status,omitempty"`
}

// ProvisionerClassList is a list of ProvisionerClasses.
//
// +kubebuilder:object:root=true
type ProvisionerClassList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	// Items are the ProvisionerClasses.
	Items []ProvisionerClass `json:"items"`
}

func init() {
	SchemeBuilder.Register(&ProvisionerClass{}, &ProvisionerClassList{})
}
