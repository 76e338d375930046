package v1alpha2

// RevisionReview is what a new revision of a BundleDeployment changes,
// compared with the active revision and the live cluster, computed before
// anything is written (package internal/review). It is bounded: every list
// holds at most its first entries, with an exact count beside it, and every
// string is cut. It never holds a Secret's data: a Secret's changes are
// named by key only.
type RevisionReview struct {
	// growsPower is true when the revision gives anyone power the active
	// revision did not: a subject gains RBAC rules, an admission webhook is
	// added or widened, an APIService is added or changed, a CRD is added
	// or serves more, a Namespace or another cluster-scoped object is
	// added (RBAC objects, webhook configurations, APIServices and CRDs
	// count by what they grant, match or serve, so a ClusterRole renamed
	// with the same rules grows nothing), an admission policy or policy
	// binding is added or widened, an object the review does not model is
	// added or changed (apiSurface.unmodeled: fail closed), or the install
	// identity needs permissions it did not.
	// +required
	GrowsPower bool `json:"growsPower"`

	// summary is a short human message: what grew when growsPower is set,
	// otherwise how many objects change.
	// +optional
	// +kubebuilder:validation:MaxLength=1024
	Summary string `json:"summary,omitempty"`

	// objects are the objects the revision adds, changes and removes.
	// +optional
	Objects ReviewObjects `json:"objects,omitzero"`

	// rbac is what every subject of a RoleBinding or ClusterRoleBinding
	// gains and loses, as effective rules.
	// +optional
	RBAC ReviewRBAC `json:"rbac,omitzero"`

	// apiSurface is what the revision changes in what the API server
	// serves and calls: admission webhooks, APIServices, CRDs, new
	// cluster-scoped objects and Namespaces.
	// +optional
	APISurface ReviewAPISurface `json:"apiSurface,omitzero"`

	// identity is what the install identity must be allowed to do for the
	// revision that it need not for the active one, and what it no longer
	// needs.
	// +optional
	Identity ReviewIdentity `json:"identity,omitzero"`
}

// ReviewObjects are the objects a revision adds, changes and removes. Each
// list holds the first entries in render order; the counts are exact.
type ReviewObjects struct {
	// addedCount is how many objects the revision adds.
	// +optional
	AddedCount int32 `json:"addedCount,omitempty"`
	// added are the first objects the revision adds (in neither the
	// active revision nor the cluster).
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=50
	Added []ReviewObject `json:"added,omitempty"`

	// changedCount is how many objects the revision changes.
	// +optional
	ChangedCount int32 `json:"changedCount,omitempty"`
	// changed are the first objects the revision changes, with the fields
	// that change.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=50
	Changed []ReviewObjectChange `json:"changed,omitempty"`

	// removedCount is how many objects of the active revision the new one
	// no longer has (they are pruned).
	// +optional
	RemovedCount int32 `json:"removedCount,omitempty"`
	// removed are the first objects the revision removes.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=50
	Removed []ReviewObject `json:"removed,omitempty"`

	// unchangedCount is how many objects stay as they are.
	// +optional
	UnchangedCount int32 `json:"unchangedCount,omitempty"`
}

