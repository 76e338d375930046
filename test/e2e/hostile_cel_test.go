package e2e

import (
	"strings"
	"testing"

	"github.com/rukpak/rukpak/api/v1alpha2"
	"github.com/rukpak/rukpak/pkg/envtest"
)

// Attacks with CEL health probes: a probe is evaluated by the manager on
// objects the bundle itself installed, so both the expression and its input
// are the attacker's.

// bigConfigMap is a manifest of a ConfigMap whose data.x holds 900 kB.
func bigConfigMap() string {
	return "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: big\ndata:\n  x: " + strings.Repeat("a", 900_000) + "\n"
}

// probeAttack installs bigConfigMap as a plain bundle of the team's with
// one CEL probe on it, and expects the condition typ to be False with
// reason and a message holding want.
func probeAttack(expr, typ, reason string, want ...string) func(*testing.T, *hostileTeam) func(*testing.T) {
	return func(t *testing.T, team *hostileTeam) func(*testing.T) {
		name := envtest.UniqueName("attack")
		srcs := ownSource(t, map[string]string{"big.yaml": bigConfigMap()})
		team.allowReferences(t, srcs, nil)
		bd := team.bd(name, v1alpha2.ClassPlain, srcs)
		bd.Spec.HealthChecks = &v1alpha2.HealthChecks{Probes: []v1alpha2.Probe{{
			Selector: v1alpha2.ProbeSelector{Kind: "ConfigMap", Name: "big"},
			CEL:      expr,
		}}}
		team.create(t, bd)
		return func(t *testing.T) {
			conditionMessage(t, name, typ, reason, want...)
		}
	}
}

var _ = registerHostile(
	hostileCase{
		// The verified attack of issue 12: the manager died of
		// "fatal error: runtime: out of memory" within 3 seconds.
		name: "CEL probe replaces each byte of a 900 kB string with the string",
		// It is refused before anything is applied.
		attack: probeAttack("self.data.x.replace('a', self.data.x) == ''", v1alpha2.TypeInstalled, v1alpha2.ReasonProbeTooExpensive,
			"spec.healthChecks", "health probe 0 (ConfigMap big)", "self.data.x.replace('a', self.data.x)",
			"estimated worst-case cost of", "more than the limit of 10000000"),
	},
	hostileCase{
		// Cheap by the estimate (format's result size is not priced), so
		// it runs: the run-time guard refuses to build the string.
		name: "CEL probe formats a 900 kB string into a 3.6 MB one",
		attack: probeAttack("'%s%s'.format([self.data.x, self.data.x]) == ''", v1alpha2.TypeHealthy, v1alpha2.ReasonUnhealthy,
			"ConfigMap", "big", "format() would build a string of up to 3600004 bytes, more than the limit of 3145728"),
	},
)
