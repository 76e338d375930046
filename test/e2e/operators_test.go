package e2e

import (
	"bytes"
	"context"
	"encoding/base64"
	"fmt"
	"maps"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rukpak/rukpak/api/v1alpha2"
	"github.com/rukpak/rukpak/pkg/envtest"
)

// realOperator is one bundle of test/e2e/testdata/operators (see its
// README for where each comes from), in two consecutive published
// versions.
type realOperator struct {
	name       string // directory under testdata/operators
	from, to   string // versions: installed, then upgraded to
	ownNS      bool   // install in OwnNamespace mode (the CSV has no AllNamespaces)
	deployment string
	image      string   // the Deployment's image in version to
	crds       []string // the CRDs the bundle ships
	// certService is the Service rukpak generates for the webhooks
	// ("" without webhooks); its certificate Secret is <service>-cert.
	certService string
	validating  []string // ValidatingWebhookConfigurations (generateNames)
	mutating    []string // MutatingWebhookConfigurations (generateNames)
	converted   []string // CRDs whose conversion calls the webhook
}

var realOperators = []realOperator{{
	name: "node-maintenance-operator", from: "0.20.1", to: "0.21.0",
	deployment:  "node-maintenance-operator-controller-manager",
	image:       "quay.io/medik8s/node-maintenance-operator:v0.21.0",
	crds:        []string{"nodemaintenances.nodemaintenance.medik8s.io"},
	certService: "node-maintenance-operator-controller-manager-service",
	validating:  []string{"vnodemaintenance.kb.io"},
}, {
	name: "kepler-operator", from: "0.21.0", to: "0.22.0",
	deployment: "kepler-operator-controller",
	image:      "quay.io/sustainable_computing_io/kepler-operator:0.22.0",
	crds: []string{"powermonitors.kepler.system.sustainable.computing.io",
		"powermonitorinternals.kepler.system.sustainable.computing.io"},
	certService: "kepler-operator-controller-service",
	validating:  []string{"vpowermonitor.kb.io"},
	mutating:    []string{"mpowermonitor.kb.io"},
	converted:   []string{"powermonitors.kepler.system.sustainable.computing.io"},
}, {
	name: "microcks", from: "1.9.0", to: "1.10.0", ownNS: true,
	deployment: "microcks-ansible-operator",
	image:      "quay.io/microcks/microcks-ansible-operator:1.10.0",
	crds:       []string{"microcksinstalls.microcks.github.io"},
}}

// TestRealOperators installs three operator bundles as the public
// catalog publishes them (an admission webhook, a conversion webhook, an
// OwnNamespace-only operator), each Ready with the certificates rukpak
// makes injected where they are trusted, upgrades each to its next
// published version (Ready on the new revision, the certificate kept),
// and deletes each, leaving nothing behind: no object labelled for the
// BundleDeployment, the CRDs deleted (deletionPolicy.crds: Delete), the
// certificate Secrets gone.
func TestRealOperators(t *testing.T) {
	host := startRegistry(t)
	// kepler-operator ships a ServiceMonitor: the cluster must serve the
	// kind, as one running the Prometheus operator does (OLM refuses the
	// bundle too where it does not).
	serveServiceMonitors(t)
	for _, op := range realOperators {
		t.Run(op.name, func(t *testing.T) {
			t.Parallel()
			testRealOperator(t, host, op)
		})
	}
}

