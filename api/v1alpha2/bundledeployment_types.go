package v1alpha2

import (
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// BundleDeploymentKind is the kind name of BundleDeployment.
const BundleDeploymentKind = "BundleDeployment"

// MinPollInterval is the shortest spec.pollInterval: the schema refuses a
// shorter one, and the controller raises one stored before the rule
// existed to it.
const MinPollInterval = 10 * time.Second

// BundleDeploymentSpec is the desired install.
//
// +kubebuilder:validation:XValidation:rule="self.provisionerClassName == oldSelf.provisionerClassName",message="provisionerClassName is immutable"
// +kubebuilder:validation:XValidation:rule="self.installNamespace == oldSelf.installNamespace",message="installNamespace is immutable"
type BundleDeploymentSpec struct {
	// provisionerClassName names the ProvisionerClass whose provisioner
	// installs this bundle (for example core-rukpak-io-plain).
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	ProvisionerClassName string `json:"provisionerClassName"`

	// installNamespace is the namespace namespaced objects without a
	// namespace are installed in. It is created if missing.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	InstallNamespace string `json:"installNamespace"`

	// sources are where the content is read from; together they make one
	// unpacked tree.
	// +required
	// +listType=atomic
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=16
	Sources []BundleSource `json:"sources"`

	// config is format-specific configuration (Helm values, registry+v1
	// watch namespaces). It is part of the revision: a change is an upgrade.
	// +optional
	Config *BundleConfig `json:"config,omitempty"`

	// serviceAccount names the ServiceAccount in installNamespace that every
	// read and write of the bundle's objects is made as.
	// +optional
	ServiceAccount *ServiceAccountReference `json:"serviceAccount,omitempty"`

	// paused stops every write for this BundleDeployment, drift correction
	// included; unpausing converges to the spec.
	// +optional
	Paused bool `json:"paused,omitempty"`

	// pollInterval is how often floating refs (image tags, git branches and
	// tags) are re-resolved. Pinned sources are never re-fetched. At least
	// 10s (MinPollInterval): a shorter interval would make the manager poll
	// other people's servers in a loop.
	// +optional
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('10s')",message="pollInterval must be at least 10s"
	PollInterval *metav1.Duration `json:"pollInterval,omitempty"`

	// healthChecks decide when a revision is healthy.
	// +optional
	HealthChecks *HealthChecks `json:"healthChecks,omitempty"`

	// upgrade is the policy for moving to a new revision.
	// +optional
	Upgrade *UpgradePolicy `json:"upgrade,omitempty"`

	// collisionProtection decides what happens when an object of the bundle
	// already exists and is not managed by this BundleDeployment.
	// +optional
	// +kubebuilder:default=Prevent
	CollisionProtection CollisionProtection `json:"collisionProtection,omitempty"`

	// deletionPolicy decides what deleting this BundleDeployment removes.
	// +optional
	DeletionPolicy *DeletionPolicy `json:"deletionPolicy,omitempty"`

	// driftIgnore names fields other controllers own: rukpak sets them when
	// it creates an object, and from then on never reverts them, never
	// claims them on later applies and does not count their changes as
	// drift (for example a Deployment's spec.replicas that an autoscaler
	// sets). A HorizontalPodAutoscaler of the bundle adds its target's
	// /spec/replicas by itself.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=32
	DriftIgnore []DriftIgnoreRule `json:"driftIgnore,omitempty"`

	// revisionHistoryLimit is how many earlier Bundles are kept besides the
	// active one.
	// +optional
	// +kubebuilder:default=3
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=100
	RevisionHistoryLimit *int32 `json:"revisionHistoryLimit,omitempty"`
}

// BundleConfig is format-specific configuration.
type BundleConfig struct {
	// watchNamespaces selects the registry+v1 install mode: empty for
	// AllNamespaces, the install namespace for OwnNamespace, one other
	// namespace for SingleNamespace, several for MultiNamespace.
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:items:MaxLength=63
	WatchNamespaces []string `json:"watchNamespaces,omitempty"`

	// values are Helm values merged over the chart's defaults.
	// +optional
	// +kubebuilder:pruning:PreserveUnknownFields
	// +kubebuilder:validation:Schemaless
	// +kubebuilder:validation:Type=object
	Values *apiextensionsv1.JSON `json:"values,omitempty"`

	// valuesFrom are Helm values read from ConfigMaps and Secrets in
	// rukpak-system, merged in order before values.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=16
	ValuesFrom []ValuesReference `json:"valuesFrom,omitempty"`
}

// ValuesReference names a key of a ConfigMap or Secret holding Helm values.
type ValuesReference struct {
	// kind is ConfigMap or Secret.
	// +required
	// +kubebuilder:validation:Enum=ConfigMap;Secret
	Kind string `json:"kind"`

	// name of the object in rukpak-system.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`

	// namespace of the object: empty or rukpak-system (values are read only
	// from rukpak's own namespace); any other value is refused.
	// +optional
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:XValidation:rule="self == 'rukpak-system'",message="valuesFrom reads Secrets and ConfigMaps only from rukpak-system; copy the object there"
	Namespace string `json:"namespace,omitempty"`

	// key holding a YAML document of values; default values.yaml.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	Key string `json:"key,omitempty"`
}

// ServiceAccountReference names a ServiceAccount in the install namespace.
type ServiceAccountReference struct {
	// name of the ServiceAccount.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`
}

// HealthChecks decide when a revision is healthy.
type HealthChecks struct {
	// progressDeadlineSeconds is how long a new revision may take to become
	// healthy before it counts as failed.
	// +optional
	// +kubebuilder:default=600
	// +kubebuilder:validation:Minimum=1
	ProgressDeadlineSeconds *int32 `json:"progressDeadlineSeconds,omitempty"`

	// probes are user-defined checks added to the built-in ones.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=32
	Probes []Probe `json:"probes,omitempty"`
}

// Probe is a CEL expression that must be true for every selected object.
type Probe struct {
	// selector picks the objects the probe applies to.
	// +required
	Selector ProbeSelector `json:"selector"`

	// cel is an expression over `self` (the object) that is true when healthy.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=4096
	CEL string `json:"cel"`

	// message is shown when the expression is false.
	// +optional
	// +kubebuilder:validation:MaxLength=1024
	Message string `json:"message,omitempty"`
}

// ProbeSelector picks objects of a bundle by group and kind, and optionally
// name and labels.
type ProbeSelector struct {
	// group of the objects; empty for the core group.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	Group string `json:"group,omitempty"`

	// kind of the objects.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	Kind string `json:"kind"`

	// name of the object; empty matches every name.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name,omitempty"`

	// matchLabels the objects must carry.
	// +optional
	MatchLabels map[string]string `json:"matchLabels,omitempty"`
}

// CRDUpgradeSafety is the policy for changes to installed CRDs.
// +kubebuilder:validation:Enum=Strict;None
type CRDUpgradeSafety string

// The CRD upgrade safety policies.
const (
	// CRDUpgradeSafetyStrict refuses unsafe CRD changes.
	CRDUpgradeSafetyStrict CRDUpgradeSafety = "Strict"
	// CRDUpgradeSafetyNone applies CRD changes unchecked.
	CRDUpgradeSafetyNone CRDUpgradeSafety = "None"
)

// OnFailure is what happens when a new revision fails.
// +kubebuilder:validation:Enum=Rollback;Hold
type OnFailure string

// The failure policies.
const (
	// OnFailureRollback re-applies the last healthy revision.
	OnFailureRollback OnFailure = "Rollback"
	// OnFailureHold leaves the failed revision in place.
	OnFailureHold OnFailure = "Hold"
)

// UpgradePolicy is the policy for moving to a new revision.
type UpgradePolicy struct {
	// crdUpgradeSafety checks changes to installed CRDs.
	// +optional
	// +kubebuilder:default=Strict
	CRDUpgradeSafety CRDUpgradeSafety `json:"crdUpgradeSafety,omitempty"`

	// onFailure decides what a failed revision leaves behind.
	// +optional
	// +kubebuilder:default=Rollback
	OnFailure OnFailure `json:"onFailure,omitempty"`

	// acceptedCRDFindings are findings of the CRD upgrade safety check
	// (crdUpgradeSafety: Strict) that are accepted: a CRD change whose
	// every finding is listed here is applied, while any other finding, of
	// that CRD or another, still refuses the revision. Each entry names the
	// CRD and the finding's id as the CRDUpgradeUnsafe message prints it,
	// such as "Invalid:v1:.status.conditions[*].reason". An entry stays
	// in force until it is removed, for later revisions too.
	// +optional
	// +listType=map
	// +listMapKey=crd
	// +listMapKey=finding
	// +kubebuilder:validation:MaxItems=32
	AcceptedCRDFindings []AcceptedCRDFinding `json:"acceptedCRDFindings,omitempty"`

	// approval decides which new revisions wait for an approval (the
	// core.rukpak.io/approve-revision annotation, set by a user allowed
	// verb approve on this BundleDeployment) before anything of them is
	// written: Automatic (none), PowerGrowth (those whose review grows
	// power) or Always (every one, the first install included). The
	// class's minimumApproval is the lowest in force. Lowering it is an
	// approval: only users allowed verb approve may, and a revision held
	// before stays held unless the user who lowered it may approve.
	// +optional
	// +kubebuilder:default=Automatic
	ApprovalPolicy ApprovalPolicy `json:"approval,omitempty"`
}

// AcceptedFindings returns the findings p accepts for the CRD called crd;
// nil for a nil policy.
func (p *UpgradePolicy) AcceptedFindings(crd string) []string {
	if p == nil {
		return nil
	}
	var out []string
	for _, a := range p.AcceptedCRDFindings {
		if a.CRD == crd {
			out = append(out, a.Finding)
		}
	}
	return out
}

// AcceptedCRDFinding names one finding of the CRD upgrade safety check that
// may be applied anyway.
type AcceptedCRDFinding struct {
	// crd is the name of the CustomResourceDefinition, such as
	// widgets.example.com.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	CRD string `json:"crd"`

	// finding is the finding's id as the CRDUpgradeUnsafe message prints
	// it in brackets: KIND:VERSION:PATH for what existing custom resources
	// would suffer (Invalid, Pruned), KIND:VERSION for a version
	// (StoredVersionRemoved, ServedVersionDropped), or just KIND
	// (ScopeChanged, KindChanged).
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=1024
	Finding string `json:"finding"`
}

// DriftIgnoreRule selects objects of the bundle and the fields of theirs
// that another controller owns once the object exists.
type DriftIgnoreRule struct {
	// group of the objects; empty for the core group.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	Group string `json:"group,omitempty"`
	// kind of the objects.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	Kind string `json:"kind"`
	// name of the object; empty selects every object of the kind.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name,omitempty"`
	// namespace of the object; empty selects every namespace.
	// +optional
	// +kubebuilder:validation:MaxLength=63
	Namespace string `json:"namespace,omitempty"`
	// paths are JSON pointers (RFC 6901) to the fields, through objects
	// only (no list indices), such as /spec/replicas.
	// +listType=atomic
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=16
	// +kubebuilder:validation:items:MaxLength=256
	// +kubebuilder:validation:items:Pattern=`^(/[^/]+)+$`
	Paths []string `json:"paths"`
}

// CollisionProtection is the policy for objects that exist but are not
// managed by this BundleDeployment.
// +kubebuilder:validation:Enum=Prevent;IfNoController;None
type CollisionProtection string

// The collision protection policies.
const (
	// CollisionProtectionPrevent refuses to take over existing objects.
	CollisionProtectionPrevent CollisionProtection = "Prevent"
	// CollisionProtectionIfNoController adopts objects without a controller owner.
	CollisionProtectionIfNoController CollisionProtection = "IfNoController"
	// CollisionProtectionNone adopts any object.
	CollisionProtectionNone CollisionProtection = "None"
)

// CRDDeletionPolicy is what deleting a BundleDeployment does to its CRDs.
// +kubebuilder:validation:Enum=Keep;Delete
type CRDDeletionPolicy string

// The CRD deletion policies.
const (
	// CRDDeletionPolicyKeep leaves CRDs (and so every custom resource) in place.
	CRDDeletionPolicyKeep CRDDeletionPolicy = "Keep"
	// CRDDeletionPolicyDelete deletes CRDs last, which deletes every custom
	// resource of them.
	CRDDeletionPolicyDelete CRDDeletionPolicy = "Delete"
)

// DeletionPolicy decides what deleting a BundleDeployment removes. Every
// object of the bundle other than CRDs is always deleted.
type DeletionPolicy struct {
	// crds is Keep (default) or Delete.
	// +optional
	// +kubebuilder:default=Keep
	CRDs CRDDeletionPolicy `json:"crds,omitempty"`
}

// BundleDeploymentStatus is the observed state of a BundleDeployment.
type BundleDeploymentStatus struct {
	// observedGeneration is the generation the status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// conditions are Unpacked, Installed, Healthy, Progressing and Paused.
	// +optional
	// +listType=map
	// +listMapKey=type
	// +kubebuilder:validation:MaxItems=16
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// activeBundle is the Bundle whose objects are installed.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	ActiveBundle string `json:"activeBundle,omitempty"`

	// resolvedSources are the sources of the newest revision with floating
	// refs pinned (digests, commits, content digests).
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=16
	ResolvedSources []BundleSource `json:"resolvedSources,omitempty"`

	// lastHealthyBundle is the newest revision that was installed and
	// healthy; a failed upgrade rolls back to it.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	LastHealthyBundle string `json:"lastHealthyBundle,omitempty"`

	// failedBundle is the newest revision that failed. It is not retried
	// until the spec names another revision or the core.rukpak.io/retry
	// annotation changes.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	FailedBundle string `json:"failedBundle,omitempty"`

	// failedRetry is the value of the core.rukpak.io/retry annotation when
	// failedBundle failed.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	FailedRetry string `json:"failedRetry,omitempty"`

	// failedGeneration is the generation whose revision failed; a later
	// spec change retries it.
	// +optional
	FailedGeneration int64 `json:"failedGeneration,omitempty"`

	// installedObjects is how many objects the active revision manages.
	// +optional
	InstalledObjects int32 `json:"installedObjects,omitempty"`

	// skippedObjects are optional objects whose kind the cluster does not
	// serve yet.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=64
	SkippedObjects []ObjectReference `json:"skippedObjects,omitempty"`

	// keptCRDs names the CRDs the active revision, applied as a rollback,
	// left at their newer definition: the earlier one did not serve a
	// version in the CRD's status.storedVersions, or would drop or
	// invalidate stored custom resources (reason CRDKept). They stay
	// owned by this BundleDeployment.
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:items:MaxLength=253
	KeptCRDs []string `json:"keptCRDs,omitempty"`

	// lastResolvedTime is when floating refs were resolved to the pins in
	// resolvedSources: when those pins were first found. A lookup every
	// pollInterval that finds the same pins again writes nothing (the
	// manager remembers when it looked), so a BundleDeployment whose
	// sources nobody publishes to costs no writes.
	// +optional
	LastResolvedTime *metav1.Time `json:"lastResolvedTime,omitempty"`

	// unpublishedVersions are the versions selected from a range (of a
	// Helm repository, an image's or a git repository's tags) that are no
	// longer published: the range now selects an older version, and the
	// one selected stays, never downgraded by itself. Found when the
	// sources are resolved (every pollInterval).
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=16
	UnpublishedVersions []UnpublishedVersion `json:"unpublishedVersions,omitempty"`

	// installedVersion is the version the active revision's sources
	// selected: the first of them that selects one among those published
	// (a Helm repository's chart version, an image's or a git
	// repository's tag selected from a range, a catalog's bundle
	// version); empty when none does, or before anything is installed.
	// +optional
	// +kubebuilder:validation:MaxLength=128
	InstalledVersion string `json:"installedVersion,omitempty"`

	// newestVersion is the version the newest revision's sources selected
	// when they were last resolved (every pollInterval), read as
	// installedVersion is: the newest in range published then, or the
	// one kept when it is no longer published (unpublishedVersions). It
	// equals installedVersion once the newest revision is installed, and
	// differs while it waits for approval, failed and is not retried, or
	// is being installed.
	// +optional
	// +kubebuilder:validation:MaxLength=128
	NewestVersion string `json:"newestVersion,omitempty"`

	// approvalPolicy is the spec.upgrade.approval in force, recorded when
	// it is above Automatic. A raise is in force at once; a lowering only
	// once the manager finds that the user who made it (who last changed
	// the spec) may approve the BundleDeployment: until then the policy
	// before the lowering stays in force here, whatever admission let
	// through. The class's spec.minimumApproval applies on top of it.
	// +optional
	ApprovalPolicy ApprovalPolicy `json:"approvalPolicy,omitempty"`

	// review is the review of the newest revision that was reviewed: what
	// it changes compared with the active revision, and whether it may be
	// applied (spec.upgrade.approval).
	// +optional
	Review *BundleDeploymentReview `json:"review,omitempty"`
}

// UnpublishedVersion is a version selected from a range that is no longer
// published.
type UnpublishedVersion struct {
	// source is the index of the source in spec.sources.
	// +kubebuilder:validation:Minimum=0
	// +required
	Source int32 `json:"source"`
	// version is the version selected, no longer published.
	// +kubebuilder:validation:MaxLength=128
	// +required
	Version string `json:"version"`
	// newest is the newest version of the range published now.
	// +kubebuilder:validation:MaxLength=128
	// +optional
	Newest string `json:"newest,omitempty"`
}

// ObjectReference names one object of a bundle.
type ObjectReference struct {
	// group of the object; empty for the core group.
	// +optional
	Group string `json:"group,omitempty"`
	// version of the object.
	// +optional
	Version string `json:"version,omitempty"`
	// kind of the object.
	// +required
	Kind string `json:"kind"`
	// namespace of the object; empty for cluster-scoped objects.
	// +optional
	Namespace string `json:"namespace,omitempty"`
	// name of the object.
	// +required
	Name string `json:"name"`
}

// BundleDeployment installs and continuously manages a bundle of content.
//
// +kubebuilder:object:root=true
// +kubebuilder:storageversion
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Cluster,shortName=bd;bds,categories=rukpak
// +kubebuilder:printcolumn:name="Class",type=string,JSONPath=`.spec.provisionerClassName`
// +kubebuilder:printcolumn:name="Namespace",type=string,JSONPath=`.spec.installNamespace`
// +kubebuilder:printcolumn:name="Active Bundle",type=string,JSONPath=`.status.activeBundle`
// +kubebuilder:printcolumn:name="Version",type=string,JSONPath=`.status.installedVersion`
// +kubebuilder:printcolumn:name="Newest",type=string,JSONPath=`.status.newestVersion`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Installed",type=string,JSONPath=`.status.conditions[?(@.type=="Installed")].status`
// +kubebuilder:printcolumn:name="Healthy",type=string,JSONPath=`.status.conditions[?(@.type=="Healthy")].status`
// +kubebuilder:printcolumn:name="Paused",type=boolean,JSONPath=`.spec.paused`
// +kubebuilder:printcolumn:name="Reason",type=string,priority=1,JSONPath=`.status.conditions[?(@.type=="Ready")].reason`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
// +kubebuilder:validation:XValidation:rule="self.metadata.name.size() <= 52",message="metadata.name must be at most 52 characters, so that generated Bundle names stay within 63"
type BundleDeployment struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec is the desired install.
	// +required
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
	// Items are the BundleDeployments.
	Items []BundleDeployment `json:"items"`
}

func init() {
	SchemeBuilder.Register(&BundleDeployment{}, &BundleDeploymentList{})
}
