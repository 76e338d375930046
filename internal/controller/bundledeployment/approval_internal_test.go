package bundledeployment

import (
	"context"
	"errors"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/rukpak/rukpak/api/v1alpha2"
	"github.com/rukpak/rukpak/internal/approval"
	"github.com/rukpak/rukpak/internal/ownership"
)

// forgeNames makes every revision of a BundleDeployment named bdName
// share one name, as two specs found to collide on the name's 40 bits
// would, until the test ends.
func forgeNames(t *testing.T, bdName string) {
	t.Helper()
	forged := revisionNamer(func(name string, spec v1alpha2.BundleSpec, valuesDigest string) string {
		if name == bdName {
			return name + "-c0111de5ed"
		}
		return ownership.RevisionName(name, spec, valuesDigest)
	})
	forgedNamer.Store(&forged)
	t.Cleanup(func() { forgedNamer.Store(nil) })
}

func httpSource(url string) []v1alpha2.BundleSource {
	return []v1alpha2.BundleSource{{Type: v1alpha2.SourceTypeHTTP, HTTP: &v1alpha2.HTTPSource{URL: url, SHA256: strings.Repeat("ab", 32)}}}
}

func objectsDigest(t *testing.T, objs ...map[string]any) string {
	t.Helper()
	d, err := ownership.ObjectsDigest(objs)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// TestApprovalBindsToDigestNotName forges a collision of two revisions'
// names — a modest R and a power-growing M — and shows that an approval
// of R is not one of M: approvals, the review memo and the applied state
// bind to full digests, which differ.
func TestApprovalBindsToDigestNotName(t *testing.T) {
	bd := &v1alpha2.BundleDeployment{ObjectMeta: metav1.ObjectMeta{Name: "team-app"},
		Spec: v1alpha2.BundleDeploymentSpec{ProvisionerClassName: v1alpha2.ClassPlain}}
	forgeNames(t, bd.Name)
	srcR, srcM := httpSource("https://example.com/r.tgz"), httpSource("https://example.com/m.tgz")
	nameR, nameM := revisionName(bd, srcR, ""), revisionName(bd, srcM, "")
	if nameR != nameM {
		t.Fatalf("forged names differ: %s, %s", nameR, nameM)
	}
	specR := ownership.SpecDigest(v1alpha2.BundleSpec{ProvisionerClassName: v1alpha2.ClassPlain, Sources: srcR}, "")
	specM := ownership.SpecDigest(v1alpha2.BundleSpec{ProvisionerClassName: v1alpha2.ClassPlain, Sources: srcM}, "")
	content := "sha256:" + strings.Repeat("cd", 32)
	cm := map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "settings"}}
	rb := map[string]any{"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding", "metadata": map[string]any{"name": "read-secrets"},
		"subjects": []any{map[string]any{"kind": "Group", "name": "other-team"}}}
	digestR := ownership.ApprovalDigest(specR, content, objectsDigest(t, cm))
	digestM := ownership.ApprovalDigest(specM, content, objectsDigest(t, cm, rb))
	if digestR == digestM {
		t.Fatal("R and M have one approval digest")
	}
	// Even the same spec and content rendered to other objects (Helm's
	// lookup, a kept render lost) is another approval.
	if ownership.ApprovalDigest(specR, content, objectsDigest(t, cm, rb)) == digestR {
		t.Fatal("other objects of R's spec have R's approval digest")
	}

	// The approver approved R (admission recorded a user of
	// system:masters, so no SubjectAccessReview is needed here).
	bd.Annotations = map[string]string{
		v1alpha2.AnnotationApproveRevision:  digestR,
		v1alpha2.AnnotationApprovedBy:       "approver",
		v1alpha2.AnnotationApprovedByGroups: approval.EncodeGroups([]string{"system:masters"}),
	}
	r := &Reconciler{Options: Options{Approval: &approval.Checker{}}}
	ctx := context.Background()
	if by, refused, err := r.approvedBy(ctx, bd, digestM); by != "" || refused != nil || err != nil {
		t.Errorf("approvedBy(M) = %q, %v, %v: want M not approved by R's approval", by, refused, err)
	}
	if by, refused, err := r.approvedBy(ctx, bd, digestR); by != "approver" || refused != nil || err != nil {
		t.Errorf("approvedBy(R) = %q, %v, %v: want R approved by approver", by, refused, err)
	}
	// An approval naming the shared name approves neither, and says why.
	bd.Annotations[v1alpha2.AnnotationApproveRevision] = nameR
	for _, d := range []string{digestR, digestM} {
		by, refused, err := r.approvedBy(ctx, bd, d)
		if by != "" || err != nil || refused == nil || !strings.Contains(refused.Error(), "not an approval digest") {
			t.Errorf("approvedBy(%s) with an approval by name = %q, %v, %v: want refused, naming the digest", d, by, refused, err)
		}
	}

	refR := revisionRef{bundle: nameR, spec: specR, digest: content}
	refM := revisionRef{bundle: nameM, spec: specM, digest: content}
	// R held and remembered: M, under the same name, is reviewed anew.
	mem := &remembered{}
	mem.setReview(reviewKey(refR), "team-app-0000000001", digestR, &v1alpha2.RevisionReview{}, nil)
	if rev, _, _ := mem.reviewOf(reviewKey(refM), "team-app-0000000001"); rev != nil {
		t.Error("M took R's remembered review")
	}
	if rev, d, _ := mem.reviewOf(reviewKey(refR), "team-app-0000000001"); rev == nil || d != digestR {
		t.Errorf("R's remembered review = %v, %s", rev, d)
	}
	// R applied by this process: M is not taken for it.
	st := &appliedState{bundle: nameR, spec: specR, digest: content}
	if isApplied(st, nameR, refM, false) {
		t.Error("M is taken for the applied R")
	}
	if !isApplied(st, nameR, refR, false) {
		t.Error("R is not taken for itself")
	}
	// After a restart (nothing applied by this process), a Bundle created
	// under the active name now is another revision's.
	if isApplied(nil, nameR, refM, true) {
		t.Error("a Bundle created under the active revision's name is taken for it")
	}
	if !isApplied(nil, nameR, refR, false) {
		t.Error("after a restart the active revision's own Bundle is not taken for it")
	}
	// A held status of R does not make M a revision held before.
	written := &v1alpha2.BundleDeploymentStatus{Review: &v1alpha2.BundleDeploymentReview{Revision: nameR, Digest: digestR}}
	if prior := heldBefore(written); prior == nil || prior.Digest == digestM {
		t.Errorf("heldBefore = %+v: want R's digest", prior)
	}
}

