// Package review computes the review of a new revision of a
// BundleDeployment: what it changes compared with the active revision and
// the live cluster, and whether it grows anyone's power, before anything
// is written. It is pure: it reads the cluster only through the small Live
// interface and a RESTMapper, and writes nothing. The controller stores the
// result (v1alpha2.RevisionReview) and holds a revision that grows power
// for approval; rukpakctl diff prints it.
//
// Compute is a pipeline, in order:
//
//  1. Place: every object of both revisions gets its resource and scope
//     (from the RESTMapper, else from a CRD of either revision) and a
//     namespace (the install namespace for namespaced objects without
//     one), and is keyed by group, kind, namespace and name.
//  2. Pair: each object of the new revision is paired with its baseline:
//     the active revision's object if it has one (every field compared),
//     else the live object (only the fields the new one sets compared),
//     else none (added). Objects of the active revision the new one lacks
//     are removed (pruned).
//  3. Objects: added, changed (with the paths of the fields that change)
//     and removed objects. A Secret is compared with stringData folded
//     into data and reported by key names only, never values.
//  4. RBAC: the effective rules of every subject before and after, from
//     the Roles, ClusterRoles (aggregationRule resolved against the
//     revisions' and the live ClusterRoles), RoleBindings and
//     ClusterRoleBindings the revisions ship, plus live bindings to roles
//     whose rules change, and a ClusterServiceVersion's permissions if a
//     revision ships one. Rules are expanded to atoms (apiGroup × resource
//     × verb × resourceName, nonResourceURL × verb) in a scope (cluster-wide
//     or a namespace); an atom gained is one not covered by the atoms
//     before (wildcards, subresources, resourceNames and a cluster-wide
//     grant covering a namespace are honoured), so a rule split
//     differently is no change. Gains and losses are merged back into
//     compact rules.
//  5. API surface: admission webhooks added, widened (rules matching more
//     operations, resources, versions or scopes; failurePolicy changed;
//     namespaceSelector, objectSelector or matchConditions removed or
//     changed; matchPolicy Equivalent; reinvocationPolicy IfNeeded;
//     another service or URL called), changed otherwise (narrower) or
//     removed, compared after the API server's defaults and without the
//     injected caBundle; APIServices added, changed (any spec change but
//     the caBundle) or removed; CRDs added, widened (new served versions,
//     scope, conversion), changed (versions no longer served, storage
//     version) or removed; ValidatingAdmissionPolicies,
//     MutatingAdmissionPolicies and their bindings added, widened (match
//     rules or resourceNames matching more, excludeResourceRules
//     excluding less, a namespaceSelector or objectSelector removed or
//     changed, a binding without matchResources, another policy bound,
//     failurePolicy or matchConditions changed, reinvocationPolicy
//     IfNeeded, and any change to validations, mutations, variables,
//     parameters or validationActions), changed (matching less) or
//     removed; new cluster-scoped objects and Namespaces; and, fail
//     closed, the objects the review does not model (failclosed.go):
//     cluster-scoped objects changed, objects of the power groups
//     (admissionregistration, rbac, apiregistration, apiextensions,
//     certificates, scheduling, node, flowcontrol, storage) of kinds not
//     modeled, and objects of groups other than those of ordinary
//     namespaced workloads (custom resources), added or changed, each
//     with the paths that change.
//  6. Identity: permissions.Required of the new revision's objects against
//     that of the active revision's: what the install identity now needs
//     (everything, when the active revision is not known).
//  7. Summary and bounds: GrowsPower, a short message of what grew, and
//     every list cut to its first MaxEntries entries with exact counts;
//     GrowsPower and the counts come from every finding, not only those
//     kept.
//
// The power a revision grows is: a rule a subject gains; a webhook,
// admission policy or binding, APIService or CRD added or widened; a
// Namespace or another cluster-scoped object added, except RBAC objects,
// webhook configurations, admission policies, APIServices and CRDs, which
// count by what they grant, match or serve (a registry+v1 upgrade renames
// its ClusterRoles with the CSV's version and grows nothing); an object
// the review does not model added or changed; a rule the install identity
// needs and did not. Removing an object grows nothing.
//
// Effective RBAC counts only the bindings the revisions ship and the live
// bindings to a role whose rules change, not every binding of a subject:
// a rule a subject also holds through a binding the revisions do not touch
// is still reported gained. That errs towards asking for approval.
//
// A review is bounded in time and memory as well as in size: rules expand
// to at most MaxAtoms atoms in all, estimated from the rules the
// revisions ship before anything is expanded (cost.go; more is a
// *TooLargeError naming the costliest rule), and a webhook's
// rules past a few thousand atoms are compared as written.
//
// Registry+v1 bundles need nothing special: package registryv1 renders a
// CSV's permissions and clusterPermissions into Roles, ClusterRoles and
// bindings and does not return the CSV. A ClusterServiceVersion shipped as
// a plain object (for an OLM in the cluster) is reviewed as grants to its
// ServiceAccounts: clusterPermissions cluster-wide, permissions in the
// CSV's namespace (what OLM does for an OwnNamespace OperatorGroup).
package review
