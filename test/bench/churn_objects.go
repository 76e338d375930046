package main

import (
	"context"
	"fmt"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rukpak/rukpak/api/v1alpha2"
)

// The objects of the identity churn.
const (
	churnRole   = "rukpak-bench-churn"
	churnBundle = "churn-bundle"
	churnSA     = "installer"
)

// churnName names BundleDeployment i and its namespace; -1 is the
// warm-up's.
func churnName(i int) string {
	if i < 0 {
		return "churn-warm-up"
	}
	return fmt.Sprintf("churn-%d", i)
}

// churnClusterRole grants what the apply engine does to the ConfigMaps it
// manages; each ServiceAccount gets it in its own namespace.
func churnClusterRole() *rbacv1.ClusterRole {
	return &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: churnRole},
		Rules: []rbacv1.PolicyRule{{
			APIGroups: []string{""}, Resources: []string{"configmaps"},
			Verbs: []string{"create", "delete", "get", "list", "patch", "watch"},
		}},
	}
}

// churnBundleConfigMap is the one bundle every churn BundleDeployment
// installs: a single small ConfigMap, into its own namespace.
func churnBundleConfigMap() *corev1.ConfigMap {
	return &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: churnBundle, Namespace: v1alpha2.SystemNamespace},
		Immutable:  ptr.To(true),
		Data: map[string]string{"settings.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: churn-settings\n" +
			"data:\n  greeting: hello\n"},
	}
}

// churnIdentity is namespace ns, its ServiceAccount and the binding of the
// shared ClusterRole to it.
func churnIdentity(ns string) []client.Object {
	return []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}},
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: churnSA, Namespace: ns}},
		&rbacv1.RoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: churnSA, Namespace: ns},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: churnRole},
			Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: churnSA, Namespace: ns}},
		},
	}
}

// churnBundleDeployment installs the shared bundle into namespace name as
// its ServiceAccount.
func churnBundleDeployment(name string) *v1alpha2.BundleDeployment {
	return &v1alpha2.BundleDeployment{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: v1alpha2.BundleDeploymentSpec{
			ProvisionerClassName: v1alpha2.ClassPlain,
			InstallNamespace:     name,
			ServiceAccount:       &v1alpha2.ServiceAccountReference{Name: churnSA},
			Sources: []v1alpha2.BundleSource{{
				Type: v1alpha2.SourceTypeConfigMaps,
				ConfigMaps: []v1alpha2.ConfigMapSource{{
					ConfigMap: v1alpha2.LocalObjectReference{Name: churnBundle}, Path: "manifests",
				}},
			}},
		},
	}
}

// waitRBAC waits until the ServiceAccount of each namespace may create
// ConfigMaps there, so that no preflight is refused while the API server's
// authorizer catches up (a refusal is only checked again seconds later).
func waitRBAC(ctx context.Context, cs kubernetes.Interface, namespaces []string, workers int) error {
	deadline := time.Now().Add(2 * time.Minute)
	return parallel(len(namespaces), workers, func(i int) error {
		ns := namespaces[i]
		for {
			sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
				User:   "system:serviceaccount:" + ns + ":" + churnSA,
				Groups: []string{"system:serviceaccounts", "system:serviceaccounts:" + ns, "system:authenticated"},
				ResourceAttributes: &authorizationv1.ResourceAttributes{
					Namespace: ns, Verb: "create", Version: "v1", Resource: "configmaps",
				},
			}}
			got, err := cs.AuthorizationV1().SubjectAccessReviews().Create(ctx, sar, metav1.CreateOptions{})
			if err != nil {
				return fmt.Errorf("checking RBAC of %s: %w", ns, err)
			}
			if got.Status.Allowed {
				return nil
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("the RoleBinding in %s is not in effect after 2m", ns)
			}
			time.Sleep(200 * time.Millisecond)
		}
	})
}

// waitGone polls until no BundleDeployment is left.
func waitGone(ctx context.Context, k client.Client, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	lastReport := time.Now()
	for {
		list := &metav1.PartialObjectMetadataList{}
		list.SetGroupVersionKind(v1alpha2.GroupVersion.WithKind("BundleDeploymentList"))
		if err := k.List(ctx, list); err != nil {
			return fmt.Errorf("listing BundleDeployments: %w", err)
		}
		if len(list.Items) == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%d BundleDeployments still there after %s", len(list.Items), timeout)
		}
		if time.Since(lastReport) > 5*time.Second {
			fmt.Printf("  %d BundleDeployments left\n", len(list.Items))
			lastReport = time.Now()
		}
		time.Sleep(time.Second)
	}
}

// leftoverConfigMaps counts the installed ConfigMaps still there.
func leftoverConfigMaps(ctx context.Context, k client.Client) (int, error) {
	list := &metav1.PartialObjectMetadataList{}
	list.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("ConfigMapList"))
	if err := k.List(ctx, list, client.MatchingFields{"metadata.name": "churn-settings"}); err != nil {
		return 0, fmt.Errorf("listing installed ConfigMaps: %w", err)
	}
	return len(list.Items), nil
}
