package v1alpha2

// Reasons of a rollback across a CRD change. A rollback — the
// automatic one after a missed progress deadline or a failed apply, or an
// earlier revision applied again (rukpakctl rollback) — must not take a CRD
// back to a definition that cannot serve the custom resources stored in it.
const (
	// ReasonCRDKept: a rollback left one or more CRDs at the newer (live)
	// definition, because the earlier revision's definition lacks a
	// version in the live CRD's status.storedVersions, or would drop or
	// invalidate stored data (internal/crdsafety); everything else of the
	// earlier revision was applied. The kept CRDs stay in the inventory,
	// so they are not pruned. Used as a Warning event's reason, and named
	// in the Installed condition's message.
	ReasonCRDKept = "CRDKept"
	// ReasonRollbackUnsafe: a rollback was not made because keeping the
	// newer CRD would not be safe either: the earlier revision's custom
	// resources need a version the kept (live) CRD does not serve. Nothing
	// of the rollback was applied; the failed revision stays as it is.
	// Installed is False with this reason for a rollback applied through
	// the spec (rukpakctl rollback); an automatic rollback reports it in
	// the failure message and a Warning event.
	ReasonRollbackUnsafe = "RollbackUnsafe"
)