func testRealOperator(t *testing.T, host string, op realOperator) {
	ctx := context.Background()
	dir := fixture("test", "e2e", "testdata", "operators", op.name)
	from := host + "/operators/" + op.name + ":" + op.from
	to := host + "/operators/" + op.name + ":" + op.to
	pushImage(t, from, dirFiles(t, filepath.Join(dir, op.from), ""))
	pushImage(t, to, dirFiles(t, filepath.Join(dir, op.to), ""))

	name, ns := envtest.UniqueName("op"), envtest.UniqueName("op")
	var cfg *v1alpha2.BundleConfig
	if op.ownNS {
		cfg = &v1alpha2.BundleConfig{WatchNamespaces: []string{ns}}
	}
	createFormatBD(t, name, v1alpha2.ClassRegistry, ns, from, cfg)
	updateSpec(t, name, func(s *v1alpha2.BundleDeploymentSpec) {
		s.DeletionPolicy = &v1alpha2.DeletionPolicy{CRDs: v1alpha2.CRDDeletionPolicyDelete}
	})
	waitReady(t, name, ns)
	first := getBD(t, name)
	cert := checkCerts(t, op, ns, nil)
	generatedRBAC := rbacNames(t, first)

	// The next published version: Ready on a new revision, its image
	// rolled out, the certificate kept (made once, not re-rendered).
	updateSpec(t, name, func(s *v1alpha2.BundleDeploymentSpec) { s.Sources[0].Image.Ref = to })
	waitReady(t, name, ns)
	if bd := getBD(t, name); bd.Status.ActiveBundle == first.Status.ActiveBundle {
		t.Fatalf("active revision still %s after the upgrade", bd.Status.ActiveBundle)
	}
	d := &appsv1.Deployment{}
	if err := suite.client.Get(ctx, client.ObjectKey{Namespace: ns, Name: op.deployment}, d); err != nil {
		t.Fatal(err)
	}
	if img := d.Spec.Template.Spec.Containers[0].Image; img != op.image {
		t.Fatalf("Deployment %s runs %s after the upgrade, want %s", op.deployment, img, op.image)
	}
	checkCerts(t, op, ns, cert)
	// The roles and bindings generated for the old CSV (named after it)
	// are pruned; the bundle's own ClusterRole stays.
	upgraded := time.Now()
	envtest.Eventually(t, corpusDeadline, func() error {
		now := rbacNames(t, first)
		for id, created := range generatedRBAC {
			if at, ok := now[id]; ok && csvGenerated.MatchString(id) {
				return fmt.Errorf("%s of version %s is still there after the upgrade (at %s; created at %s, then at %s)",
					id, op.from, upgraded.Format(time.TimeOnly), created.Format(time.TimeOnly), at.Format(time.TimeOnly))
			}
		}
		return nil
	})

	deleteBD(t, name)
	checkNothingLeft(t, op, first, ns)
}

// csvGenerated matches the names of roles and bindings generated from a
// CSV: "<csv>-<serviceaccount>-<hash>".
var csvGenerated = regexp.MustCompile(`-[0-9a-f]{10}$`)

// rbacNames returns "Kind namespace/name" of every Role, RoleBinding,
// ClusterRole and ClusterRoleBinding labelled for bd, with its creation time.
func rbacNames(t *testing.T, bd *v1alpha2.BundleDeployment) map[string]time.Time {
	t.Helper()
	names := map[string]time.Time{}
	for _, kind := range []string{"RoleList", "RoleBindingList", "ClusterRoleList", "ClusterRoleBindingList"} {
		list := &unstructured.UnstructuredList{}
		list.SetGroupVersionKind(schema.GroupVersionKind{Group: "rbac.authorization.k8s.io", Version: "v1", Kind: kind})
		if err := suite.client.List(context.Background(), list, client.MatchingLabels{v1alpha2.LabelOwnerUID: string(bd.UID)}); err != nil {
			t.Fatal(err)
		}
		for _, o := range list.Items {
			names[strings.TrimSuffix(kind, "List")+" "+client.ObjectKeyFromObject(&o).String()] = o.GetCreationTimestamp().Time
		}
	}
	if len(names) == 0 {
		t.Fatalf("no RBAC labelled for %s", bd.Name)
	}
	return names
}

// getBD reads BundleDeployment name.
func getBD(t *testing.T, name string) *v1alpha2.BundleDeployment {
	t.Helper()
	bd := &v1alpha2.BundleDeployment{}
	if err := suite.client.Get(context.Background(), client.ObjectKey{Name: name}, bd); err != nil {
		t.Fatal(err)
	}
	return bd
}

