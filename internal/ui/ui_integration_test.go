//go:build integration

package ui

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rukpak/rukpak/api/v1alpha2"
	"github.com/rukpak/rukpak/pkg/envtest"
)

var env *envtest.Env

func TestMain(m *testing.M) { envtest.Run(m, &env) }

// served is a Server on a real listener, as rukpakctl ui runs it.
type served struct {
	*Server
	url string
}

// serve starts a Server as user (impersonated; "" for the admin), live
// from watches, until the test ends.
func serve(t *testing.T, user string, readOnly bool) served {
	t.Helper()
	cfg := rest.CopyConfig(env.Config)
	if user != "" {
		cfg.Impersonate = rest.ImpersonationConfig{UserName: user, Groups: []string{"system:authenticated"}}
	}
	c, err := client.New(cfg, client.Options{Scheme: env.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	hub := &Hub{}
	if synced, err := Watch(ctx, cfg, env.Scheme, hub); err != nil || !synced {
		t.Fatalf("watching as %q: synced %v, %v", user, synced, err)
	}
	hs := httptest.NewUnstartedServer(nil)
	token, err := NewToken()
	if err != nil {
		t.Fatal(err)
	}
	s, err := New(Options{Client: c, Token: token, Hosts: LoopbackHosts(hs.Listener.Addr().String()), ReadOnly: readOnly, Changes: hub})
	if err != nil {
		t.Fatal(err)
	}
	hs.Config.Handler = s
	hs.Start()
	t.Cleanup(hs.Close)
	return served{Server: s, url: hs.URL + s.Path()}
}

// get fetches path under the server's token and returns status and body.
func (s served) get(t *testing.T, path string) (int, string) {
	t.Helper()
	resp, err := http.Get(s.url + path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(body)
}

// approve posts the Approve form of bd, naming an approval digest, as the
// page would.
func (s served) approve(t *testing.T, bd, digest string) (int, string) {
	t.Helper()
	u, _ := url.Parse(s.url)
	form := url.Values{"csrf": {s.csrf}, "digest": {digest}}
	req, _ := http.NewRequest(http.MethodPost, s.url+"bd/"+bd+"/approve", strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", u.Scheme+"://"+u.Host)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

// createBD creates a BundleDeployment with status st and revisions (Bundles
// it controls) named name-1 … name-n, oldest first.
func createBD(t *testing.T, annotations map[string]string, st v1alpha2.BundleDeploymentStatus, revisions int) *v1alpha2.BundleDeployment {
	t.Helper()
	ctx := context.Background()
	name := envtest.UniqueName("ui")
	src := []v1alpha2.BundleSource{{Type: v1alpha2.SourceTypeConfigMaps,
		ConfigMaps: []v1alpha2.ConfigMapSource{{ConfigMap: v1alpha2.LocalObjectReference{Name: "manifests"}}}}}
	bd := &v1alpha2.BundleDeployment{ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: annotations},
		Spec: v1alpha2.BundleDeploymentSpec{ProvisionerClassName: v1alpha2.ClassPlain, InstallNamespace: "team-" + name, Sources: src}}
	if err := env.Client.Create(ctx, bd); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Client.Delete(context.Background(), bd) })
	for i := 1; i <= revisions; i++ {
		b := &v1alpha2.Bundle{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s-%d", name, i),
			Labels: map[string]string{v1alpha2.LabelBundleDeployment: name},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: v1alpha2.GroupVersion.String(), Kind: v1alpha2.BundleDeploymentKind,
				Name: name, UID: bd.UID, Controller: ptr.To(true)}}},
			Spec: v1alpha2.BundleSpec{ProvisionerClassName: v1alpha2.ClassPlain, Sources: src}}
		if err := env.Client.Create(ctx, b); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = env.Client.Delete(context.Background(), b) })
	}
	now := metav1.Now()
	for i := range st.Conditions {
		st.Conditions[i].LastTransitionTime, st.Conditions[i].ObservedGeneration = now, bd.Generation
	}
	st.ObservedGeneration = bd.Generation
	bd.Status = st
	if err := env.Client.Status().Update(ctx, bd); err != nil {
		t.Fatal(err)
	}
	return bd
}

func condition(typ string, status metav1.ConditionStatus, reason, msg string) metav1.Condition {
	return metav1.Condition{Type: typ, Status: status, Reason: reason, Message: msg}
}

