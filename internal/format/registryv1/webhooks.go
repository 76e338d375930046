package registryv1

import (
	"fmt"
	"strings"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/rukpak/rukpak/internal/servingcert"
)

// The webhook types of a CSV's spec.webhookdefinitions.
const (
	validatingWebhook = "ValidatingAdmissionWebhook"
	mutatingWebhook   = "MutatingAdmissionWebhook"
	conversionWebhook = "ConversionWebhook"
)

// namespaceNameLabel is the label the API server sets on every namespace
// to its name.
const namespaceNameLabel = "kubernetes.io/metadata.name"

// webhookLabel names webhook w in messages.
func webhookLabel(w webhookDefinition) string {
	return fmt.Sprintf("webhook %s (%s)", w.GenerateName, w.Type)
}

// webhookConfigurationName is the name of the configuration of webhook w
// installed in installNamespace: one configuration per webhook, named
// after it and the namespace so that two installs do not collide.
func webhookConfigurationName(installNamespace string, w webhookDefinition) string {
	return installNamespace + "-" + w.GenerateName
}

// checkWebhooks refuses webhooks this format cannot install as OLM would,
// or that would reach into rukpak itself: an unknown type; a name that is
// not a fully qualified DNS name; a conversion webhook outside
// AllNamespaces mode or for a CRD the bundle does not ship; an admission
// rule that matches rukpak's own API group or webhook configurations.
func checkWebhooks(csv *clusterServiceVersion, mode InstallMode, crds map[string]*unstructured.Unstructured, installNamespace string) error {
	name := csv.Metadata.Name
	seen := map[string]bool{}
	for _, w := range csv.Spec.WebhookDefinitions {
		label := webhookLabel(w)
		switch w.Type {
		case validatingWebhook, mutatingWebhook, conversionWebhook:
		default:
			return invalidCSV(name, "%s: type must be %s, %s or %s", label, validatingWebhook, mutatingWebhook, conversionWebhook)
		}
		if errs := validation.IsDNS1123Subdomain(w.GenerateName); len(errs) > 0 || strings.Count(w.GenerateName, ".") < 2 {
			return invalidCSV(name, "%s: generateName must be a fully qualified domain name with at least three segments, like vwidget.example.com", label)
		}
		if seen[w.GenerateName] {
			return invalidCSV(name, "%s: generateName %s is used twice", label, w.GenerateName)
		}
		seen[w.GenerateName] = true
		if w.Type == conversionWebhook {
			if err := checkConversion(csv, w, mode, crds); err != nil {
				return err
			}
			continue
		}
		if cfg := webhookConfigurationName(installNamespace, w); len(validation.IsDNS1123Subdomain(cfg)) > 0 {
			return invalidCSV(name, "%s: the name of its configuration, %q, is too long", label, cfg)
		}
		for i, r := range w.Rules {
			if what := reserved(r); what != "" {
				return unsupported(name, "%s: rules[%d] matches %s; webhooks of a bundle may not intercept them (list the API groups and resources the operator needs instead)",
					label, i, what)
			}
		}
	}
	return nil
}

// checkConversion checks conversion webhook w.
func checkConversion(csv *clusterServiceVersion, w webhookDefinition, mode InstallMode, crds map[string]*unstructured.Unstructured) error {
	label := webhookLabel(w)
	if mode != AllNamespaces {
		return unsupported(csv.Metadata.Name, "%s: a conversion webhook converts custom resources in every namespace, so it is only supported in AllNamespaces mode "+
			"(as in OLM); omit spec.config.watchNamespaces", label)
	}
	if len(w.ConversionCRDs) == 0 {
		return invalidCSV(csv.Metadata.Name, "%s: conversionCRDs names no CRD", label)
	}
	for _, crd := range w.ConversionCRDs {
		if _, ok := crds[crd]; !ok {
			return unsupported(csv.Metadata.Name, "%s: conversionCRDs names CRD %s, which the bundle does not own (no apiextensions.k8s.io/v1 CustomResourceDefinition of that name among its manifests)",
				label, crd)
		}
	}
	return nil
}

// reservedResources are the resources of each group no bundle's webhook
// may intercept: rukpak's own, and webhook configurations.
var reservedResources = map[string][]string{
	"core.rukpak.io":               {"bundledeployments", "bundles", "provisionerclasses"},
	"admissionregistration.k8s.io": {"validatingwebhookconfigurations", "mutatingwebhookconfigurations", "validatingadmissionpolicies", "validatingadmissionpolicybindings"},
}

// reserved says what reserved resource r matches, or "".
func reserved(r admissionregistrationv1.RuleWithOperations) string {
	for group, resources := range reservedResources {
		if !containsOrStar(r.APIGroups, group) {
			continue
		}
		for _, res := range r.Resources {
			base, _, _ := strings.Cut(res, "/")
			if base == "*" {
				return fmt.Sprintf("every resource of API group %s", group)
			}
			for _, rr := range resources {
				if base == rr {
					return fmt.Sprintf("%s.%s", rr, group)
				}
			}
		}
	}
	return ""
}

// containsOrStar reports whether list holds s or "*".
func containsOrStar(list []string, s string) bool {
	for _, v := range list {
		if v == s || v == "*" {
			return true
		}
	}
	return false
}

