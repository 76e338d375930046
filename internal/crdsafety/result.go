package crdsafety

import (
	"fmt"
	"strings"
)

// MaxReportedFindings is how many findings Result.Message spells out
// before summarising the rest as "and N more findings".
const MaxReportedFindings = 5

// Result is what Check found for one CRD.
type Result struct {
	// CRD is the CRD's name.
	CRD string
	// Findings are what the new CRD breaks and the user did not accept;
	// the change is safe when there are none.
	Findings []Finding
	// Accepted are the findings the user accepted.
	Accepted []Finding
	// Checked is how many existing objects were validated (an object read
	// at two versions counts twice).
	Checked int
	// Partial says why objects may have been left unchecked (the bounds
	// of Options); empty when every existing object was checked.
	Partial []string
}

// Safe reports whether the change breaks nothing the user did not accept.
func (r *Result) Safe() bool { return len(r.Findings) == 0 }

// Message formats the findings for a condition message: "CRD <name>:
// <finding>; <finding>; and N more findings", then why the check was
// partial. It returns "" when the change is safe.
func (r *Result) Message() string {
	if r.Safe() {
		return ""
	}
	entries := make([]string, 0, min(len(r.Findings), MaxReportedFindings)+1)
	for _, f := range r.Findings {
		if len(entries) == MaxReportedFindings {
			break
		}
		entries = append(entries, f.String())
	}
	if rest := len(r.Findings) - len(entries); rest == 1 {
		entries = append(entries, "and 1 more finding")
	} else if rest > 1 {
		entries = append(entries, fmt.Sprintf("and %d more findings", rest))
	}
	msg := "CRD " + r.CRD + ": " + strings.Join(entries, "; ")
	if len(r.Partial) > 0 {
		msg += " (" + strings.Join(r.Partial, "; ") + ")"
	}
	return msg
}
