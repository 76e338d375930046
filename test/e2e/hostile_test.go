package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rukpak/rukpak/api/v1alpha2"
	"github.com/rukpak/rukpak/pkg/envtest"
)

// The hostile corpus: attacks a team member who is not a cluster admin can
// try, each registered by a hostile_<area>_test.go file with
// registerHostile. TestHostileCorpus runs every one of them while it
// checks that
//
//   - another team's canary BundleDeployment is still corrected within
//     canaryDeadline after an edit while the attack runs, and
//   - the manager is still the same process (never restarted, never died).

// hostileCase is one attack of the corpus.
type hostileCase struct {
	// name says what the attack tries.
	name string
	// attack starts the attack as team would (objects it creates are
	// removed with t.Cleanup) and returns a function that waits for, and
	// asserts, the refusal: its reason and a message naming the cause.
	attack func(t *testing.T, team *hostileTeam) (refused func(t *testing.T))
}

// hostileCorpus is every registered attack.
var hostileCorpus []hostileCase

// registerHostile adds cases to the corpus; use it as
// `var _ = registerHostile(hostileCase{...})`.
func registerHostile(cases ...hostileCase) bool {
	hostileCorpus = append(hostileCorpus, cases...)
	return true
}

// hostileTeam is the attacker: a team that may install bundles into its
// own namespace as its own ServiceAccount, and nothing more.
type hostileTeam struct {
	// ns is the team's namespace; it is also the name of the group its
	// user belongs to.
	ns string
	// sa is a ServiceAccount in ns that may manage ConfigMaps, Services
	// and Deployments in ns (installerAccount).
	sa string
	// user may create, update and delete BundleDeployments, use the three
	// built-in classes, read Bundles and impersonate ns/sa; it may not read
	// Secrets or write ConfigMaps in rukpak-system.
	user string
	// client acts as user (with groups ns and system:authenticated).
	client client.Client
}

// builtinClasses are the classes a hostile team may use.
var builtinClasses = []string{"core-rukpak-io-plain", "core-rukpak-io-helm", "core-rukpak-io-registry"}

// newHostileTeam creates a team with a unique namespace, its
// ServiceAccount and its user's RBAC; all of it is removed when the test
// ends.
func newHostileTeam(t *testing.T) *hostileTeam {
	t.Helper()
	ns := testNamespace(t, "hostile")
	team := &hostileTeam{ns: ns, sa: installerAccount(t, ns), user: ns + "-member"}
	createOwned(t,
		&rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: ns}, Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{v1alpha2.GroupVersion.Group}, Resources: []string{"bundledeployments"},
				Verbs: []string{"get", "list", "watch", "create", "update", "patch", "delete"}},
			{APIGroups: []string{v1alpha2.GroupVersion.Group}, Resources: []string{"bundles"},
				Verbs: []string{"get", "list", "watch"}},
			{APIGroups: []string{v1alpha2.GroupVersion.Group}, Resources: []string{"provisionerclasses"},
				ResourceNames: builtinClasses, Verbs: []string{"use"}},
		}},
		&rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: ns},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: ns},
			Subjects: []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.GroupKind, Name: ns}}},
		&rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "impersonate-installer", Namespace: ns}, Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{""}, Resources: []string{"serviceaccounts"}, ResourceNames: []string{team.sa}, Verbs: []string{"impersonate"}},
		}},
		&rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "impersonate-installer", Namespace: ns},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "impersonate-installer"},
			Subjects: []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.GroupKind, Name: ns}}},
	)
	// The API server's authorizer sees new RBAC a moment after it is
	// written (longer under load): an attack made before it does would be
	// refused by RBAC, not by what the case tests.
	groups := []string{ns, "system:authenticated"}
	for _, a := range []authorizationv1.ResourceAttributes{
		{Verb: "create", Group: v1alpha2.GroupVersion.Group, Resource: "bundledeployments"},
		{Verb: "use", Group: v1alpha2.GroupVersion.Group, Resource: "provisionerclasses", Name: builtinClasses[0]},
		{Verb: "impersonate", Resource: "serviceaccounts", Namespace: ns, Name: team.sa},
	} {
		waitAllowed(t, team.user, groups, a, true)
	}
	team.client = clientAs(t, team.user, groups...)
	return team
}

// clientAs returns a client of the suite's cluster that impersonates user
// with groups.
func clientAs(t *testing.T, user string, groups ...string) client.Client {
	t.Helper()
	cfg, err := clientcmd.BuildConfigFromFlags("", suite.kubeconfig)
	if err != nil {
		t.Fatalf("reading kubeconfig: %v", err)
	}
	cfg.Impersonate.UserName = user
	cfg.Impersonate.Groups = groups
	c, err := client.New(cfg, client.Options{Scheme: envtest.Scheme()})
	if err != nil {
		t.Fatalf("client as %s: %v", user, err)
	}
	return c
}

