package v1alpha2

// Condition types.
const (
	// TypeUnpacked is True when the revision's content is in the content
	// store, False when fetching or unpacking failed, Unknown while pending.
	TypeUnpacked = "Unpacked"
	// TypeInstalled is True when every object of the active revision is
	// applied, False when the newest revision could not be installed (the
	// reason says why; the previous revision stays in place).
	TypeInstalled = "Installed"
	// TypeHealthy is True when every object of the active revision passes its
	// probes, False naming the unhealthy objects.
	TypeHealthy = "Healthy"
	// TypeProgressing is True while a revision rolls out.
	TypeProgressing = "Progressing"
	// TypePaused is True while spec.paused is set.
	TypePaused = "Paused"
	// TypeReady summarises the others for tools that read one condition
	// (kubectl wait, kstatus, Flux, Argo CD, rukpak's own probe of a nested
	// BundleDeployment): True when the newest revision is installed,
	// healthy and settled, every condition describes the current
	// generation, and the BundleDeployment is not paused.
	TypeReady = "Ready"
	// TypeAccepted is True on a ProvisionerClass its provisioner serves.
	TypeAccepted = "Accepted"
)

// Reasons of the Unpacked condition.
const (
	// ReasonUnpacked: the content is in the store.
	ReasonUnpacked = "Unpacked"
	// ReasonNoLongerPublished: the content is in the store, but a version
	// a source selected from a range is no longer published (the range
	// now selects an older one); it stays selected, never downgraded by
	// itself (status.unpublishedVersions). Also an event's reason.
	ReasonNoLongerPublished = "NoLongerPublished"
	// ReasonSourceNotFound: a source (ConfigMap, image, ref) does not exist.
	ReasonSourceNotFound = "SourceNotFound"
	// ReasonSourceMutable: a ConfigMap source is not immutable.
	ReasonSourceMutable = "SourceMutable"
	// ReasonDigestMismatch: content does not match its pinned digest.
	ReasonDigestMismatch = "DigestMismatch"
	// ReasonSourceConflict: two sources write the same path.
	ReasonSourceConflict = "SourceConflict"
	// ReasonUnsupportedSource: the provisioner does not support the source type.
	ReasonUnsupportedSource = "UnsupportedSource"
	// ReasonDependenciesUnsupported: the bundle a catalog source selects
	// declares dependencies (olm.package.required, olm.gvk.required),
	// which rukpak does not install.
	ReasonDependenciesUnsupported = "DependenciesUnsupported"
	// ReasonUnpackFailed: fetching or unpacking failed for another reason.
	ReasonUnpackFailed = "UnpackFailed"
	// ReasonResourceLimit: fetching, unpacking or rendering the content
	// went over a limit that protects the manager (a size cap, a deadline,
	// the content store's quota, a child process's memory or time); the
	// message names the limit and the source or file at fault.
	ReasonResourceLimit = "ResourceLimit"
)

