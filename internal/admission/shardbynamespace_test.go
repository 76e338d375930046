//go:build integration

package admission_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rukpak/rukpak/api/v1alpha2"
	"github.com/rukpak/rukpak/config"
	"github.com/rukpak/rukpak/pkg/envtest"
)

var env *envtest.Env

// TestMain starts a real API server with the policies of config/policy.
func TestMain(m *testing.M) { envtest.Run(m, &env) }

// shardMap is the params ConfigMap's data: namespace to shard.
var shardMap = map[string]string{
	"team-a":     "a",
	"team-b":     "b",
	"team-upper": "Shard-B",               // a label value, not a DNS-1123 label
	"team-space": "shard b",               // not a label value
	"team-empty": "",                      // no shard
	"team-long":  strings.Repeat("x", 64), // over 63 characters
}

// installShardByNamespace installs the ConfigMap of shardMap and the
// policy of config/shards/default-by-namespace (again, for each test that
// needs them), and waits until a dry-run
// create of a BundleDeployment installing into team-a comes back labelled.
func installShardByNamespace(t *testing.T) {
	t.Helper()
	ctx := context.Background()
	cm := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "rukpak-shard-by-namespace", Namespace: v1alpha2.SystemNamespace},
		Data:       shardMap,
	}
	if err := env.Client.Create(ctx, cm); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	objs, err := config.ShardByNamespacePolicy()
	if err != nil {
		t.Fatal(err)
	}
	for _, obj := range objs {
		if err := env.Client.Apply(ctx, client.ApplyConfigurationFromUnstructured(obj), client.FieldOwner("test"), client.ForceOwnership); err != nil {
			t.Fatalf("applying %s %s: %v", obj.GetKind(), obj.GetName(), err)
		}
	}
	envtest.Eventually(t, 30*time.Second, func() error {
		bd := newBD("team-a", nil)
		if err := env.Client.Create(ctx, bd, client.DryRunAll); err != nil {
			return err
		}
		if bd.Labels[v1alpha2.LabelShard] != "a" {
			return fmt.Errorf("rukpak-shard-by-namespace not enforced yet: labels %v", bd.Labels)
		}
		return nil
	})
}

func newBD(ns string, labels map[string]string) *v1alpha2.BundleDeployment {
	return &v1alpha2.BundleDeployment{
		ObjectMeta: metav1.ObjectMeta{Name: envtest.UniqueName("shard-default"), Labels: labels},
		Spec: v1alpha2.BundleDeploymentSpec{
			ProvisionerClassName: v1alpha2.ClassPlain,
			InstallNamespace:     ns,
			Sources: []v1alpha2.BundleSource{{
				Type:       v1alpha2.SourceTypeConfigMaps,
				ConfigMaps: []v1alpha2.ConfigMapSource{{ConfigMap: v1alpha2.LocalObjectReference{Name: "manifests"}}},
			}},
		},
	}
}

// TestShardByNamespace: a BundleDeployment created without the shard label
// gets the shard its installNamespace maps to, if that is a DNS-1123
// label; a label the creator set stays; updates are left alone.
func TestShardByNamespace(t *testing.T) {
	installShardByNamespace(t)
	ctx := context.Background()
	// shard: the label after the create and update; "-": no label.
	for _, tc := range []struct {
		name   string
		ns     string
		labels map[string]string
		// update, if set, changes the created object; wantErr is a part
		// of the update's error.
		update  func(*v1alpha2.BundleDeployment)
		wantErr string
		shard   string
	}{
		{name: "mapped", ns: "team-a", shard: "a"},
		{name: "another mapped", ns: "team-b", shard: "b"},
		{name: "unmapped", ns: "team-z", shard: "-"},
		{name: "explicit label", ns: "team-a", labels: map[string]string{v1alpha2.LabelShard: "c"}, shard: "c"},
		{name: "explicit empty label", ns: "team-a", labels: map[string]string{v1alpha2.LabelShard: ""}, shard: ""},
		{name: "other labels only", ns: "team-b", labels: map[string]string{"team": "b"}, shard: "b"},
		{name: "mapped to upper case", ns: "team-upper", shard: "-"},
		{name: "mapped to a space", ns: "team-space", shard: "-"},
		{name: "mapped to empty", ns: "team-empty", shard: "-"},
		{name: "mapped to 64 characters", ns: "team-long", shard: "-"},
		{name: "update to another namespace", ns: "team-z", shard: "-",
			update:  func(bd *v1alpha2.BundleDeployment) { bd.Spec.InstallNamespace = "team-a" },
			wantErr: "installNamespace is immutable"},
		{name: "update removing the label", ns: "team-a", shard: "-",
			update: func(bd *v1alpha2.BundleDeployment) { delete(bd.Labels, v1alpha2.LabelShard) }},
		{name: "update of another label", ns: "team-z", shard: "-",
			update: func(bd *v1alpha2.BundleDeployment) { bd.Labels = map[string]string{"team": "z"} }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			bd := newBD(tc.ns, tc.labels)
			if err := env.Client.Create(ctx, bd); err != nil {
				t.Fatalf("create: %v", err)
			}
			if tc.update != nil {
				tc.update(bd)
				err := env.Client.Update(ctx, bd)
				switch {
				case tc.wantErr == "" && err != nil:
					t.Fatalf("update: %v", err)
				case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
					t.Fatalf("update: error %v, want one containing %q", err, tc.wantErr)
				}
			}
			got := &v1alpha2.BundleDeployment{}
			if err := env.Client.Get(ctx, client.ObjectKeyFromObject(bd), got); err != nil {
				t.Fatal(err)
			}
			shard, ok := got.Labels[v1alpha2.LabelShard]
			if !ok {
				shard = "-"
			}
			if shard != tc.shard {
				t.Errorf("label %s = %q, want %q (labels %v)", v1alpha2.LabelShard, shard, tc.shard, got.Labels)
			}
		})
	}
}

// TestShardByNamespaceApply: a create by server-side apply is labelled
// too, and applying the same configuration again keeps the label.
func TestShardByNamespaceApply(t *testing.T) {
	installShardByNamespace(t)
	ctx := context.Background()
	bd := newBD("team-b", nil)
	bd.SetGroupVersionKind(v1alpha2.GroupVersion.WithKind("BundleDeployment"))
	for i := range 2 {
		obj := bd.DeepCopy()
		if err := env.Client.Patch(ctx, obj, client.Apply, client.FieldOwner("gitops"), client.ForceOwnership); err != nil {
			t.Fatalf("apply %d: %v", i, err)
		}
		if obj.Labels[v1alpha2.LabelShard] != "b" {
			t.Errorf("after apply %d: labels %v, want %s=b", i, obj.Labels, v1alpha2.LabelShard)
		}
	}
}

// TestShardByNamespaceWithoutConfigMap: while the params ConfigMap is
// missing, creates succeed and are left unlabelled.
func TestShardByNamespaceWithoutConfigMap(t *testing.T) {
	installShardByNamespace(t)
	ctx := context.Background()
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "rukpak-shard-by-namespace", Namespace: v1alpha2.SystemNamespace}}
	if err := env.Client.Delete(ctx, cm); err != nil {
		t.Fatal(err)
	}
	envtest.Eventually(t, 30*time.Second, func() error {
		bd := newBD("team-a", nil)
		if err := env.Client.Create(ctx, bd, client.DryRunAll); err != nil {
			return err
		}
		if shard, ok := bd.Labels[v1alpha2.LabelShard]; ok {
			return fmt.Errorf("still labelled %q without the ConfigMap", shard)
		}
		return nil
	})
}
