//go:build integration

package bundledeployment_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rukpak/rukpak/api/v1alpha2"
	"github.com/rukpak/rukpak/internal/inventory"
	"github.com/rukpak/rukpak/pkg/envtest"
)

func TestInstallPlainBundle(t *testing.T) {
	ctx := context.Background()
	ns := envtest.UniqueName("install") // created by rukpak
	cm := manifests(t, map[string]string{
		"01_config.yaml": cmYAML("first", "1") + "---\n" + cmYAML("second", "2"),
		"02_other.json":  `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"third"},"data":{"value":"3"}}`,
	})
	bd := newBD(t, ns, cm)
	bd = waitCondition(t, bd.Name, v1alpha2.TypeInstalled, metav1.ConditionTrue, v1alpha2.ReasonInstalled)

	if c := meta.FindStatusCondition(bd.Status.Conditions, v1alpha2.TypeUnpacked); c == nil || c.Status != metav1.ConditionTrue {
		t.Fatalf("Unpacked = %+v, want True", c)
	}
	if !strings.HasPrefix(bd.Status.ActiveBundle, bd.Name+"-") {
		t.Fatalf("activeBundle = %q, want %s-<hash>", bd.Status.ActiveBundle, bd.Name)
	}
	if bd.Status.InstalledObjects != 3 {
		t.Fatalf("installedObjects = %d, want 3", bd.Status.InstalledObjects)
	}
	if len(bd.Status.ResolvedSources) != 1 || !strings.HasPrefix(bd.Status.ResolvedSources[0].ConfigMaps[0].Digest, "sha256:") {
		t.Fatalf("resolvedSources = %+v, want a pinned digest", bd.Status.ResolvedSources)
	}
	for name, want := range map[string]string{"first": "1", "second": "2", "third": "3"} {
		got := &corev1.ConfigMap{}
		if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, got); err != nil {
			t.Fatalf("object %s: %v", name, err)
		}
		if got.Data["value"] != want {
			t.Fatalf("object %s value = %q, want %q", name, got.Data["value"], want)
		}
		if got.Labels[v1alpha2.LabelOwnerName] != bd.Name || got.Labels[v1alpha2.LabelOwnerKind] != v1alpha2.BundleDeploymentKind {
			t.Fatalf("object %s labels = %v", name, got.Labels)
		}
	}
	b := &v1alpha2.Bundle{}
	envtest.Eventually(t, 20*time.Second, func() error {
		if err := env.Client.Get(ctx, client.ObjectKey{Name: bd.Status.ActiveBundle}, b); err != nil {
			return err
		}
		if b.UnpackPhase() != v1alpha2.BundlePhaseUnpacked || !strings.HasPrefix(b.ContentDigest(), "sha256:") || b.ObjectCount() != 3 {
			return fmt.Errorf("bundle spec.unpacked = %+v, status = %+v", b.Spec.Unpacked, b.Status)
		}
		return nil
	})
	if !metav1.IsControlledBy(b, bd) {
		t.Fatalf("Bundle %s is not controlled by %s", b.Name, bd.Name)
	}
}