// Reasons of the Installed condition.
const (
	// ReasonInstalled: every object of the active revision is applied.
	ReasonInstalled = "Installed"
	// ReasonInstallPending: the revision is not unpacked yet.
	ReasonInstallPending = "InstallPending"
	// ReasonInvalidContent: the content cannot be turned into objects
	// (invalid YAML, no manifests/ directory, no objects, duplicates).
	ReasonInvalidContent = "InvalidContent"
	// ReasonRenderFailed: a Helm chart's templates or a kustomization
	// failed to render; the message holds the template error.
	ReasonRenderFailed = "RenderFailed"
	// ReasonUnsupportedInstallMode: spec.config.watchNamespaces selects an
	// install mode the registry+v1 bundle's ClusterServiceVersion does not
	// support; the message lists the modes it supports.
	ReasonUnsupportedInstallMode = "UnsupportedInstallMode"
	// ReasonUnsupportedFeature: the content uses a feature of its format
	// that rukpak does not implement (e.g. CSV webhook definitions); it is
	// refused rather than silently dropped.
	ReasonUnsupportedFeature = "UnsupportedFeature"
	// ReasonInvalidConfig: spec.config is wrong for the class, or a
	// valuesFrom reference is missing or does not hold a YAML object.
	ReasonInvalidConfig = "InvalidConfig"
	// ReasonUnknownKind: an object's kind is not served by the cluster.
	// Retried with backoff, and as soon as a CRD or APIService changes.
	ReasonUnknownKind = "UnknownKind"
	// ReasonNamespaceNotFound: an object's namespace does not exist.
	// Retried with backoff.
	ReasonNamespaceNotFound = "NamespaceNotFound"
	// ReasonValidationFailed: the server-side dry-run refused an object.
	ReasonValidationFailed = "ValidationFailed"
	// ReasonImmutableFieldChanged: a revision changes a field of an
	// existing object that cannot change, and the object may not be
	// replaced (see AnnotationReplaceOnImmutable); the message names the
	// object and the field.
	ReasonImmutableFieldChanged = "ImmutableFieldChanged"
	// ReasonApplyFailed: applying an object failed.
	ReasonApplyFailed = "ApplyFailed"
	// ReasonSignatureInvalid: an image source requires a signature
	// (verify.cosign) and the image has none that verifies, with the key
	// or keyless; nothing of it was unpacked.
	ReasonSignatureInvalid = "SignatureInvalid"
	// ReasonHookFailed: a Helm hook Job or Pod of the revision failed, or
	// did not finish in time; the message names it.
	ReasonHookFailed = "HookFailed"
	// ReasonPruneFailed: removing objects the revision no longer has failed.
	ReasonPruneFailed = "PruneFailed"
	// ReasonInventoryIncomplete (an event): a revision that was never
	// recorded as installed, and may have written objects, cannot be read
	// to know which; they are not pruned.
	ReasonInventoryIncomplete = "InventoryIncomplete"
	// ReasonReleaseIncomplete (an event): objects a BundleDeployment left
	// in place are more than its release record holds; those left out
	// stay in place but are not released (another BundleDeployment takes
	// them only as a stale owner's objects, by its collisionProtection).
	ReasonReleaseIncomplete = "ReleaseIncomplete"
	// ReasonCRDUpgradeUnsafe: the revision changes a CRD in a way that can
	// break existing custom resources (see upgrade.crdUpgradeSafety).
	ReasonCRDUpgradeUnsafe = "CRDUpgradeUnsafe"
	// ReasonCollision: an object is managed by someone else, or labelled
	// for a BundleDeployment that no longer exists (a stale owner).
	ReasonCollision = "Collision"
	// ReasonBundleNotOwned: a Bundle under a revision's name (the next one,
	// or one a status field names) was not created by this
	// BundleDeployment (controller ownerReference with its UID, written by
	// rukpak) or does not hold the pinned spec; nothing of it is applied.
	ReasonBundleNotOwned = "BundleNotOwned"
	// ReasonDeletionBlocked: the BundleDeployment is being deleted but its
	// objects cannot be deleted as its install identity (the
	// ServiceAccount is gone or lacks the permission); deletion waits and
	// is never done as the manager instead.
	ReasonDeletionBlocked = "DeletionBlocked"
	// ReasonMissingPermissions: the install identity lacks permissions the
	// revision needs; the message lists the missing rules. Nothing was
	// applied.
	ReasonMissingPermissions = "MissingPermissions"
	// ReasonServiceAccountRequired: the BundleDeployment names no
	// serviceAccount and the manager does not install as itself (see
	// --default-identity).
	ReasonServiceAccountRequired = "ServiceAccountRequired"
	// ReasonNotAuthorized: the user who last changed the spec (the
	// requested-by annotations) may not impersonate the serviceAccount,
	// use the ProvisionerClass, or use a Secret or ConfigMap the spec
	// names (verb use on secrets/NAME or configmaps/NAME in
	// rukpak-system). Also the reason of a Bundle's Unpacked condition
	// when whoever wrote the Bundle may not use its class, Secrets or
	// ConfigMaps.
	ReasonNotAuthorized = "NotAuthorized"
	// ReasonRolledBack: the new revision failed and the last healthy one was
	// restored.
	ReasonRolledBack = "RolledBack"
)

