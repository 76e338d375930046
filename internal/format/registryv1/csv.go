package registryv1

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/rukpak/rukpak/api/v1alpha2"
	"github.com/rukpak/rukpak/pkg/failure"
)

// csvKind is the ClusterServiceVersion's kind. Its group is
// operators.coreos.com, but the CSV is found by kind alone, as OLM finds
// it: the community catalog publishes bundles whose CSV has another
// apiVersion (service-binding-operator 1.4.0:
// binding.operators.coreos.com/v1alpha1, rewritten by kustomize;
// k8gb and universal-crossplane: v1alpha1, with no group).
const csvKind = "ClusterServiceVersion"

// deploymentStrategy is the only install strategy OLM defines, and the only
// one this format implements.
const deploymentStrategy = "deployment"

// clusterServiceVersion is the part of an OLM ClusterServiceVersion this
// format reads; other fields are ignored.
type clusterServiceVersion struct {
	Metadata csvMetadata `json:"metadata"`
	Spec     csvSpec     `json:"spec"`
}

// csvMetadata is the CSV's metadata.
type csvMetadata struct {
	Name        string            `json:"name"`
	Annotations map[string]string `json:"annotations"`
}

// csvSpec is the CSV's spec.
type csvSpec struct {
	InstallModes              []installMode         `json:"installModes"`
	Install                   installStrategy       `json:"install"`
	WebhookDefinitions        []webhookDefinition   `json:"webhookdefinitions"`
	APIServiceDefinitions     apiServiceDefinitions `json:"apiservicedefinitions"`
	CustomResourceDefinitions crdDefinitions        `json:"customresourcedefinitions"`
}

// installMode says whether the operator supports one way of watching
// namespaces.
type installMode struct {
	Type      string `json:"type"`
	Supported bool   `json:"supported"`
}

// installStrategy is spec.install.
type installStrategy struct {
	Strategy string          `json:"strategy"`
	Spec     strategyDetails `json:"spec"`
}

// strategyDetails is spec.install.spec of the deployment strategy.
type strategyDetails struct {
	Deployments        []csvDeployment `json:"deployments"`
	Permissions        []permission    `json:"permissions"`
	ClusterPermissions []permission    `json:"clusterPermissions"`
}

// csvDeployment is one Deployment the CSV installs.
type csvDeployment struct {
	Name  string            `json:"name"`
	Label map[string]string `json:"label"`
	// Spec is kept as written, so that only the fields the bundle sets are
	// applied.
	Spec json.RawMessage `json:"spec"`
	// serviceAccount is spec.template.spec.serviceAccountName, filled in
	// by check.
	serviceAccount string
	// matchLabels is spec.selector.matchLabels, filled in by check.
	matchLabels map[string]string
}

// permission is a set of rules granted to a ServiceAccount.
type permission struct {
	ServiceAccountName string `json:"serviceAccountName"`
	// Rules are kept as written and checked against rbacv1.PolicyRule.
	Rules json.RawMessage `json:"rules"`
}

// webhookDefinition is an admission or conversion webhook of the CSV
// (OLM's WebhookDescription).
type webhookDefinition struct {
	Type           string              `json:"type"`
	GenerateName   string              `json:"generateName"`
	DeploymentName string              `json:"deploymentName"`
	ContainerPort  int32               `json:"containerPort"`
	TargetPort     *intstr.IntOrString `json:"targetPort"`
	// Rules and the fields below are copied into the webhook
	// configuration.
	Rules                   []admissionregistrationv1.RuleWithOperations    `json:"rules"`
	FailurePolicy           *admissionregistrationv1.FailurePolicyType      `json:"failurePolicy"`
	MatchPolicy             *admissionregistrationv1.MatchPolicyType        `json:"matchPolicy"`
	ObjectSelector          *metav1.LabelSelector                           `json:"objectSelector"`
	SideEffects             *admissionregistrationv1.SideEffectClass        `json:"sideEffects"`
	TimeoutSeconds          *int32                                          `json:"timeoutSeconds"`
	AdmissionReviewVersions []string                                        `json:"admissionReviewVersions"`
	ReinvocationPolicy      *admissionregistrationv1.ReinvocationPolicyType `json:"reinvocationPolicy"`
	WebhookPath             *string                                         `json:"webhookPath"`
	// ConversionCRDs names the CRDs a ConversionWebhook converts.
	ConversionCRDs []string `json:"conversionCRDs"`
}

// apiServiceDefinitions are the aggregated APIs the CSV owns or needs.
type apiServiceDefinitions struct {
	Owned []apiServiceDescription `json:"owned"`
}

// apiServiceDescription names one aggregated API and the Deployment that
// serves it.
type apiServiceDescription struct {
	Name           string `json:"name"`
	Group          string `json:"group"`
	Version        string `json:"version"`
	Kind           string `json:"kind"`
	DeploymentName string `json:"deploymentName"`
	ContainerPort  int32  `json:"containerPort"`
}

// crdDefinitions lists the CRDs the CSV owns; informational only: the CRDs
// themselves are manifests of the bundle.
type crdDefinitions struct {
	Owned []crdDescription `json:"owned"`
}

// crdDescription names one CRD.
type crdDescription struct {
	Name string `json:"name"`
}

