// Package backoff times the retries of revisions that failed for a reason
// the world can fix (failure.Retry, package
// github.com/rukpak/rukpak/pkg/failure): a second after the first failure,
// each next retry twice as long after, never more than two minutes apart.
package backoff

import "time"

// Bounds of Delay: the first retry comes after Base, each next one after
// twice as long, never more than Max apart.
const (
	Base = time.Second
	Max  = 2 * time.Minute
)

// Delay is how long to wait before attempt number attempt (1 for the first
// retry; 0 is taken as 1).
func Delay(attempt int) time.Duration {
	d := Base
	for i := 1; i < attempt && d < Max; i++ {
		d *= 2
	}
	return min(d, Max)
}
