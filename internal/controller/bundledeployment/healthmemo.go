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
