// Package permissions is the permission preflight: before rukpak applies a
// revision as an install identity (a ServiceAccount it impersonates), it
// checks that the identity may do everything the apply engine will do to
// every object of the revision, so that a revision is refused whole instead
// of failing half-applied.
//
// It is a pipeline, in order:
//
//  1. Targets: the objects of a revision (resource, namespace, name).
//  2. Required: the rules those targets need (every verb in Verbs), merged
//     into as few rules as an admin would write.
//  3. Checker.Missing: the rules the Subject lacks, asked of the API server
//     with SubjectAccessReviews (so that every authorizer, RBAC and
//     webhooks alike, is consulted); Checker.MissingListed first reads the
//     Subject's rules with one SelfSubjectRulesReview per namespace and
//     asks reviews only for what those do not grant.
//  4. Message and Roles: what is missing, as a status condition message and
//     as Role/ClusterRole objects (with bindings) an admin can apply.
package permissions