// ReviewObject names one object.
type ReviewObject struct {
	// group of the object; empty for the core group.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	Group string `json:"group,omitempty"`
	// version of the object.
	// +optional
	// +kubebuilder:validation:MaxLength=63
	Version string `json:"version,omitempty"`
	// kind of the object.
	// +required
	// +kubebuilder:validation:MaxLength=63
	Kind string `json:"kind"`
	// namespace of the object; empty for cluster-scoped objects.
	// +optional
	// +kubebuilder:validation:MaxLength=63
	Namespace string `json:"namespace,omitempty"`
	// name of the object.
	// +required
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`
}

// ReviewComparedTo is what a changed object was compared with.
// +kubebuilder:validation:Enum=Revision;Live;None
type ReviewComparedTo string

// What a changed object was compared with.
const (
	// ReviewComparedToRevision means the active revision's rendered object:
	// every field either sets is compared.
	ReviewComparedToRevision ReviewComparedTo = "Revision"
	// ReviewComparedToLive means the live object, because the active
	// revision does not have it: only the fields the new revision sets are
	// compared.
	ReviewComparedToLive ReviewComparedTo = "Live"
	// ReviewComparedToNone means the object is new (an entry of
	// apiSurface.unmodeled): every field it sets is listed.
	ReviewComparedToNone ReviewComparedTo = "None"
)

// ReviewObjectChange is one object a revision changes.
type ReviewObjectChange struct {
	// object is the object.
	// +required
	Object ReviewObject `json:"object"`
	// comparedTo says whether the active revision's object or the live
	// one was compared.
	// +required
	ComparedTo ReviewComparedTo `json:"comparedTo"`
	// pathCount is how many fields change.
	// +optional
	PathCount int32 `json:"pathCount,omitempty"`
	// paths are the first fields that change, as paths such as
	// spec.template.spec.containers[name=manager].image or
	// data['tls.crt']: names only, never values.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=16
	// +kubebuilder:validation:items:MaxLength=256
	Paths []string `json:"paths,omitempty"`
}

// ReviewRBAC is what subjects gain and lose. Rules are effective: what a
// subject may do before and after, through the roles and bindings the
// revisions ship and the live ClusterRoles they aggregate or are
// aggregated into, merged so that rules split differently compare equal.
type ReviewRBAC struct {
	// subjectCount is how many subjects gain or lose rules.
	// +optional
	SubjectCount int32 `json:"subjectCount,omitempty"`
	// gainedCount is how many rules subjects gain.
	// +optional
	GainedCount int32 `json:"gainedCount,omitempty"`
	// gained are the first rules subjects gain, by subject.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=50
	Gained []ReviewGrant `json:"gained,omitempty"`
	// lostCount is how many rules subjects lose.
	// +optional
	LostCount int32 `json:"lostCount,omitempty"`
	// lost are the first rules subjects lose, by subject.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=50
	Lost []ReviewGrant `json:"lost,omitempty"`
}

// ReviewGrant is one rule a subject gains or loses.
type ReviewGrant struct {
	// subject is who gains or loses the rule.
	// +required
	Subject ReviewSubject `json:"subject"`
	// rule is the rule and where it applies.
	// +required
	Rule ReviewRule `json:"rule"`
}

// ReviewSubject is a subject of a binding.
type ReviewSubject struct {
	// kind is User, Group or ServiceAccount.
	// +required
	// +kubebuilder:validation:MaxLength=63
	Kind string `json:"kind"`
	// namespace of a ServiceAccount.
	// +optional
	// +kubebuilder:validation:MaxLength=63
	Namespace string `json:"namespace,omitempty"`
	// name of the subject.
	// +required
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`
}

// ReviewRule is an RBAC rule and where it applies. Lists longer than their
// bound are cut and truncated is set.
type ReviewRule struct {
	// namespace is where the rule applies; empty for cluster-wide.
	// +optional
	// +kubebuilder:validation:MaxLength=63
	Namespace string `json:"namespace,omitempty"`
	// verbs of the rule; "*" for all.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=16
	// +kubebuilder:validation:items:MaxLength=63
	Verbs []string `json:"verbs,omitempty"`
	// apiGroups of the rule; "" is the core group, "*" all.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=16
	// +kubebuilder:validation:items:MaxLength=253
	APIGroups []string `json:"apiGroups,omitempty"`
	// resources of the rule, with subresources as pods/exec; "*" for all.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=16
	// +kubebuilder:validation:items:MaxLength=253
	Resources []string `json:"resources,omitempty"`
	// resourceNames restrict the rule to these names; empty for all.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=16
	// +kubebuilder:validation:items:MaxLength=253
	ResourceNames []string `json:"resourceNames,omitempty"`
	// nonResourceURLs of a rule on URLs instead of resources.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=16
	// +kubebuilder:validation:items:MaxLength=253
	NonResourceURLs []string `json:"nonResourceURLs,omitempty"`
	// truncated is set when a list was cut to its bound.
	// +optional
	Truncated bool `json:"truncated,omitempty"`
}

// ReviewChange is how a revision changes a part of the API surface.
// +kubebuilder:validation:Enum=Added;Widened;Changed;Removed
type ReviewChange string

// How a revision changes a part of the API surface.
const (
	// ReviewAdded means the revision adds it: it grows power.
	ReviewAdded ReviewChange = "Added"
	// ReviewWidened means it matches, serves or reaches more than before,
	// or, for an APIService, serves differently (another service, group
	// priority or TLS setting): it grows power.
	ReviewWidened ReviewChange = "Widened"
	// ReviewChanged means it changes without growing (narrower, or a change
	// that does not widen).
	ReviewChanged ReviewChange = "Changed"
	// ReviewRemoved means the revision removes it.
	ReviewRemoved ReviewChange = "Removed"
)

