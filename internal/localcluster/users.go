package localcluster

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	rukpakv1alpha2 "github.com/rukpak/rukpak/api/v1alpha2"
	"github.com/rukpak/rukpak/config"
)

// uploaderRole is the ClusterRole of config/rbac that lets its subject
// upload content to the manager's content server.
const uploaderRole = "rukpak-uploader"

// Uploader is the ServiceAccount the local cluster provides for its
// admin's uploads, bound to ClusterRole rukpak-uploader by the
// ClusterRoleBinding of the same name: `rukpakctl run` requests a token
// for it (the content server takes tokens, never the kubeconfig's
// credentials) when the BundleDeployment names no ServiceAccount and no
// token is given. Only who may create its tokens (the admin) can use it.
var Uploader = types.NamespacedName{Namespace: rukpakv1alpha2.SystemNamespace, Name: "rukpak-uploader"}

// forUsers returns what the local cluster offers its users: the
// ClusterRoles the release ships for them (config.UserRoles) and the
// admin's Uploader with its binding.
func forUsers() ([]client.Object, error) {
	roles, err := config.UserRoles()
	if err != nil {
		return nil, err
	}
	objs := make([]client.Object, 0, len(roles)+2)
	for _, r := range roles {
		objs = append(objs, r)
	}
	return append(objs,
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: Uploader.Namespace, Name: Uploader.Name}},
		&rbacv1.ClusterRoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: Uploader.Name},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: uploaderRole},
			Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: Uploader.Namespace, Name: Uploader.Name}},
		},
	), nil
}

// installForUsers creates what forUsers returns, keeping what exists. The
// system namespace must exist.
func installForUsers(ctx context.Context, c client.Client) error {
	objs, err := forUsers()
	if err != nil {
		return err
	}
	for _, obj := range objs {
		if err := createIfMissing(ctx, c, obj); err != nil {
			return fmt.Errorf("installing %T %s for users: %w", obj, client.ObjectKeyFromObject(obj), err)
		}
	}
	return nil
}

// ensureForUsers installs what forUsers returns on the running cluster of
// stateDir (one started by an older rukpakctl lacks it), as its admin.
func ensureForUsers(ctx context.Context, stateDir string) error {
	kubeconfig, err := KubeconfigPath(stateDir)
	if err != nil {
		return err
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return fmt.Errorf("loading kubeconfig %s: %w", kubeconfig, err)
	}
	scheme, err := newScheme()
	if err != nil {
		return err
	}
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		return fmt.Errorf("creating client: %w", err)
	}
	return installForUsers(ctx, c)
}