// heldDigest is the approval digest heldStatus gives the held revision.
const heldDigest = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

// heldStatus is the status of a BundleDeployment whose revision 2 awaits
// approval and grants ServiceAccount ns/sa reading Secrets.
func heldStatus(name string) v1alpha2.BundleDeploymentStatus {
	return v1alpha2.BundleDeploymentStatus{
		ActiveBundle: name + "-1", LastHealthyBundle: name + "-1",
		Conditions: []metav1.Condition{
			condition(v1alpha2.TypeInstalled, metav1.ConditionFalse, v1alpha2.ReasonAwaitingApproval, "revision 2 awaits approval"),
			condition(v1alpha2.TypeReady, metav1.ConditionFalse, v1alpha2.ReasonAwaitingApproval, "revision 2 awaits approval"),
		},
		Review: &v1alpha2.BundleDeploymentReview{Revision: name + "-2", Digest: heldDigest, ActiveRevision: name + "-1", Review: v1alpha2.RevisionReview{
			GrowsPower: true, Summary: "ServiceAccount gains get,list secrets",
			RBAC: v1alpha2.ReviewRBAC{SubjectCount: 1, GainedCount: 1, Gained: []v1alpha2.ReviewGrant{{
				Subject: v1alpha2.ReviewSubject{Kind: "ServiceAccount", Namespace: "ns", Name: "sa"},
				Rule:    v1alpha2.ReviewRule{Verbs: []string{"get", "list"}, APIGroups: []string{""}, Resources: []string{"secrets"}},
			}}},
			APISurface: v1alpha2.ReviewAPISurface{
				AdmissionPolicyCount: 1, AdmissionPolicies: []v1alpha2.ReviewSurfaceChange{{Kind: "ValidatingAdmissionPolicyBinding",
					Name: "deny-privileged", Change: v1alpha2.ReviewWidened, Details: []string{"bound in every namespace"}}},
				UnmodeledCount: 1, Unmodeled: []v1alpha2.ReviewObjectChange{{Object: v1alpha2.ReviewObject{Kind: "PriorityClass", Name: "top"},
					ComparedTo: v1alpha2.ReviewComparedToLive, PathCount: 1, Paths: []string{"value"}}},
			},
		}},
	}
}

// grantVerbs lets user do verbs on BundleDeployment name (and list all of
// them), and waits until the authorizer agrees.
func grantVerbs(t *testing.T, user, name string, verbs ...string) {
	t.Helper()
	ctx := context.Background()
	role := envtest.UniqueName("ui-user")
	for _, obj := range []client.Object{
		&rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: role}, Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{v1alpha2.GroupVersion.Group}, Resources: []string{"bundledeployments"}, ResourceNames: []string{name}, Verbs: verbs},
			{APIGroups: []string{v1alpha2.GroupVersion.Group}, Resources: []string{"bundledeployments", "bundles"}, Verbs: []string{"get", "list", "watch"}},
		}},
		&rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: role},
			Subjects: []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: user}},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role}},
	} {
		if err := env.Client.Create(ctx, obj); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = env.Client.Delete(context.Background(), obj) })
	}
	for _, verb := range verbs {
		envtest.Eventually(t, 10*time.Second, func() error {
			sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{User: user,
				ResourceAttributes: &authorizationv1.ResourceAttributes{Verb: verb, Group: v1alpha2.GroupVersion.Group, Resource: "bundledeployments", Name: name}}}
			if err := env.Client.Create(ctx, sar); err != nil {
				return err
			}
			if !sar.Status.Allowed {
				return fmt.Errorf("%s may not %s %s yet", user, verb, name)
			}
			return nil
		})
	}
}

