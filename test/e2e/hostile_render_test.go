package e2e

import (
	"context"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rukpak/rukpak/api/v1alpha2"
	"github.com/rukpak/rukpak/pkg/envtest"
)

// Attacks with content that blows up when it is rendered: Helm templates
// and kustomizations that allocate without end or never finish, which the
// manager renders in a sandboxed child process (package sandbox), and a
// Helm template that echoes a value read from a Secret into its error.

// treeSource puts files (slash-separated paths) into immutable ConfigMaps
// in rukpak-system, one per directory, and returns the source of the tree;
// the ConfigMaps are deleted when the test ends.
func treeSource(t *testing.T, files map[string]string) []v1alpha2.BundleSource {
	t.Helper()
	byDir := map[string]map[string]string{}
	for p, content := range files {
		dir := path.Dir(p)
		if dir == "." {
			dir = ""
		}
		if byDir[dir] == nil {
			byDir[dir] = map[string]string{}
		}
		byDir[dir][path.Base(p)] = content
	}
	dirs := make([]string, 0, len(byDir))
	for d := range byDir {
		dirs = append(dirs, d)
	}
	sort.Strings(dirs)
	var refs []v1alpha2.ConfigMapSource
	for _, d := range dirs {
		cm := &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Name: envtest.UniqueName("e2e-tree"), Namespace: v1alpha2.SystemNamespace},
			Immutable:  ptr.To(true),
			Data:       byDir[d],
		}
		createOwned(t, cm)
		refs = append(refs, v1alpha2.ConfigMapSource{ConfigMap: v1alpha2.LocalObjectReference{Name: cm.Name}, Path: d})
	}
	return []v1alpha2.BundleSource{{Type: v1alpha2.SourceTypeConfigMaps, ConfigMaps: refs}}
}

// bombChart is a chart called name whose one template is template.
func bombChart(name, template, values string) map[string]string {
	return map[string]string{
		"Chart.yaml":        "apiVersion: v2\nname: " + name + "\nversion: 0.1.0\n",
		"values.yaml":       values,
		"templates/cm.yaml": template,
	}
}

// renderAttack installs files as a bundle of class and expects Installed
// to be False with reason and a message holding want.
func renderAttack(class string, files map[string]string, reason string, want ...string) func(*testing.T, *hostileTeam) func(*testing.T) {
	return func(t *testing.T, team *hostileTeam) func(*testing.T) {
		name := envtest.UniqueName("render")
		team.create(t, team.bd(name, class, treeSource(t, files)))
		return func(t *testing.T) {
			// A render that loops is stopped once it used renderTimeout
			// of CPU time; at a lower priority than everything else on a
			// busy machine, that may take up to ten times as long.
			waitConditionWithin(t, 10*renderTimeout+30*time.Second, name, v1alpha2.TypeInstalled, metav1.ConditionFalse, reason)
			conditionMessage(t, name, v1alpha2.TypeInstalled, reason, want...)
		}
	}
}

// renderTimeout is the CPU time the suite's manager gives one render
// (--render-timeout).
const renderTimeout = 10 * time.Second

// kustomizeCopyBomb is a kustomization whose JSON patch copies a list into
// itself 40 times: 2^40 copies of a string. In the manager's own process
// it grew past 2 GiB within a second.
func kustomizeCopyBomb() map[string]string {
	return map[string]string{
		"kustomization.yaml": "resources: [cm.yaml]\npatches:\n- target: {kind: ConfigMap, name: boom}\n  patch: |-\n" +
			strings.Repeat("    - {op: copy, from: /x, path: /x/-}\n", 40),
		"cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: boom}\nx: [\"0123456789abcdef0123456789abcdef\"]\n",
	}
}

// leakedPassword is the value of the Secret the leaking chart echoes.
const leakedPassword = "Tr0ub4dor-and-3-horses"

