// Package bundledeployment reconciles BundleDeployments: the desired,
// continuously managed install of a bundle.
//
// # One reconcile
//
// Reconcile (controller.go) hands the BundleDeployment to the scheduler,
// package schedule (Reconciler.sched): it takes a worker of the
// BundleDeployment's tenant (refused, it is parked until a worker is
// given back), runs the reconcile on a goroutine of its own that may go on
// without the worker while it waits for a Helm hook (schedule.Detach,
// from reportHookWait), and turns an error made only of write conflicts
// into a short requeue. The reconcile (controller.go, reconcile) begins a
// turn of the scheduler (schedule.Turn), stopped when the BundleDeployment
// changes or is being deleted, reads the BundleDeployment into a scope
// (controller.go, scope: what this reconcile observed and decided) and
// runs these steps in order (steps.go); a step that returns false ends the
// list, but for drift and health, which run whenever the install identity
// is known (TestStepsDocumented checks this table against steps.go):
//
//	step            function        file          what it does
//	authorize       authorize       authorize.go  the requester may act as the install identity, use the class and what the spec names
//	act             act             act.go        picks the install identity and its clients
//	trust status    trustStatus     trust.go      status fields that name Bundles are checked against the Bundles this BundleDeployment controls
//	resolve         resolve         resolve.go    pins the sources (digests, commits) and Helm values: the revision's name
//	bundle          findBundle      bundle.go     the revision's Bundle, if it exists, is this BundleDeployment's, with the pinned spec
//	content         ensureContent   content.go    its content is in the content store (fetched, unpacked, bounded per tenant)
//	record          createBundle    record.go     a new revision is rendered and its Bundle created, born complete: spec.unpacked
//	                                              records the content digest, URL and object count, a label its number
//	install         install         install.go    does not retry a revision marked failed (markedFailed, failed.go); renders
//	                                              (or takes the plan createBundle rendered, planOf, with the render it has
//	                                              to store, rendered.pending), reviews a new revision and holds it for
//	                                              approval (gate, gate.go, returns a gateVerdict: spec.upgrade.approval,
//	                                              status.review), checks (preflight, preflight.go; CRD upgrade safety,
//	                                              crdsafety.go), stores a pending render (storePending, render.go),
//	                                              applies and prunes the revision (applyRevision, applyrevision.go: a
//	                                              revisionResult, recordApplied), or leaves the revision applied as it
//	                                              is, the corrected revision (leaveAsApplied, leaveActiveAsApplied); a
//	                                              rollback leaves a CRD whose earlier definition cannot serve what is
//	                                              stored at its newer one (a kept CRD), or applies nothing
//	                                              (RollbackUnsafe) (keepCRDs, rollbackcrd.go)
//	drift           driftStep       steps.go      corrects the drift of the corrected revision (correctDrift, drift.go):
//	                                              the installed one, when the newest is installed, held for approval,
//	                                              marked failed, waiting or refused
//	health          healthStep      steps.go      judges the newest revision's health (checkHealth, health.go); rolls back
//	                                              one that misses its progress deadline
//	history         cleanupHistory  history.go    deletes Bundles beyond revisionHistoryLimit
//
// The steps reach what they depend on through small interfaces, each
// declared where a step uses it: the apply engine acting as the install
// identity (revisionEngine, act.go), the inventory (revisionInventory) and
// the kinds the cluster serves (kindServer, applyrevision.go), the
// renderer (revisionRenderer, render.go) and package planner's pipeline
// (planPipeline, install.go), the reviewer (reviewer, gate.go), the health
// reader (healthReader, health.go) and what the drift watches show
// (watchedObjects, drift.go). New (reconciler.go) wires them, once, from
// Options; SetupWithManager only registers the controller's indexes and
// watches. Unit tests set fakes in their place.
//
// However it ends, the reconcile ends with one function, finish
// (controller.go), in this order: the Bundles' reports and the status
// patch (unless the turn was superseded), and once it is written the
// upgrade events (upgradeNotes, versions.go: UpgradeAvailable,
// UpgradeApplied, UpgradeHeld, decided from the status as last written
// and the facts, once per version), the wait for a kind recorded,
// the memory record saved, and the turn ended (schedule.Turn.End: a
// superseded reconcile is queued again, the events of its objects
// deferred while it ran are judged, its context is cancelled).
//
// Deletion (finalize.go) prunes every inventoried object as the install
// identity (CRDs and objects applied with helm.sh/resource-policy: keep
// are left in place per policy, released in a record only the manager writes, release.go), deletes the
// inventory and the Bundles, and drops the finalizer. A paused
// BundleDeployment makes no writes.
//
// # Failures and status
//
// What a failure of a revision means — return the error to the queue,
// retry it with backoff, refuse it until the spec changes, wait for an
// admin, retry, wait for a hand-off, roll back, mark it failed — is decided by one
// pure function, decideFailure (decide.go), from where it happened (its
// stage: resolve, unpack, config, apply, health), the failure's reason,
// the retry table of pkg/failure, spec.upgrade.onFailure and the last
// healthy revision. The steps act on its verdict: sourceFailed (a source
// that does not resolve or unpack), refused (a config, Helm values or a
// health probe the class refuses), installFailed (failed.go, a failed
// apply) and rollingOut (health.go, a revision not healthy within its
// progress deadline). Two exceptions remain outside it: errors of the API
// server while the revision's Bundle is read or created (findBundle,
// createBundle) go back to the queue as they are, and a Bundle planted
// under the revision's name by someone else (useBundle, BundleNotOwned)
// is not a failure of the revision: it is reported, the installed
// revision stays corrected, and the name is looked at again every
// notOwnedRecheck.
// A revision that waits for a kind to be served (UnknownKind: a kind not
// served yet, or not any more) is retried with backoff and woken by every
// change of a CustomResourceDefinition or an APIService (kinds.go), which
// first makes the manager's caches of what the cluster serves
// (Reconciler.KindCaches: the RESTMapper, the served API versions) forget
// what they know.
//
// The status is a projection of what the reconcile found. The status the
// reconcile read is its observed input; the steps record what they learn
// in the scope: errors and results, the health step's verdict
// (healthFacts, health.go), the review, and the facts the status's
// revision fields stand for (statusFacts, facts.go: the active, last
// healthy and failed revisions, the objects installed and skipped, the
// kept CRDs,
// the pinned sources and the versions the active and the newest
// revision's sources selected, versions.go). The facts start from the status as observed and
// what this process applied last (observe), and steps change them
// (installing or rolling back a revision, marking one failed or healthy,
// refusing a status field that names a Bundle not this BundleDeployment's,
// resolving sources); no step writes the status or reads back a status
// field it stands for. One pure function, computeStatus (status.go, with
// facts.go and ready.go), derives every field: observedGeneration, the
// revision fields (projectFacts), status.review, the conditions — Paused,
// Unpacked, Installed from the errors and results, Healthy and
// Progressing from the health verdict — and Ready from them all. The
// conditions as observed are read as input where a condition carries
// over its clock or message (Installed of a revision marked failed, Progressing of a
// rollout) and by the steps for the same reason (the rollout's clock,
// adminRecheck). The status is written once, at the end of the
// reconcile, by patchStatus (controller.go, from finish), against the status as last
// written. The one write in between is the report of a hook being waited
// for (hookwait.go), which the final patch replaces. Deletion reports a
// blocked uninstall itself (finalize.go, deletionBlocked). One condition
// is not this controller's: ShardAvailable, which the shard Reporter
// (package shard) sets while no running shard serves the
// BundleDeployment's label, and which the shard Adopter removes, with a
// patch of its own, before the first reconcile on the shard that takes it
// over (shard.go); computeStatus leaves it as it is. Besides the
// status, a reconcile writes to its BundleDeployment only the cleanup
// finalizer (TestReconcileChangesOnlyStatus guards it). What became of
// each revision is recorded with scope.decide and written to the Bundles'
// own status by reportBundles (report.go) — only what package history
// would not read from the Bundle's creation and this status: a normal
// install writes no Bundle status. An install costs three writes of
// custom resources: the BundleDeployment's create (the user's), the
// Bundle's create and the BundleDeployment's status. Content that cannot
// be unpacked gets no Bundle; the Unpacked condition says why.
//
// Events of managed objects that arrive while their BundleDeployment's
// reconcile runs are judged when it ends (schedule.Scheduler.ObjectEvent,
// against isUnchanged): the echoes of its own applies arrive before it
// records them. A reconcile that reads its BundleDeployment from a cache
// that has not seen its own last status patch works with the status it
// wrote (schedule.Scheduler.CatchUpStatus), so it does not patch the same
// status again.
//
// # Memory
//
// What this process knows beyond the API server lives in one type,
// memory (memory.go), which says how long each part lives, but for what
// the scheduler remembers (package schedule). What it knows of one
// BundleDeployment — the state last applied, its failed revision and
// retries, the requester found allowed, health verdicts, the last
// revision number handed out, the review of a revision held for
// approval — is one record,
// remembered: the reconcile loads it into its scope (scope.mem), its
// steps read and change it there without a lock, and the reconcile saves
// it when it ends (finish), before the events of its own writes are
// judged. What other goroutines read while reconciles run stays in
// memory, under its lock: the objects a saved record says were applied
// (drift events), the identities in use, claims (objects other
// BundleDeployments wait for: the apply engine returns them in its
// Collision error, apply.Error.Held, and recordClaims records them), the
// retries' workqueue rate limiter and which BundleDeployments wait for a
// kind (waitForKinds, kinds.go). All of it may be lost: after a restart
// it is rebuilt from the status and the inventories (applied.go reads the
// inventory's records; a failed revision is status.failedBundle).
// Watches of managed objects (objectwatch) and the health verdicts
// (healthmemo.go) are rebuilt on the first reconcile of each
// BundleDeployment. The scheduler's status written that the cache has not
// shown yet, parked BundleDeployments and hook waits in progress are lost
// too: after a restart a revision whose hook was waited for is applied
// again and its hooks run again.
//
// # Renders
//
// Every render of a revision goes through render (render.go). A format
// that renders once (provisioner.Provisioner.RenderOnce: Helm) is
// rendered when its revision is first applied, with lookup answered as
// the install identity and .Release from the revision's number, and the
// render is stored in the cluster (package renderstore, Secrets owned by
// the Bundle): drift correction, a restart, another replica and a
// rollback apply the stored render's objects, and a lost or damaged render is rendered again
// with a Warning event. Other formats are rendered again when needed.
//
// A render becomes an apply plan through package planner's pipeline
// (planDigest, install.go: serving certificates, apply.Engine.Prepare,
// drift ignore rules), the one rukpakctl diff uses too. A plan is a
// value: the install step applies it with the options of that apply
// (apply.ApplyOptions: the hooks to run, the collision rules, whether to
// dry-run first), so the plan rendered when the Bundle was created
// (record.go, planOf) is applied as it was reviewed and preflighted.
//
// # Glossary
//
// Revisions:
//
//   - revision: one pinned spec of a BundleDeployment, named by
//     ownership.RevisionName and stored as a Bundle it controls; its
//     number is a label.
//   - newest revision: the revision the spec names now (scope.revision),
//     whatever became of it.
//   - active revision: the revision applied last and installed
//     (statusFacts.active, status.activeBundle). It is the newest one
//     unless the newest is held for approval, marked failed, waiting or
//     refused, or was rolled back from.
//   - last healthy revision: the last revision the health step found
//     healthy (status.lastHealthyBundle), the target of a rollback.
//   - pin: what resolve fixes of a source (an image digest, a commit, a
//     chart version) and of the Helm values; a revision is named by its
//     pins, so a new pin is a new revision.
//
// Words with one sense each in this package:
//
//   - held for approval: a new revision the approval policy stops before
//     anything of it is written (gate, holds; Installed says
//     AwaitingApproval). "held" alone means this and nothing else, but
//     for the event reason UpgradeHeld (and the metric's event "held"),
//     which says the newest version waits: held for approval, or marked
//     failed (waitCause).
//   - installed version, newest version: the version the active, and the
//     newest, revision's sources selected (status.installedVersion,
//     newestVersion; statusFacts.installedVersion, newestVersion): the
//     first of its pinned sources that names one
//     (source.Registry.SelectedVersion).
//   - marked failed: a revision that failed for good and is not tried
//     again until the spec or the retry annotation changes
//     (status.failedBundle, failedMark, verdictHold, markedFailed,
//     scope.markedFailed). spec.upgrade.onFailure Hold is the policy that
//     leaves such a revision in place instead of rolling back.
//   - claimed objects: objects an apply needs that another
//     BundleDeployment manages (the apply engine's apply.Error.Held). The
//     one that wants them records a claim (recordClaims, memory's claims);
//     the one that manages them hands them over when it drops them
//     (release, handOver).
//   - deferred events: events of managed objects that arrive while their
//     BundleDeployment's turn runs, judged when it ends (package schedule,
//     echoes.deferred).
//   - corrected revision: the revision already applied that a step
//     decided to leave as it is, its drift corrected (scope.correct, set
//     by scope.leaveAsApplied, often through leaveActiveAsApplied): the
//     active revision while the newest is held for approval, marked
//     failed, waiting or refused. Its drift correction never drops from
//     the inventory what it lists beyond the revision (recordCorrected).
//   - unfinished apply: an apply that wrote its revision but stopped
//     before it pruned and recorded it (an error, a superseded turn;
//     appliedState.unfinished). Its revision is applied again, never
//     left as it is, so that what the revision before it had is pruned.
//   - stored render: the render of a revision saved in the cluster
//     (package renderstore, renderAndStore) by a format that renders
//     once; a render made before its revision passed the permission
//     preflight is pending (renderResult.pending, rendered.pending) until
//     storePending stores it (storeRender, storedRender).
//   - kept CRD: a CRD a rollback leaves at its newer, installed definition
//     because the earlier one cannot serve what is stored (keepCRDs,
//     keptCRD, status.keptCRDs, event reason CRDKept). "kept" alone means
//     this.
//   - left in place: an object a prune or a deletion does not delete — one
//     applied with helm.sh/resource-policy: keep (appliedObject.keep, the
//     inventory record's Keep), a CRD on delete per policy, or an object
//     another BundleDeployment claims (Reconciler.keeps, apply.Kept) —
//     and so released (release.go).
//   - retained: a Bundle the history step does not delete (the active,
//     last healthy and newest revisions, and the one applied last).
//
// The reconcile and its records:
//
//   - scope: what one reconcile observed and decided (controller.go).
//   - facts: what the status's revision fields stand for, recorded by the
//     steps in the scope (statusFacts, facts.go) and projected into the
//     status at the end (projectFacts).
//   - turn: one reconcile of one BundleDeployment in the scheduler, from
//     schedule.Scheduler.Begin to schedule.Turn.End; superseded when the
//     BundleDeployment changes or is being deleted while it runs.
//   - echo: the event of an object the reconcile itself wrote; dropped
//     when its turn ends (isUnchanged).
//   - memory record: what this process knows of one BundleDeployment
//     beyond the API server (remembered, memory.go), loaded into
//     scope.mem and saved when the reconcile ends. Not the record step
//     (record.go, createBundle), nor the inventory's record of an object
//     (inventory.Record).
//   - install identity: who applies the revision's objects (a
//     ServiceAccount, or the manager), picked by the act step; the
//     requester is the user the authorize step checks may act as it.
//   - review: what the gate found a new revision would change of power
//     (package review), shown in status.review; approval is a user's
//     consent to a revision held for approval.
//   - verdict: what decideFailure says a failure of a revision means
//     (decide.go).
package bundledeployment
