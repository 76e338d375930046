package registryv1

import (
	"fmt"
	"strings"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/rukpak/rukpak/internal/servingcert"
)

// The priorities OLM gives the APIServices it creates.
const (
	apiServiceGroupPriority   = 2000
	apiServiceVersionPriority = 15
)

// apiServiceName is the name of the APIService of a, <version>.<group>.
func apiServiceName(a apiServiceDescription) string {
	return a.Version + "." + a.Group
}

// checkAPIServices refuses owned APIs without a valid group and version.
func checkAPIServices(csv *clusterServiceVersion) error {
	seen := map[string]bool{}
	for i, a := range csv.Spec.APIServiceDefinitions.Owned {
		field := fmt.Sprintf("spec.apiservicedefinitions.owned[%d]", i)
		if errs := validation.IsDNS1123Subdomain(a.Group); len(errs) > 0 || !strings.Contains(a.Group, ".") {
			return invalidCSV(csv.Metadata.Name, "%s.group %q is not a valid API group (a DNS name with a dot)", field, a.Group)
		}
		if errs := validation.IsDNS1035Label(a.Version); len(errs) > 0 {
			return invalidCSV(csv.Metadata.Name, "%s.version %q is not a valid API version: %s", field, a.Version, strings.Join(errs, "; "))
		}
		if a.Group == "core.rukpak.io" || strings.HasSuffix(a.Group, ".k8s.io") || strings.HasSuffix(a.Group, ".kubernetes.io") {
			return unsupported(csv.Metadata.Name, "%s: API group %s is reserved; a bundle may not serve it", field, a.Group)
		}
		if seen[apiServiceName(a)] {
			// Several kinds of one group and version share one APIService.
			continue
		}
		seen[apiServiceName(a)] = true
	}
	return nil
}

// apiServices returns an APIService for each group and version the CSV
// owns, calling the Service of its Deployment on its containerPort, marked for CA
// injection; and, once for each Deployment serving one, what an
// aggregated API server needs to authenticate and authorize its callers
// (as OLM grants it): a ClusterRoleBinding to system:auth-delegator and a
// RoleBinding to extension-apiserver-authentication-reader in kube-system,
// for the Deployment's ServiceAccount.
func apiServices(csv *clusterServiceVersion, installNamespace string) (services, bindings []*unstructured.Unstructured, err error) {
	seen, bound := map[string]bool{}, map[string]bool{}
	for _, a := range csv.Spec.APIServiceDefinitions.Owned {
		name := apiServiceName(a)
		svc := serviceName(a.DeploymentName)
		if !seen[name] {
			seen[name] = true
			obj := newObject("apiregistration.k8s.io/v1", "APIService", "", name)
			obj.SetAnnotations(map[string]string{servingcert.AnnotationInjectCA: certSecretName(svc)})
			obj.Object["spec"] = map[string]any{
				"group":                a.Group,
				"version":              a.Version,
				"service":              map[string]any{"namespace": installNamespace, "name": svc, "port": int64(portOr(a.ContainerPort))},
				"groupPriorityMinimum": int64(apiServiceGroupPriority),
				"versionPriority":      int64(apiServiceVersionPriority),
			}
			services = append(services, obj)
		}
		if bound[a.DeploymentName] {
			continue
		}
		bound[a.DeploymentName] = true
		sa := csv.deployment(a.DeploymentName).serviceAccount
		if sa == "" {
			sa = "default"
		}
		subjects := []rbacv1.Subject{{Kind: "ServiceAccount", Name: sa, Namespace: installNamespace}}
		crb, err := toObject(&rbacv1.ClusterRoleBinding{
			TypeMeta:   metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "ClusterRoleBinding"},
			ObjectMeta: metav1.ObjectMeta{Name: installNamespace + "-" + svc + "-system:auth-delegator"},
			Subjects:   subjects,
			RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: "system:auth-delegator"},
		})
		if err != nil {
			return nil, nil, err
		}
		rb, err := toObject(&rbacv1.RoleBinding{
			TypeMeta:   metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "RoleBinding"},
			ObjectMeta: metav1.ObjectMeta{Name: installNamespace + "-" + svc + "-auth-reader", Namespace: "kube-system"},
			Subjects:   subjects,
			RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: "extension-apiserver-authentication-reader"},
		})
		if err != nil {
			return nil, nil, err
		}
		bindings = append(bindings, crb, rb)
	}
	return services, bindings, nil
}