// checkCerts checks that the certificate Secret of op's webhook Service
// holds a serving certificate and that its CA is in every caBundle that
// calls the Service; with want, that the certificate is still want. It
// returns the certificate (nil for an operator without webhooks).
func checkCerts(t *testing.T, op realOperator, ns string, want []byte) []byte {
	t.Helper()
	if op.certService == "" {
		return nil
	}
	ctx := context.Background()
	secret := &corev1.Secret{}
	if err := suite.client.Get(ctx, client.ObjectKey{Namespace: ns, Name: op.certService + "-cert"}, secret); err != nil {
		t.Fatalf("certificate Secret: %v", err)
	}
	crt, ca := secret.Data["tls.crt"], secret.Data["ca.crt"]
	if len(crt) == 0 || len(secret.Data["tls.key"]) == 0 || len(ca) == 0 {
		t.Fatalf("Secret %s holds no certificate: keys %v", secret.Name, slices.Sorted(maps.Keys(secret.Data)))
	}
	if want != nil && !bytes.Equal(crt, want) {
		t.Fatalf("Secret %s: the serving certificate changed with the upgrade; want it kept", secret.Name)
	}
	trusts := func(what string, bundle []byte) {
		if !bytes.Contains(bundle, bytes.TrimSpace(ca)) {
			t.Fatalf("%s: caBundle does not hold the CA of Secret %s", what, secret.Name)
		}
	}
	for _, gen := range op.validating {
		w := &unstructured.Unstructured{}
		w.SetGroupVersionKind(schema.GroupVersionKind{Group: "admissionregistration.k8s.io", Version: "v1", Kind: "ValidatingWebhookConfiguration"})
		checkWebhook(t, w, ns+"-"+gen, op.certService, ns, trusts)
	}
	for _, gen := range op.mutating {
		w := &unstructured.Unstructured{}
		w.SetGroupVersionKind(schema.GroupVersionKind{Group: "admissionregistration.k8s.io", Version: "v1", Kind: "MutatingWebhookConfiguration"})
		checkWebhook(t, w, ns+"-"+gen, op.certService, ns, trusts)
	}
	for _, crdName := range op.converted {
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := suite.client.Get(ctx, client.ObjectKey{Name: crdName}, crd); err != nil {
			t.Fatal(err)
		}
		c := crd.Spec.Conversion
		if c == nil || c.Strategy != apiextensionsv1.WebhookConverter || c.Webhook == nil || c.Webhook.ClientConfig == nil ||
			c.Webhook.ClientConfig.Service == nil || c.Webhook.ClientConfig.Service.Name != op.certService || c.Webhook.ClientConfig.Service.Namespace != ns {
			t.Fatalf("CRD %s conversion = %+v, want a webhook calling Service %s/%s", crdName, c, ns, op.certService)
		}
		trusts("CRD "+crdName, c.Webhook.ClientConfig.CABundle)
	}
	return crt
}

// checkWebhook checks the webhook configuration name: each of its webhooks
// calls Service ns/service and trusts the Service's CA.
func checkWebhook(t *testing.T, w *unstructured.Unstructured, name, service, ns string, trusts func(string, []byte)) {
	t.Helper()
	if err := suite.client.Get(context.Background(), client.ObjectKey{Name: name}, w); err != nil {
		t.Fatal(err)
	}
	hooks, _, _ := unstructured.NestedSlice(w.Object, "webhooks")
	if len(hooks) == 0 {
		t.Fatalf("%s %s has no webhooks", w.GetKind(), name)
	}
	for _, h := range hooks {
		hook, _ := h.(map[string]any)
		svc, _, _ := unstructured.NestedMap(hook, "clientConfig", "service")
		if svc["name"] != service || svc["namespace"] != ns {
			t.Fatalf("%s %s calls %v, want Service %s/%s", w.GetKind(), name, svc, ns, service)
		}
		// caBundle is base64 in the unstructured form.
		encoded, _, _ := unstructured.NestedString(hook, "clientConfig", "caBundle")
		bundle, err := base64.StdEncoding.DecodeString(encoded)
		if err != nil {
			t.Fatalf("%s %s caBundle: %v", w.GetKind(), name, err)
		}
		trusts(w.GetKind()+" "+name, bundle)
	}
}

