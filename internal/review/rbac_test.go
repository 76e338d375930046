package review

import (
	"testing"
)

// Rules of the tests, as YAML flow maps.
const (
	getListPods   = `{apiGroups: [""], resources: [pods], verbs: [get, list]}`
	getPods       = `{apiGroups: [""], resources: [pods], verbs: [get]}`
	listPods      = `{apiGroups: [""], resources: [pods], verbs: [list]}`
	getSecrets    = `{apiGroups: [""], resources: [secrets], verbs: [get]}`
	getSecretA    = `{apiGroups: [""], resources: [secrets], resourceNames: [a], verbs: [get]}`
	anyVerbPods   = `{apiGroups: [""], resources: [pods], verbs: ["*"]}`
	getAnyCore    = `{apiGroups: [""], resources: ["*"], verbs: [get]}`
	getPodsSecret = `{apiGroups: [""], resources: [pods, secrets], verbs: [get]}`
	getAnyGroup   = `{apiGroups: ["*"], resources: [deployments], verbs: [get]}`
	getDeploys    = `{apiGroups: [apps], resources: [deployments], verbs: [get]}`
	execPods      = `{apiGroups: [""], resources: [pods/exec], verbs: [create]}`
	anyScale      = `{apiGroups: [apps], resources: ["*/scale"], verbs: [update]}`
	deployScale   = `{apiGroups: [apps], resources: [deployments/scale], verbs: [update]}`
	getHealthz    = `{nonResourceURLs: [/healthz], verbs: [get]}`
	getMetricsAll = `{nonResourceURLs: ["/metrics*"], verbs: [get]}`
	getMetrics    = `{nonResourceURLs: [/metrics], verbs: [get]}`
	getSecretAB   = `{apiGroups: [""], resources: [secrets], resourceNames: [a, b], verbs: [get]}`
	getAnyNamedA  = `{apiGroups: [""], resources: ["*"], resourceNames: [a], verbs: [get]}`
	getAnyURL     = `{nonResourceURLs: ["*"], verbs: [get]}`
	getPostHealth = `{nonResourceURLs: [/healthz], verbs: [get, post]}`
)

