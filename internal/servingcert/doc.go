// Package servingcert issues and rotates the serving certificates of
// Services whose callers are the API server itself (admission and
// conversion webhooks, aggregated APIs), and injects the CAs that trust
// them into caBundle fields.
//
// A format stays a pure function: it renders a Secret marked with
// AnnotationServingFor (no data) and marks the objects that must trust it
// with AnnotationInjectCA. Before the objects are applied, the manager
// reads the live Secrets (Requested, Load) and calls Fill, which:
//
//  1. keeps each live Secret's certificates while they are good (Renew):
//     rendering again, to correct drift or after a restart, changes
//     nothing, so certificates are made once and kept;
//  2. makes a new CA and serving certificate for a Secret that is missing
//     or unreadable (deleted, say);
//  3. rotates before expiry with an overlap: a CA due for renewal is
//     replaced by a new one that is first only trusted (every caBundle
//     holds old and new), and signs serving certificates from Overlap
//     later; old CAs leave the caBundles when they expire;
//  4. writes the trusted CAs into every caBundle that names the Secret.
//
// Each Service has its own CA (as OLM does), whose private key lives only
// in the Secret, next to the serving key. Result.Next says when to look
// again. x509.go holds the certificate primitives shared with rukpak's own
// CRD webhook (package crdwebhook).
package servingcert
