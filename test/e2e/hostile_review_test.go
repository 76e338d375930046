package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rukpak/rukpak/api/v1alpha2"
	"github.com/rukpak/rukpak/internal/renderstore"
	"github.com/rukpak/rukpak/pkg/envtest"
)

// Attacks on the review and on what it and the kept renders cost: an
// admission policy widened without approval, a review that costs hundreds
// of MiB, renders kept for revisions that never pass a permission check.

// tenantRenders is the manager's --tenant-renders in the suite
// (main_test.go): lower than the default 64, high enough for the Helm
// BundleDeployments of the tenant (manager) that the other tests run in
// parallel.
const tenantRenders = 32

// managerSoftLimit is the manager's Go soft memory limit in the shipped
// Deployment (config/manager).
const managerSoftLimit = 256 << 20

// grantCluster lets the team's installer manage resources of group
// cluster-wide (a ClusterRole and its binding, removed with the test).
func grantCluster(t *testing.T, team *hostileTeam, group string, resources ...string) {
	t.Helper()
	name := envtest.UniqueName(team.ns + "-extra")
	createOwned(t,
		&rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: name}, Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{group}, Resources: resources, Verbs: installerVerbs}}},
		&rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: name},
			Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: team.ns, Name: team.sa}}})
}

// labelPolicy is a MutatingAdmissionPolicy that labels ConfigMaps, bound
// to namespaceSelector (YAML flow map, "" for every namespace), and a
// PriorityClass of value priority.
func labelPolicy(ns, namespaceSelector string, priority int) map[string]string {
	match := ""
	if namespaceSelector != "" {
		match = "\n  matchResources: {namespaceSelector: " + namespaceSelector + "}"
	}
	return map[string]string{"policy.yaml": fmt.Sprintf(`apiVersion: admissionregistration.k8s.io/v1
kind: MutatingAdmissionPolicy
metadata: {name: %[1]s-label}
spec:
  matchConstraints:
    resourceRules: [{operations: [CREATE, UPDATE], apiGroups: [""], apiVersions: [v1], resources: [configmaps]}]
  failurePolicy: Ignore
  reinvocationPolicy: Never
  mutations:
  - patchType: ApplyConfiguration
    applyConfiguration: {expression: 'Object{metadata: Object.metadata{labels: {"labelled-by": "%[1]s"}}}'}
---
apiVersion: admissionregistration.k8s.io/v1
kind: MutatingAdmissionPolicyBinding
metadata: {name: %[1]s-label}
spec:
  policyName: %[1]s-label%[2]s
---
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {name: %[1]s-urgent}
value: %[3]d
`, ns, match, priority)}
}

// widenPolicy is the attack on the review: a revision that widens a
// MutatingAdmissionPolicy's binding from the team's namespace to every
// namespace (it would rewrite every team's ConfigMaps) and raises a
// cluster-scoped PriorityClass, under spec.upgrade.approval PowerGrowth.
// It is held for approval, its review naming both; the binding is left
// as it was.
func widenPolicy(t *testing.T, team *hostileTeam) func(*testing.T) {
	grantCluster(t, team, "admissionregistration.k8s.io", "mutatingadmissionpolicies", "mutatingadmissionpolicybindings")
	grantCluster(t, team, "scheduling.k8s.io", "priorityclasses")
	own := "{matchLabels: {kubernetes.io/metadata.name: " + team.ns + "}}"
	name := envtest.UniqueName("policy")
	bd := team.bd(name, v1alpha2.ClassPlain, ownSource(t, labelPolicy(team.ns, own, 1000)))
	bd.Spec.Upgrade = &v1alpha2.UpgradePolicy{ApprovalPolicy: v1alpha2.ApprovalPowerGrowth}
	team.create(t, bd)
	active := waitInstalled(t, name).Status.ActiveBundle
	updateAsTeam(t, team, name, func(b *v1alpha2.BundleDeployment) {
		b.Spec.Sources = ownSource(t, labelPolicy(team.ns, "", 1000000000))
	})
	return func(t *testing.T) {
		held := waitAwaitingApproval(t, name, active)
		msg := findCondition(held.Status.Conditions, v1alpha2.TypeInstalled).Message
		for _, w := range []string{"widens MutatingAdmissionPolicyBinding " + team.ns + "-label", "namespaceSelector removed",
			"changes cluster-scoped PriorityClass.scheduling.k8s.io " + team.ns + "-urgent (not modeled by the review): value"} {
			if !strings.Contains(msg, w) && !strings.Contains(held.Status.Review.Review.Summary+"; "+strings.Join(policyDetails(held), "; "), w) {
				t.Fatalf("held revision: message %q and review do not say %q", msg, w)
			}
		}
		if n := held.Status.Review.Review.APISurface.UnmodeledCount; n != 1 {
			t.Errorf("apiSurface.unmodeledCount = %d, want 1 (the PriorityClass)", n)
		}
		binding := &unstructured.Unstructured{}
		binding.SetAPIVersion("admissionregistration.k8s.io/v1")
		binding.SetKind("MutatingAdmissionPolicyBinding")
		if err := suite.client.Get(context.Background(), client.ObjectKey{Name: team.ns + "-label"}, binding); err != nil {
			t.Fatal(err)
		}
		if _, found, _ := unstructured.NestedMap(binding.Object, "spec", "matchResources", "namespaceSelector"); !found {
			t.Fatalf("the held revision's binding was applied: %v", binding.Object["spec"])
		}
	}
}

