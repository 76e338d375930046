package bundledeployment

import (
	"github.com/rukpak/rukpak/internal/health"
	"github.com/rukpak/rukpak/internal/inventory"
)

// healthVerdict is what a health check said of an object at one
// resourceVersion: nil when it was healthy.
type healthVerdict struct {
	rv        string
	unhealthy *health.Unhealthy
}

// healthMemo is a BundleDeployment's last health verdicts, with the
// checker (its probes) that gave them. A verdict depends only on the
// object and the probes, so an object still at the same resourceVersion
// (as the drift watch sees it) needs no new read: a big revision's
// health check after an upgrade reads only what changed since.
type healthMemo struct {
	checker *health.Checker
	byID    map[inventory.ID]healthVerdict
}

// verdict returns the verdict name's last health check, made with
// checker, gave id at resourceVersion rv.
func (m *memory) verdict(name string, checker *health.Checker, id inventory.ID, rv string) (*health.Unhealthy, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	r := m.of(name)
	if r == nil || r.verdicts == nil || r.verdicts.checker != checker || rv == "" {
		return nil, false
	}
	memo := r.verdicts
	v, ok := memo.byID[id]
	if !ok || v.rv != rv {
		return nil, false
	}
	return v.unhealthy, true
}

// setVerdicts records the verdicts of name's health check with checker,
// replacing the last one's.
func (m *memory) setVerdicts(name string, checker *health.Checker, byID map[inventory.ID]healthVerdict) {
	m.mu.Lock()
	m.record(name).verdicts = &healthMemo{checker: checker, byID: byID}
	m.mu.Unlock()
}
