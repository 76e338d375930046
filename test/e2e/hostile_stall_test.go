package e2e

import (
	"archive/tar"
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rukpak/rukpak/api/v1alpha2"
	"github.com/rukpak/rukpak/pkg/envtest"
)

// stallHooks is the third attack of issue 24: a team installs 20 Helm
// BundleDeployments, each with a pre-install hook Pod that never runs (no
// node matches it), to hold every reconcile worker for the hooks' 5-minute
// timeout. A reconcile that waits for a hook holds no worker (it is
// detached, and goes on when the hook's changes end the wait), and one
// tenant's reconciles take at most --tenant-reconciles (4) of the 16
// workers while others need theirs, so while the hooks wait:
//
//   - the canary of another team is still corrected within 2 s (the
//     corpus checks it while the attack runs),
//   - another team's new BundleDeployment is Installed within 10 s, and
//     so is one of the waiting team's own,
//   - all 20 wait at once: none waits for a worker,
//   - the waiting BundleDeployments say what they wait for, with the
//     deadline (Progressing, HookRunning or HookBlocked naming the Pod's
//     FailedScheduling warning), and
//   - deleting one does not wait out the hook's timeout: its reconcile is
//     stopped where it waits.
func stallHooks(t *testing.T, team *hostileTeam) func(*testing.T) {
	// The team's installer may create Pods (the hooks), in its own
	// namespace.
	createOwned(t,
		&rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "pods", Namespace: team.ns}, Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: installerVerbs}}},
		&rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "pods", Namespace: team.ns},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "pods"},
			Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: team.ns, Name: team.sa}}})
	const stalls = 20
	names := make([]string, stalls)
	for i := range names {
		names[i] = envtest.UniqueName("stall")
		pod := fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata:
  name: wait-%d
  annotations: {helm.sh/hook: pre-install}
spec:
  restartPolicy: Never
  nodeSelector: {example.com/no-such-node: "true"}
  containers:
  - {name: wait, image: registry.k8s.io/pause:3.10}
`, i)
		files := bombChart("stall", configMapYAML(fmt.Sprintf("stalled-%d", i), "never"), "")
		files["templates/hook.yaml"] = pod
		team.create(t, team.bd(names[i], v1alpha2.ClassHelm, treeSource(t, files)))
	}
	ctx := context.Background()
	// The hooks hold the team's workers.
	waiting := func() (int, error) {
		n := 0
		for _, name := range names {
			bd := &v1alpha2.BundleDeployment{}
			if err := suite.client.Get(ctx, client.ObjectKey{Name: name}, bd); err != nil {
				return 0, err
			}
			if c := meta.FindStatusCondition(bd.Status.Conditions, v1alpha2.TypeProgressing); c != nil &&
				(c.Reason == v1alpha2.ReasonHookRunning || c.Reason == v1alpha2.ReasonHookBlocked) {
				n++
			}
		}
		return n, nil
	}
	envtest.Eventually(t, time.Minute, func() error {
		n, err := waiting()
		if err != nil {
			return err
		}
		if n == 0 {
			return fmt.Errorf("no BundleDeployment of the team waits for its hook yet")
		}
		return nil
	})
	return func(t *testing.T) {
		// While they wait: another team installs, within 10 s.
		other := newHostileTeam(t)
		name := envtest.UniqueName("other")
		began := time.Now()
		other.create(t, other.bd(name, v1alpha2.ClassPlain, serveArchive(t, tarGzOf(t,
			tarEntry{name: "manifests/cm.yaml", typ: tar.TypeReg, body: []byte(configMapYAML("next", "installed"))}))))
		envtest.Eventually(t, 10*time.Second, func() error {
			bd := &v1alpha2.BundleDeployment{}
			if err := suite.client.Get(ctx, client.ObjectKey{Name: name}, bd); err != nil {
				return err
			}
			if c := meta.FindStatusCondition(bd.Status.Conditions, v1alpha2.TypeInstalled); c == nil || c.Status != metav1.ConditionTrue {
				return fmt.Errorf("Installed = %+v", c)
			}
			return nil
		})
		t.Logf("another team's BundleDeployment was Installed %v after it was created", time.Since(began).Round(time.Millisecond))
		// The team's own next BundleDeployment does not queue behind
		// its waiting hooks either.
		own := envtest.UniqueName("own")
		began = time.Now()
		team.create(t, team.bd(own, v1alpha2.ClassPlain, serveArchive(t, tarGzOf(t,
			tarEntry{name: "manifests/cm.yaml", typ: tar.TypeReg, body: []byte(configMapYAML("own-next", "installed"))}))))
		envtest.Eventually(t, 10*time.Second, func() error {
			bd := &v1alpha2.BundleDeployment{}
			if err := suite.client.Get(ctx, client.ObjectKey{Name: own}, bd); err != nil {
				return err
			}
			if c := meta.FindStatusCondition(bd.Status.Conditions, v1alpha2.TypeInstalled); c == nil || c.Status != metav1.ConditionTrue {
				return fmt.Errorf("Installed = %+v", c)
			}
			return nil
		})
		t.Logf("the waiting team's own next BundleDeployment was Installed %v after it was created", time.Since(began).Round(time.Millisecond))
		// Every one of the 20 waits at once: waits hold no worker.
		envtest.Eventually(t, time.Minute, func() error {
			n, err := waiting()
			if err != nil {
				return err
			}
			if n != stalls {
				return fmt.Errorf("%d of the team's %d BundleDeployments wait for their hooks", n, stalls)
			}
			return nil
		})
		// What one waits for, and until when.
		var blocked string
		envtest.Eventually(t, 30*time.Second, func() error {
			for _, name := range names {
				bd := &v1alpha2.BundleDeployment{}
				if err := suite.client.Get(ctx, client.ObjectKey{Name: name}, bd); err != nil {
					return err
				}
				c := meta.FindStatusCondition(bd.Status.Conditions, v1alpha2.TypeProgressing)
				if c != nil && c.Reason == v1alpha2.ReasonHookBlocked {
					blocked = name
					for _, w := range []string{"waiting for pre-install hook Pod " + team.ns + "/wait-", "until 20", "FailedScheduling"} {
						if !strings.Contains(c.Message, w) {
							return fmt.Errorf("bd/%s: Progressing message %q does not contain %q", name, c.Message, w)
						}
					}
					return nil
				}
			}
			return fmt.Errorf("no BundleDeployment says its hook is blocked")
		})
		// Deleting one stops its wait: it is gone long before the hook's
		// 5-minute deadline.
		if err := team.client.Delete(ctx, &v1alpha2.BundleDeployment{ObjectMeta: metav1.ObjectMeta{Name: blocked}}); err != nil {
			t.Fatal(err)
		}
		envtest.Eventually(t, 30*time.Second, func() error {
			err := suite.client.Get(ctx, client.ObjectKey{Name: blocked}, &v1alpha2.BundleDeployment{})
			if err == nil {
				return fmt.Errorf("BundleDeployment %s, whose hook waits, is still there", blocked)
			}
			return client.IgnoreNotFound(err)
		})
	}
}

var _ = registerHostile(hostileCase{name: "stall every worker with hooks that never finish", attack: stallHooks})
