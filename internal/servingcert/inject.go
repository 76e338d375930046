package servingcert

import (
	"encoding/base64"
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// inject writes ca as the caBundle of obj's client configurations that
// point at a Service: every webhook of a webhook configuration, a CRD's
// conversion webhook, an APIService.
func inject(obj *unstructured.Unstructured, ca []byte) error {
	enc := base64.StdEncoding.EncodeToString(ca)
	gvk := obj.GroupVersionKind()
	switch {
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
	return fmt.Errorf("%s %s: annotation %s is only for webhook configurations, CustomResourceDefinitions and APIServices",
		gvk.Kind, obj.GetName(), AnnotationInjectCA)
}
