package ui

import (
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/rukpak/rukpak/api/v1alpha2"
	"github.com/rukpak/rukpak/internal/objdiff"
)

// hostile is a value a bundle's author or a tenant controls.
const hostile = `<script>window.pwned=1</script><img src=x onerror="window.pwned=2">"'&`

func cond(typ string, status metav1.ConditionStatus, reason string) metav1.Condition {
	return metav1.Condition{Type: typ, Status: status, Reason: reason, Message: reason + " " + hostile}
}

func TestState(t *testing.T) {
	bd := func(paused bool, conds ...metav1.Condition) *v1alpha2.BundleDeployment {
		return &v1alpha2.BundleDeployment{ObjectMeta: metav1.ObjectMeta{Generation: 2}, Spec: v1alpha2.BundleDeploymentSpec{Paused: paused},
			Status: v1alpha2.BundleDeploymentStatus{ObservedGeneration: 2, Conditions: conds}}
	}
	for _, tc := range []struct {
		name string
		bd   *v1alpha2.BundleDeployment
		want string
	}{
		{"ready", bd(false, cond(v1alpha2.TypeReady, metav1.ConditionTrue, v1alpha2.ReasonReady)), StateReady},
		{"held", bd(false, cond(v1alpha2.TypeInstalled, metav1.ConditionFalse, v1alpha2.ReasonAwaitingApproval),
			cond(v1alpha2.TypeReady, metav1.ConditionFalse, v1alpha2.ReasonAwaitingApproval)), StateHeld},
		{"failed", bd(false, cond(v1alpha2.TypeReady, metav1.ConditionFalse, v1alpha2.ReasonApplyFailed)), StateFailed},
		{"progressing", bd(false, cond(v1alpha2.TypeReady, metav1.ConditionFalse, v1alpha2.ReasonRollingOut),
			cond(v1alpha2.TypeProgressing, metav1.ConditionTrue, v1alpha2.ReasonRollingOut)), StateProgressing},
		{"nothing observed yet", bd(false), StateProgressing},
		{"paused", bd(true, cond(v1alpha2.TypeReady, metav1.ConditionFalse, v1alpha2.ReasonPaused)), StatePaused},
	} {
		if got := State(tc.bd); got != tc.want {
			t.Errorf("%s: State = %s, want %s", tc.name, got, tc.want)
		}
	}
}

func TestOverviewRowsHeldAndFailedFirstAndFiltered(t *testing.T) {
	mk := func(name, class string, c metav1.Condition) v1alpha2.BundleDeployment {
		return v1alpha2.BundleDeployment{ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec:   v1alpha2.BundleDeploymentSpec{ProvisionerClassName: class, InstallNamespace: name + "-ns"},
			Status: v1alpha2.BundleDeploymentStatus{Conditions: []metav1.Condition{c}, ActiveBundle: name + "-1"}}
	}
	bds := []v1alpha2.BundleDeployment{
		mk("a", "plain", cond(v1alpha2.TypeReady, metav1.ConditionTrue, v1alpha2.ReasonReady)),
		mk("b", "helm", cond(v1alpha2.TypeReady, metav1.ConditionFalse, v1alpha2.ReasonApplyFailed)),
		mk("c", "plain", cond(v1alpha2.TypeInstalled, metav1.ConditionFalse, v1alpha2.ReasonAwaitingApproval)),
	}
	bundles := []v1alpha2.Bundle{
		{ObjectMeta: metav1.ObjectMeta{Name: "a-1", Labels: map[string]string{v1alpha2.LabelBundleDeployment: "a"}, CreationTimestamp: metav1.Unix(1, 0)}},
		{ObjectMeta: metav1.ObjectMeta{Name: "a-2", Labels: map[string]string{v1alpha2.LabelBundleDeployment: "a"}, CreationTimestamp: metav1.Unix(2, 0)}},
	}
	var order []string
	for _, r := range overviewRows(bds, bundles, filters{}) {
		order = append(order, r.Name+":"+r.State+":"+r.Newest)
	}
	if got := strings.Join(order, " "); got != "c:Held:c-1 b:Failed:b-1 a:Ready:a-2" {
		t.Errorf("rows %s", got)
	}
	for f, want := range map[filters]string{
		{Class: "plain"}:      "c a",
		{State: StateFailed}:  "b",
		{Namespace: "a-ns"}:   "a",
		{Text: "APPLYFAILED"}: "b",
		{Text: "nothing"}:     "",
	} {
		var names []string
		for _, r := range overviewRows(bds, bundles, f) {
			names = append(names, r.Name)
		}
		if got := strings.Join(names, " "); got != want {
			t.Errorf("filter %+v: %q, want %q", f, got, want)
		}
	}
}