// TestApprovalFloor: the class's minimumApproval is the lowest policy in
// force, whatever the BundleDeployment asks for.
func TestApprovalFloor(t *testing.T) {
	for _, tc := range []struct {
		spec, floor, want v1alpha2.ApprovalPolicy
	}{
		{"", "", v1alpha2.ApprovalAutomatic},
		{"", v1alpha2.ApprovalPowerGrowth, v1alpha2.ApprovalPowerGrowth},
		{v1alpha2.ApprovalAutomatic, v1alpha2.ApprovalPowerGrowth, v1alpha2.ApprovalPowerGrowth},
		{v1alpha2.ApprovalAlways, v1alpha2.ApprovalPowerGrowth, v1alpha2.ApprovalAlways},
		{v1alpha2.ApprovalPowerGrowth, v1alpha2.ApprovalAlways, v1alpha2.ApprovalAlways},
		{v1alpha2.ApprovalPowerGrowth, "", v1alpha2.ApprovalPowerGrowth},
		{v1alpha2.ApprovalPowerGrowth, "Bogus", v1alpha2.ApprovalPowerGrowth},
	} {
		if got := tc.spec.AtLeast(tc.floor); got != tc.want {
			t.Errorf("%q at least %q = %q, want %q", tc.spec, tc.floor, got, tc.want)
		}
	}
}