// policyDetails returns the details of the admission policies a review
// names.
func policyDetails(bd *v1alpha2.BundleDeployment) []string {
	var out []string
	for _, c := range bd.Status.Review.Review.APISurface.AdmissionPolicies {
		out = append(out, c.Details...)
	}
	return out
}

// updateAsTeam changes BundleDeployment name as the team's user, allowed the references of its new spec.
func updateAsTeam(t *testing.T, team *hostileTeam, name string, change func(*v1alpha2.BundleDeployment)) {
	t.Helper()
	envtest.Eventually(t, 10*time.Second, func() error {
		bd := &v1alpha2.BundleDeployment{}
		if err := team.client.Get(context.Background(), client.ObjectKey{Name: name}, bd); err != nil {
			return err
		}
		change(bd)
		team.allowReferences(t, bd.Spec.Sources, bd.Spec.Config)
		return team.client.Update(context.Background(), bd)
	})
}

// costlyRole is a Role of one 1.5 KB rule of 8 verbs × 64 apiGroups × 30
// resources × 31 resourceNames = 476,160 atoms, bound to a group: a
// review that expanded it cost 370 MiB.
func costlyRole(ns string) map[string]string { return ruleOf(ns, 8, 64, 30, 31) }

// ruleOf is a Role of one rule of verbs × groups × resources × names
// atoms, bound to a group.
func ruleOf(ns string, verbs, groups, resources, names int) map[string]string {
	list := func(prefix string, n int) string {
		out := make([]string, n)
		for i := range out {
			out[i] = prefix + strconv.Itoa(i)
		}
		return strings.Join(out, ", ")
	}
	return map[string]string{"role.yaml": fmt.Sprintf(`apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: costly, namespace: %[1]s}
rules:
- verbs: [%[5]s]
  apiGroups: [%[2]s]
  resources: [%[3]s]
  resourceNames: [%[4]s]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: costly, namespace: %[1]s}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: costly}
subjects: [{apiGroup: rbac.authorization.k8s.io, kind: Group, name: %[1]s-readers}]
`, ns, list("g", groups), list("r", resources), list("n", names), list("verb", verbs))}
}