// ownedKinds are the kinds checkNothingLeft lists for objects labelled
// for a deleted BundleDeployment.
var ownedKinds = []schema.GroupVersionKind{
	{Version: "v1", Kind: "ConfigMapList"},
	{Version: "v1", Kind: "SecretList"},
	{Version: "v1", Kind: "ServiceList"},
	{Version: "v1", Kind: "ServiceAccountList"},
	{Version: "v1", Kind: "NamespaceList"},
	{Group: "apps", Version: "v1", Kind: "DeploymentList"},
	{Group: "rbac.authorization.k8s.io", Version: "v1", Kind: "RoleList"},
	{Group: "rbac.authorization.k8s.io", Version: "v1", Kind: "RoleBindingList"},
	{Group: "rbac.authorization.k8s.io", Version: "v1", Kind: "ClusterRoleList"},
	{Group: "rbac.authorization.k8s.io", Version: "v1", Kind: "ClusterRoleBindingList"},
	{Group: "admissionregistration.k8s.io", Version: "v1", Kind: "ValidatingWebhookConfigurationList"},
	{Group: "admissionregistration.k8s.io", Version: "v1", Kind: "MutatingWebhookConfigurationList"},
	{Group: "apiextensions.k8s.io", Version: "v1", Kind: "CustomResourceDefinitionList"},
	{Group: "apiregistration.k8s.io", Version: "v1", Kind: "APIServiceList"},
	{Group: "monitoring.coreos.com", Version: "v1", Kind: "ServiceMonitorList"},
}

// checkNothingLeft checks that deleting bd left nothing: no object of
// ownedKinds labelled with its UID, its CRDs and certificate Secret gone,
// no Bundle it controlled.
func checkNothingLeft(t *testing.T, op realOperator, bd *v1alpha2.BundleDeployment, ns string) {
	t.Helper()
	ctx := context.Background()
	for _, crdName := range op.crds {
		waitGone(t, &apiextensionsv1.CustomResourceDefinition{}, "", crdName)
	}
	if op.certService != "" {
		waitGone(t, &corev1.Secret{}, ns, op.certService+"-cert")
	}
	envtest.Eventually(t, corpusDeadline, func() error {
		var left []string
		for _, gvk := range ownedKinds {
			list := &unstructured.UnstructuredList{}
			list.SetGroupVersionKind(gvk)
			if err := suite.client.List(ctx, list, client.MatchingLabels{v1alpha2.LabelOwnerUID: string(bd.UID)}); err != nil {
				return fmt.Errorf("listing %s: %w", gvk.Kind, err)
			}
			for _, o := range list.Items {
				left = append(left, strings.TrimSuffix(gvk.Kind, "List")+" "+client.ObjectKeyFromObject(&o).String())
			}
		}
		bundles := &v1alpha2.BundleList{}
		if err := suite.client.List(ctx, bundles); err != nil {
			return err
		}
		for _, b := range bundles.Items {
			if metav1.IsControlledBy(&b, bd) {
				left = append(left, "Bundle "+b.Name)
			}
		}
		if len(left) > 0 {
			return fmt.Errorf("left behind by %s: %s", bd.Name, strings.Join(left, ", "))
		}
		return nil
	})
}

// serveServiceMonitors makes the cluster serve monitoring.coreos.com/v1
// ServiceMonitors (a schemaless stand-in for the Prometheus operator's
// CRD) until the test ends, unless it already does.
func serveServiceMonitors(t *testing.T) {
	t.Helper()
	ctx := context.Background()
	crd := &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "servicemonitors.monitoring.coreos.com"},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: "monitoring.coreos.com",
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: "servicemonitors", Singular: "servicemonitor",
				Kind: "ServiceMonitor", ListKind: "ServiceMonitorList"},
			Scope: apiextensionsv1.NamespaceScoped,
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{Name: "v1", Served: true, Storage: true,
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
					Type: "object", XPreserveUnknownFields: ptr.To(true)}}}},
		},
	}
	switch err := suite.client.Create(ctx, crd); {
	case apierrors.IsAlreadyExists(err):
		return
	case err != nil:
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := suite.client.Delete(context.Background(), crd); err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("deleting the ServiceMonitor CRD: %v", err)
		}
	})
	envtest.Eventually(t, corpusDeadline, func() error {
		list := &unstructured.UnstructuredList{}
		list.SetGroupVersionKind(schema.GroupVersionKind{Group: "monitoring.coreos.com", Version: "v1", Kind: "ServiceMonitorList"})
		return suite.client.List(ctx, list)
	})
}

