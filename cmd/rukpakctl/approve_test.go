package main

import (
	"context"
	"strings"
	"testing"

	"github.com/rukpak/rukpak/api/v1alpha2"
	"github.com/rukpak/rukpak/pkg/envtest"
)

func TestApproveAndReview(t *testing.T) {
	kc := kubeconfig(t)
	name := envtest.UniqueName("approve")
	revs := lifecycle{revs: []fixtureRev{{outcome: v1alpha2.OutcomeHealthy}, {}}, active: 0, lastHealthy: 0}.create(t, name)
	setReview := func(r *v1alpha2.BundleDeploymentReview) func() {
		return func() {
			bd := getBD(t, name)
			bd.Status.Review = r
			if err := testEnv.Client.Status().Update(context.Background(), bd); err != nil {
				t.Fatal(err)
			}
		}
	}
	awaiting := &v1alpha2.BundleDeploymentReview{Revision: revs[1].Name, ActiveRevision: revs[0].Name,
		Review: v1alpha2.RevisionReview{GrowsPower: true, Summary: "User gate-user gains get secrets"}}
	for _, tc := range []struct {
		name       string
		before     func()
		args       []string
		wantErr    string
		wantOut    string
		wantMarked string
	}{
		{name: "nothing reviewed", args: []string{"approve", name}, wantErr: "no revision awaits approval"},
		{name: "review nothing", args: []string{"review", name}, wantOut: "no revision reviewed"},
		{name: "review awaiting", before: setReview(awaiting), args: []string{"review", name}, wantOut: "awaiting approval: rukpakctl approve " + name},
		{name: "review yaml", args: []string{"review", name, "-o", "yaml"}, wantOut: "revision: " + revs[1].Name},
		{name: "other revision", args: []string{"approve", name, "--revision", revs[0].Name}, wantErr: revs[1].Name + " awaits approval, not " + revs[0].Name},
		{name: "approve", args: []string{"approve", name, "--revision", revs[1].Name}, wantOut: "approved revision " + revs[1].Name, wantMarked: revs[1].Name},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.before != nil {
				tc.before()
			}
			stdout, _, err := run(t, append(tc.args, "--kubeconfig", kc)...)
			switch {
			case tc.wantErr != "":
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want one containing %q", err, tc.wantErr)
				}
			case err != nil:
				t.Fatal(err)
			}
			if !strings.Contains(stdout, tc.wantOut) {
				t.Errorf("stdout %q does not contain %q", stdout, tc.wantOut)
			}
			bd := getBD(t, name)
			if got := bd.Annotations[v1alpha2.AnnotationApproveRevision]; got != tc.wantMarked {
				t.Errorf("annotation %s = %q, want %q", v1alpha2.AnnotationApproveRevision, got, tc.wantMarked)
			}
			if tc.wantMarked != "" && bd.Annotations[v1alpha2.AnnotationApprovedBy] == "" {
				t.Errorf("no %s annotation: admission did not record the approver", v1alpha2.AnnotationApprovedBy)
			}
		})
	}
}