var _ = registerHostile(
	// The verified attacks of issue 12: each grew the manager to 9 GB.
	hostileCase{
		name: "Helm template ranges over until 2000000000",
		attack: renderAttack(v1alpha2.ClassHelm,
			bombChart("until-bomb", "{{ range $i := until 2000000000 }}{{ $i }}{{ end }}\n", ""),
			v1alpha2.ReasonResourceLimit, "rendering chart until-bomb exceeded the memory limit of "),
	},
	hostileCase{
		name: "Helm values recurse through tpl",
		attack: renderAttack(v1alpha2.ClassHelm,
			bombChart("tpl-bomb", "{{ tpl .Values.x . }}\n", "x: \"{{ tpl .Values.x . }}\"\n"),
			v1alpha2.ReasonResourceLimit, "rendering chart tpl-bomb exceeded the memory limit of "),
	},
	hostileCase{
		name: "Helm template loops without end",
		attack: renderAttack(v1alpha2.ClassHelm,
			bombChart("spinner", "{{ range $i := until 1000000 }}{{ range $j := until 1000000 }}{{ end }}{{ end }}\n", ""),
			v1alpha2.ReasonResourceLimit, "rendering chart spinner did not finish within "),
	},
	hostileCase{
		name: "kustomize JSON patch copies a list into itself 40 times",
		attack: renderAttack(v1alpha2.ClassPlain, kustomizeCopyBomb(),
			v1alpha2.ReasonResourceLimit, "building kustomization kustomization.yaml exceeded the memory limit of "),
	},
	// Issue 24: YAML alias bombs through every format (the plain one is
	// in hostile_content_test.go).
	hostileCase{
		name: "YAML alias bomb in a resource of a kustomization",
		attack: renderAttack(v1alpha2.ClassPlain, map[string]string{
			"kustomization.yaml": "resources: [bomb.yaml]\n",
			"bomb.yaml":          yamlBomb,
		}, v1alpha2.ReasonInvalidContent, "bomb.yaml", "excessive aliasing"),
	},
	hostileCase{
		name: "YAML alias bomb in a chart's values.yaml",
		attack: renderAttack(v1alpha2.ClassHelm,
			bombChart("laughs", configMapYAML("laughs", "x"), strings.SplitN(yamlBomb, "\ndata:\n", 2)[1]),
			v1alpha2.ReasonInvalidContent, "values.yaml", "excessive aliasing"),
	},
	hostileCase{
		name: "YAML alias bomb in Helm values read from a ConfigMap (parsed by the manager)",
		attack: func(t *testing.T, team *hostileTeam) func(*testing.T) {
			cm := &corev1.ConfigMap{
				ObjectMeta: metav1.ObjectMeta{Name: envtest.UniqueName("team-values"), Namespace: v1alpha2.SystemNamespace},
				Data:       map[string]string{"values.yaml": strings.SplitN(yamlBomb, "\ndata:\n", 2)[1]},
			}
			createOwned(t, cm)
			name := envtest.UniqueName("laughs")
			bd := team.bd(name, v1alpha2.ClassHelm, treeSource(t, bombChart("laughs", configMapYAML("laughs", "x"), "")))
			bd.Spec.Config = &v1alpha2.BundleConfig{ValuesFrom: []v1alpha2.ValuesReference{{Kind: "ConfigMap", Name: cm.Name}}}
			team.allowReferences(t, bd.Spec.Sources, bd.Spec.Config)
			team.create(t, bd)
			return func(t *testing.T) {
				conditionMessage(t, name, v1alpha2.TypeInstalled, v1alpha2.ReasonInvalidConfig, cm.Name, "excessive aliasing")
			}
		},
	},
	// Issue 12: Helm valuesFrom Secrets "whose values can then be echoed
	// into a condition message by a template".
	hostileCase{
		name: "Helm template echoes a Secret's value with fail",
		attack: func(t *testing.T, team *hostileTeam) func(*testing.T) {
			secret := &corev1.Secret{
				ObjectMeta: metav1.ObjectMeta{Name: envtest.UniqueName("team-values"), Namespace: v1alpha2.SystemNamespace},
				Data:       map[string][]byte{"values.yaml": []byte("password: " + leakedPassword + "\n")},
			}
			createOwned(t, secret)
			name := envtest.UniqueName("leak")
			bd := team.bd(name, v1alpha2.ClassHelm, treeSource(t, bombChart("leaky", "{{ fail .Values.password }}\n", "")))
			bd.Spec.Config = &v1alpha2.BundleConfig{ValuesFrom: []v1alpha2.ValuesReference{{Kind: "Secret", Name: secret.Name}}}
			team.create(t, bd)
			return func(t *testing.T) {
				msg := conditionMessage(t, name, v1alpha2.TypeInstalled, v1alpha2.ReasonRenderFailed,
					"leaky/templates/cm.yaml", "[redacted]")
				if strings.Contains(msg, leakedPassword) {
					t.Fatalf("the condition message holds the Secret's value: %q", msg)
				}
				assertNoLeak(t, name, leakedPassword)
			}
		},
	},
)

// assertNoLeak fails the test if secret appears in the status, annotations
// or events of BundleDeployment name or its Bundles, or in the manager's
// log.
func assertNoLeak(t *testing.T, name, secret string) {
	t.Helper()
	ctx := context.Background()
	bd := &v1alpha2.BundleDeployment{}
	if err := suite.client.Get(ctx, client.ObjectKey{Name: name}, bd); err != nil {
		t.Fatal(err)
	}
	var seen []string
	for _, c := range bd.Status.Conditions {
		seen = append(seen, c.Message)
	}
	bundles := &v1alpha2.BundleList{}
	if err := suite.client.List(ctx, bundles, client.MatchingLabels{v1alpha2.LabelBundleDeployment: name}); err != nil {
		t.Fatal(err)
	}
	for _, b := range bundles.Items {
		for k, v := range b.Annotations {
			seen = append(seen, k+"="+v)
		}
		seen = append(seen, b.Status.OutcomeMessage)
		for _, c := range b.Status.Conditions {
			seen = append(seen, c.Message)
		}
	}
	events := &corev1.EventList{}
	if err := suite.client.List(ctx, events); err != nil && !apierrors.IsNotFound(err) {
		t.Fatal(err)
	}
	for _, e := range events.Items {
		if e.InvolvedObject.Name == name || strings.HasPrefix(e.InvolvedObject.Name, name+"-") {
			seen = append(seen, e.Message)
		}
	}
	for _, s := range seen {
		if strings.Contains(s, secret) {
			t.Fatalf("the Secret's value leaked: %q", s)
		}
	}
	log, err := os.ReadFile(filepath.Join(suite.stateDir, "logs", "rukpak.log"))
	if err != nil {
		t.Fatalf("reading the manager's log: %v", err)
	}
	if strings.Contains(string(log), secret) {
		t.Fatal("the Secret's value is in the manager's log")
	}
}