// Reasons of the Healthy and Progressing conditions.
const (
	// ReasonHealthy: every probe passes.
	ReasonHealthy = "Healthy"
	// ReasonUnhealthy: some object fails its probe.
	ReasonUnhealthy = "Unhealthy"
	// ReasonRollingOut: a revision is being applied or waited on.
	ReasonRollingOut = "RollingOut"
	// ReasonHookRunning: the revision is being applied and waits for a
	// Helm hook Job or Pod to finish; the message names the hook, its
	// phase and the deadline. Written while the apply runs and replaced
	// when it ends.
	ReasonHookRunning = "HookRunning"
	// ReasonHookBlocked: as HookRunning, but the hook cannot make progress
	// as things stand (its Job cannot create its Pods, its Pod cannot be
	// scheduled or its image pulled); the message names the warning
	// event. The wait goes on until the deadline, as what blocks it may be
	// fixed meanwhile.
	ReasonHookBlocked = "HookBlocked"
	// ReasonProgressDeadlineExceeded: the revision was not healthy in time.
	ReasonProgressDeadlineExceeded = "ProgressDeadlineExceeded"
	// ReasonSettled: nothing is rolling out.
	ReasonSettled = "Settled"
	// ReasonProbeTooExpensive: a CEL health probe's estimated worst-case
	// cost on objects of the largest size the API server stores exceeds
	// the limit, so it is refused before it runs.
	ReasonProbeTooExpensive = "ProbeTooExpensive"
)

// Reasons of the Ready condition. When Ready is False because of another
// condition, its reason is that condition's (for example ApplyFailed,
// Unhealthy, RollingOut or Paused); these are the others.
const (
	// ReasonReady: installed, healthy and settled, for the current
	// generation.
	ReasonReady = "Ready"
	// ReasonReconciling: a condition still describes an older generation
	// (the spec changed and the reconcile has not caught up).
	ReasonReconciling = "Reconciling"
	// ReasonNotInstalled: nothing is installed yet and no condition says
	// why (the first reconcile has not got that far).
	ReasonNotInstalled = "NotInstalled"
)

// Reasons of the Paused and Accepted conditions.
const (
	// ReasonPaused: spec.paused is set.
	ReasonPaused = "Paused"
	// ReasonNotPaused: spec.paused is not set.
	ReasonNotPaused = "NotPaused"
	// ReasonAccepted: the provisioner serves the class.
	ReasonAccepted = "Accepted"
)

// Outcomes of a revision, the values of a Bundle's status.outcome.
const (
	// OutcomeHealthy: the revision was installed and became healthy.
	OutcomeHealthy = "Healthy"
	// OutcomeFailed: the revision failed (preflight, apply or health) and
	// was left in place (upgrade.onFailure Hold) or never applied.
	OutcomeFailed = "Failed"
	// OutcomeRolledBack: the revision failed and the last healthy one was
	// re-applied.
	OutcomeRolledBack = "RolledBack"
)