func TestOverviewAndDetailShowTheCluster(t *testing.T) {
	ready := createBD(t, map[string]string{"note": "<script>window.pwned=1</script>"}, v1alpha2.BundleDeploymentStatus{
		Conditions: []metav1.Condition{condition(v1alpha2.TypeReady, metav1.ConditionTrue, v1alpha2.ReasonReady, "")}}, 1)
	failed := createBD(t, nil, v1alpha2.BundleDeploymentStatus{
		Conditions: []metav1.Condition{condition(v1alpha2.TypeReady, metav1.ConditionFalse, v1alpha2.ReasonApplyFailed, "the apply failed")}}, 0)
	held := createBD(t, nil, v1alpha2.BundleDeploymentStatus{}, 2)
	held.Status = heldStatus(held.Name)
	held.Status.Conditions = append(held.Status.Conditions[:0:0], held.Status.Conditions...)
	for i := range held.Status.Conditions {
		held.Status.Conditions[i].LastTransitionTime, held.Status.Conditions[i].ObservedGeneration = metav1.Now(), held.Generation
	}
	held.Status.ObservedGeneration = held.Generation
	if err := env.Client.Status().Update(context.Background(), held); err != nil {
		t.Fatal(err)
	}
	s := serve(t, "", false)

	code, body := s.get(t, "")
	if code != http.StatusOK {
		t.Fatalf("overview: %d\n%s", code, body)
	}
	for _, want := range []string{
		`data-name="` + held.Name + `" data-state="Held"`,
		`data-name="` + failed.Name + `" data-state="Failed"`,
		`data-name="` + ready.Name + `" data-state="Ready"`,
		held.Name + "-2", // the newest revision, held
	} {
		if !strings.Contains(body, want) {
			t.Errorf("the overview lacks %q", want)
		}
	}
	if h, f := strings.Index(body, `data-name="`+held.Name), strings.Index(body, `data-name="`+ready.Name); h > f {
		t.Errorf("the held BundleDeployment is listed after a ready one")
	}
	_, filtered := s.get(t, "?state=Failed")
	if !strings.Contains(filtered, failed.Name) || strings.Contains(filtered, `data-name="`+ready.Name) {
		t.Errorf("?state=Failed does not filter")
	}

	code, body = s.get(t, "bd/"+ready.Name)
	if code != http.StatusOK {
		t.Fatalf("detail: %d\n%s", code, body)
	}
	if strings.Contains(body, "<script>window") || !strings.Contains(body, "&lt;script&gt;window.pwned=1&lt;/script&gt;") {
		t.Errorf("the annotation is not shown as text")
	}
	if !strings.Contains(body, ready.Name+"-1") {
		t.Errorf("the detail page lacks revision %s-1", ready.Name)
	}
	_, body = s.get(t, "bd/"+held.Name)
	for _, want := range []string{"held", held.Name + "-2", "awaiting approval", "review it"} {
		if !strings.Contains(body, want) {
			t.Errorf("the held BundleDeployment's page lacks %q", want)
		}
	}
	if code, _ := s.get(t, "bd/no-such-bd"); code != http.StatusNotFound {
		t.Errorf("a missing BundleDeployment: %d, want the API server's 404", code)
	}
}