// render renders page name with data as the server would and returns the
// body.
func render(t *testing.T, name string, data any) string {
	t.Helper()
	s := newTestServer(t, false)
	w := httptest.NewRecorder()
	s.render(w, 200, name, data)
	if w.Code != 200 {
		t.Fatalf("rendering %s: %d %s", name, w.Code, w.Body.String())
	}
	return w.Body.String()
}

// assertEscaped fails unless body shows hostile only as text.
func assertEscaped(t *testing.T, body string) {
	t.Helper()
	for _, bad := range []string{"<script>window", "<img src=x", `onerror="window`} {
		if strings.Contains(body, bad) {
			t.Errorf("the page holds %q unescaped", bad)
		}
	}
	if !strings.Contains(body, "&lt;script&gt;window.pwned=1&lt;/script&gt;") {
		t.Errorf("the page lacks the escaped value:\n%s", body)
	}
}

func hostileBD() *v1alpha2.BundleDeployment {
	return &v1alpha2.BundleDeployment{
		ObjectMeta: metav1.ObjectMeta{Name: "x", Annotations: map[string]string{"note": hostile}, CreationTimestamp: metav1.Unix(1, 0)},
		Spec:       v1alpha2.BundleDeploymentSpec{ProvisionerClassName: hostile, InstallNamespace: "ns"},
		Status: v1alpha2.BundleDeploymentStatus{Conditions: []metav1.Condition{cond(v1alpha2.TypeReady, metav1.ConditionFalse, hostile)},
			Review: &v1alpha2.BundleDeploymentReview{Revision: hostile, Review: v1alpha2.RevisionReview{GrowsPower: true, Summary: hostile,
				RBAC: v1alpha2.ReviewRBAC{GainedCount: 1, Gained: []v1alpha2.ReviewGrant{{Subject: v1alpha2.ReviewSubject{Kind: "User", Name: hostile},
					Rule: v1alpha2.ReviewRule{Verbs: []string{hostile}}}}}}}},
	}
}

func TestPagesEscapeClusterValues(t *testing.T) {
	s := newTestServer(t, false)
	bd := hostileBD()
	t.Run("overview", func(t *testing.T) {
		assertEscaped(t, render(t, "overview", overviewPage{page: s.page("o"), Rows: overviewRows([]v1alpha2.BundleDeployment{*bd}, nil, filters{}),
			Classes: []string{hostile}, Filters: filters{Text: hostile}}))
	})
	t.Run("detail", func(t *testing.T) {
		events := []corev1.Event{{Reason: hostile, Message: hostile, Type: corev1.EventTypeWarning}}
		body := render(t, "detail", detailPage{page: s.page(hostile), BD: bd, State: State(bd), Conditions: bd.Status.Conditions,
			Annotations: []keyValue{{Key: "note", Value: hostile}}, Timeline: timeline(bd, nil, events, time.Unix(100, 0))})
		assertEscaped(t, body)
	})
	t.Run("review", func(t *testing.T) {
		diff, err := objdiff.SideBySides([]objdiff.Object{{Name: hostile, Merged: &unstructured.Unstructured{Object: map[string]any{"data": map[string]any{"a": hostile}}}}})
		if err != nil {
			t.Fatal(err)
		}
		assertEscaped(t, render(t, "review", reviewPage{page: s.page(hostile), BD: bd, Review: bd.Status.Review,
			Gained: grantsOf(bd.Status.Review.Review.RBAC.Gained), Diffs: diff, Refused: hostile, CanApprove: true, CSRF: "c"}))
	})
	t.Run("error", func(t *testing.T) {
		assertEscaped(t, render(t, "error", errorPage{page: s.page(hostile), Message: hostile}))
	})
}