// Well-known names, labels and annotations.
const (
	// SystemNamespace holds sources (ConfigMaps, Secrets) and rukpak's own
	// bookkeeping objects.
	SystemNamespace = "rukpak-system"
	// FieldManager is the server-side apply field manager of every write to a
	// bundle's objects.
	FieldManager = "rukpak"
	// LabelOwnerKind marks an object as managed by rukpak; its value is the
	// owner's kind (BundleDeployment).
	LabelOwnerKind = "core.rukpak.io/owner-kind"
	// LabelOwnerName is the name of the owning BundleDeployment.
	LabelOwnerName = "core.rukpak.io/owner-name"
	// LabelOwnerUID is the UID of the owning BundleDeployment: an object
	// labelled for a BundleDeployment of the same name but another UID (a
	// deleted one) is not its own.
	LabelOwnerUID = "core.rukpak.io/owner-uid"
	// LabelBundleDeployment on a Bundle names the BundleDeployment that
	// stamped it out.
	LabelBundleDeployment = "core.rukpak.io/bundle-deployment"
	// LabelRevision on a Bundle a BundleDeployment stamped out is the
	// revision's number, in decimal: 1 for its first revision, then one
	// more than the highest number among its Bundles at the time (the
	// active revision is never deleted by history cleanup, so numbers only
	// grow). Set when the Bundle is created; ownership.RevisionNumber reads
	// it. A rollback re-applies a revision under the number it has.
	LabelRevision = "core.rukpak.io/revision"
	// AnnotationRevision on a Job that deletes itself when it finishes
	// (spec.ttlSecondsAfterFinished) is the revision that created it: such
	// a Job runs once per revision, and is not created again for the same
	// one after its TTL removed it. Other objects carry no revision, so a
	// revision that leaves them as they were does not write them.
	AnnotationRevision = "core.rukpak.io/revision"
	// AnnotationReplaceOnImmutable "true" on an object of a bundle lets
	// rukpak delete and re-create it when a revision changes a field the
	// API server does not let change (a Job's pod template, a Service's
	// clusterIP). Helm hooks with the before-hook-creation delete policy
	// (Helm's default) are replaced without it.
	AnnotationReplaceOnImmutable = "core.rukpak.io/replace-on-immutable"
	// AnnotationOptional "true" on an object of a bundle makes it optional:
	// when the cluster does not serve its kind it is skipped (and listed in
	// status.skippedObjects) instead of failing the revision, and applied
	// once the kind is served.
	AnnotationOptional = "core.rukpak.io/optional"
	// AnnotationRetry on a BundleDeployment: setting it to a new value
	// retries a revision that failed (status.failedBundle), which is
	// otherwise not retried until the spec changes. rukpakctl retry sets it
	// to the current time.
	AnnotationRetry = "core.rukpak.io/retry"
	// AnnotationRequestedBy on a BundleDeployment or a Bundle is the user
	// who last created or changed its spec. The MutatingAdmissionPolicy in
	// config/policy sets it from the request (a value a user writes is
	// overwritten), and the manager re-checks that user's right to
	// impersonate the serviceAccount and use the class, Secrets and
	// ConfigMaps.
	AnnotationRequestedBy = "core.rukpak.io/requested-by"
	// AnnotationRequestedByGroups is that user's groups, comma-separated,
	// with '\' and ',' in a group name escaped by '\'
	// (approval.DecodeGroups).
	AnnotationRequestedByGroups = "core.rukpak.io/requested-by-groups"
	// AnnotationResourcePolicy "keep" on an object of a bundle (Helm's
	// annotation, honoured in every format, case and surrounding spaces
	// ignored) leaves the object in place when a revision drops it and
	// when its BundleDeployment is deleted, as helm uninstall does. What
	// counts is what the revision applied (its inventory record), never
	// the live object's annotations, which others may write. Helm hooks
	// are not kept: their delete policy decides.
	AnnotationResourcePolicy = "helm.sh/resource-policy"
	// ResourcePolicyKeep is the AnnotationResourcePolicy value that keeps
	// an object.
	ResourcePolicyKeep = "keep"
	// FinalizerCleanup removes a BundleDeployment's objects before it goes away.
	FinalizerCleanup = "core.rukpak.io/cleanup"
	// FinalizerContent removes a Bundle's content from the store.
	FinalizerContent = "core.rukpak.io/content"
)
