// Package health decides whether an installed object is healthy.
//
// A Checker combines built-in probes, chosen by the object's group and kind,
// with the user's CEL probes from spec.healthChecks.probes. An object is
// healthy only when its built-in probe and every user probe that selects it
// pass; Result.Reason names the first check that failed.
//
// Every built-in probe first refuses a status written for an older spec: when
// status.observedGeneration is below metadata.generation the object is not
// healthy yet ("rollout of generation N not observed"). Deployments,
// StatefulSets and DaemonSets must report status.observedGeneration at all;
// other kinds are only checked when they report it. A condition whose own
// observedGeneration is below metadata.generation is not trusted either.
//
// The built-in probes:
//
//   - apps/Deployment: the rollout is complete as `kubectl rollout status`
//     sees it: the Progressing condition is not ProgressDeadlineExceeded,
//     status.updatedReplicas == spec.replicas (default 1), no old replicas
//     are left (status.replicas == status.updatedReplicas) and every updated
//     replica is available. A paused Deployment is healthy once observed.
//   - apps/StatefulSet: with the RollingUpdate strategy (the default), every
//     replica is ready and updated and status.currentRevision ==
//     status.updateRevision; with a partition, only the replicas at or above
//     the partition must be updated. With OnDelete, every replica is ready.
//   - apps/DaemonSet: every scheduled pod is available and, unless the
//     strategy is OnDelete, updated (updatedNumberScheduled and
//     numberAvailable equal desiredNumberScheduled).
//   - batch/Job: the Complete condition is True; a True Failed condition is
//     a failure with its message; otherwise the job is still running.
//   - apiextensions.k8s.io/CustomResourceDefinition: Established is True and
//     NamesAccepted is not False.
//   - apiregistration.k8s.io/APIService: Available is True.
//   - PersistentVolumeClaim: status.phase is Bound.
//   - Pod: the Ready condition is True, or status.phase is Succeeded.
//   - any other kind: a Ready condition, if there is one, must be True
//     (a nested BundleDeployment's Ready summary included); otherwise an
//     Available condition, if there is one, must be True; otherwise kstatus
//     (sigs.k8s.io/cli-utils) decides: its rules for kinds it knows (such
//     as ReplicaSets) and its generic ones (Reconciling or Stalled True
//     means not done); a kind it says nothing about is healthy.
//
// kstatus has rules for most of the kinds listed above as well; they keep
// rukpak's own because kstatus judges them differently where users rely on
// it (a paused Deployment, OnDelete StatefulSets and DaemonSets, a running
// Job, a failed Pod, APIServices, conditions of an older generation) or
// gives a less telling reason. The comment on builtins lists each
// difference and TestWhereKstatusDiffers pins it.
//
// User probes select objects by group (empty for the core group), kind and
// optionally name and labels. Each probe's CEL expression is evaluated with
// the variable `self` bound to the whole object as a dynamic map, and must
// evaluate to true. False makes the object unhealthy with the probe's message
// (or "probe N: <expression> is false"); an evaluation error, such as a
// missing field, makes it unhealthy with the error text. Expressions are
// compiled once by NewChecker, which refuses one that does not compile or
// whose type is neither bool nor dynamic; a dynamic result that is not a
// bool at evaluation time is a failure of that probe.
//
// A probe and the objects it reads both come from the bundle, so probes are
// bounded three ways:
//
//  1. NewChecker refuses a probe (reason ProbeTooExpensive, naming the
//     probe, its estimate and the limit) whose worst-case cost, estimated by
//     CEL's checker over objects of the largest size the API server stores
//     (strings of up to 1.5 MiB, lists and maps of up to 786,432 entries),
//     exceeds 10,000,000: the API server's limit for a CRD validation rule,
//     priced the same way.
//  2. A call that can build a value larger than its inputs (+, replace,
//     join, format, strings.quote, split) is checked before it runs and
//     fails instead of building a string over 3 MiB or a list over 786,432
//     entries: CEL charges a call after it returns, too late for one that
//     allocates gigabytes.
//  3. Each evaluation is metered (one unit per field access, call and
//     literal, plus a tenth per byte of each string built) and stopped at
//     1,000,000, and by a timeout.
//
// Besides the standard library, expressions may use optional field
// selection (self.?status.?phase) and the string extensions.
//
// Relevant lets a caller skip reading objects whose health is always true
// (ConfigMaps, Secrets, RBAC, Services, ...), and Summary turns the
// unhealthy objects into a condition message.
package health