func TestBadContentIsReported(t *testing.T) {
	tests := []struct {
		name      string
		files     map[string]string
		mutable   bool
		condition string
		reason    string
		wantInMsg string
	}{
		{name: "invalid yaml", files: map[string]string{"broken.yaml": "apiVersion: v1\nkind: [unclosed"},
			condition: v1alpha2.TypeInstalled, reason: v1alpha2.ReasonInvalidContent, wantInMsg: "broken.yaml"},
		{name: "empty bundle", files: map[string]string{"empty.yaml": "# nothing here\n"},
			condition: v1alpha2.TypeInstalled, reason: v1alpha2.ReasonInvalidContent, wantInMsg: "no objects"},
		{name: "duplicate objects", files: map[string]string{"a.yaml": cmYAML("dup", "a"), "b.yaml": cmYAML("dup", "b")},
			condition: v1alpha2.TypeInstalled, reason: v1alpha2.ReasonInvalidContent, wantInMsg: "dup"},
		{name: "unknown kind", files: map[string]string{"w.yaml": "apiVersion: example.com/v1\nkind: Widget\nmetadata:\n  name: w\n"},
			condition: v1alpha2.TypeInstalled, reason: v1alpha2.ReasonUnknownKind, wantInMsg: "Widget"},
		{name: "invalid object", files: map[string]string{"svc.yaml": "apiVersion: v1\nkind: Service\nmetadata:\n  name: bad\nspec:\n  ports:\n  - port: 99999\n"},
			condition: v1alpha2.TypeInstalled, reason: v1alpha2.ReasonValidationFailed, wantInMsg: "bad"},
		{name: "mutable configmap", files: map[string]string{"ok.yaml": cmYAML("ok", "1")}, mutable: true,
			condition: v1alpha2.TypeUnpacked, reason: v1alpha2.ReasonSourceMutable, wantInMsg: "immutable"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cm := manifests(t, tt.files)
			if tt.mutable {
				cm = mutableConfigMap(t, tt.files)
			}
			bd := newBD(t, envtest.UniqueName("bad"), cm)
			bd = waitCondition(t, bd.Name, tt.condition, metav1.ConditionFalse, tt.reason)
			if c := meta.FindStatusCondition(bd.Status.Conditions, tt.condition); !strings.Contains(c.Message, tt.wantInMsg) {
				t.Fatalf("message %q does not name %q", c.Message, tt.wantInMsg)
			}
			if bd.Status.ActiveBundle != "" {
				t.Fatalf("activeBundle = %q, want none", bd.Status.ActiveBundle)
			}
		})
	}
}

func TestNoManifestsDirectory(t *testing.T) {
	cm := manifests(t, map[string]string{"a.yaml": cmYAML("a", "1")})
	bd := &v1alpha2.BundleDeployment{
		ObjectMeta: metav1.ObjectMeta{Name: envtest.UniqueName("nomanifests")},
		Spec: v1alpha2.BundleDeploymentSpec{
			ProvisionerClassName: v1alpha2.ClassPlain,
			InstallNamespace:     envtest.UniqueName("nm"),
			Sources: []v1alpha2.BundleSource{{Type: v1alpha2.SourceTypeConfigMaps,
				ConfigMaps: []v1alpha2.ConfigMapSource{{ConfigMap: v1alpha2.LocalObjectReference{Name: cm}, Path: "elsewhere"}}}},
		},
	}
	if err := env.Client.Create(context.Background(), bd); err != nil {
		t.Fatal(err)
	}
	bd = waitCondition(t, bd.Name, v1alpha2.TypeInstalled, metav1.ConditionFalse, v1alpha2.ReasonInvalidContent)
	if c := meta.FindStatusCondition(bd.Status.Conditions, v1alpha2.TypeInstalled); !strings.Contains(c.Message, "manifests") {
		t.Fatalf("message %q does not mention manifests/", c.Message)
	}
}

func mutableConfigMap(t *testing.T, files map[string]string) string {
	t.Helper()
	cm := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: envtest.UniqueName("mutable"), Namespace: v1alpha2.SystemNamespace},
		Data:       files,
	}
	if err := env.Client.Create(context.Background(), cm); err != nil {
		t.Fatal(err)
	}
	return cm.Name
}

