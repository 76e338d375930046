package bundledeployment

import (
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/rukpak/rukpak/api/v1alpha2"
	"github.com/rukpak/rukpak/internal/apply"
	"github.com/rukpak/rukpak/internal/identity"
	"github.com/rukpak/rukpak/internal/inventory"
	"github.com/rukpak/rukpak/internal/objectwatch"
	"github.com/rukpak/rukpak/pkg/failure"
)

func TestIdentityOf(t *testing.T) {
	withSA := v1alpha2.BundleDeploymentSpec{InstallNamespace: "team-a", ServiceAccount: &v1alpha2.ServiceAccountReference{Name: "installer"}}
	withoutSA := v1alpha2.BundleDeploymentSpec{InstallNamespace: "team-a"}
	tests := []struct {
		name       string
		spec       v1alpha2.BundleDeploymentSpec
		managerOK  bool
		want       identity.Identity
		wantReason string
	}{
		{name: "service account", spec: withSA, want: identity.ServiceAccount("team-a", "installer")},
		{name: "service account wins over the manager", spec: withSA, managerOK: true, want: identity.ServiceAccount("team-a", "installer")},
		{name: "manager mode", spec: withoutSA, managerOK: true, want: identity.Manager},
		{name: "required", spec: withoutSA, wantReason: v1alpha2.ReasonServiceAccountRequired},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := &Reconciler{Options: Options{ManagerIdentity: tt.managerOK}}
			got, err := r.identityOf(&v1alpha2.BundleDeployment{Spec: tt.spec})
			if tt.wantReason != "" {
				if failure.Reason(err, "") != tt.wantReason {
					t.Fatalf("error %v, want reason %s", err, tt.wantReason)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("identityOf = %v, %v; want %v", got, err, tt.want)
			}
		})
	}
}

func TestWatchKeys(t *testing.T) {
	cm := schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	crb := schema.GroupVersionResource{Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "clusterrolebindings"}
	res := []apply.Resource{
		{ID: inventory.ID{Version: "v1", Kind: "ConfigMap", Namespace: "a", Name: "x"}, Resource: cm},
		{ID: inventory.ID{Version: "v1", Kind: "ConfigMap", Namespace: "a", Name: "y"}, Resource: cm},
		{ID: inventory.ID{Version: "v1", Kind: "ConfigMap", Namespace: "b", Name: "x"}, Resource: cm},
		{ID: inventory.ID{Group: "rbac.authorization.k8s.io", Version: "v1", Kind: "ClusterRoleBinding", Name: "z"}, Resource: crb},
	}
	sa := identity.ServiceAccount("a", "installer")
	tests := []struct {
		name string
		id   identity.Identity
		want []objectwatch.Key
	}{
		{name: "the manager watches each kind cluster-wide", id: identity.Manager, want: []objectwatch.Key{
			{Identity: identity.Manager, Resource: cm, Kind: res[0].ID.GroupVersionKind()},
			{Identity: identity.Manager, Resource: crb, Kind: res[3].ID.GroupVersionKind()},
		}},
		{name: "a ServiceAccount watches each kind per namespace", id: sa, want: []objectwatch.Key{
			{Identity: sa, Resource: cm, Kind: res[0].ID.GroupVersionKind(), Namespace: "a"},
			{Identity: sa, Resource: cm, Kind: res[0].ID.GroupVersionKind(), Namespace: "b"},
			{Identity: sa, Resource: crb, Kind: res[3].ID.GroupVersionKind()},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := watchKeys(tt.id, res)
			if len(got) != len(tt.want) {
				t.Fatalf("watchKeys = %v, want %v", got, tt.want)
			}
			for i := range got {
				if got[i] != tt.want[i] {
					t.Fatalf("key %d = %v, want %v", i, got[i], tt.want[i])
				}
			}
		})
	}
}
