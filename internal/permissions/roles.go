package permissions

import (
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Roles turns rules into RBAC objects an admin can apply, all named name
// (for example "<bundledeployment>-installer") and bound to ServiceAccount
// saNamespace/saName: a ClusterRole and ClusterRoleBinding for the
// cluster-wide rules, then a Role and RoleBinding per namespace, in order
// of namespace. The objects carry apiVersion and kind.
func Roles(name string, saNamespace, saName string, rules []Rule) []client.Object {
	subjects := []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: saName, Namespace: saNamespace}}
	var objs []client.Object
	for _, s := range groupByNamespace(rules) {
		policy := make([]rbacv1.PolicyRule, len(s.rules))
		for i, r := range s.rules {
			policy[i] = *r.PolicyRule.DeepCopy()
		}
		if s.namespace == "" {
			objs = append([]client.Object{
				&rbacv1.ClusterRole{
					TypeMeta:   typeMeta("ClusterRole"),
					ObjectMeta: metav1.ObjectMeta{Name: name},
					Rules:      policy,
				},
				&rbacv1.ClusterRoleBinding{
					TypeMeta:   typeMeta("ClusterRoleBinding"),
					ObjectMeta: metav1.ObjectMeta{Name: name},
					RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: name},
					Subjects:   subjects,
				},
			}, objs...)
			continue
		}
		objs = append(objs,
			&rbacv1.Role{
				TypeMeta:   typeMeta("Role"),
				ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: s.namespace},
				Rules:      policy,
			},
			&rbacv1.RoleBinding{
				TypeMeta:   typeMeta("RoleBinding"),
				ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: s.namespace},
				RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: name},
				Subjects:   subjects,
			},
		)
	}
	return objs
}

// typeMeta is the apiVersion and kind of an rbac.authorization.k8s.io/v1
// kind.
func typeMeta(kind string) metav1.TypeMeta {
	return metav1.TypeMeta{APIVersion: rbacv1.SchemeGroupVersion.String(), Kind: kind}
}