// TestUpgradePrunesAndBadUpgradeKeepsPrevious pivots to a revision that
// drops an object (pruned), then to a bad revision (refused, the previous
// one stays fully in place), then checks the revision history is bounded.
func TestUpgradePrunesAndBadUpgradeKeepsPrevious(t *testing.T) {
	ctx := context.Background()
	ns := envtest.UniqueName("upgrade")
	v1 := manifests(t, map[string]string{"a.yaml": cmYAML("keep", "v1"), "b.yaml": cmYAML("drop", "v1")})
	bd := newBD(t, ns, v1)
	bd = waitCondition(t, bd.Name, v1alpha2.TypeInstalled, metav1.ConditionTrue, v1alpha2.ReasonInstalled)
	rev1 := bd.Status.ActiveBundle

	v2 := manifests(t, map[string]string{"a.yaml": cmYAML("keep", "v2")})
	updateBD(t, bd.Name, func(b *v1alpha2.BundleDeployment) { b.Spec.Sources = source(v2) })
	bd = waitCondition(t, bd.Name, v1alpha2.TypeInstalled, metav1.ConditionTrue, v1alpha2.ReasonInstalled)
	rev2 := bd.Status.ActiveBundle
	if rev2 == rev1 {
		t.Fatalf("activeBundle did not change from %s", rev1)
	}
	if data, err := configMapData(t, ns, "keep"); err != nil || data["value"] != "v2" {
		t.Fatalf("keep = %v, %v; want v2", data, err)
	}
	mustNotExist(t, &corev1.ConfigMap{}, ns, "drop")

	// A bad revision (one invalid object among good ones) changes nothing.
	bad := manifests(t, map[string]string{
		"a.yaml": cmYAML("keep", "v3"),
		"b.yaml": cmYAML("new", "v3"),
		"c.yaml": "apiVersion: v1\nkind: Service\nmetadata:\n  name: broken\nspec:\n  ports:\n  - port: 99999\n",
	})
	updateBD(t, bd.Name, func(b *v1alpha2.BundleDeployment) { b.Spec.Sources = source(bad) })
	bd = waitCondition(t, bd.Name, v1alpha2.TypeInstalled, metav1.ConditionFalse, v1alpha2.ReasonValidationFailed)
	msg := meta.FindStatusCondition(bd.Status.Conditions, v1alpha2.TypeInstalled).Message
	if !strings.Contains(msg, "broken") || !strings.Contains(msg, rev2+" remains installed") {
		t.Fatalf("message %q should name the bad object and the revision still installed", msg)
	}
	if bd.Status.ActiveBundle != rev2 {
		t.Fatalf("activeBundle = %s, want %s", bd.Status.ActiveBundle, rev2)
	}
	if data, err := configMapData(t, ns, "keep"); err != nil || data["value"] != "v2" {
		t.Fatalf("keep = %v, %v; want v2 still", data, err)
	}
	mustNotExist(t, &corev1.ConfigMap{}, ns, "new")

	// History: with a limit of 1, at most the active, the newest and one more.
	updateBD(t, bd.Name, func(b *v1alpha2.BundleDeployment) { b.Spec.RevisionHistoryLimit = ptr.To[int32](1) })
	for i := 4; i <= 6; i++ {
		next := manifests(t, map[string]string{"a.yaml": cmYAML("keep", fmt.Sprintf("v%d", i))})
		updateBD(t, bd.Name, func(b *v1alpha2.BundleDeployment) { b.Spec.Sources = source(next) })
		waitCondition(t, bd.Name, v1alpha2.TypeInstalled, metav1.ConditionTrue, v1alpha2.ReasonInstalled)
	}
	envtest.Eventually(t, 20*time.Second, func() error {
		list := &v1alpha2.BundleList{}
		if err := env.Client.List(ctx, list, client.MatchingLabels{v1alpha2.LabelBundleDeployment: bd.Name}); err != nil {
			return err
		}
		live := 0
		for _, b := range list.Items {
			if b.DeletionTimestamp.IsZero() {
				live++
			}
		}
		if live > 2 {
			return fmt.Errorf("%d Bundles, want at most 2 (active + 1 of history)", live)
		}
		return nil
	})
}

func TestDriftIsCorrected(t *testing.T) {
	ctx := context.Background()
	ns := envtest.UniqueName("drift")
	cm := manifests(t, map[string]string{"a.yaml": cmYAML("watched", "desired")})
	bd := newBD(t, ns, cm)
	waitCondition(t, bd.Name, v1alpha2.TypeInstalled, metav1.ConditionTrue, v1alpha2.ReasonInstalled)

	// Deleted: back within 2 seconds.
	obj := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "watched"}}
	if err := env.Client.Delete(ctx, obj); err != nil {
		t.Fatal(err)
	}
	envtest.Eventually(t, 2*time.Second, func() error {
		data, err := configMapData(t, ns, "watched")
		if err != nil {
			return err
		}
		if data["value"] != "desired" {
			return fmt.Errorf("value = %q", data["value"])
		}
		return nil
	})

	// Edited: back within 2 seconds.
	live := &corev1.ConfigMap{}
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "watched"}, live); err != nil {
		t.Fatal(err)
	}
	live.Data["value"] = "tampered"
	if err := env.Client.Update(ctx, live); err != nil {
		t.Fatal(err)
	}
	envtest.Eventually(t, 2*time.Second, func() error {
		data, err := configMapData(t, ns, "watched")
		if err != nil {
			return err
		}
		if data["value"] != "desired" {
			return fmt.Errorf("value = %q", data["value"])
		}
		return nil
	})
}