// ReviewAPISurface is what a revision changes in what the API server
// serves and calls. Each list holds the first entries; the counts are
// exact.
type ReviewAPISurface struct {
	// webhookCount is how many admission webhooks change.
	// +optional
	WebhookCount int32 `json:"webhookCount,omitempty"`
	// webhooks are the first admission webhooks added, widened, changed or
	// removed.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=50
	Webhooks []ReviewSurfaceChange `json:"webhooks,omitempty"`

	// apiServiceCount is how many APIServices change.
	// +optional
	APIServiceCount int32 `json:"apiServiceCount,omitempty"`
	// apiServices are the first APIServices added, changed or removed.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=50
	APIServices []ReviewSurfaceChange `json:"apiServices,omitempty"`

	// crdCount is how many CustomResourceDefinitions change.
	// +optional
	CRDCount int32 `json:"crdCount,omitempty"`
	// crds are the first CustomResourceDefinitions added, widened (new
	// served versions, scope, conversion), changed or removed.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=50
	CRDs []ReviewSurfaceChange `json:"crds,omitempty"`

	// clusterScopedCount is how many cluster-scoped objects the revision
	// adds (Namespaces, RBAC objects, webhook configurations, APIServices
	// and CRDs included).
	// +optional
	ClusterScopedCount int32 `json:"clusterScopedCount,omitempty"`
	// clusterScoped are the first cluster-scoped objects the revision adds.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=50
	ClusterScoped []ReviewObject `json:"clusterScoped,omitempty"`

	// namespaceCount is how many Namespaces the revision adds.
	// +optional
	NamespaceCount int32 `json:"namespaceCount,omitempty"`
	// namespaces are the first Namespaces the revision adds.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=50
	// +kubebuilder:validation:items:MaxLength=63
	Namespaces []string `json:"namespaces,omitempty"`

	// admissionPolicyCount is how many admission policies and policy
	// bindings change.
	// +optional
	AdmissionPolicyCount int32 `json:"admissionPolicyCount,omitempty"`
	// admissionPolicies are the first ValidatingAdmissionPolicies,
	// MutatingAdmissionPolicies and their bindings added, widened (they
	// match more, are bound more widely, validate or mutate otherwise),
	// changed (they match less) or removed.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=50
	AdmissionPolicies []ReviewSurfaceChange `json:"admissionPolicies,omitempty"`

	// unmodeledCount is how many objects the revision adds or changes that
	// the review does not model beyond their fields (see unmodeled).
	// +optional
	UnmodeledCount int32 `json:"unmodeledCount,omitempty"`
	// unmodeled are the first objects the revision adds or changes whose
	// power the review does not judge, each counted as growing power
	// (fail closed), with the fields that change: a cluster-scoped object
	// changed (one added is in clusterScoped); an object of the admissionregistration.k8s.io,
	// rbac.authorization.k8s.io, apiregistration.k8s.io,
	// apiextensions.k8s.io, certificates.k8s.io, scheduling.k8s.io,
	// node.k8s.io, flowcontrol.apiserver.k8s.io or storage.k8s.io groups
	// of a kind the review does not model; an object of a kind outside
	// the groups of ordinary namespaced workloads (custom resources
	// included).
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=50
	Unmodeled []ReviewObjectChange `json:"unmodeled,omitempty"`
}

// ReviewSurfaceChange is one admission webhook, APIService or CRD a
// revision changes.
type ReviewSurfaceChange struct {
	// kind is MutatingWebhookConfiguration, ValidatingWebhookConfiguration,
	// APIService, CustomResourceDefinition, ValidatingAdmissionPolicy,
	// ValidatingAdmissionPolicyBinding, MutatingAdmissionPolicy or
	// MutatingAdmissionPolicyBinding.
	// +required
	// +kubebuilder:validation:MaxLength=63
	Kind string `json:"kind"`
	// name is the object's name.
	// +required
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`
	// webhook is the webhook's name within a webhook configuration.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	Webhook string `json:"webhook,omitempty"`
	// change is Added, Widened, Changed or Removed.
	// +required
	Change ReviewChange `json:"change"`
	// details say what it matches, serves or calls, or what changed, one
	// short sentence each.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=8
	// +kubebuilder:validation:items:MaxLength=256
	Details []string `json:"details,omitempty"`
}

// ReviewIdentity is what the install identity (the ServiceAccount rukpak
// impersonates) must be allowed to do for the new revision compared with
// the active one.
type ReviewIdentity struct {
	// neededCount is how many rules it needs now and did not.
	// +optional
	NeededCount int32 `json:"neededCount,omitempty"`
	// needed are the first rules it needs now and did not.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=50
	Needed []ReviewRule `json:"needed,omitempty"`
	// unneededCount is how many rules it needed and no longer does.
	// +optional
	UnneededCount int32 `json:"unneededCount,omitempty"`
	// unneeded are the first rules it needed and no longer does.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=50
	Unneeded []ReviewRule `json:"unneeded,omitempty"`
}

// ReasonReviewTooLarge is the reason when the newest revision's review would cost more than
// a review may (its RBAC rules expand past review.MaxAtoms atoms, counted
// before they are expanded). Under spec.upgrade.approval PowerGrowth and
// Always, Installed (and Ready) are False with this reason and a message
// naming the rule that costs most; nothing of the revision is written,
// the active revision stays installed, and the revision is not reviewed
// again until the spec names another one. Under Automatic it is the
// reason of a Warning event, and the revision is applied.
const ReasonReviewTooLarge = "ReviewTooLarge"
