package permissions

import (
	"context"
	"errors"
	"reflect"
	"sync/atomic"
	"testing"

	authorizationv1 "k8s.io/api/authorization/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
)

// TestMissingReviews checks, with a fake client, which reviews Missing asks
// and that a failing review is an error rather than a denial.
func TestMissingReviews(t *testing.T) {
	ctx := context.Background()
	subject := ServiceAccount("a", "installer")
	targets := []Target{
		{Resource: configMaps, Namespace: "a", Name: "x"},
		{Resource: configMaps, Namespace: "a", Name: "y"},
		{Resource: configMaps, Namespace: "a", Name: "y"},
	}
	tests := []struct {
		name      string
		allow     func(authorizationv1.ResourceAttributes) bool
		fail      bool
		wantAsked int64
		want      []Rule
		wantErr   bool
	}{
		{name: "all allowed: one review per verb", allow: func(authorizationv1.ResourceAttributes) bool { return true },
			wantAsked: 6},
		{name: "all denied: per name for create, delete, get and patch",
			allow:     func(authorizationv1.ResourceAttributes) bool { return false },
			wantAsked: 6 + 4*2, want: []Rule{rule("a", "", []string{"configmaps"})}},
		{name: "names allowed one by one",
			allow:     func(ra authorizationv1.ResourceAttributes) bool { return ra.Name != "" },
			wantAsked: 6 + 4*2, want: []Rule{rule("a", "", []string{"configmaps"}, "list", "watch")}},
		{name: "one name denied is missing",
			allow:     func(ra authorizationv1.ResourceAttributes) bool { return ra.Name == "x" },
			wantAsked: 6 + 4*2, want: []Rule{rule("a", "", []string{"configmaps"})}},
		{name: "a failing review is an error", fail: true, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var asked atomic.Int64
			cs := fake.NewClientset()
			cs.PrependReactor("create", "subjectaccessreviews", func(action k8stesting.Action) (bool, runtime.Object, error) {
				asked.Add(1)
				if tt.fail {
					return true, nil, errors.New("connection refused")
				}
				sar := action.(k8stesting.CreateAction).GetObject().(*authorizationv1.SubjectAccessReview)
				if sar.Spec.User != subject.User || !reflect.DeepEqual(sar.Spec.Groups, subject.Groups) {
					t.Errorf("review for %q %v, want %q %v", sar.Spec.User, sar.Spec.Groups, subject.User, subject.Groups)
				}
				ra := *sar.Spec.ResourceAttributes
				if ra.Version != "v1" || ra.Namespace != "a" {
					t.Errorf("review attributes %+v", ra)
				}
				sar.Status.Allowed = tt.allow(ra)
				return true, sar, nil
			})
			c := &Checker{Reviews: cs.AuthorizationV1().SubjectAccessReviews()}
			got, err := c.Missing(ctx, subject, targets)
			if tt.wantErr {
				if err == nil {
					t.Fatal("no error")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Missing =\n%+v\nwant\n%+v", got, tt.want)
			}
			if asked.Load() != tt.wantAsked {
				t.Errorf("asked %d reviews, want %d", asked.Load(), tt.wantAsked)
			}
		})
	}
}