// bd returns a BundleDeployment of the team's: installed into its
// namespace as its ServiceAccount, with the given class and sources.
func (team *hostileTeam) bd(name, class string, srcs []v1alpha2.BundleSource) *v1alpha2.BundleDeployment {
	return &v1alpha2.BundleDeployment{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: v1alpha2.BundleDeploymentSpec{
			ProvisionerClassName: class,
			InstallNamespace:     team.ns,
			ServiceAccount:       &v1alpha2.ServiceAccountReference{Name: team.sa},
			Sources:              srcs,
		},
	}
}

// create creates bd as the team's user, fails the test if the API server
// refuses it, and deletes it (as the admin, waiting until it is gone) when
// the test ends. The Secrets and ConfigMaps bd names are the team's own:
// an admin grants it their use first, as docs/security.md says.
func (team *hostileTeam) create(t *testing.T, bd *v1alpha2.BundleDeployment) {
	t.Helper()
	team.allowReferences(t, bd.Spec.Sources, bd.Spec.Config)
	cleanupBD(t, bd.Name)
	if err := team.client.Create(context.Background(), bd); err != nil {
		t.Fatalf("creating BundleDeployment %s as %s: %v", bd.Name, team.user, err)
	}
}

// canaryDeadline is how soon the canary's edited object must be put back.
const canaryDeadline = 2 * time.Second

// canary is another team's BundleDeployment that must keep being managed
// whatever the attacks do.
type canary struct {
	ns, bd, configMap string
}

// newCanary installs the canary team's bundle: one ConfigMap, as the
// team's ServiceAccount.
func newCanary(t *testing.T) *canary {
	t.Helper()
	ns := testNamespace(t, "canary")
	sa := installerAccount(t, ns)
	c := &canary{ns: ns, bd: envtest.UniqueName("canary"), configMap: "canary"}
	srcs := ownSource(t, map[string]string{"cm.yaml": configMapYAML(c.configMap, "healthy")})
	cleanupBD(t, c.bd)
	bd := &v1alpha2.BundleDeployment{
		ObjectMeta: metav1.ObjectMeta{Name: c.bd},
		Spec: v1alpha2.BundleDeploymentSpec{
			ProvisionerClassName: "core-rukpak-io-plain",
			InstallNamespace:     ns,
			ServiceAccount:       &v1alpha2.ServiceAccountReference{Name: sa},
			Sources:              srcs,
		},
	}
	if err := suite.client.Create(context.Background(), bd); err != nil {
		t.Fatalf("creating canary BundleDeployment: %v", err)
	}
	waitInstalled(t, c.bd)
	if got := configMapValue(t, ns, c.configMap); got != "healthy" {
		t.Fatalf("canary ConfigMap holds %q, want healthy", got)
	}
	return c
}

// check edits the canary's ConfigMap and fails the test unless rukpak puts
// it back within canaryDeadline.
func (c *canary) check(t *testing.T) {
	t.Helper()
	took, err := c.probe()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("canary corrected in %v", took.Round(time.Millisecond))
}

