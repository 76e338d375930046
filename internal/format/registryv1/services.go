package registryv1

import (
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/rukpak/rukpak/internal/servingcert"
)

// defaultServicePort is the port of a webhook or aggregated API whose
// description sets no containerPort, as in OLM.
const defaultServicePort = 443

// Where a Deployment behind a Service the API server calls finds its
// serving certificate, as OLM mounts it: an aggregated API server's path,
// and the one of controller-runtime webhook servers.
const (
	apiServiceCertVolume = "apiservice-cert"
	apiServiceCertPath   = "/apiserver.local.config/certificates"
	webhookCertVolume    = "webhook-cert"
	webhookCertPath      = "/tmp/k8s-webhook-server/serving-certs"
)

// serviceName is the name of the Service in front of Deployment dep, as
// OLM names it.
func serviceName(dep string) string { return dep + "-service" }

// certSecretName is the name of the certificate Secret of Service svc, as
// OLM names it.
func certSecretName(svc string) string { return svc + "-cert" }

// certService is a Service the API server calls (webhooks, aggregated
// APIs), in front of one of the CSV's Deployments.
type certService struct {
	deployment string
	ports      []corev1.ServicePort
	// users name the webhooks and APIs served, for messages.
	users []string
}

// addPort adds p unless the Service has it already (OLM deduplicates the
// same way).
func (s *certService) addPort(p corev1.ServicePort, user string) {
	if !slices.Contains(s.ports, p) {
		s.ports = append(s.ports, p)
	}
	s.users = append(s.users, user)
}

// certServices returns the Services the CSV's webhooks and owned APIs
// need, by Deployment, in the order their Deployments are listed. A
// webhook or API whose Deployment the CSV does not define, or whose
// Deployment's Service would not be a valid name or selects no labels, is
// invalid content.
func certServices(csv *clusterServiceVersion) ([]*certService, error) {
	byName := map[string]*certService{}
	add := func(dep, user string, p corev1.ServicePort) error {
		s, ok := byName[dep]
		if !ok {
			d := csv.deployment(dep)
			if d == nil {
				return invalidCSV(csv.Metadata.Name, "%s names deploymentName %q, which is not a Deployment of spec.install.spec.deployments", user, dep)
			}
			if errs := validation.IsDNS1035Label(serviceName(dep)); len(errs) > 0 {
				return invalidCSV(csv.Metadata.Name, "%s: its Service %q (named after Deployment %s) is not a valid Service name: %s",
					user, serviceName(dep), dep, strings.Join(errs, "; "))
			}
			if len(d.matchLabels) == 0 {
				return invalidCSV(csv.Metadata.Name, "%s: Deployment %s has no spec.selector.matchLabels, which its Service needs to select its pods", user, dep)
			}
			s = &certService{deployment: dep}
			byName[dep] = s
		}
		s.addPort(p, user)
		return nil
	}
	for _, w := range csv.Spec.WebhookDefinitions {
		port := portOr(w.ContainerPort)
		target := intstr.FromInt32(port)
		if w.TargetPort != nil {
			target = *w.TargetPort
		}
		if err := add(w.DeploymentName, webhookLabel(w), corev1.ServicePort{Name: strconv.Itoa(int(port)), Port: port, TargetPort: target}); err != nil {
			return nil, err
		}
	}
	for _, a := range csv.Spec.APIServiceDefinitions.Owned {
		port := portOr(a.ContainerPort)
		p := corev1.ServicePort{Name: strconv.Itoa(int(port)), Port: port, TargetPort: intstr.FromInt32(port)}
		if err := add(a.DeploymentName, "owned APIService "+apiServiceName(a), p); err != nil {
			return nil, err
		}
	}
	var out []*certService
	for _, d := range csv.Spec.Install.Spec.Deployments {
		if s, ok := byName[d.Name]; ok {
			out = append(out, s)
		}
	}
	return out, nil
}

// portOr returns port, or defaultServicePort if it is not set.
func portOr(port int32) int32 {
	if port > 0 {
		return port
	}
	return defaultServicePort
}

// deployment returns the CSV's Deployment named name, or nil.
func (c *clusterServiceVersion) deployment(name string) *csvDeployment {
	for i := range c.Spec.Install.Spec.Deployments {
		if d := &c.Spec.Install.Spec.Deployments[i]; d.Name == name {
			return d
		}
	}
	return nil
}

// objects returns the Service and its certificate Secret (no data: the
// manager fills it in, see package servingcert).
func (s *certService) objects(csv *clusterServiceVersion, installNamespace string) ([]*unstructured.Unstructured, error) {
	name := serviceName(s.deployment)
	svc := &corev1.Service{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Service"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: installNamespace},
		Spec:       corev1.ServiceSpec{Ports: s.ports, Selector: csv.deployment(s.deployment).matchLabels},
	}
	secret := &corev1.Secret{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"},
		ObjectMeta: metav1.ObjectMeta{Name: certSecretName(name), Namespace: installNamespace,
			Annotations: map[string]string{servingcert.AnnotationServingFor: name}},
		Type: corev1.SecretTypeTLS,
	}
	svcObj, err := toObject(svc)
	if err != nil {
		return nil, err
	}
	secretObj, err := toObject(secret)
	if err != nil {
		return nil, err
	}
	return []*unstructured.Unstructured{svcObj, secretObj}, nil
}

// mountCertificate mounts the certificate Secret of the Service in front
// of Deployment obj where OLM mounts it (apiServiceCertPath and
// webhookCertPath, in every container), replacing volumes of the same name
// and mounts at the same path, and marks the Deployment so that its pods
// roll when the certificate is replaced.
func mountCertificate(obj *unstructured.Unstructured) {
	secret := certSecretName(serviceName(obj.GetName()))
	spec := childObject(childObject(childObject(obj.Object, "spec"), "template"), "spec")
	volumes := []struct{ name, path, crt, key string }{
		{apiServiceCertVolume, apiServiceCertPath, "apiserver.crt", "apiserver.key"},
		{webhookCertVolume, webhookCertPath, "tls.crt", "tls.key"},
	}
	for _, v := range volumes {
		vol := map[string]any{"name": v.name, "secret": map[string]any{
			"secretName": secret,
			"items": []any{
				map[string]any{"key": servingcert.KeyCert, "path": v.crt},
				map[string]any{"key": servingcert.KeyKey, "path": v.key},
			},
		}}
		spec["volumes"] = replaceOrAppend(spec["volumes"], vol, func(m map[string]any) bool { return m["name"] == v.name })
		containers, _ := spec["containers"].([]any)
		for _, c := range containers {
			cm, ok := c.(map[string]any)
			if !ok {
				continue
			}
			mount := map[string]any{"name": v.name, "mountPath": v.path}
			cm["volumeMounts"] = replaceOrAppend(cm["volumeMounts"], mount, func(m map[string]any) bool {
				return m["name"] == v.name || m["mountPath"] == v.path
			})
		}
	}
	annotations := obj.GetAnnotations()
	if annotations == nil {
		annotations = map[string]string{}
	}
	annotations[servingcert.AnnotationInjectCA] = secret
	obj.SetAnnotations(annotations)
}

// replaceOrAppend returns list with the first item that match selects
// replaced by item, or item appended.
func replaceOrAppend(list any, item map[string]any, match func(map[string]any) bool) []any {
	items, _ := list.([]any)
	for i, it := range items {
		if m, ok := it.(map[string]any); ok && match(m) {
			items[i] = item
			return items
		}
	}
	return append(items, item)
}