// costlyReviews is the review memory attack: twelve revisions of one
// tenant at once, each with the 476,160-atom rule, under
// spec.upgrade.approval Always (every revision reviewed). Each is held
// as ReviewTooLarge naming the rule, estimated before anything is
// expanded. Then twelve more whose rules are just under what a review may
// hold (16,128 atoms, twice: the role and its subject), each reviewed in
// full and held for approval. The manager's resident memory stays under
// its Go soft limit throughout.
func costlyReviews(t *testing.T, team *hostileTeam) func(*testing.T) {
	grantNamespaced(t, team, rbacv1.GroupName, "roles", "rolebindings")
	pid := currentManager(t).pid
	stop := sampleRSS(t, pid)
	var names []string
	for range 12 {
		name := envtest.UniqueName("costly")
		bd := team.bd(name, v1alpha2.ClassPlain, ownSource(t, costlyRole(team.ns)))
		bd.Spec.Upgrade = &v1alpha2.UpgradePolicy{ApprovalPolicy: v1alpha2.ApprovalAlways}
		team.create(t, bd)
		names = append(names, name)
	}
	return func(t *testing.T) {
		var wg sync.WaitGroup
		for _, name := range names {
			wg.Add(1)
			go func() {
				defer wg.Done()
				conditionMessage(t, name, v1alpha2.TypeInstalled, v1alpha2.ReasonReviewTooLarge,
					"Role "+team.ns+"/costly rules[0]: 8 verbs × 64 apiGroups × 30 resources × 31 resourceNames = 476160 atoms",
					"not reviewed again")
			}()
		}
		wg.Wait()
		var full []string
		for range 12 {
			name := envtest.UniqueName("costly")
			bd := team.bd(name, v1alpha2.ClassPlain, ownSource(t, ruleOf(team.ns, 4, 8, 8, 63)))
			bd.Spec.Upgrade = &v1alpha2.UpgradePolicy{ApprovalPolicy: v1alpha2.ApprovalAlways}
			team.create(t, bd)
			full = append(full, name)
		}
		for _, name := range full {
			conditionMessage(t, name, v1alpha2.TypeInstalled, v1alpha2.ReasonAwaitingApproval, "grants Group "+team.ns+"-readers")
		}
		peak, samples := stop()
		t.Logf("manager peak RSS while twelve revisions of 476,160 atoms and twelve of 32,256 were reviewed: %d MiB (%d samples)", peak>>20, samples)
		if peak >= managerSoftLimit {
			t.Fatalf("manager peak RSS %d MiB, over its Go soft limit of %d MiB", peak>>20, managerSoftLimit>>20)
		}
	}
}

// grantNamespaced lets the team's installer manage resources of group in
// its namespace.
func grantNamespaced(t *testing.T, team *hostileTeam, group string, resources ...string) {
	t.Helper()
	name := envtest.UniqueName("extra")
	createOwned(t,
		&rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: team.ns}, Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{group}, Resources: resources, Verbs: installerVerbs}}},
		&rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: team.ns},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: name},
			Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: team.ns, Name: team.sa}}})
}

// sampleRSS reads the resident memory of process pid every 5 ms until the
// returned function is called, which returns the peak and the number of
// samples. The kernel's own peak (VmHWM) is reset first where it may be,
// and counted too.
func sampleRSS(t *testing.T, pid int) (stop func() (peak int64, samples int)) {
	t.Helper()
	dir := filepath.Join("/proc", strconv.Itoa(pid))
	hwm := os.WriteFile(filepath.Join(dir, "clear_refs"), []byte("5"), 0) == nil
	read := func(field string) int64 {
		data, err := os.ReadFile(filepath.Join(dir, "status"))
		if err != nil {
			return 0
		}
		for _, l := range strings.Split(string(data), "\n") {
			if rest, ok := strings.CutPrefix(l, field+":"); ok {
				kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
				return kb << 10
			}
		}
		return 0
	}
	done := make(chan struct{})
	out := make(chan [2]int64, 1)
	go func() {
		var peak, n int64
		for {
			peak, n = max(peak, read("VmRSS")), n+1
			select {
			case <-done:
				out <- [2]int64{peak, n}
				return
			case <-time.After(5 * time.Millisecond):
			}
		}
	}()
	return func() (int64, int) {
		close(done)
		r := <-out
		if hwm {
			r[0] = max(r[0], read("VmHWM"))
		}
		return r[0], int(r[1])
	}
}