// probe edits the canary's ConfigMap and returns how long rukpak took to
// put it back, or an error if it did not within canaryDeadline.
func (c *canary) probe() (time.Duration, error) {
	ctx := context.Background()
	cm := &corev1.ConfigMap{}
	if err := suite.client.Get(ctx, client.ObjectKey{Namespace: c.ns, Name: c.configMap}, cm); err != nil {
		return 0, fmt.Errorf("getting canary ConfigMap: %w", err)
	}
	cm.Data["value"] = "tampered"
	if err := suite.client.Update(ctx, cm); err != nil {
		return 0, fmt.Errorf("editing canary ConfigMap: %w", err)
	}
	start := time.Now()
	for {
		got := &corev1.ConfigMap{}
		err := suite.client.Get(ctx, client.ObjectKey{Namespace: c.ns, Name: c.configMap}, got)
		if err == nil && got.Data["value"] == "healthy" {
			return time.Since(start), nil
		}
		if time.Since(start) > canaryDeadline {
			return 0, fmt.Errorf("canary ConfigMap %s/%s not corrected within %v while the attack runs (value %q, err %v)",
				c.ns, c.configMap, canaryDeadline, got.Data["value"], err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// watch probes the canary over and over, until the returned function is
// called; that function returns the first failure, if any, and the
// slowest correction seen.
func (c *canary) watch() (stop func() (time.Duration, error)) {
	done := make(chan struct{})
	result := make(chan error, 1)
	var slowest time.Duration
	go func() {
		for {
			select {
			case <-done:
				result <- nil
				return
			default:
			}
			took, err := c.probe()
			if err != nil {
				result <- err
				return
			}
			slowest = max(slowest, took)
			time.Sleep(200 * time.Millisecond)
		}
	}()
	return func() (time.Duration, error) {
		close(done)
		err := <-result
		return slowest, err
	}
}

// managerProcess identifies the running manager: its pid and the start
// time the kernel records for it, so that a restart under the same pid is
// seen too.
type managerProcess struct {
	pid   int
	start string
}

// currentManager reads the manager's process from the local cluster's
// state directory and /proc.
func currentManager(t *testing.T) managerProcess {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(suite.stateDir, "pids.json"))
	if err != nil {
		t.Fatalf("reading the local cluster's pid file: %v", err)
	}
	var st struct {
		Processes []struct {
			Name string `json:"name"`
			PID  int    `json:"pid"`
		} `json:"processes"`
	}
	if err := json.Unmarshal(data, &st); err != nil {
		t.Fatalf("decoding pid file: %v", err)
	}
	for _, p := range st.Processes {
		if p.Name != "rukpak" {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(p.PID), "stat"))
		if err != nil {
			t.Fatalf("the manager (pid %d) is not running: %v", p.PID, err)
		}
		// Field 22 is the start time; fields after the command (in
		// parentheses) are space-separated.
		fields := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))
		if len(fields) < 20 {
			t.Fatalf("unexpected /proc/%d/stat: %q", p.PID, stat)
		}
		if fields[0] == "Z" {
			t.Fatalf("the manager (pid %d) has exited", p.PID)
		}
		return managerProcess{pid: p.PID, start: fields[19]}
	}
	t.Fatalf("no rukpak process in %s", filepath.Join(suite.stateDir, "pids.json"))
	return managerProcess{}
}

// TestHostileCorpus runs every registered attack as a team that is not a
// cluster admin, each with the canary and manager checks.
func TestHostileCorpus(t *testing.T) {
	if len(hostileCorpus) == 0 {
		t.Fatal("no hostile cases registered")
	}
	names := map[string]bool{}
	for _, c := range hostileCorpus {
		if names[c.name] {
			t.Fatalf("two hostile cases are named %q", c.name)
		}
		names[c.name] = true
	}
	cn := newCanary(t)
	manager := currentManager(t)
	var mu sync.Mutex
	for _, c := range hostileCorpus {
		t.Run(c.name, func(t *testing.T) {
			mu.Lock()
			defer mu.Unlock()
			team := newHostileTeam(t)
			refused := c.attack(t, team)
			// The canary is edited again and again while the attack runs
			// and its refusal is awaited.
			stop := cn.watch()
			stopped := false
			defer func() {
				if !stopped {
					_, _ = stop()
				}
			}()
			if refused != nil {
				refused(t)
			}
			stopped = true
			slowest, err := stop()
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("slowest canary correction during the attack: %v", slowest.Round(time.Millisecond))
			if now := currentManager(t); now != manager {
				t.Fatalf("the manager restarted during the attack: pid %d (started at tick %s) is now pid %d (tick %s)",
					manager.pid, manager.start, now.pid, now.start)
			}
			cn.check(t)
		})
	}
	t.Logf("%d hostile cases", len(hostileCorpus))
}

// errContains fails the test unless err is not nil and its message holds
// every one of want.
func errContains(t *testing.T, err error, want ...string) {
	t.Helper()
	if err == nil {
		t.Fatalf("expected an error containing %q, got none", want)
	}
	for _, w := range want {
		if !strings.Contains(err.Error(), w) {
			t.Fatalf("error %q does not contain %q", err, w)
		}
	}
}

// conditionMessage waits until bd's condition typ has reason, and fails the
// test unless the message holds every one of want. It returns the message.
func conditionMessage(t *testing.T, bd, typ, reason string, want ...string) string {
	t.Helper()
	got := waitCondition(t, bd, typ, metav1.ConditionFalse, reason)
	cond := findCondition(got.Status.Conditions, typ)
	for _, w := range want {
		if !strings.Contains(cond.Message, w) {
			t.Fatalf("BundleDeployment %s condition %s (%s): message %q does not contain %q", bd, typ, reason, cond.Message, w)
		}
	}
	return cond.Message
}

// findCondition returns the condition typ, or an empty one.
func findCondition(conds []metav1.Condition, typ string) metav1.Condition {
	for _, c := range conds {
		if c.Type == typ {
			return c
		}
	}
	return metav1.Condition{}
}
