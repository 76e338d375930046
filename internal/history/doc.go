// Package history reads what became of a BundleDeployment's revisions
// (its Bundles) — their outcome and when each was installed — filling in
// what the BundleDeployment controller leaves unwritten.
//
// A revision is born complete (api/v1alpha2 BundleSpec.unpacked) and its
// status is written only when it says something its creation and the
// BundleDeployment's status do not already say, so that a normal install
// writes no Bundle status at all:
//
//   - installedAt: a revision born complete that was installed by the
//     reconcile that created it has none while it is the active revision:
//     its creationTimestamp is when it was installed. The controller
//     writes it when the revision is installed by a later reconcile, and
//     when another revision replaces it as the active one.
//   - outcome: the revision the BundleDeployment names
//     status.lastHealthyBundle is Healthy. The controller writes Healthy
//     when that revision is replaced as the active one, and Failed or
//     RolledBack when it decides them.
//
// Revisions lists a BundleDeployment's revisions (the Bundles it
// controls) oldest first, Markers names their roles and SourceSummary
// their pinned sources. rukpakctl history, rollback, diff and ui read
// revisions through them, and through Outcome and
// InstalledAt; the controller's report (internal/controller/bundledeployment,
// report.go) writes exactly what these would not show.
package history