// unapprovedRenders is the render store attack: Helm revisions that never
// pass the permission preflight (each renders a Secret the installer may
// not write) keep nothing in rukpak-system, and a tenant keeps at most
// --tenant-renders renders: the one past it is refused as ResourceLimit
// naming the bound.
func unapprovedRenders(t *testing.T, team *hostileTeam) func(*testing.T) {
	chart := func(kind string) map[string]string {
		return bombChart("kept", fmt.Sprintf("apiVersion: v1\nkind: %s\nmetadata: {name: {{ .Release.Name }}}\ndata: {pad: %s}\n",
			kind, strings.Repeat("x", 4096)), "")
	}
	var refused []string
	for range 3 {
		name := envtest.UniqueName("secret")
		team.create(t, team.bd(name, v1alpha2.ClassHelm, treeSource(t, chart("Secret"))))
		refused = append(refused, name)
	}
	var kept []string
	for range tenantRenders + 1 {
		name := envtest.UniqueName("kept")
		team.create(t, team.bd(name, v1alpha2.ClassHelm, treeSource(t, chart("ConfigMap"))))
		kept = append(kept, name)
	}
	return func(t *testing.T) {
		for _, name := range refused {
			conditionMessage(t, name, v1alpha2.TypeInstalled, v1alpha2.ReasonMissingPermissions, "secrets")
		}
		installed, over := 0, ""
		envtest.Eventually(t, 2*time.Minute, func() error {
			installed, over = 0, ""
			for _, name := range kept {
				bd := &v1alpha2.BundleDeployment{}
				if err := suite.client.Get(context.Background(), client.ObjectKey{Name: name}, bd); err != nil {
					return err
				}
				c := findCondition(bd.Status.Conditions, v1alpha2.TypeInstalled)
				switch {
				case c.Status == metav1.ConditionTrue:
					installed++
				case c.Reason == v1alpha2.ReasonResourceLimit:
					over = c.Message
				}
			}
			if installed != tenantRenders || over == "" {
				return fmt.Errorf("%d installed (want %d), refused: %q", installed, tenantRenders, over)
			}
			return nil
		})
		if w := fmt.Sprintf("tenant %s keeps %d renders", team.ns, tenantRenders); !strings.Contains(over, w) {
			t.Fatalf("refusal %q does not say %q", over, w)
		}
		chunks := &metav1.PartialObjectMetadataList{}
		chunks.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("SecretList"))
		if err := suite.client.List(context.Background(), chunks, client.InNamespace(v1alpha2.SystemNamespace),
			client.MatchingLabels{renderstore.LabelTenant: team.ns}); err != nil {
			t.Fatal(err)
		}
		bundles := map[string]bool{}
		for _, c := range chunks.Items {
			bundles[c.Labels[v1alpha2.LabelBundleDeployment]] = true
		}
		for _, name := range refused {
			if bundles[name] {
				t.Errorf("a render of %s, refused by the preflight, is kept", name)
			}
		}
		if len(bundles) != tenantRenders {
			t.Errorf("renders of %d BundleDeployments kept, want %d: %v", len(bundles), tenantRenders, bundles)
		}
		// Uninstalled, a BundleDeployment's revisions go and their renders
		// with them.
		var gone string
		for _, name := range kept {
			if bundles[name] {
				gone = name
				break
			}
		}
		bd := &v1alpha2.BundleDeployment{ObjectMeta: metav1.ObjectMeta{Name: gone}}
		if err := suite.client.Delete(context.Background(), bd); err != nil {
			t.Fatal(err)
		}
		envtest.Eventually(t, time.Minute, func() error {
			left := &metav1.PartialObjectMetadataList{}
			left.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("SecretList"))
			if err := suite.client.List(context.Background(), left, client.InNamespace(v1alpha2.SystemNamespace),
				client.MatchingLabels{renderstore.LabelTenant: team.ns, v1alpha2.LabelBundleDeployment: gone}); err != nil {
				return err
			}
			if len(left.Items) != 0 {
				return fmt.Errorf("%d render Secrets of uninstalled %s are left", len(left.Items), gone)
			}
			return nil
		})
	}
}

var _ = registerHostile(
	hostileCase{name: "widen a MutatingAdmissionPolicy binding to every namespace and raise a PriorityClass under PowerGrowth", attack: widenPolicy},
	hostileCase{name: "twelve revisions of one tenant whose Role rule expands to 476,160 atoms", attack: costlyReviews},
	hostileCase{name: "Helm renders kept for revisions that never pass the preflight, and past the tenant's bound", attack: unapprovedRenders},
)
