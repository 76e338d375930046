package restart_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rukpak/rukpak/api/v1alpha2"
	"github.com/rukpak/rukpak/pkg/envtest"
)

// TestUpgradeWritesOnlyWhatChanged: a first install creates each object
// once without a dry-run; an upgrade that changes one object of twenty
// dry-runs and applies that one only (the first time, after a patch of its
// managed fields that moves what its create set to rukpak's apply entry);
// a second upgrade of it is one dry-run and one apply.
func TestUpgradeWritesOnlyWhatChanged(t *testing.T) {
	ctx := context.Background()
	ns := env.Namespace(t, "upgrade")
	log := &writeLog{}
	stop := startManager(t, t.TempDir(), log)
	defer stop()

	content := func(changed string) string {
		files := map[string]string{}
		for j := range 20 {
			value := "v1"
			if j == 7 {
				value = changed
			}
			files[fmt.Sprintf("cm%02d.yaml", j)] = fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm%02d\ndata:\n  value: %q\n", j, value)
		}
		src := &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Name: envtest.UniqueName("src"), Namespace: v1alpha2.SystemNamespace},
			Immutable:  ptr.To(true),
			Data:       files,
		}
		if err := env.Client.Create(ctx, src); err != nil {
			t.Fatal(err)
		}
		return src.Name
	}
	sources := func(cm string) []v1alpha2.BundleSource {
		return []v1alpha2.BundleSource{{Type: v1alpha2.SourceTypeConfigMaps,
			ConfigMaps: []v1alpha2.ConfigMapSource{{ConfigMap: v1alpha2.LocalObjectReference{Name: cm}, Path: "manifests"}}}}
	}
	bd := &v1alpha2.BundleDeployment{
		ObjectMeta: metav1.ObjectMeta{Name: envtest.UniqueName("bd")},
		Spec:       v1alpha2.BundleDeploymentSpec{ProvisionerClassName: v1alpha2.ClassPlain, InstallNamespace: ns, Sources: sources(content("v1"))},
	}
	if err := env.Client.Create(ctx, bd); err != nil {
		t.Fatal(err)
	}
	waitInstalled(t, bd.Name)
	objectWrites := func(writes []string) (applies, dryRuns []string) {
		for _, w := range writes {
			if !strings.Contains(w, "/namespaces/"+ns+"/") {
				continue
			}
			if strings.HasSuffix(w, " dry-run") {
				dryRuns = append(dryRuns, w)
			} else {
				applies = append(applies, w)
			}
		}
		return applies, dryRuns
	}
	writes, _ := log.snapshot()
	applies, dryRuns := objectWrites(writes)
	if len(applies) != 20 || len(dryRuns) != 0 {
		t.Fatalf("first install of 20 objects: %d applies, %d dry-runs; want 20 and 0:\n%s", len(applies), len(dryRuns), strings.Join(append(applies, dryRuns...), "\n"))
	}

	upgrade := func(value string, want ...string) {
		t.Helper()
		writes, _ := log.snapshot()
		mark := len(writes)
		envtest.Eventually(t, 10*time.Second, func() error {
			cur := &v1alpha2.BundleDeployment{}
			if err := env.Client.Get(ctx, client.ObjectKeyFromObject(bd), cur); err != nil {
				return err
			}
			cur.Spec.Sources = sources(content(value))
			return env.Client.Update(ctx, cur)
		})
		envtest.Eventually(t, 30*time.Second, func() error {
			data := &corev1.ConfigMap{}
			if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "cm07"}, data); err != nil {
				return err
			}
			if data.Data["value"] != value {
				return fmt.Errorf("cm07 = %q", data.Data["value"])
			}
			return nil
		})
		waitInstalled(t, bd.Name)
		writes, _ = log.snapshot()
		applies, dryRuns := objectWrites(writes[mark:])
		got := append(dryRuns, applies...)
		slices.Sort(got)
		slices.Sort(want)
		if !slices.Equal(got, want) {
			t.Fatalf("upgrade to %s changing 1 of 20 objects wrote:\n%s\nwant:\n%s", value, strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
	}
	cm07 := "PATCH /api/v1/namespaces/" + ns + "/configmaps/cm07"
	upgrade("v2", cm07+" dry-run", cm07+" json-patch", cm07)
	upgrade("v3", cm07+" dry-run", cm07)
}
