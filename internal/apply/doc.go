// Package apply is an apply engine: it turns a revision's objects into
// cluster state with server-side apply under one field manager, and removes
// what a revision no longer has. It knows nothing of rukpak's API: its
// caller passes the field manager, the owner's kind and the label and
// annotation keys it marks objects with (Options, Keys; rukpak's are
// planner.EngineOptions), and turns its errors into its own words.
//
// # Applying a plan
//
// Applying a Plan is a pipeline, in order:
//
//  1. Prepare (no cluster writes): place namespaced objects without a
//     namespace in the install namespace, label and annotate every object
//     with its owner and revision, refuse duplicates and kinds that neither
//     the cluster nor a CRD of the bundle defines, and sort objects into two
//     phases: CRDs and Namespaces first, then the rest;
//  2. validate every object with a server-side dry-run before the first
//     write; objects that need a CRD or Namespace of the same bundle are
//     validated right after the first phase, still before any of the second
//     phase is written;
//  3. write the first phase (CRDs and Namespaces) in parallel (bounded),
//     and wait until its CRDs are Established;
//  4. write the second phase in stages: the pre-install (pre-upgrade)
//     hooks, by weight, each Job or Pod waited for; then Roles and
//     ClusterRoles, because the API server authorizes a binding by the
//     rules of the role it names; then every other object, in parallel;
//     then the post-install (post-upgrade) hooks.
//
// A Plan is a value: applying it never changes it. How one Apply goes is
// that call's ApplyOptions: Direct, the collision rules, which hooks run,
// who is told of the hooks waited for. What a call decides about each
// object (create it, replace it, take over its fields) is kept in that
// call's copy of the plan's objects (run.go).
//
// A Direct apply skips the dry-run: existing objects are still read and
// checked against the collision rules, and the objects of the second
// phase its owner does not hold yet (hooks aside) are created with a
// create request, which is its own existence check.
//
// Prune deletes objects in a safe order (namespaced objects, then
// cluster-scoped ones, then Namespaces, then — only when asked — CRDs), and
// only those still labelled as owned by the caller; those it is told to
// keep it leaves in place and reports Kept, with their UIDs, for the
// caller to release. ClusterRoles that kube-controller-manager's
// aggregation controller writes back right after their deletion are
// deleted again (writeback.go).
//
// Collisions (ApplyOptions.Collisions) decide which existing objects a
// plan may take over: objects another owner released (left in place,
// recorded by the caller) are taken through Collisions.Take, once; see
// collision.go.
//
// Every write returns a ChangeSet saying what happened to each object
// (created, configured, unchanged, deleted, kept).
//
// DryRun and Prunable write nothing: they tell what Apply would make of a
// plan's objects (each as it is and as a server-side apply dry-run says it
// would be) and which objects Prune would delete, for rukpakctl diff.
//
// # Errors
//
// A failure the engine understood is an *Error with a Code (CodeRefused,
// CodeForbidden, CodeCollision, CodeHookFailed, …) and a message naming
// the object at fault; every other error is transient (the API server,
// a timeout, a conflict). An Error that refuses a plan for some of its
// objects (validation, collisions) carries them all as Refusals — each
// object's ID, Code, message and, for a collision, the owner holding it
// (Error.Held) — and its message names the first five (Refusals.String).
//
// The engine does not use pkg/failure, whose reasons and retry policy are
// the API's condition reasons (it imports api/v1alpha2), nor anything
// else under api/ (pkg/layers_test.go, TestAPIFree): the BundleDeployment
// controller maps each Code to its condition reason in one place
// (applyReason in internal/controller/bundledeployment/applyapi.go),
// where it calls Apply and, through package planner, Prepare.
//
// # Files
//
// One verb or concern per file:
//
//   - engine.go, options.go: the Engine, its Options and Keys, the Owner,
//     the ApplyOptions of one call;
//   - plan.go: Prepare — the Plan, its phases and its objects' labels;
//   - run.go: one Apply or DryRun of a plan, and what it decides;
//   - apply.go: Apply — the pipeline above, stage by stage;
//   - validate.go: the dry-run of a stage, every refusal collected;
//   - refusal.go: the Refusals an Error carries, and their message;
//   - write.go: the write of a stage, and what a failed write reports;
//   - patch.go: one server-side apply (or dry-run) request;
//   - create.go: a Direct apply's create requests, and the metadata client;
//   - existing.go: reading existing objects (one by one, or listed);
//   - replace.go: deleting and creating again an object whose immutable
//     field changes;
//   - rbacorder.go: roles before bindings;
//   - hooks.go, hookwait.go: Helm hooks, their phases, weights, delete
//     policies, and the wait for hook Jobs and Pods;
//   - wait.go: the wait for CRDs to be Established;
//   - collision.go, writeback.go: which existing objects a plan may take;
//   - prune.go, writeback.go: Prune, and ClusterRoles written back;
//   - diff.go: DryRun and Prunable, Apply and Prune without writing;
//   - ignore.go: fields other controllers own (drift ignore rules);
//   - namespace.go: the install namespace;
//   - classify.go, errors.go: which API errors are terminal, and the
//     Error and its Codes;
//   - changeset.go: the ChangeSet of a write or prune;
//   - parallel.go: bounded parallel work over a stage's objects;
//   - warnings.go: API server warnings collected per apply.
package apply