// splitCSV returns the one ClusterServiceVersion of objs and the other
// objects in order.
func splitCSV(objs []*unstructured.Unstructured, dir string) (*unstructured.Unstructured, []*unstructured.Unstructured, error) {
	var csvs, rest []*unstructured.Unstructured
	for _, o := range objs {
		if o.GetKind() == csvKind {
			csvs = append(csvs, o)
			continue
		}
		rest = append(rest, o)
	}
	switch len(csvs) {
	case 0:
		return nil, nil, failure.New(v1alpha2.ReasonInvalidContent,
			"bundle has no %s in %s/: a registry+v1 bundle has exactly one", csvKind, dir)
	case 1:
		return csvs[0], rest, nil
	}
	names := make([]string, len(csvs))
	for i, c := range csvs {
		names[i] = c.GetName()
	}
	return nil, nil, failure.New(v1alpha2.ReasonInvalidContent,
		"bundle has %d %ss in %s/ (%s): a registry+v1 bundle has exactly one",
		len(csvs), csvKind, dir, strings.Join(names, ", "))
}

// decodeCSV decodes and checks the CSV object u.
func decodeCSV(u *unstructured.Unstructured) (*clusterServiceVersion, error) {
	name := u.GetName()
	data, err := json.Marshal(u.Object)
	if err != nil {
		return nil, invalidCSV(name, "cannot be encoded as JSON: %v", err)
	}
	csv := &clusterServiceVersion{}
	if err := json.Unmarshal(data, csv); err != nil {
		return nil, invalidCSV(name, "%s", describeDecodeError("", err))
	}
	if err := csv.check(); err != nil {
		return nil, err
	}
	return csv, nil
}

// check checks what decoding cannot: names, and the types of the kept raw
// fields.
func (c *clusterServiceVersion) check() error {
	name := c.Metadata.Name
	if errs := validation.IsDNS1123Subdomain(name); len(errs) > 0 {
		return invalidCSV(name, "metadata.name is not a valid object name: %s", strings.Join(errs, "; "))
	}
	seen := map[string]bool{}
	for i := range c.Spec.Install.Spec.Deployments {
		d := &c.Spec.Install.Spec.Deployments[i]
		field := fmt.Sprintf("spec.install.spec.deployments[%d]", i)
		if errs := validation.IsDNS1123Subdomain(d.Name); len(errs) > 0 {
			return invalidCSV(name, "%s.name %q is not a valid Deployment name: %s", field, d.Name, strings.Join(errs, "; "))
		}
		if seen[d.Name] {
			return invalidCSV(name, "%s: Deployment %s is listed twice", field, d.Name)
		}
		seen[d.Name] = true
		if !isJSONObject(d.Spec) {
			return invalidCSV(name, "%s.spec is missing or not an object", field)
		}
		var spec appsv1.DeploymentSpec
		if err := json.Unmarshal(d.Spec, &spec); err != nil {
			return invalidCSV(name, "%s", describeDecodeError(field+".spec", err))
		}
		if spec.Selector != nil {
			d.matchLabels = spec.Selector.MatchLabels
		}
		d.serviceAccount = spec.Template.Spec.ServiceAccountName
		if d.serviceAccount == "" {
			d.serviceAccount = spec.Template.Spec.DeprecatedServiceAccount
		}
	}
	for _, list := range []struct {
		field string
		perms []permission
	}{
		{"spec.install.spec.permissions", c.Spec.Install.Spec.Permissions},
		{"spec.install.spec.clusterPermissions", c.Spec.Install.Spec.ClusterPermissions},
	} {
		for i, p := range list.perms {
			field := fmt.Sprintf("%s[%d]", list.field, i)
			if errs := validation.IsDNS1123Subdomain(p.ServiceAccountName); len(errs) > 0 {
				return invalidCSV(name, "%s.serviceAccountName %q is not a valid ServiceAccount name: %s",
					field, p.ServiceAccountName, strings.Join(errs, "; "))
			}
			var rules []rbacv1.PolicyRule
			if len(p.Rules) > 0 {
				if err := json.Unmarshal(p.Rules, &rules); err != nil {
					return invalidCSV(name, "%s", describeDecodeError(field+".rules", err))
				}
			}
		}
	}
	return nil
}

// isJSONObject reports whether raw is a JSON object.
func isJSONObject(raw json.RawMessage) bool {
	s := strings.TrimSpace(string(raw))
	return strings.HasPrefix(s, "{")
}

// invalidCSV returns an InvalidContent failure about the CSV named name.
func invalidCSV(name, format string, args ...any) error {
	return failure.New(v1alpha2.ReasonInvalidContent, "%s %s: %s", csvKind, name, fmt.Sprintf(format, args...))
}

// describeDecodeError turns a JSON decoding error into a message naming the
// field, under prefix, without Go type names.
func describeDecodeError(prefix string, err error) string {
	var typeErr *json.UnmarshalTypeError
	if !errors.As(err, &typeErr) {
		if prefix == "" {
			return err.Error()
		}
		return prefix + ": " + err.Error()
	}
	field := typeErr.Field
	if prefix != "" {
		field = strings.TrimSuffix(prefix+"."+field, ".")
	}
	if field == "" {
		field = "the object"
	}
	return fmt.Sprintf("%s is a JSON %s, want %s", field, typeErr.Value, jsonType(typeErr.Type))
}

// jsonType names the JSON type Go type t decodes from.
func jsonType(t reflect.Type) string {
	if t == nil {
		return "another type"
	}
	switch t.Kind() {
	case reflect.Pointer:
		return jsonType(t.Elem())
	case reflect.Slice, reflect.Array:
		if t.Elem().Kind() == reflect.Uint8 {
			return "a string"
		}
		return "a list"
	case reflect.Struct, reflect.Map:
		return "an object"
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "a boolean"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "an integer"
	case reflect.Float32, reflect.Float64:
		return "a number"
	}
	return "another type"
}
