package review

import (
	"cmp"
	"fmt"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// csvGK is the kind of an OLM ClusterServiceVersion.
var csvGK = schema.GroupKind{Group: "operators.coreos.com", Kind: "ClusterServiceVersion"}

// csvPermissions are the fields of a ClusterServiceVersion that grant.
type csvPermissions struct {
	Spec struct {
		Install struct {
			Spec struct {
				Permissions        []csvPermission `json:"permissions"`
				ClusterPermissions []csvPermission `json:"clusterPermissions"`
			} `json:"spec"`
		} `json:"install"`
	} `json:"spec"`
}

// csvPermission is the rules of one ServiceAccount.
type csvPermission struct {
	ServiceAccountName string              `json:"serviceAccountName"`
	Rules              []rbacv1.PolicyRule `json:"rules"`
}

// addCSV adds what a ClusterServiceVersion in namespace shipped as an
// object would have OLM grant: its clusterPermissions cluster-wide and its
// permissions in its namespace, to ServiceAccounts of that namespace.
// (Package registryv1 renders these into roles itself and never ships the
// CSV; this is for a plain bundle that ships one for an OLM in the
// cluster, reviewed as an OwnNamespace install.)
func addCSV(namespace string, u *unstructured.Unstructured, out map[subjectKey]atomSet, b *budget) error {
	var csv csvPermissions
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &csv); err != nil {
		return fmt.Errorf("decoding ClusterServiceVersion %s: %w", u.GetName(), err)
	}
	perms := []struct {
		namespace string
		list      []csvPermission
	}{
		{"", csv.Spec.Install.Spec.ClusterPermissions},
		{namespace, csv.Spec.Install.Spec.Permissions},
	}
	for _, p := range perms {
		for _, perm := range p.list {
			atoms := atomSet{}
			if err := atoms.add(p.namespace, perm.Rules, b); err != nil {
				return fmt.Errorf("ClusterServiceVersion %s: %w", u.GetName(), err)
			}
			sa := subjectKey{kind: rbacv1.ServiceAccountKind, namespace: namespace, name: cmp.Or(perm.ServiceAccountName, "default")}
			if err := grant(out, []subjectKey{sa}, atoms, b); err != nil {
				return err
			}
		}
	}
	return nil
}
