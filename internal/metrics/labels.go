package metrics

import "sync"

// maxLabelValues bounds how many values one label of rukpak's metrics
// takes. Tenants choose some of them (a BundleDeployment names its
// ProvisionerClass; an out-of-tree provisioner may return any failure
// reason), and every value makes a series the manager keeps for ever and
// every scrape carries: beyond the bound, values are reported as Other.
const maxLabelValues = 64

// Other is the label value of every value past the bound.
const Other = "(other)"

// labelSet admits at most maxLabelValues values of one label.
type labelSet struct {
	mu   sync.Mutex
	seen map[string]bool
}

func (l *labelSet) value(v string) string {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.seen == nil {
		l.seen = map[string]bool{}
	}
	if l.seen[v] {
		return v
	}
	if len(l.seen) >= maxLabelValues {
		return Other
	}
	l.seen[v] = true
	return v
}

var classes, reasons labelSet

// Class returns the class label value of ProvisionerClass name: name
// itself for the first maxLabelValues classes seen, Other after.
func Class(name string) string { return classes.value(name) }

// Reason returns the reason label value of a condition reason: reason
// itself for the first maxLabelValues reasons seen, Other after.
func Reason(reason string) string { return reasons.value(reason) }