// webhookConfigurations returns a ValidatingWebhookConfiguration or
// MutatingWebhookConfiguration for each admission webhook of the CSV,
// calling the Service of its Deployment, with a namespaceSelector for the
// target namespaces (none in AllNamespaces mode), marked for CA injection.
func webhookConfigurations(csv *clusterServiceVersion, installNamespace string, targets []string) ([]*unstructured.Unstructured, error) {
	var selector *metav1.LabelSelector
	if len(targets) > 0 && targets[0] != "" {
		selector = &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
			{Key: namespaceNameLabel, Operator: metav1.LabelSelectorOpIn, Values: targets},
		}}
	}
	var out []*unstructured.Unstructured
	for _, w := range csv.Spec.WebhookDefinitions {
		meta := metav1.ObjectMeta{
			Name:        webhookConfigurationName(installNamespace, w),
			Annotations: map[string]string{servingcert.AnnotationInjectCA: certSecretName(serviceName(w.DeploymentName))},
		}
		client := clientConfig(w, installNamespace)
		var obj *unstructured.Unstructured
		var err error
		switch w.Type {
		case validatingWebhook:
			obj, err = toObject(&admissionregistrationv1.ValidatingWebhookConfiguration{
				TypeMeta:   metav1.TypeMeta{APIVersion: "admissionregistration.k8s.io/v1", Kind: "ValidatingWebhookConfiguration"},
				ObjectMeta: meta,
				Webhooks: []admissionregistrationv1.ValidatingWebhook{{
					Name: w.GenerateName, ClientConfig: client, Rules: w.Rules, FailurePolicy: w.FailurePolicy,
					MatchPolicy: w.MatchPolicy, NamespaceSelector: selector, ObjectSelector: w.ObjectSelector,
					SideEffects: w.SideEffects, TimeoutSeconds: w.TimeoutSeconds, AdmissionReviewVersions: w.AdmissionReviewVersions,
				}},
			})
		case mutatingWebhook:
			obj, err = toObject(&admissionregistrationv1.MutatingWebhookConfiguration{
				TypeMeta:   metav1.TypeMeta{APIVersion: "admissionregistration.k8s.io/v1", Kind: "MutatingWebhookConfiguration"},
				ObjectMeta: meta,
				Webhooks: []admissionregistrationv1.MutatingWebhook{{
					Name: w.GenerateName, ClientConfig: client, Rules: w.Rules, FailurePolicy: w.FailurePolicy,
					MatchPolicy: w.MatchPolicy, NamespaceSelector: selector, ObjectSelector: w.ObjectSelector,
					SideEffects: w.SideEffects, TimeoutSeconds: w.TimeoutSeconds, AdmissionReviewVersions: w.AdmissionReviewVersions,
					ReinvocationPolicy: w.ReinvocationPolicy,
				}},
			})
		default:
			continue
		}
		if err != nil {
			return nil, err
		}
		out = append(out, obj)
	}
	return out, nil
}

// clientConfig is how the API server calls webhook w: its Deployment's
// Service, on its containerPort, at its webhookPath.
func clientConfig(w webhookDefinition, installNamespace string) admissionregistrationv1.WebhookClientConfig {
	port := portOr(w.ContainerPort)
	return admissionregistrationv1.WebhookClientConfig{Service: &admissionregistrationv1.ServiceReference{
		Namespace: installNamespace, Name: serviceName(w.DeploymentName), Path: w.WebhookPath, Port: &port,
	}}
}

// addConversions sets spec.conversion of each CRD a conversion webhook of
// the CSV names (checkConversion made sure the bundle ships it): strategy
// Webhook, calling the webhook's Service, with the webhook's
// admissionReviewVersions as conversionReviewVersions, marked for CA
// injection. crds are the bundle's CRD manifests by name, changed in
// place.
func addConversions(csv *clusterServiceVersion, installNamespace string, crds map[string]*unstructured.Unstructured) error {
	for _, w := range csv.Spec.WebhookDefinitions {
		if w.Type != conversionWebhook {
			continue
		}
		cc := clientConfig(w, installNamespace)
		svc := map[string]any{"namespace": cc.Service.Namespace, "name": cc.Service.Name, "port": int64(*cc.Service.Port)}
		if cc.Service.Path != nil {
			svc["path"] = *cc.Service.Path
		}
		versions := make([]any, len(w.AdmissionReviewVersions))
		for i, v := range w.AdmissionReviewVersions {
			versions[i] = v
		}
		for _, name := range w.ConversionCRDs {
			crd := crds[name]
			conversion := map[string]any{
				"strategy": "Webhook",
				"webhook": map[string]any{
					"clientConfig":             map[string]any{"service": svc},
					"conversionReviewVersions": versions,
				},
			}
			if err := unstructured.SetNestedField(crd.Object, conversion, "spec", "conversion"); err != nil {
				return invalidCSV(csv.Metadata.Name, "%s: setting spec.conversion of CRD %s: %v", webhookLabel(w), name, err)
			}
			annotations := crd.GetAnnotations()
			if annotations == nil {
				annotations = map[string]string{}
			}
			annotations[servingcert.AnnotationInjectCA] = certSecretName(cc.Service.Name)
			crd.SetAnnotations(annotations)
		}
	}
	return nil
}

// bundleCRDs returns the bundle's apiextensions.k8s.io/v1 CRD manifests by
// name.
func bundleCRDs(rest []*unstructured.Unstructured) map[string]*unstructured.Unstructured {
	out := map[string]*unstructured.Unstructured{}
	for _, o := range rest {
		if o.GetAPIVersion() == "apiextensions.k8s.io/v1" && o.GetKind() == "CustomResourceDefinition" {
			out[o.GetName()] = o
		}
	}
	return out
}
