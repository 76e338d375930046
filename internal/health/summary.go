package health

import (
	"fmt"
	"strings"
)

const (
	// maxListed is how many unhealthy objects Summary names.
	maxListed = 5
	// maxReason is how many runes of each object's reason Summary keeps,
	// so a long probe message or error cannot crowd out the others.
	maxReason = 256
)

// Unhealthy is one object that failed its health checks.
type Unhealthy struct {
	// Object names the object, e.g. "apps/v1 Deployment ns/name"; the
	// caller formats it.
	Object string
	// Reason is the Result.Reason of the object.
	Reason string
}

// Summary turns per-object results into a condition message: "N of M
// objects unhealthy: Deployment ns/web: 1/3 replicas available; Job
// ns/migrate: job running: 1 active, 0 succeeded", naming the first five
// objects in the order given (callers should pass a stable order so the
// message does not churn) and adding "and K more" for the rest. With no
// unhealthy objects it returns "all M objects healthy".
func Summary(unhealthy []Unhealthy, total int) string {
	total = max(total, len(unhealthy))
	noun := "objects"
	if total == 1 {
		noun = "object"
	}
	if len(unhealthy) == 0 {
		switch total {
		case 0:
			return "no objects"
		case 1:
			return "the object is healthy"
		}
		return fmt.Sprintf("all %d %s healthy", total, noun)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%d of %d %s unhealthy: ", len(unhealthy), total, noun)
	for i, u := range unhealthy {
		if i == maxListed {
			fmt.Fprintf(&b, "; and %d more", len(unhealthy)-maxListed)
			break
		}
		if i > 0 {
			b.WriteString("; ")
		}
		b.WriteString(u.Object)
		if u.Reason != "" {
			b.WriteString(": ")
			b.WriteString(shorten(u.Reason, maxReason))
		}
	}
	return b.String()
}
