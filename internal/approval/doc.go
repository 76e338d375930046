// Package approval decides whether the user who asked for a
// BundleDeployment's install may have it: whether they may impersonate the
// identity the bundle installs as (spec.serviceAccount in
// spec.installNamespace, or the manager's own ServiceAccount when the
// BundleDeployment names none) and use its ProvisionerClass.
//
// The decision is made twice:
//
//  1. At admission, by the policies of config/policy (installed with
//     admission.InstallPolicies): the MutatingAdmissionPolicy rukpak-requested-by
//     records the requesting user and groups in the requested-by
//     annotations, and the ValidatingAdmissionPolicy
//     rukpak-install-authorization refuses the request unless that user may
//     impersonate the identity and use the class.
//  2. At reconcile time, by Checker: it reads the annotations back
//     (Requester) and repeats both checks with SubjectAccessReviews, so that
//     a permission revoked after the BundleDeployment was written stops the
//     next install.
//
// docs/security.md describes the model for users.
package approval