func TestPauseStopsDriftCorrection(t *testing.T) {
	ctx := context.Background()
	ns := envtest.UniqueName("pause")
	cm := manifests(t, map[string]string{"a.yaml": cmYAML("hotfix", "desired")})
	bd := newBD(t, ns, cm)
	waitCondition(t, bd.Name, v1alpha2.TypeInstalled, metav1.ConditionTrue, v1alpha2.ReasonInstalled)

	updateBD(t, bd.Name, func(b *v1alpha2.BundleDeployment) { b.Spec.Paused = true })
	waitCondition(t, bd.Name, v1alpha2.TypePaused, metav1.ConditionTrue, v1alpha2.ReasonPaused)
	live := &corev1.ConfigMap{}
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "hotfix"}, live); err != nil {
		t.Fatal(err)
	}
	live.Data["value"] = "hand-made"
	if err := env.Client.Update(ctx, live); err != nil {
		t.Fatal(err)
	}
	// A later change to the BundleDeployment is observed, yet the hotfix stays.
	updateBD(t, bd.Name, func(b *v1alpha2.BundleDeployment) { b.Spec.RevisionHistoryLimit = ptr.To[int32](2) })
	waitCondition(t, bd.Name, v1alpha2.TypePaused, metav1.ConditionTrue, v1alpha2.ReasonPaused)
	if data, err := configMapData(t, ns, "hotfix"); err != nil || data["value"] != "hand-made" {
		t.Fatalf("hotfix = %v, %v; a paused BundleDeployment must not write", data, err)
	}

	updateBD(t, bd.Name, func(b *v1alpha2.BundleDeployment) { b.Spec.Paused = false })
	envtest.Eventually(t, 10*time.Second, func() error {
		data, err := configMapData(t, ns, "hotfix")
		if err != nil {
			return err
		}
		if data["value"] != "desired" {
			return fmt.Errorf("value = %q", data["value"])
		}
		return nil
	})
}

func TestDeleteRemovesEverything(t *testing.T) {
	ctx := context.Background()
	ns := envtest.UniqueName("delete")
	cm := manifests(t, map[string]string{"a.yaml": cmYAML("one", "1") + "---\n" + cmYAML("two", "2")})
	bd := newBD(t, ns, cm)
	bd = waitCondition(t, bd.Name, v1alpha2.TypeInstalled, metav1.ConditionTrue, v1alpha2.ReasonInstalled)
	active := bd.Status.ActiveBundle
	if err := env.Client.Delete(ctx, bd); err != nil {
		t.Fatal(err)
	}
	envtest.Eventually(t, 20*time.Second, func() error {
		err := env.Client.Get(ctx, client.ObjectKey{Name: bd.Name}, &v1alpha2.BundleDeployment{})
		if !apierrors.IsNotFound(err) {
			return fmt.Errorf("BundleDeployment still there: %v", err)
		}
		if err := env.Client.Get(ctx, client.ObjectKey{Name: active}, &v1alpha2.Bundle{}); !apierrors.IsNotFound(err) {
			return fmt.Errorf("Bundle %s still there: %v", active, err)
		}
		return nil
	})
	mustNotExist(t, &corev1.ConfigMap{}, ns, "one")
	mustNotExist(t, &corev1.ConfigMap{}, ns, "two")
}

