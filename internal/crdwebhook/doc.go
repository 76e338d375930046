// Package crdwebhook applies CRD upgrade safety (package crdsafety) to
// direct edits of CustomResourceDefinitions that rukpak manages, through a
// validating admission webhook whose serving certificate rukpak issues and
// renews itself.
//
// It is a pipeline, set up by Setup in order:
//
//  1. EnsureCertificate keeps a self-signed CA and a serving certificate in
//     a Secret of the system namespace, shared by replicas;
//  2. the certificate and key are written to Options.CertDir, and a webhook
//     server that serves Handler at Path from them is added to the manager;
//  3. a Runnable waits until that server answers TLS, then creates or
//     updates the ValidatingWebhookConfiguration ConfigurationName with the
//     CA as caBundle, and re-checks the certificate every CheckInterval.
//
// Handler allows every update of a CRD whose old object does not carry the
// owner labels, every update by a trusted user (the manager itself, which
// checks CRD changes before it applies them), and every update of a CRD
// whose BundleDeployment opted out with spec.upgrade.crdUpgradeSafety: None
// or no longer exists. Otherwise it refuses a spec change for which
// crdsafety.Check finds something that exists would break (custom
// resources the new schema refuses or prunes, a stored version removed, a
// served version dropped while objects exist) and the BundleDeployment did
// not accept in spec.upgrade.acceptedCRDFindings, naming the
// BundleDeployment to change instead.
package crdwebhook