// TestPolicyInForce: a raise of spec.upgrade.approval is in force at
// once, a lowering only when the user who made it may approve; the
// status records the policy in force, "" for Automatic.
func TestPolicyInForce(t *testing.T) {
	const (
		auto, power, always = v1alpha2.ApprovalAutomatic, v1alpha2.ApprovalPowerGrowth, v1alpha2.ApprovalAlways
	)
	approver := approverVerdict{by: "admin"}
	requester := approverVerdict{why: errors.New("may not approve")}
	for _, tc := range []struct {
		name          string
		inForce, spec v1alpha2.ApprovalPolicy
		lowerer       approverVerdict
		want          v1alpha2.ApprovalPolicy
	}{
		{name: "a first install under Automatic records nothing", inForce: "", spec: auto, want: ""},
		{name: "a first install under PowerGrowth", inForce: "", spec: power, want: power},
		{name: "a raise by anyone", inForce: power, spec: always, lowerer: requester, want: always},
		{name: "unchanged", inForce: power, spec: power, want: power},
		{name: "lowered by a requester", inForce: power, spec: auto, lowerer: requester, want: power},
		{name: "lowered by a requester, from Always", inForce: always, spec: power, lowerer: requester, want: always},
		{name: "lowered by an approver", inForce: always, spec: power, lowerer: approver, want: power},
		{name: "lowered to Automatic by an approver", inForce: power, spec: auto, lowerer: approver, want: ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := policyInForce(tc.inForce, tc.spec, tc.lowerer); got != tc.want {
				t.Errorf("policyInForce(%q, %q) = %q, want %q", tc.inForce, tc.spec, got, tc.want)
			}
		})
	}
}

// TestLoweredBy: a revision held before the policy was lowered goes
// through only when the user who last changed the spec may approve.
func TestLoweredBy(t *testing.T) {
	ctx := context.Background()
	masters := approval.EncodeGroups([]string{"system:masters"})
	for _, tc := range []struct {
		name        string
		annotations map[string]string
		separate    bool
		wantBy      string
		wantWhy     string
	}{
		{name: "nobody recorded", wantWhy: "no one is recorded"},
		{name: "an approver lowered it", annotations: map[string]string{v1alpha2.AnnotationRequestedBy: "admin", v1alpha2.AnnotationRequestedByGroups: masters}, wantBy: "admin"},
		{name: "four eyes", separate: true, annotations: map[string]string{v1alpha2.AnnotationRequestedBy: "admin", v1alpha2.AnnotationRequestedByGroups: masters}, wantWhy: "--require-separate-approver"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			bd := &v1alpha2.BundleDeployment{ObjectMeta: metav1.ObjectMeta{Name: "team-app", Annotations: tc.annotations}}
			r := &Reconciler{Options: Options{SeparateApprover: tc.separate, Approval: &approval.Checker{}}}
			by, why, err := r.loweredBy(ctx, bd)
			if err != nil {
				t.Fatal(err)
			}
			if by != tc.wantBy {
				t.Errorf("by = %q, want %q", by, tc.wantBy)
			}
			if tc.wantWhy != "" && (why == nil || !strings.Contains(why.Error(), tc.wantWhy)) {
				t.Errorf("why = %v, want one containing %q", why, tc.wantWhy)
			}
		})
	}
}

// TestStaleApproval: only an approval that names a Bundle, not a digest,
// needs explaining.
func TestStaleApproval(t *testing.T) {
	d := "sha256:" + strings.Repeat("0", 64)
	if staleApproval("", d) != nil || staleApproval("sha256:"+strings.Repeat("1", 64), d) != nil {
		t.Error("no approval, or another revision's, needs no explaining")
	}
	if err := staleApproval("team-app-0123456789", d); err == nil || !strings.Contains(err.Error(), d) {
		t.Errorf("approval by name: %v, want one naming the digest", err)
	}
}
