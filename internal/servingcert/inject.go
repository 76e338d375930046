package servingcert

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// inject writes the trusted CAs of the certificate Secret data as the
// caBundle of obj's client configurations that point at a Service: every
// webhook of a webhook configuration, a CRD's conversion webhook, an
// APIService. A Deployment gets AnnotationCertHash on its pod template
// instead, so that its pods roll when the serving certificate changes.
func inject(obj *unstructured.Unstructured, data map[string][]byte) error {
	enc := base64.StdEncoding.EncodeToString(data[KeyCA])
	gvk := obj.GroupVersionKind()
	switch {
	case gvk.Group == "apps" && gvk.Kind == "Deployment":
		sum := sha256.Sum256(data[KeyCert])
		return unstructured.SetNestedField(obj.Object, hex.EncodeToString(sum[:8]), "spec", "template", "metadata", "annotations", AnnotationCertHash)
	case gvk.Group == "admissionregistration.k8s.io" &&
		(gvk.Kind == "ValidatingWebhookConfiguration" || gvk.Kind == "MutatingWebhookConfiguration"):
		hooks, _, err := unstructured.NestedSlice(obj.Object, "webhooks")
		if err != nil {
			return fmt.Errorf("%s %s: webhooks: %w", gvk.Kind, obj.GetName(), err)
		}
		for i, h := range hooks {
			hook, ok := h.(map[string]any)
			if !ok {
				return fmt.Errorf("%s %s: webhooks[%d] is not an object", gvk.Kind, obj.GetName(), i)
			}
			if _, ok, _ := unstructured.NestedMap(hook, "clientConfig", "service"); ok {
				if err := unstructured.SetNestedField(hook, enc, "clientConfig", "caBundle"); err != nil {
					return fmt.Errorf("%s %s: webhooks[%d]: %w", gvk.Kind, obj.GetName(), i, err)
				}
			}
		}
		return unstructured.SetNestedSlice(obj.Object, hooks, "webhooks")
	case gvk.Group == "apiextensions.k8s.io" && gvk.Kind == "CustomResourceDefinition":
		if _, ok, _ := unstructured.NestedMap(obj.Object, "spec", "conversion", "webhook", "clientConfig", "service"); !ok {
			return fmt.Errorf("CustomResourceDefinition %s: annotation %s, but no conversion webhook service", obj.GetName(), AnnotationInjectCA)
		}
		return unstructured.SetNestedField(obj.Object, enc, "spec", "conversion", "webhook", "clientConfig", "caBundle")
	case gvk.Group == "apiregistration.k8s.io" && gvk.Kind == "APIService":
		return unstructured.SetNestedField(obj.Object, enc, "spec", "caBundle")
	}
	return fmt.Errorf("%s %s: annotation %s is only for webhook configurations, CustomResourceDefinitions, APIServices and Deployments",
		gvk.Kind, obj.GetName(), AnnotationInjectCA)
}
