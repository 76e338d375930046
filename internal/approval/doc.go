// Package approval decides whether the user who asked for a
// BundleDeployment's install may have it: whether they may impersonate the
// identity the bundle installs as (spec.serviceAccount in
// spec.installNamespace, or the manager's own ServiceAccount when the
// BundleDeployment names none), use its ProvisionerClass and the Secrets
// and ConfigMaps it names, and name its uploads (they or the identity
// uploaded them, or they may use uploads/HEX).
//
// The decision is made twice:
//
//  1. At admission, by the policies of config/policy (installed with
//     admission.InstallPolicies): the MutatingAdmissionPolicy rukpak-requested-by
//     records the requesting user and groups in the requested-by
//     annotations, and the ValidatingAdmissionPolicy
//     rukpak-install-authorization refuses the request unless that user may
//     impersonate the identity and use the class, Secrets and ConfigMaps.
//     It also refuses changes of owner references, finalizers and the
//     retry annotation by users who may not create the object as it
//     stands (docs/security.md, "Who may change an object's life").
//  2. At reconcile time, by Checker: it reads the annotations back
//     (Requester) and repeats the checks with SubjectAccessReviews, so that
//     a permission revoked after the BundleDeployment was written stops the
//     next install; and it checks the uploads the spec names against the
//     uploaders the content server recorded (Uploaders), which no
//     admission policy can read.
//
// Approvers are checked the same way: CheckApprover re-checks the user
// admission recorded in the approved-by annotations, and CheckMayApprove
// the user who last changed the spec when that change lowered
// spec.upgrade.approval (a lowering is an approval; the admission policy
// rukpak-approval-lowering refuses it to users who may not approve).
//
// Approve is the user's side of an upgrade's approval: it asks, as the
// user of its client, for the revision a BundleDeployment holds, and
// admission decides (rukpakctl approve and rukpakctl ui call it).
//
// docs/security.md describes the model for users.
package approval