// TestWebhookDeploymentNotAvailable installs node-maintenance-operator
// with its webhook's Deployment pinned to a node that does not exist: the
// webhook configuration is installed but its Deployment never becomes
// Available, so the BundleDeployment is neither Healthy nor Ready, and
// says which Deployment. The published bundle, which schedules, makes it
// Healthy.
func TestWebhookDeploymentNotAvailable(t *testing.T) {
	ctx := context.Background()
	host := startRegistry(t)
	op := realOperators[0]
	files := dirFiles(t, fixture("test", "e2e", "testdata", "operators", op.name, op.to), "")
	const csv = "manifests/node-maintenance-operator.clusterserviceversion.yaml"
	const at = "                priorityClassName: system-cluster-critical\n"
	if !strings.Contains(files[csv], at) {
		t.Fatalf("%s has no line %q to pin the pods before", csv, at)
	}
	pinned := map[string]string{}
	maps.Copy(pinned, files)
	pinned[csv] = strings.Replace(files[csv], at, "                nodeSelector:\n                  e2e.rukpak.io/no-such-node: \"true\"\n"+at, 1)
	stuck := host + "/operators/" + op.name + ":pinned"
	pushImage(t, stuck, pinned)
	good := host + "/operators/" + op.name + ":" + op.to
	pushImage(t, good, files)

	name, ns := envtest.UniqueName("stuck"), envtest.UniqueName("stuck")
	createFormatBD(t, name, v1alpha2.ClassRegistry, ns, stuck, nil)
	t.Cleanup(func() { deleteBD(t, name) })
	var healthy *metav1.Condition
	envtest.Eventually(t, corpusDeadline, func() error {
		bd := getBD(t, name)
		healthy = meta.FindStatusCondition(bd.Status.Conditions, v1alpha2.TypeHealthy)
		if healthy == nil || healthy.Status != metav1.ConditionFalse || healthy.ObservedGeneration != bd.Generation {
			return fmt.Errorf("Healthy = %+v, want False", healthy)
		}
		return nil
	})
	if !strings.Contains(healthy.Message, op.deployment) {
		t.Fatalf("Healthy message %q does not name Deployment %s", healthy.Message, op.deployment)
	}
	w := &unstructured.Unstructured{}
	w.SetGroupVersionKind(schema.GroupVersionKind{Group: "admissionregistration.k8s.io", Version: "v1", Kind: "ValidatingWebhookConfiguration"})
	if err := suite.client.Get(ctx, client.ObjectKey{Name: ns + "-" + op.validating[0]}, w); err != nil {
		t.Fatalf("the webhook configuration is installed regardless: %v", err)
	}
	// It stays so (the Deployment cannot become Available).
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(time.Second) {
		bd := getBD(t, name)
		for _, typ := range []string{v1alpha2.TypeHealthy, v1alpha2.TypeReady} {
			if c := meta.FindStatusCondition(bd.Status.Conditions, typ); c == nil || c.Status == metav1.ConditionTrue {
				t.Fatalf("%s = %+v while the webhook's Deployment is not Available", typ, c)
			}
		}
	}
	d := &appsv1.Deployment{}
	if err := suite.client.Get(ctx, client.ObjectKey{Namespace: ns, Name: op.deployment}, d); err != nil {
		t.Fatal(err)
	}
	if d.Status.AvailableReplicas != 0 {
		t.Fatalf("Deployment %s: %d available; the test needs it unavailable", op.deployment, d.Status.AvailableReplicas)
	}

	updateSpec(t, name, func(s *v1alpha2.BundleDeploymentSpec) { s.Sources[0].Image.Ref = good })
	waitReady(t, name, ns)
}