func TestReviewPageShowsApproveOnlyWhenAllowed(t *testing.T) {
	s := newTestServer(t, false)
	bd := hostileBD()
	p := reviewPage{page: s.page("r"), BD: bd, Review: bd.Status.Review, CSRF: "the-csrf"}
	p.ApproveDenied = "you may not approve"
	if body := render(t, "review", p); strings.Contains(body, `id="approve"`) || !strings.Contains(body, "you may not approve") {
		t.Errorf("a user who may not approve sees the button, or not why")
	}
	p.CanApprove, p.ApproveDenied = true, ""
	body := render(t, "review", p)
	if !strings.Contains(body, `id="approve"`) || !strings.Contains(body, `name="csrf" value="the-csrf"`) {
		t.Errorf("an approver does not see the button with the CSRF token:\n%s", body)
	}
}

func TestTimeline(t *testing.T) {
	at := func(s int64) metav1.Time { return metav1.Unix(s, 0) }
	bd := &v1alpha2.BundleDeployment{ObjectMeta: metav1.ObjectMeta{Name: "x"},
		Status: v1alpha2.BundleDeploymentStatus{ActiveBundle: "x-1", LastHealthyBundle: "x-1",
			Conditions: []metav1.Condition{{Type: v1alpha2.TypeInstalled, Status: metav1.ConditionFalse, Reason: v1alpha2.ReasonAwaitingApproval, LastTransitionTime: at(30)}},
			Review:     &v1alpha2.BundleDeploymentReview{Revision: "x-2", Review: v1alpha2.RevisionReview{Summary: "grows"}}}}
	revs := []v1alpha2.Bundle{
		{ObjectMeta: metav1.ObjectMeta{Name: "x-1", CreationTimestamp: at(10)}, Spec: v1alpha2.BundleSpec{Unpacked: &v1alpha2.UnpackRecord{}}},
		{ObjectMeta: metav1.ObjectMeta{Name: "x-2", CreationTimestamp: at(20)}},
	}
	events := []corev1.Event{{Reason: "DriftCorrected", Message: "put back", LastTimestamp: at(40), Count: 2}}
	var got []string
	for _, e := range timeline(bd, revs, events, time.Unix(100, 0)) {
		got = append(got, e.Kind+" "+e.Revision)
	}
	if s := strings.Join(got, ","); s != "DriftCorrected ,held x-2,created x-2,installed x-1,created x-1" {
		t.Errorf("timeline %s", s)
	}
}

func TestTone(t *testing.T) {
	for _, tc := range []struct{ typ, status, want string }{
		{v1alpha2.TypeReady, "True", "good"},
		{v1alpha2.TypeReady, "False", "bad"},
		{v1alpha2.TypeHealthy, "Unknown", "unknown"},
		{v1alpha2.TypeProgressing, "False", "good"},
		{v1alpha2.TypeProgressing, "True", "busy"},
		{v1alpha2.TypePaused, "False", "good"},
		{v1alpha2.TypePaused, "True", "bad"},
	} {
		if got := tone(tc.typ, tc.status); got != tc.want {
			t.Errorf("tone(%s, %s) = %s, want %s", tc.typ, tc.status, got, tc.want)
		}
	}
}

// TestPolicyText: the review page names the policy in force when a
// lowering of spec.upgrade.approval is not.
func TestPolicyText(t *testing.T) {
	for _, tc := range []struct {
		name           string
		spec, inForce  v1alpha2.ApprovalPolicy
		want, wantNone string
	}{
		{name: "no policy", want: "Automatic", wantNone: "in force"},
		{name: "the spec's", spec: v1alpha2.ApprovalPowerGrowth, inForce: v1alpha2.ApprovalPowerGrowth, want: "PowerGrowth", wantNone: "in force"},
		{name: "a lowering not in force", spec: v1alpha2.ApprovalAutomatic, inForce: v1alpha2.ApprovalAlways, want: "Always in force: the spec's Automatic is a lowering"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			bd := &v1alpha2.BundleDeployment{Status: v1alpha2.BundleDeploymentStatus{ApprovalPolicy: tc.inForce}}
			if tc.spec != "" {
				bd.Spec.Upgrade = &v1alpha2.UpgradePolicy{ApprovalPolicy: tc.spec}
			}
			got := policyText(bd)
			if !strings.HasPrefix(got, tc.want) || (tc.wantNone != "" && strings.Contains(got, tc.wantNone)) {
				t.Errorf("policyText = %q, want it to start with %q", got, tc.want)
			}
		})
	}
}