func TestForeignClassIsIgnored(t *testing.T) {
	ctx := context.Background()
	pc := &v1alpha2.ProvisionerClass{
		ObjectMeta: metav1.ObjectMeta{Name: envtest.UniqueName("foreign")},
		Spec:       v1alpha2.ProvisionerClassSpec{ControllerName: "example.com/other"},
	}
	if err := env.Client.Create(ctx, pc); err != nil {
		t.Fatal(err)
	}
	cm := manifests(t, map[string]string{"a.yaml": cmYAML("x", "1")})
	bd := &v1alpha2.BundleDeployment{
		ObjectMeta: metav1.ObjectMeta{Name: envtest.UniqueName("foreign")},
		Spec:       v1alpha2.BundleDeploymentSpec{ProvisionerClassName: pc.Name, InstallNamespace: "foreign", Sources: source(cm)},
	}
	if err := env.Client.Create(ctx, bd); err != nil {
		t.Fatal(err)
	}
	// A served BundleDeployment created after it is installed; by then the
	// foreign one must still be untouched.
	served := newBD(t, envtest.UniqueName("served"), cm)
	waitCondition(t, served.Name, v1alpha2.TypeInstalled, metav1.ConditionTrue, v1alpha2.ReasonInstalled)
	if err := env.Client.Get(ctx, client.ObjectKey{Name: bd.Name}, bd); err != nil {
		t.Fatal(err)
	}
	if len(bd.Finalizers) != 0 || len(bd.Status.Conditions) != 0 {
		t.Fatalf("foreign BundleDeployment was touched: finalizers %v, conditions %v", bd.Finalizers, bd.Status.Conditions)
	}
	got := &v1alpha2.ProvisionerClass{}
	if err := env.Client.Get(ctx, client.ObjectKey{Name: pc.Name}, got); err != nil {
		t.Fatal(err)
	}
	if meta.FindStatusCondition(got.Status.Conditions, v1alpha2.TypeAccepted) != nil {
		t.Fatal("foreign class must not be Accepted by rukpak")
	}
	envtest.Eventually(t, 10*time.Second, func() error {
		plain := &v1alpha2.ProvisionerClass{}
		if err := env.Client.Get(ctx, client.ObjectKey{Name: v1alpha2.ClassPlain}, plain); err != nil {
			return err
		}
		if !meta.IsStatusConditionTrue(plain.Status.Conditions, v1alpha2.TypeAccepted) {
			return fmt.Errorf("plain class not Accepted: %+v", plain.Status.Conditions)
		}
		return nil
	})
}

// TestDeleteAfterClassIsGone: a BundleDeployment whose ProvisionerClass was
// deleted after it was installed is still uninstalled when it is deleted.
func TestDeleteAfterClassIsGone(t *testing.T) {
	ctx := context.Background()
	pc := &v1alpha2.ProvisionerClass{
		ObjectMeta: metav1.ObjectMeta{Name: envtest.UniqueName("shortlived")},
		Spec:       v1alpha2.ProvisionerClassSpec{ControllerName: v1alpha2.ControllerPlain},
	}
	if err := env.Client.Create(ctx, pc); err != nil {
		t.Fatal(err)
	}
	ns := envtest.UniqueName("classgone")
	cm := manifests(t, map[string]string{"a.yaml": cmYAML("one", "1")})
	bd := &v1alpha2.BundleDeployment{
		ObjectMeta: metav1.ObjectMeta{Name: envtest.UniqueName("classgone")},
		Spec:       v1alpha2.BundleDeploymentSpec{ProvisionerClassName: pc.Name, InstallNamespace: ns, Sources: source(cm)},
	}
	if err := env.Client.Create(ctx, bd); err != nil {
		t.Fatal(err)
	}
	waitCondition(t, bd.Name, v1alpha2.TypeInstalled, metav1.ConditionTrue, v1alpha2.ReasonInstalled)
	if err := env.Client.Delete(ctx, pc); err != nil {
		t.Fatal(err)
	}
	if err := env.Client.Delete(ctx, bd); err != nil {
		t.Fatal(err)
	}
	envtest.Eventually(t, 20*time.Second, func() error {
		err := env.Client.Get(ctx, client.ObjectKey{Name: bd.Name}, &v1alpha2.BundleDeployment{})
		if !apierrors.IsNotFound(err) {
			return fmt.Errorf("BundleDeployment still there: %v", err)
		}
		return nil
	})
	mustNotExist(t, &corev1.ConfigMap{}, ns, "one")
}

