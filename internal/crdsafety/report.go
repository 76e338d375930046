package crdsafety

import (
	"fmt"
	"strings"
)

// maxReportEntries is how many findings and failures Report spells out
// before summarising the rest as "and N more".
const maxReportEntries = 5

// Report formats findings and failures into one message for a status
// condition: "CRD <name>: <entry>; <entry>; and N more". Findings come
// before failures, each in the order given; at most maxReportEntries
// entries are spelled out. It returns "" when there is nothing to report.
func Report(crdName string, findings []Finding, failures []ObjectFailure) string {
	total := len(findings) + len(failures)
	if total == 0 {
		return ""
	}
	entries := make([]string, 0, min(total, maxReportEntries)+1)
	for _, f := range findings {
		if len(entries) == maxReportEntries {
			break
		}
		entries = append(entries, f.String())
	}
	for _, f := range failures {
		if len(entries) == maxReportEntries {
			break
		}
		entries = append(entries, f.String())
	}
	if rest := total - len(entries); rest > 0 {
		entries = append(entries, fmt.Sprintf("and %d more", rest))
	}
	return "CRD " + crdName + ": " + strings.Join(entries, "; ")
}