// TestEffectiveRBAC checks what subjects gain and lose, as effective rules.
func TestEffectiveRBAC(t *testing.T) {
	tests := []struct {
		name               string
		active, next, live []string
		gained, lost       []string
	}{
		{
			name:   "first install grants a ClusterRole",
			next:   []string{clusterRole("op", "", getListPods), clusterBinding("op", "op", saOp)},
			gained: []string{"ServiceAccount op/op: get,list on pods cluster-wide"},
		},
		{
			name:   "a rule split differently is no change",
			active: []string{clusterRole("op", "", getListPods), clusterBinding("op", "op", saOp)},
			next:   []string{clusterRole("op", "", getPods, listPods), clusterBinding("op", "op", saOp)},
		},
		{
			name:   "rules moved to a renamed role (registry+v1 upgrade) is no change",
			active: []string{clusterRole("op-v1", "", getPodsSecret), clusterBinding("op-v1", "op-v1", saOp)},
			next:   []string{clusterRole("op-v2", "", getPods), clusterRole("op-v2b", "", getSecrets), clusterBinding("op-v2", "op-v2", saOp), clusterBinding("op-v2b", "op-v2b", saOp)},
		},
		{
			name:   "a verb wildcard is a gain of the wildcard rule",
			active: []string{clusterRole("op", "", getPods), clusterBinding("op", "op", saOp)},
			next:   []string{clusterRole("op", "", anyVerbPods), clusterBinding("op", "op", saOp)},
			gained: []string{"ServiceAccount op/op: * on pods cluster-wide"},
		},
		{
			name:   "a resource wildcard covering the old rules",
			active: []string{clusterRole("op", "", getPodsSecret), clusterBinding("op", "op", saOp)},
			next:   []string{clusterRole("op", "", getAnyCore), clusterBinding("op", "op", saOp)},
			gained: []string{"ServiceAccount op/op: get on * cluster-wide"},
		},
		{
			name:   "an apiGroup wildcard",
			active: []string{clusterRole("op", "", getDeploys), clusterBinding("op", "op", saOp)},
			next:   []string{clusterRole("op", "", getAnyGroup), clusterBinding("op", "op", saOp)},
			gained: []string{"ServiceAccount op/op: get on deployments in apiGroups * cluster-wide"},
		},
		{
			name:   "a wildcard narrowed is a loss",
			active: []string{clusterRole("op", "", getAnyCore), clusterBinding("op", "op", saOp)},
			next:   []string{clusterRole("op", "", getPods), clusterBinding("op", "op", saOp)},
			lost:   []string{"ServiceAccount op/op: get on * cluster-wide"},
		},
		{
			name:   "resourceNames dropped is a gain of every name",
			active: []string{clusterRole("op", "", getSecretA), clusterBinding("op", "op", saOp)},
			next:   []string{clusterRole("op", "", getSecrets), clusterBinding("op", "op", saOp)},
			gained: []string{"ServiceAccount op/op: get on secrets cluster-wide"},
		},
		{
			name:   "resourceNames added is a loss",
			active: []string{clusterRole("op", "", getSecrets), clusterBinding("op", "op", saOp)},
			next:   []string{clusterRole("op", "", getSecretA), clusterBinding("op", "op", saOp)},
			lost:   []string{"ServiceAccount op/op: get on secrets cluster-wide"},
		},
		{
			name:   "a subresource is its own resource",
			active: []string{clusterRole("op", "", getPods), clusterBinding("op", "op", saOp)},
			next:   []string{clusterRole("op", "", getPods, execPods), clusterBinding("op", "op", saOp)},
			gained: []string{"ServiceAccount op/op: create on pods/exec cluster-wide"},
		},
		{
			name:   "*/scale covers deployments/scale",
			active: []string{clusterRole("op", "", anyScale), clusterBinding("op", "op", saOp)},
			next:   []string{clusterRole("op", "", deployScale), clusterBinding("op", "op", saOp)},
			lost:   []string{"ServiceAccount op/op: update on */scale in apiGroups apps cluster-wide"},
		},
		{
			name:   "nonResourceURLs and a prefix wildcard",
			active: []string{clusterRole("op", "", getHealthz, getMetrics), clusterBinding("op", "op", saOp)},
			next:   []string{clusterRole("op", "", getMetricsAll), clusterBinding("op", "op", saOp)},
			gained: []string{"ServiceAccount op/op: get on /metrics* cluster-wide"},
			lost:   []string{"ServiceAccount op/op: get on /healthz cluster-wide"},
		},
		{
			name:   "a RoleBinding to a live ClusterRole grants in its namespace only, without URLs",
			live:   []string{clusterRole("view", "", getListPods, getHealthz)},
			next:   []string{binding("team-a", "op-view", "ClusterRole", "view", saOp)},
			gained: []string{"ServiceAccount op/op: get,list on pods in namespace team-a"},
		},
		{
			name:   "a RoleBinding to a Role, its ServiceAccount in the binding's namespace",
			next:   []string{role("team-a", "op", getPods), binding("team-a", "op", "Role", "op", "{kind: ServiceAccount, name: op}")},
			gained: []string{"ServiceAccount team-a/op: get on pods in namespace team-a"},
		},
		{
			name:   "a cluster-wide grant narrowed to a namespace",
			active: []string{clusterRole("op", "", getPods), clusterBinding("op", "op", saOp)},
			next:   []string{clusterRole("op", "", getPods), binding("team-a", "op", "ClusterRole", "op", saOp)},
			lost:   []string{"ServiceAccount op/op: get on pods cluster-wide"},
		},
		{
			name:   "a namespace grant made cluster-wide",
			active: []string{clusterRole("op", "", getPods), binding("team-a", "op", "ClusterRole", "op", saOp)},
			next:   []string{clusterRole("op", "", getPods), clusterBinding("op", "op", saOp)},
			gained: []string{"ServiceAccount op/op: get on pods cluster-wide"},
		},
		{
			name:   "a subject added to a binding",
			active: []string{clusterRole("op", "", getPods), clusterBinding("op", "op", saOp)},
			next:   []string{clusterRole("op", "", getPods), clusterBinding("op", "op", saOp, saOther, alice)},
			gained: []string{"ServiceAccount op/other: get on pods cluster-wide", "User alice: get on pods cluster-wide"},
		},
		{
			name:   "a binding removed",
			active: []string{clusterRole("op", "", getPods), clusterBinding("op", "op", saOp)},
			next:   []string{clusterRole("op", "", getPods)},
			lost:   []string{"ServiceAccount op/op: get on pods cluster-wide"},
		},
		{
			name:   "the bundle's aggregated ClusterRole gains a part",
			active: []string{aggregating("op", "op/part=true"), clusterRole("op-pods", "op/part=true", getPods), clusterBinding("op", "op", saOp)},
			next:   []string{aggregating("op", "op/part=true"), clusterRole("op-pods", "op/part=true", getPods), clusterRole("op-secrets", "op/part=true", getSecrets), clusterBinding("op", "op", saOp)},
			gained: []string{"ServiceAccount op/op: get on secrets cluster-wide"},
		},
		{
			name:   "the bundle's aggregated ClusterRole selects live ClusterRoles",
			live:   []string{clusterRole("node-reader", "op/part=true", getSecrets), clusterRole("unrelated", "", anyVerbPods)},
			next:   []string{aggregating("op", "op/part=true"), clusterBinding("op", "op", saOp)},
			gained: []string{"ServiceAccount op/op: get on secrets cluster-wide"},
		},
		{
			name: "a bundle ClusterRole aggregated into a live admin grants everyone bound to admin",
			live: []string{
				aggregating("admin", "rbac.authorization.k8s.io/aggregate-to-admin=true"),
				clusterRole("builtin-admin-part", "rbac.authorization.k8s.io/aggregate-to-admin=true", getPods),
				binding("team-a", "alice-admin", "ClusterRole", "admin", alice),
			},
			next:   []string{clusterRole("op-admin", "rbac.authorization.k8s.io/aggregate-to-admin=true", getDeploys)},
			gained: []string{"User alice: get on deployments in apiGroups apps in namespace team-a"},
		},
		{
			name:   "the live copy of the bundle's own binding is not counted twice",
			live:   []string{clusterRole("op", "", getPods), clusterBinding("op", "op", saOp, saOther)},
			active: []string{clusterRole("op", "", getPods), clusterBinding("op", "op", saOp)},
			next:   []string{clusterRole("op", "", getPods, getSecrets), clusterBinding("op", "op", saOp)},
			gained: []string{"ServiceAccount op/op: get on secrets cluster-wide"},
		},
		{
			name:   "unknown active revision: compared with the live objects",
			live:   []string{clusterRole("op", "", getPods), clusterBinding("op", "op", saOp)},
			next:   []string{clusterRole("op", "", getPods, getSecrets), clusterBinding("op", "op", saOp)},
			gained: []string{"ServiceAccount op/op: get on secrets cluster-wide"},
		},
		{
			name:   "resourceNames widened gains the new name only",
			active: []string{clusterRole("op", "", getSecretA), clusterBinding("op", "op", saOp)},
			next:   []string{clusterRole("op", "", getSecretAB), clusterBinding("op", "op", saOp)},
			gained: []string{"ServiceAccount op/op: get on secrets named b cluster-wide"},
		},
		{
			name:   "a named rule beside the unnamed one it is part of is no change",
			active: []string{clusterRole("op", "", getSecrets), clusterBinding("op", "op", saOp)},
			next:   []string{clusterRole("op", "", getSecrets, getSecretA), clusterBinding("op", "op", saOp)},
		},
		{
			name:   "resourceNames with a resource wildcard gains that name of every resource",
			active: []string{clusterRole("op", "", getSecretA), clusterBinding("op", "op", saOp)},
			next:   []string{clusterRole("op", "", getAnyNamedA), clusterBinding("op", "op", saOp)},
			gained: []string{"ServiceAccount op/op: get on * named a cluster-wide"},
		},
		{
			name:   "a URL under a kept prefix wildcard is no change",
			active: []string{clusterRole("op", "", getMetricsAll), clusterBinding("op", "op", saOp)},
			next:   []string{clusterRole("op", "", getMetricsAll, getMetrics), clusterBinding("op", "op", saOp)},
		},
		{
			name:   "a prefix wildcard narrowed to one URL loses the wildcard",
			active: []string{clusterRole("op", "", getMetricsAll), clusterBinding("op", "op", saOp)},
			next:   []string{clusterRole("op", "", getMetrics), clusterBinding("op", "op", saOp)},
			lost:   []string{"ServiceAccount op/op: get on /metrics* cluster-wide"},
		},
		{
			name:   "the URL wildcard * covers every URL",
			active: []string{clusterRole("op", "", getHealthz, getMetricsAll), clusterBinding("op", "op", saOp)},
			next:   []string{clusterRole("op", "", getAnyURL), clusterBinding("op", "op", saOp)},
			gained: []string{"ServiceAccount op/op: get on * cluster-wide"},
		},
		{
			name:   "a verb added on a URL",
			active: []string{clusterRole("op", "", getHealthz), clusterBinding("op", "op", saOp)},
			next:   []string{clusterRole("op", "", getPostHealth), clusterBinding("op", "op", saOp)},
			gained: []string{"ServiceAccount op/op: post on /healthz cluster-wide"},
		},
		{
			name:   "a part of the bundle's aggregated ClusterRole removed (still live until pruned) is a loss",
			live:   []string{aggregating("op", "op/part=true"), clusterRole("op-pods", "op/part=true", getPods), clusterRole("op-secrets", "op/part=true", getSecrets), clusterBinding("op", "op", saOp)},
			active: []string{aggregating("op", "op/part=true"), clusterRole("op-pods", "op/part=true", getPods), clusterRole("op-secrets", "op/part=true", getSecrets), clusterBinding("op", "op", saOp)},
			next:   []string{aggregating("op", "op/part=true"), clusterRole("op-pods", "op/part=true", getPods), clusterBinding("op", "op", saOp)},
			lost:   []string{"ServiceAccount op/op: get on secrets cluster-wide"},
		},
		{
			name:   "a part of the bundle's aggregated ClusterRole gains a rule",
			active: []string{aggregating("op", "op/part=true"), clusterRole("op-pods", "op/part=true", getPods), clusterBinding("op", "op", saOp)},
			next:   []string{aggregating("op", "op/part=true"), clusterRole("op-pods", "op/part=true", getPods, execPods), clusterBinding("op", "op", saOp)},
			gained: []string{"ServiceAccount op/op: create on pods/exec cluster-wide"},
		},
		{
			name:   "the aggregation selector changed to select other live ClusterRoles",
			live:   []string{clusterRole("pod-reader", "team/a=true", getPods), clusterRole("secret-reader", "team/b=true", getSecrets)},
			active: []string{aggregating("op", "team/a=true"), clusterBinding("op", "op", saOp)},
			next:   []string{aggregating("op", "team/b=true"), clusterBinding("op", "op", saOp)},
			gained: []string{"ServiceAccount op/op: get on secrets cluster-wide"},
			lost:   []string{"ServiceAccount op/op: get on pods cluster-wide"},
		},
		{
			name: "a ClusterServiceVersion shipped as an object grants its permissions",
			next: []string{`apiVersion: operators.coreos.com/v1alpha1
kind: ClusterServiceVersion
metadata: {name: op.v1, namespace: op}
spec:
  install:
    strategy: deployment
    spec:
      clusterPermissions:
      - serviceAccountName: op
        rules: [` + getSecrets + `]
      permissions:
      - serviceAccountName: op
        rules: [` + getPods + `]
`},
			gained: []string{"ServiceAccount op/op: get on pods in namespace op", "ServiceAccount op/op: get on secrets cluster-wide"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := compute(t, objs(t, tt.active...), objs(t, tt.next...), objs(t, tt.live...))
			diffLines(t, "gained", grants(r.RBAC.Gained), tt.gained)
			diffLines(t, "lost", grants(r.RBAC.Lost), tt.lost)
			if int(r.RBAC.GainedCount) != len(tt.gained) || int(r.RBAC.LostCount) != len(tt.lost) {
				t.Errorf("counts = %d gained, %d lost", r.RBAC.GainedCount, r.RBAC.LostCount)
			}
		})
	}
}
