package review

import (
	"testing"
)

// TestIdentityNeeds checks what the install identity needs now and no
// longer, from permissions.Required of each revision.
func TestIdentityNeeds(t *testing.T) {
	const all = "create,delete,get,list,patch,watch"
	cm := "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n"
	cmTeamA := "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a, namespace: team-a}\n"
	sec := "apiVersion: v1\nkind: Secret\nmetadata: {name: s}\n"
	tests := []struct {
		name             string
		active, next     []string
		needed, unneeded []string
	}{
		{
			name:   "first install needs everything",
			next:   []string{cm},
			needed: []string{all + " on configmaps in namespace op"},
		},
		{
			name:   "the same kinds in the same namespace: nothing new",
			active: []string{cm},
			next:   []string{cm, "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: b}\n"},
		},
		{
			name:   "a new kind and a new namespace and a cluster-scoped kind",
			active: []string{cm},
			next:   []string{cm, sec, cmTeamA, clusterRole("op", "", getPods)},
			needed: []string{
				all + " on clusterroles in apiGroups rbac.authorization.k8s.io cluster-wide",
				all + " on secrets in namespace op",
				all + " on configmaps in namespace team-a",
			},
		},
		{
			name:     "a kind dropped",
			active:   []string{cm, sec},
			next:     []string{cm},
			unneeded: []string{all + " on secrets in namespace op"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := compute(t, objs(t, tt.active...), objs(t, tt.next...), nil)
			diffLines(t, "needed", rules(r.Identity.Needed), tt.needed)
			diffLines(t, "unneeded", rules(r.Identity.Unneeded), tt.unneeded)
			if want := len(tt.needed) > 0; r.GrowsPower != want && len(r.APISurface.ClusterScoped) == 0 {
				t.Errorf("GrowsPower = %v, want %v", r.GrowsPower, want)
			}
		})
	}
}