// TestUnknownKindIsRetried: a custom resource whose CRD is not installed
// yet is not a failed revision; it installs once the CRD is served,
// without a spec change or a retry request.
func TestUnknownKindIsRetried(t *testing.T) {
	ctx := context.Background()
	group := envtest.UniqueName("later") + ".example.com"
	ns := envtest.UniqueName("unknownkind")
	cr := fmt.Sprintf("apiVersion: %s/v1\nkind: Widget\nmetadata:\n  name: w\n  namespace: %s\nspec: {size: 1}\n", group, ns)
	cm := manifests(t, map[string]string{"w.yaml": cr, "cm.yaml": cmYAML("beside", "1")})
	bd := newBD(t, ns, cm)
	got := waitCondition(t, bd.Name, v1alpha2.TypeInstalled, metav1.ConditionFalse, v1alpha2.ReasonUnknownKind)
	if got.Status.FailedBundle != "" {
		t.Fatalf("a kind not served yet recorded revision %s as failed", got.Status.FailedBundle)
	}

	crd := &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "widgets." + group},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: group, Scope: apiextensionsv1.NamespaceScoped,
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: "widgets", Singular: "widget", Kind: "Widget", ListKind: "WidgetList"},
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{Name: "v1", Served: true, Storage: true,
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
					Type: "object", XPreserveUnknownFields: ptr.To(true)}}}},
		},
	}
	if err := env.Client.Create(ctx, crd); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Client.Delete(ctx, crd) })
	waitCondition(t, bd.Name, v1alpha2.TypeInstalled, metav1.ConditionTrue, v1alpha2.ReasonInstalled)
}

// A first install writes its inventory once; when it fails half-way, what
// it may have written is recorded then, and pruned by the next revision.
func TestFirstInstallFailingHalfWayIsRecorded(t *testing.T) {
	ctx := context.Background()
	ns := envtest.UniqueName("first")
	broken := manifests(t, map[string]string{
		"a.yaml": cmYAML("written", "v1"),
		"b.yaml": "apiVersion: v1\nkind: Service\nmetadata:\n  name: broken\nspec:\n  ports:\n  - port: 99999\n",
	})
	bd := newBD(t, ns, broken)
	bd = waitCondition(t, bd.Name, v1alpha2.TypeInstalled, metav1.ConditionFalse, v1alpha2.ReasonValidationFailed)
	if bd.Status.ActiveBundle != "" {
		t.Fatalf("activeBundle = %q after a failed first install", bd.Status.ActiveBundle)
	}
	if _, err := configMapData(t, ns, "written"); err != nil {
		t.Fatalf("the first install applied nothing before the refused object (%v); the test needs it to fail half-way", err)
	}
	ids, err := inventory.NewStore(env.Client, env.Client, v1alpha2.SystemNamespace).Load(ctx, inventory.Owner{Name: bd.Name, UID: bd.UID})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, id := range ids {
		names = append(names, id.Kind+"/"+id.Name)
	}
	slices.Sort(names)
	if want := []string{"ConfigMap/written", "Service/broken"}; !slices.Equal(names, want) {
		t.Fatalf("inventory after the failed first install = %v, want %v", names, want)
	}

	fixed := manifests(t, map[string]string{"a.yaml": cmYAML("other", "v2")})
	updateBD(t, bd.Name, func(b *v1alpha2.BundleDeployment) { b.Spec.Sources = source(fixed) })
	waitCondition(t, bd.Name, v1alpha2.TypeInstalled, metav1.ConditionTrue, v1alpha2.ReasonInstalled)
	if data, err := configMapData(t, ns, "other"); err != nil || data["value"] != "v2" {
		t.Fatalf("other = %v, %v; want v2", data, err)
	}
	envtest.Eventually(t, 10*time.Second, func() error {
		if _, err := configMapData(t, ns, "written"); !apierrors.IsNotFound(err) {
			return fmt.Errorf("the failed install's ConfigMap is still there: %v", err)
		}
		return nil
	})
}