func TestReviewAndApprove(t *testing.T) {
	bd := createBD(t, nil, v1alpha2.BundleDeploymentStatus{}, 2)
	bd.Status = heldStatus(bd.Name)
	for i := range bd.Status.Conditions {
		bd.Status.Conditions[i].LastTransitionTime, bd.Status.Conditions[i].ObservedGeneration = metav1.Now(), bd.Generation
	}
	bd.Status.ObservedGeneration = bd.Generation
	if err := env.Client.Status().Update(context.Background(), bd); err != nil {
		t.Fatal(err)
	}
	rev := bd.Name + "-2"
	nobody, approver := envtest.UniqueName("nobody"), envtest.UniqueName("approver")
	grantVerbs(t, nobody, bd.Name, "get", "patch")
	grantVerbs(t, approver, bd.Name, "get", "patch", v1alpha2.VerbApprove)

	t.Run("a user who may not approve sees why and is refused by the API server", func(t *testing.T) {
		s := serve(t, nobody, false)
		_, body := s.get(t, "bd/"+bd.Name+"/review")
		if strings.Contains(body, `id="approve"`) || !strings.Contains(body, "you may not approve") {
			t.Errorf("the review page offers approval to %s, or does not say why not", nobody)
		}
		if !strings.Contains(body, "ServiceAccount ns/sa") || !strings.Contains(body, "get,list resources [secrets]") {
			t.Errorf("the review page lacks the RBAC growth")
		}
		for _, want := range []string{"ValidatingAdmissionPolicyBinding", "deny-privileged", "bound in every namespace", "Not modeled by the review", "PriorityClass top"} {
			if !strings.Contains(body, want) {
				t.Errorf("the review page does not show %q (the admission policies and unmodeled objects of the review)", want)
			}
		}
		code, body := s.approve(t, bd.Name, heldDigest)
		want := fmt.Sprintf("user %q may not approve revisions of BundleDeployment %q", nobody, bd.Name)
		if code != http.StatusForbidden || !strings.Contains(body, "Refused:") || !strings.Contains(body, strings.ReplaceAll(want, `"`, "&#34;")) {
			t.Errorf("approval by %s: %d, want 403 with the API server's %q:\n%s", nobody, code, want, body)
		}
	})
	t.Run("read-only shows no button and refuses", func(t *testing.T) {
		s := serve(t, approver, true)
		if _, body := s.get(t, "bd/"+bd.Name+"/review"); strings.Contains(body, `id="approve"`) {
			t.Errorf("--read-only shows the Approve button")
		}
		if code, _ := s.approve(t, bd.Name, heldDigest); code != http.StatusForbidden {
			t.Errorf("--read-only approval: %d, want 403", code)
		}
	})
	t.Run("an approval naming a revision or another digest is refused", func(t *testing.T) {
		s := serve(t, approver, false)
		for _, want := range []string{rev, "sha256:" + strings.Repeat("0", 64)} {
			code, body := s.approve(t, bd.Name, want)
			if code != http.StatusConflict || !strings.Contains(body, "Refused:") {
				t.Errorf("approval naming %s: %d, want 409 refused:\n%s", want, code, body)
			}
		}
		got := &v1alpha2.BundleDeployment{}
		if err := env.Client.Get(context.Background(), client.ObjectKeyFromObject(bd), got); err != nil {
			t.Fatal(err)
		}
		if a, ok := got.Annotations[v1alpha2.AnnotationApproveRevision]; ok {
			t.Errorf("a refused approval set %s=%s", v1alpha2.AnnotationApproveRevision, a)
		}
	})
	t.Run("an approver approves as rukpakctl approve does", func(t *testing.T) {
		s := serve(t, approver, false)
		_, page := s.get(t, "bd/"+bd.Name+"/review")
		if !strings.Contains(page, `id="approve"`) {
			t.Fatalf("the approver is not offered the button:\n%s", page)
		}
		if !strings.Contains(page, `name="digest" value="`+heldDigest+`"`) {
			t.Errorf("the Approve form does not name the approval digest %s", heldDigest)
		}
		code, body := s.approve(t, bd.Name, heldDigest)
		if code != http.StatusOK || !strings.Contains(body, "Approved revision "+rev) {
			t.Fatalf("approval: %d\n%s", code, body)
		}
		got := &v1alpha2.BundleDeployment{}
		if err := env.Client.Get(context.Background(), client.ObjectKeyFromObject(bd), got); err != nil {
			t.Fatal(err)
		}
		// The approval names the digest of what was reviewed, not the
		// revision's name.
		if got.Annotations[v1alpha2.AnnotationApproveRevision] != heldDigest || got.Annotations[v1alpha2.AnnotationApprovedBy] != approver {
			t.Errorf("annotations %v, want %s approved by %s", got.Annotations, heldDigest, approver)
		}
	})
}

func TestEventsStreamChanges(t *testing.T) {
	bd := createBD(t, nil, v1alpha2.BundleDeploymentStatus{}, 0)
	s := serve(t, "", false)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, s.url+"events", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("Content-Type %q", ct)
	}
	lines := make(chan string)
	go func() {
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	// Watch returned once the first lists were announced, before this
	// subscription: what it receives now is the change below.
	if l := <-lines; !strings.HasPrefix(l, "retry:") {
		t.Fatalf("the stream starts with %q", l)
	}
	patch := client.RawPatch("application/merge-patch+json", []byte(`{"metadata":{"annotations":{"touched":"yes"}}}`))
	if err := env.Client.Patch(ctx, bd, patch); err != nil {
		t.Fatal(err)
	}
	for {
		select {
		case l, ok := <-lines:
			if !ok {
				t.Fatal("the stream ended before a change was sent")
			}
			if l == "event: change" {
				return
			}
		case <-ctx.Done():
			t.Fatal("no change event within 30s of a change")
		}
	}
}
