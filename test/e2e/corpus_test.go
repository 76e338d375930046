package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rukpak/rukpak/api/v1alpha2"
	"github.com/rukpak/rukpak/internal/sourcetree"
	"github.com/rukpak/rukpak/pkg/envtest"
)

// corpus is a path under ../shared/corpus: public content nobody on the
// project wrote (its README says what each must do). Read from there,
// never copied into the project.
func corpus(t *testing.T, parts ...string) string {
	t.Helper()
	p := filepath.Join(append([]string{sourcetree.Root(), "..", "shared", "corpus"}, parts...)...)
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("the public corpus is missing: %v", err)
	}
	return p
}

// corpusDeadline is how long after its install a public bundle has to be
// Ready with every Deployment Available.
const corpusDeadline = 2 * time.Minute

// waitReady waits until BundleDeployment name is Ready for its current
// generation and every Deployment and StatefulSet in namespaces is
// available (each namespace given must hold at least one), within
// corpusDeadline.
func waitReady(t *testing.T, name string, namespaces ...string) {
	t.Helper()
	ctx := context.Background()
	envtest.Eventually(t, corpusDeadline, func() error {
		bd := &v1alpha2.BundleDeployment{}
		if err := suite.client.Get(ctx, client.ObjectKey{Name: name}, bd); err != nil {
			return err
		}
		if c := meta.FindStatusCondition(bd.Status.Conditions, v1alpha2.TypeReady); c == nil || c.Status != metav1.ConditionTrue || c.ObservedGeneration != bd.Generation {
			// Every condition: Progressing says which hook or CRD the
			// install waits for, Installed why it failed.
			return fmt.Errorf("bd/%s (generation %d) is not Ready; its conditions: %s", name, bd.Generation, conditionsOf(bd.Status.Conditions))
		}
		for _, ns := range namespaces {
			n, err := deploymentsAvailable(ctx, ns)
			if err != nil {
				return err
			}
			sets := &appsv1.StatefulSetList{}
			if err := suite.client.List(ctx, sets, client.InNamespace(ns)); err != nil {
				return err
			}
			for _, s := range sets.Items {
				if s.Status.ObservedGeneration != s.Generation || s.Status.ReadyReplicas < *s.Spec.Replicas {
					return fmt.Errorf("statefulset %s/%s: %d/%d ready", ns, s.Name, s.Status.ReadyReplicas, *s.Spec.Replicas)
				}
			}
			if n+len(sets.Items) == 0 {
				return fmt.Errorf("no Deployment or StatefulSet in namespace %s", ns)
			}
		}
		return nil
	})
}

// conditionsOf formats conditions for a failure message, each as
// conditionString does, joined with "; ".
func conditionsOf(conds []metav1.Condition) string {
	if len(conds) == 0 {
		return "none"
	}
	out := make([]string, len(conds))
	for i, c := range conds {
		out[i] = conditionString(c)
	}
	return strings.Join(out, "; ")
}

// conditionString formats one condition: "Type=Status (Reason,
// generation N): message".
func conditionString(c metav1.Condition) string {
	return fmt.Sprintf("%s=%s (%s, generation %d): %s", c.Type, c.Status, c.Reason, c.ObservedGeneration, c.Message)
}

// corpusBD creates a BundleDeployment and deletes it when the test ends.
func corpusBD(t *testing.T, name, class, ns string, srcs []v1alpha2.BundleSource, cfg *v1alpha2.BundleConfig) {
	t.Helper()
	bd := &v1alpha2.BundleDeployment{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       v1alpha2.BundleDeploymentSpec{ProvisionerClassName: class, InstallNamespace: ns, Sources: srcs, Config: cfg},
	}
	if err := suite.client.Create(context.Background(), bd); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = suite.client.Delete(context.Background(), bd) })
}

// imageOf pushes the files under dir (below prefix) as a plain bundle
// image to the registry at host and returns its source.
func imageOf(t *testing.T, host, repo, dir, prefix string) []v1alpha2.BundleSource {
	t.Helper()
	ref := host + "/corpus/" + repo + ":v1"
	pushImage(t, ref, dirFiles(t, dir, prefix))
	return []v1alpha2.BundleSource{{Type: v1alpha2.SourceTypeImage, Image: &v1alpha2.ImageSource{Ref: ref, InsecureSkipTLSVerify: true}}}
}

