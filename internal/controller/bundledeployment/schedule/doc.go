// Package schedule decides when, and on which goroutine, a
// BundleDeployment's reconcile runs, and does what happens around it
// outside the reconcile's steps. The controller (package bundledeployment)
// makes one Scheduler and uses it in this order:
//
//  1. Reconcile asks Detached first: while a reconcile of the
//     BundleDeployment goes on detached, another one returns at once.
//  2. Run takes a worker of the BundleDeployment's tenant (package tenant;
//     fairness.go), or parks it until one is given back, runs the
//     reconcile on a goroutine of its own that may go on without the
//     worker while it waits for a hook (Detach; detach.go), and turns an
//     error made only of write conflicts into a short requeue
//     (conflict.go).
//  3. The reconcile starts a Turn (Begin; turn.go): its context is
//     cancelled when the BundleDeployment's spec changes or it is being
//     deleted (Observe), and the events of its managed objects are deferred
//     (ObjectEvent; echoes.go) while it runs.
//  4. Before its steps run, it catches up with the status this process
//     wrote last (CatchUpStatus; ownstatus.go), which the cache may not
//     show yet; its status patch records what it wrote (StatusWritten).
//  5. It ends its turn (Turn.End): a superseded reconcile is queued again
//     and ends without an error, and the deferred events are judged — an
//     echo of its own writes is dropped, drift queues the BundleDeployment
//     again.
//
// A BundleDeployment that is gone is forgotten (Forget).
//
// Glossary:
//
//   - worker: one of the controller's MaxConcurrentReconciles; each tenant
//     has a share of them, and is lent more while others leave them free.
//   - parked: refused a worker, waiting (not polling) for one to be given
//     back; one queued for drift is woken before its tenant's others.
//   - drift priority: an event of an object the BundleDeployment applied
//     queues it at DriftPriority, ahead of spec changes and upgrades, until
//     its turn takes a worker.
//   - detached: going on without a worker while it waits for a hook Job or
//     Pod, within a bound of such waits in all and per tenant.
//   - turn: one reconcile of one BundleDeployment, from Begin to End.
//   - superseded: the BundleDeployment changed (a new generation) or is
//     being deleted while its turn ran.
//   - echo: the event of an object the reconcile itself wrote.
//   - deferred event: an event of a managed object that arrives while its
//     BundleDeployment's turn runs, judged when the turn ends (echoes.deferred).
//   - own status: the status this process last wrote, remembered until the
//     cache shows it.
//
// Everything here is in memory: after a restart, a detached hook wait is
// not resumed (the revision is applied again and its hooks run again),
// and nothing else needs to be.
package schedule
