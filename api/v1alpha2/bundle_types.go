package v1alpha2

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// BundleKind is the kind name of Bundle.
const BundleKind = "Bundle"

// BundleSpec is one immutable revision of content.
//
// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="Bundle spec is immutable; create a new Bundle instead"
type BundleSpec struct {
	// provisionerClassName names the ProvisionerClass that unpacks this Bundle.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	ProvisionerClassName string `json:"provisionerClassName"`

	// sources are where the content is read from. A Bundle stamped out by a
	// BundleDeployment carries pinned sources (digests, commits).
	// +required
	// +listType=atomic
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=16
	Sources []BundleSource `json:"sources"`

	// config is the format-specific configuration of the revision.
	// +optional
	Config *BundleConfig `json:"config,omitempty"`

	// unpacked is what the rukpak manager found when it unpacked and
	// rendered a revision of a BundleDeployment before it created the
	// Bundle: a revision is born complete, and its status is written only
	// when what became of it is not what its creation implies (see
	// BundleStatus). Only the manager sets it (the admission policy
	// rukpak-install-authorization refuses it from anyone else, so no
	// tenant can claim another tenant's content digest), and like the rest
	// of the spec it never changes. A Bundle created on its own has none:
	// the Bundle controller unpacks it and reports in status.
	// +optional
	Unpacked *UnpackRecord `json:"unpacked,omitempty"`
}

// UnpackRecord is what the manager recorded of a revision's content when
// it created the revision's Bundle. The revision's resolved sources are
// its spec.sources, which are pinned.
type UnpackRecord struct {
	// contentDigest is the digest ("sha256:<hex>") of the unpacked tree in
	// the content store.
	// +required
	// +kubebuilder:validation:MaxLength=80
	// +kubebuilder:validation:Pattern=`^sha256:[0-9a-f]{64}$`
	ContentDigest string `json:"contentDigest"`

	// contentURL is where the content server serves the unpacked content;
	// empty when the manager runs no content server.
	// +optional
	// +kubebuilder:validation:MaxLength=2048
	ContentURL string `json:"contentURL,omitempty"`

	// objectCount is how many objects the content rendered to with the
	// revision's config; 0 (omitted) when it did not render, in which case
	// status.objectCount says it once it does.
	// +optional
	// +kubebuilder:validation:Minimum=0
	ObjectCount int32 `json:"objectCount,omitempty"`
}

// BundlePhase summarises where a Bundle is in its life.
// +kubebuilder:validation:Enum=Pending;Unpacking;Unpacked;Failed
type BundlePhase string

// The Bundle phases.
const (
	// BundlePhasePending means unpacking has not started.
	BundlePhasePending BundlePhase = "Pending"
	// BundlePhaseUnpacking means content is being fetched.
	BundlePhaseUnpacking BundlePhase = "Unpacking"
	// BundlePhaseUnpacked means content is in the store.
	BundlePhaseUnpacked BundlePhase = "Unpacked"
	// BundlePhaseFailed means unpacking failed; see the Unpacked condition.
	BundlePhaseFailed BundlePhase = "Failed"
)

// BundleStatus is the observed state of a Bundle.
//
// A Bundle created on its own is reported here by the Bundle controller.
// A revision born complete (spec.unpacked) is not reported at all while
// its creation says everything: read it through the Bundle's methods
// (ContentDigest, ContentURL, ObjectCount, ResolvedSources, UnpackPhase)
// and rukpakctl history, which fill in what is not written. Its
// installedAt is written only when it was installed later than created,
// or once it is no longer active; its outcome only when it failed or was
// rolled back, or once a revision that was healthy is no longer active.
type BundleStatus struct {
	// observedGeneration is the generation the status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// phase summarises the Unpacked condition.
	// +optional
	Phase BundlePhase `json:"phase,omitempty"`

	// conditions hold Unpacked.
	// +optional
	// +listType=map
	// +listMapKey=type
	// +kubebuilder:validation:MaxItems=8
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// resolvedSources are the sources with every ref pinned.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=16
	ResolvedSources []BundleSource `json:"resolvedSources,omitempty"`

	// contentDigest is the digest ("sha256:<hex>") of the unpacked tree.
	// +optional
	// +kubebuilder:validation:MaxLength=80
	ContentDigest string `json:"contentDigest,omitempty"`

	// contentURL is where the unpacked content can be downloaded.
	// +optional
	// +kubebuilder:validation:MaxLength=2048
	ContentURL string `json:"contentURL,omitempty"`

	// objectCount is how many objects the content turns into.
	// +optional
	ObjectCount int32 `json:"objectCount,omitempty"`

	// installedAt is when the revision was first installed by the
	// BundleDeployment that stamped it out. A revision installed by the
	// reconcile that created it, while it is its BundleDeployment's active
	// revision, has none: its creationTimestamp is when it was installed
	// (written here once another revision replaces it).
	// +optional
	InstalledAt *metav1.Time `json:"installedAt,omitempty"`

	// outcome is what became of the revision: Healthy, Failed or
	// RolledBack (see the Outcome constants); empty while undecided. The
	// revision its BundleDeployment names status.lastHealthyBundle is
	// Healthy without it being written here, until another revision
	// replaces it.
	// +optional
	// +kubebuilder:validation:Enum=Healthy;Failed;RolledBack
	Outcome string `json:"outcome,omitempty"`

	// outcomeMessage says why, for Failed and RolledBack.
	// +optional
	// +kubebuilder:validation:MaxLength=1024
	OutcomeMessage string `json:"outcomeMessage,omitempty"`
}

// Bundle is one immutable revision of content, unpacked into the content
// store. BundleDeployments stamp out Bundles the way Deployments stamp out
// ReplicaSets; a Bundle can also be created on its own to unpack and serve
// content.
//
// +kubebuilder:object:root=true
// +kubebuilder:storageversion
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Cluster,categories=rukpak
// +kubebuilder:printcolumn:name="Class",type=string,JSONPath=`.spec.provisionerClassName`
// +kubebuilder:printcolumn:name="Revision",type=string,JSONPath=`.metadata.labels.core\.rukpak\.io/revision`
// +kubebuilder:printcolumn:name="Phase",type=string,JSONPath=`.status.phase`
// +kubebuilder:printcolumn:name="Objects",type=integer,JSONPath=`.spec.unpacked.objectCount`
// +kubebuilder:printcolumn:name="Outcome",type=string,JSONPath=`.status.outcome`
// +kubebuilder:printcolumn:name="Digest",type=string,priority=1,JSONPath=`.spec.unpacked.contentDigest`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
// +kubebuilder:validation:XValidation:rule="self.metadata.name.size() <= 63",message="metadata.name must be at most 63 characters"
type Bundle struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec is the revision's content and class.
	// +required
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
	// Items are the Bundles.
	Items []Bundle `json:"items"`
}

func init() {
	SchemeBuilder.Register(&Bundle{}, &BundleList{})
}