// TestPublicContent installs public charts and manifests as their users
// would, and checks the outcome the corpus README gives for each.
func TestPublicContent(t *testing.T) {
	t.Parallel()
	host := startRegistry(t)

	t.Run("Argo CD release manifest", func(t *testing.T) {
		t.Parallel()
		name := envtest.UniqueName("argocd")
		corpusBD(t, name, v1alpha2.ClassPlain, "argocd", imageOf(t, host, "argocd", corpus(t, "argocd-install", "manifests"), "manifests/"), nil)
		waitReady(t, name, "argocd")
	})

	t.Run("cert-manager chart", func(t *testing.T) {
		t.Parallel()
		name, ns := envtest.UniqueName("cert-manager"), envtest.UniqueName("cert-manager")
		ref := host + "/charts/cert-manager:v0.0.0"
		pushHelmChart(t, ref, corpus(t, "charts", "cert-manager"))
		checks := jobRuns(t, ns, name+"-startupapicheck")
		corpusBD(t, name, v1alpha2.ClassHelm, ns, []v1alpha2.BundleSource{{Type: v1alpha2.SourceTypeImage,
			Image: &v1alpha2.ImageSource{Ref: "oci://" + ref, InsecureSkipTLSVerify: true}}},
			&v1alpha2.BundleConfig{Values: &apiextensionsv1.JSON{Raw: []byte(`{"crds": {"enabled": true}}`)}})
		waitReady(t, name, ns)
		deps := &appsv1.DeploymentList{}
		if err := suite.client.List(context.Background(), deps, client.InNamespace(ns)); err != nil {
			t.Fatal(err)
		}
		if len(deps.Items) != 3 {
			t.Fatalf("%d Deployments, want cert-manager's 3", len(deps.Items))
		}
		// Its post-install hook Job ran to completion (kwok completes the
		// Pods of Jobs) and was deleted, as its hook-succeeded policy asks.
		ran := checks()
		if len(ran) != 1 || ran[0].completed.IsZero() {
			t.Fatalf("the startupapicheck hook Job did not run once to completion: %+v", ran)
		}
		if jobExists(t, ns, name+"-startupapicheck") {
			t.Fatal("the startupapicheck hook Job (hook-succeeded) is still there")
		}
	})

	t.Run("podinfo chart", func(t *testing.T) {
		t.Parallel()
		name, ns := envtest.UniqueName("podinfo"), envtest.UniqueName("podinfo")
		ref := host + "/charts/podinfo:v1"
		pushHelmChart(t, ref, corpus(t, "charts", "podinfo"))
		corpusBD(t, name, v1alpha2.ClassHelm, ns, []v1alpha2.BundleSource{{Type: v1alpha2.SourceTypeImage,
			Image: &v1alpha2.ImageSource{Ref: "oci://" + ref, InsecureSkipTLSVerify: true}}}, nil)
		waitReady(t, name, ns)
	})

	t.Run("podinfo kustomize base", func(t *testing.T) {
		t.Parallel()
		name, ns := envtest.UniqueName("podinfo-k"), envtest.UniqueName("podinfo-k")
		corpusBD(t, name, v1alpha2.ClassPlain, ns, imageOf(t, host, "podinfo-kustomize", corpus(t, "podinfo-kustomize"), ""), nil)
		waitReady(t, name, ns)
	})

	t.Run("original RukPak plain fixtures", func(t *testing.T) {
		t.Parallel()
		fixture := func(dir string) []v1alpha2.BundleSource {
			return imageOf(t, host, "rukpak-plain-"+dir, corpus(t, "rukpak-plain", dir), "")
		}
		// A custom resource before its CRD: refused as UnknownKind, then
		// installed once another BundleDeployment provides the CRD,
		// without a retry.
		dependent, provides := envtest.UniqueName("dependent"), envtest.UniqueName("provides")
		corpusBD(t, dependent, v1alpha2.ClassPlain, envtest.UniqueName("dependent"), fixture("dependent"), nil)
		waitCondition(t, dependent, v1alpha2.TypeInstalled, metav1.ConditionFalse, v1alpha2.ReasonUnknownKind)
		corpusBD(t, provides, v1alpha2.ClassPlain, envtest.UniqueName("provides"), fixture("provides"), nil)
		waitReady(t, provides)
		waitReady(t, dependent)

		// CRDs and their custom resources in one bundle.
		both := envtest.UniqueName("crds-and-crs")
		corpusBD(t, both, v1alpha2.ClassPlain, envtest.UniqueName("crds-and-crs"), fixture("invalid-crds-and-crs"), nil)
		waitReady(t, both)

		// valid ships CRDs the two above installed: refused by collision
		// protection, naming a first owner.
		valid := envtest.UniqueName("valid")
		corpusBD(t, valid, v1alpha2.ClassPlain, envtest.UniqueName("valid"), fixture("valid"), nil)
		bd := waitCondition(t, valid, v1alpha2.TypeInstalled, metav1.ConditionFalse, v1alpha2.ReasonCollision)
		if msg := meta.FindStatusCondition(bd.Status.Conditions, v1alpha2.TypeInstalled).Message; !strings.Contains(msg, provides) && !strings.Contains(msg, both) {
			t.Fatalf("collision message %q names neither first owner (%s, %s)", msg, provides, both)
		}

		// No manifests/ directory at all.
		empty := envtest.UniqueName("empty")
		corpusBD(t, empty, v1alpha2.ClassPlain, envtest.UniqueName("empty"), fixture("empty"), nil)
		bd = waitCondition(t, empty, v1alpha2.TypeInstalled, metav1.ConditionFalse, v1alpha2.ReasonInvalidContent)
		if msg := meta.FindStatusCondition(bd.Status.Conditions, v1alpha2.TypeInstalled).Message; !strings.Contains(msg, "manifests/") {
			t.Fatalf("message %q does not name manifests/", msg)
		}
	})
}
