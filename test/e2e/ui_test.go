package e2e

import (
	"context"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/chromedp/chromedp"

	"github.com/rukpak/rukpak/api/v1alpha2"
	"github.com/rukpak/rukpak/internal/sourcetree"
	"github.com/rukpak/rukpak/pkg/envtest"
)

// uiScript is an annotation a tenant wrote; the page must show it as text.
const uiScript = `<script>window.pwned=1</script><img src=x onerror="window.pwned=2">`

// TestUIInBrowser drives rukpakctl ui in a headless Chromium against the
// local cluster: the overview lists the hello example (Ready), a held
// upgrade of the approval-gate fixture (Held) and a bundle with bad
// content (Failed), in that order; hello's page shows its Deployment
// healthy; the held revision's review shows its RBAC growth; a user who
// may not approve sees no button and why (and, on a page from before the
// permission was revoked, the API server's refusal of the click); an
// approver's click installs the revision and the page follows live; an
// annotation holding a script tag is text; a request without the token
// is refused. It writes screenshots of the three pages to test-results/.
func TestUIInBrowser(t *testing.T) {
	ctx := context.Background()
	tab := newBrowser(t)
	kubectl(t, "apply", "-f", filepath.Join(sourcetree.Root(), "examples", "hello.yaml"))

	// A held upgrade of the gate fixture: revision 2 adds secrets: get, list.
	gate := envtest.UniqueName("ui-gate")
	params := func(value string, rules ...string) gateParams {
		return gateParams{Name: gate, Namespace: gate, Value: value, Rules: rules}
	}
	cleanupBD(t, gate)
	if err := suite.client.Create(ctx, &v1alpha2.BundleDeployment{ObjectMeta: metav1.ObjectMeta{Name: gate},
		Spec: v1alpha2.BundleDeploymentSpec{ProvisionerClassName: v1alpha2.ClassPlain, InstallNamespace: gate,
			Sources: gateSource(t, "plain", params("v1")),
			Upgrade: &v1alpha2.UpgradePolicy{ApprovalPolicy: v1alpha2.ApprovalPowerGrowth}}}); err != nil {
		t.Fatal(err)
	}
	rev1 := waitActive(t, gate, "").Status.ActiveBundle
	updateSpec(t, gate, func(s *v1alpha2.BundleDeploymentSpec) {
		s.Sources = gateSource(t, "plain", params("v2", gateSecretsRule))
	})
	rev2 := waitAwaitingApproval(t, gate, rev1).Status.Review.Revision

	// Content that is not YAML fails; its annotation holds a script.
	bad := envtest.UniqueName("ui-bad")
	cleanupBD(t, bad)
	if err := suite.client.Create(ctx, &v1alpha2.BundleDeployment{
		ObjectMeta: metav1.ObjectMeta{Name: bad, Annotations: map[string]string{"example.com/note": uiScript}},
		Spec: v1alpha2.BundleDeploymentSpec{ProvisionerClassName: v1alpha2.ClassPlain, InstallNamespace: bad,
			Sources: treeSource(t, map[string]string{"manifests/bad.yaml": "kind: [not yaml\n"})}}); err != nil {
		t.Fatal(err)
	}
	waitReadyIs(t, "hello", metav1.ConditionTrue)
	waitReadyIs(t, bad, metav1.ConditionFalse)

	admin := startUI(t, suite.kubeconfig)

	t.Run("the overview lists BundleDeployments with their states", func(t *testing.T) {
		browse(t, tab, chromedp.Navigate(admin))
		for name, state := range map[string]string{"hello": "Ready", gate: "Held", bad: "Failed"} {
			waitPage(t, tab, 30*time.Second, name+" is "+state,
				`!!document.querySelector('tr[data-name=`+jsString(name)+`][data-state=`+jsString(state)+`]')`)
		}
		index := func(name string) int {
			i, err := eval[int](tab, `[...document.querySelectorAll('tr[data-name]')].findIndex(r => r.dataset.name === `+jsString(name)+`)`)
			if err != nil {
				t.Fatal(err)
			}
			return i
		}
		held, failed, ready := index(gate), index(bad), index("hello")
		if held > failed || failed > ready {
			t.Errorf("rows: held %d, failed %d, ready %d: want held, then failed, then ready", held, failed, ready)
		}
		screenshot(t, tab, "ui-overview")
	})

	t.Run("an annotation holding a script tag renders as text", func(t *testing.T) {
		browse(t, tab, chromedp.Navigate(admin+"bd/"+bad))
		waitPage(t, tab, 10*time.Second, "the annotation shown as text",
			`[...document.querySelectorAll('.annotation-value')].some(e => e.textContent === `+jsString(uiScript)+`)`)
		pwned, err := eval[bool](tab, `window.pwned !== undefined || document.querySelectorAll('main script, main img').length > 0`)
		if err != nil || pwned {
			t.Errorf("the annotation's script or image became markup (%v)", err)
		}
	})

	t.Run("a BundleDeployment's page shows its objects' health", func(t *testing.T) {
		browse(t, tab, chromedp.Navigate(admin+"bd/hello"))
		waitPage(t, tab, 30*time.Second, "Deployment hello/hello healthy",
			`[...document.querySelectorAll('#objects tr')].some(r => r.textContent.includes('Deployment') && r.textContent.includes('hello') && r.textContent.includes('Healthy'))`)
	})

	t.Run("the held BundleDeployment's page shows its timeline", func(t *testing.T) {
		browse(t, tab, chromedp.Navigate(admin+"bd/"+gate))
		waitPage(t, tab, 10*time.Second, "the held revision on the timeline",
			`[...document.querySelectorAll('.timeline li')].some(e => e.textContent.includes('held') && e.textContent.includes(`+jsString(rev2)+`))`)
		screenshot(t, tab, "ui-bundledeployment")
	})

	t.Run("the held revision's review shows its RBAC growth", func(t *testing.T) {
		browse(t, tab, chromedp.Navigate(admin+"bd/"+gate+"/review"))
		waitPage(t, tab, 30*time.Second, "the gained rule",
			`[...document.querySelectorAll('#rbac tr.gained')].some(r => r.textContent.includes(`+jsString("ServiceAccount "+gate+"/gate-sa")+`) && r.textContent.includes('get,list resources [secrets]'))`)
		waitPage(t, tab, 10*time.Second, "the Approve button for the admin", `!!document.getElementById('approve')`)
		screenshot(t, tab, "ui-review")
	})

	attrs := authorizationv1.ResourceAttributes{Group: v1alpha2.GroupVersion.Group, Resource: "bundledeployments", Name: gate}
	reader := rbacv1.PolicyRule{APIGroups: []string{v1alpha2.GroupVersion.Group}, Resources: []string{"bundledeployments", "bundles"}, Verbs: []string{"get", "list", "watch"}}
	bdRule := func(verbs ...string) rbacv1.PolicyRule {
		return rbacv1.PolicyRule{APIGroups: []string{v1alpha2.GroupVersion.Group}, Resources: []string{"bundledeployments"}, ResourceNames: []string{gate}, Verbs: verbs}
	}

	t.Run("a user who may not approve sees no button and why, and a stale button's click shows the API server's refusal", func(t *testing.T) {
		nobody := gate + "-nobody"
		grantTo(t, nobody, "", reader, bdRule("patch"))
		patch := attrs
		patch.Verb = "patch"
		waitAllowed(t, nobody, []string{"system:authenticated"}, patch, true)
		url := startUI(t, kubeconfigAs(t, nobody))
		browse(t, tab, chromedp.Navigate(url+"bd/"+gate+"/review"))
		waitPage(t, tab, 10*time.Second, "the reason", `!!document.getElementById('approve-denied') && document.getElementById('approve-denied').textContent.includes('you may not approve revisions of BundleDeployment `+gate+`')`)
		if button, err := eval[bool](tab, `!!document.getElementById('approve')`); err != nil || button {
			t.Errorf("the Approve button is shown to %s (%v)", nobody, err)
		}

		// Allowed when the page was rendered, no longer when clicked.
		approve := attrs
		approve.Verb = v1alpha2.VerbApprove
		grant := grantTo(t, nobody, "", bdRule(v1alpha2.VerbApprove))
		waitAllowed(t, nobody, []string{"system:authenticated"}, approve, true)
		browse(t, tab, chromedp.Navigate(url+"bd/"+gate+"/review"))
		waitPage(t, tab, 10*time.Second, "the Approve button while allowed", `!!document.getElementById('approve')`)
		if err := suite.client.Delete(ctx, grant); err != nil {
			t.Fatal(err)
		}
		waitAllowed(t, nobody, []string{"system:authenticated"}, approve, false)
		browse(t, tab, chromedp.Click(chromedp.ID("approve")))
		want := `user "` + nobody + `" may not approve revisions of BundleDeployment "` + gate + `"`
		waitPage(t, tab, 20*time.Second, "the API server's refusal",
			`!!document.getElementById('refused') && document.getElementById('refused').textContent.includes(`+jsString(want)+`)`)
		bd := &v1alpha2.BundleDeployment{}
		if err := suite.client.Get(ctx, client.ObjectKey{Name: gate}, bd); err != nil {
			t.Fatal(err)
		}
		if v, ok := bd.Annotations[v1alpha2.AnnotationApproveRevision]; ok {
			t.Errorf("the refused approval left %s=%s", v1alpha2.AnnotationApproveRevision, v)
		}
	})

	t.Run("an approver's click installs the revision", func(t *testing.T) {
		approver := gate + "-approver"
		grantTo(t, approver, "", reader, bdRule("patch", v1alpha2.VerbApprove))
		approve := attrs
		approve.Verb = v1alpha2.VerbApprove
		waitAllowed(t, approver, []string{"system:authenticated"}, approve, true)
		url := startUI(t, kubeconfigAs(t, approver))
		browse(t, tab, chromedp.Navigate(url+"bd/"+gate+"/review"))
		waitPage(t, tab, 10*time.Second, "the Approve button", `!!document.getElementById('approve')`)
		browse(t, tab, chromedp.Click(chromedp.ID("approve")))
		waitPage(t, tab, 20*time.Second, "the approval's outcome",
			`!!document.getElementById('approved') && document.getElementById('approved').textContent.includes(`+jsString(rev2)+`)`)
		bd := waitActive(t, gate, rev1)
		if bd.Status.ActiveBundle != rev2 || bd.Annotations[v1alpha2.AnnotationApprovedBy] != approver {
			t.Errorf("active %s approved by %q, want %s approved by %s", bd.Status.ActiveBundle, bd.Annotations[v1alpha2.AnnotationApprovedBy], rev2, approver)
		}
		// The page follows the cluster without a reload.
		waitPage(t, tab, 30*time.Second, "the page updated live",
			`document.getElementById('approval').textContent.includes('approved by `+approver+`')`)
	})

	t.Run("a request without the token is refused", func(t *testing.T) {
		root := admin[:strings.Index(admin, "/t/")+1]
		resp, err := http.Get(root)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusForbidden {
			t.Errorf("GET %s: %d, want 403", root, resp.StatusCode)
		}
		browse(t, tab, chromedp.Navigate(root))
		waitPage(t, tab, 10*time.Second, "the refusal in the browser", `document.body.innerText.includes('refused')`)
		if rows, err := eval[int](tab, `document.querySelectorAll('tr[data-name]').length`); err != nil || rows != 0 {
			t.Errorf("the page without the token lists %d BundleDeployments (%v)", rows, err)
		}
	})
}

// waitReadyIs waits until BundleDeployment name's Ready condition has status
// for its generation.
func waitReadyIs(t *testing.T, name string, status metav1.ConditionStatus) {
	t.Helper()
	envtest.Eventually(t, 2*time.Minute, func() error {
		bd := &v1alpha2.BundleDeployment{}
		if err := suite.client.Get(context.Background(), client.ObjectKey{Name: name}, bd); err != nil {
			return err
		}
		c := meta.FindStatusCondition(bd.Status.Conditions, v1alpha2.TypeReady)
		if c == nil || c.Status != status || c.ObservedGeneration != bd.Generation {
			return fmt.Errorf("bd/%s Ready = %+v, want %s", name, c, status)
		}
		return nil
	})
}
