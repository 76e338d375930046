package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// SourceType is the kind of a Bundle's source.
type SourceType string

// The source types of v1alpha1.
const (
	SourceTypeImage      SourceType = "image"
	SourceTypeGit        SourceType = "git"
	SourceTypeConfigMaps SourceType = "configMaps"
	SourceTypeUpload     SourceType = "upload"
	SourceTypeHTTP       SourceType = "http"
)

// BundleSource is where a Bundle's content comes from.
type BundleSource struct {
	// type is the kind of source: image, git, configMaps, upload or http.
	// +kubebuilder:validation:Enum=image;git;configMaps;upload;http
	Type SourceType `json:"type"`
	// image is a container image holding the content.
	// +optional
	Image *ImageSource `json:"image,omitempty"`
	// git is a git repository holding the content.
	// +optional
	Git *GitSource `json:"git,omitempty"`
	// configMaps are ConfigMaps of rukpak-system holding the content.
	// +optional
	ConfigMaps []ConfigMapSource `json:"configMaps,omitempty"`
	// upload is content uploaded to the content server.
	// +optional
	Upload *UploadSource `json:"upload,omitempty"`
	// http is an archive served over HTTP(S).
	// +optional
	HTTP *HTTPSource `json:"http,omitempty"`
}

// ImageSource is a container image.
type ImageSource struct {
	// ref is the image reference.
	Ref string `json:"ref"`
	// pullSecret names a pull Secret in rukpak-system.
	// +optional
	ImagePullSecretName string `json:"pullSecret,omitempty"`
}

// GitSource is a git repository.
type GitSource struct {
	// repository is the repository's URL.
	Repository string `json:"repository"`
	// directory is the content's directory in the repository.
	// +optional
	Directory string `json:"directory,omitempty"`
	// ref is the branch, tag or commit.
	Ref GitRef `json:"ref"`
	// auth is how to reach the repository.
	// +optional
	Auth Authorization `json:"auth,omitempty"`
}

// GitRef names a commit by branch, tag or hash.
type GitRef struct {
	// branch is a branch name.
	// +optional
	Branch string `json:"branch,omitempty"`
	// tag is a tag name.
	// +optional
	Tag string `json:"tag,omitempty"`
	// commit is a commit hash.
	// +optional
	Commit string `json:"commit,omitempty"`
}

// Authorization is a Secret with credentials and whether TLS is checked.
type Authorization struct {
	// secret names a Secret in rukpak-system.
	// +optional
	Secret LocalObjectReference `json:"secret,omitempty"`
	// insecureSkipVerify skips checking the server's certificate.
	// +optional
	InsecureSkipVerify bool `json:"insecureSkipVerify,omitempty"`
}

// LocalObjectReference names an object in rukpak-system.
type LocalObjectReference struct {
	// name of the object.
	// +optional
	Name string `json:"name,omitempty"`
}

// ConfigMapSource is one ConfigMap of content.
type ConfigMapSource struct {
	// configMap names the ConfigMap.
	ConfigMap LocalObjectReference `json:"configMap"`
	// path is the directory its keys land in.
	// +optional
	Path string `json:"path,omitempty"`
}

// HTTPSource is an archive served over HTTP(S).
type HTTPSource struct {
	// url of the archive.
	URL string `json:"url"`
	// auth is how to reach it.
	// +optional
	Auth Authorization `json:"auth,omitempty"`
}

// UploadSource is content uploaded to the content server.
type UploadSource struct{}

// BundleSpec is a Bundle's desired state.
type BundleSpec struct {
	// provisionerClassName names the ProvisionerClass.
	ProvisionerClassName string `json:"provisionerClassName"`
	// source is where the content comes from.
	Source BundleSource `json:"source"`
}

// BundleStatus is a Bundle's observed state.
type BundleStatus struct {
	// phase is Pending, Unpacking, Unpacked or Failed.
	// +optional
	Phase string `json:"phase,omitempty"`
	// resolvedSource is the source, pinned.
	// +optional
	ResolvedSource *BundleSource `json:"resolvedSource,omitempty"`
	// observedGeneration is the generation the status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// conditions hold Unpacked.
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
	// contentURL serves the unpacked content.
	// +optional
	ContentURL string `json:"contentURL,omitempty"`
}

// Bundle is content to install, as v1alpha1 describes it.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Cluster,categories=rukpak
// +kubebuilder:printcolumn:name=Type,type=string,JSONPath=`.spec.source.type`
// +kubebuilder:printcolumn:name=Phase,type=string,JSONPath=`.status.phase`
// +kubebuilder:printcolumn:name=Age,type=date,JSONPath=`.metadata.creationTimestamp`
type Bundle struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec is the desired state.
	Spec BundleSpec `json:"spec"`
	// status is the observed state.
	// +optional
	Status BundleStatus `json:"status,omitempty"`
}

// BundleList is a list of Bundles.
//
// +kubebuilder:object:root=true
type BundleList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	// items are the Bundles.
	Items []Bundle `json:"items"`
}

// BundleTemplate describes the Bundle a BundleDeployment makes.
type BundleTemplate struct {
	// metadata of the Bundle: labels and annotations.
	// +optional
	Metadata TemplateMetadata `json:"metadata,omitempty"`
	// spec of the Bundle.
	Spec BundleSpec `json:"spec"`
}

// TemplateMetadata are the labels and annotations of a template.
type TemplateMetadata struct {
	// labels of the Bundle.
	// +optional
	Labels map[string]string `json:"labels,omitempty"`
	// annotations of the Bundle.
	// +optional
	Annotations map[string]string `json:"annotations,omitempty"`
}

// BundleDeploymentSpec is a BundleDeployment's desired state.
type BundleDeploymentSpec struct {
	// provisionerClassName names the ProvisionerClass.
	ProvisionerClassName string `json:"provisionerClassName"`
	// template is the Bundle to install.
	Template BundleTemplate `json:"template"`
	// config is provisioner-specific configuration.
	// +optional
	// +kubebuilder:pruning:PreserveUnknownFields
	// +kubebuilder:validation:Schemaless
	Config runtime.RawExtension `json:"config,omitempty"`
}

// BundleDeploymentStatus is a BundleDeployment's observed state.
type BundleDeploymentStatus struct {
	// conditions hold Installed, Healthy and the others of v1alpha2.
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
	// activeBundle is the Bundle installed.
	// +optional
	ActiveBundle string `json:"activeBundle,omitempty"`
	// observedGeneration is the generation the status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
}

// BundleDeployment installs a Bundle, as v1alpha1 describes it.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Cluster,shortName=bd;bds,categories=rukpak
// +kubebuilder:printcolumn:name="Active Bundle",type=string,JSONPath=`.status.activeBundle`
// +kubebuilder:printcolumn:name="Install State",type=string,JSONPath=`.status.conditions[?(.type=="Installed")].reason`
// +kubebuilder:printcolumn:name=Age,type=date,JSONPath=`.metadata.creationTimestamp`
type BundleDeployment struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec is the desired state.
	Spec BundleDeploymentSpec `json:"spec"`
	// status is the observed state.
	// +optional
	Status BundleDeploymentStatus `json:"status,omitempty"`
}

// BundleDeploymentList is a list of BundleDeployments.
//
// +kubebuilder:object:root=true
type BundleDeploymentList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	// items are the BundleDeployments.
	Items []BundleDeployment `json:"items"`
}

func init() {
	SchemeBuilder.Register(&Bundle{}, &BundleList{}, &BundleDeployment{}, &BundleDeploymentList{})
}
