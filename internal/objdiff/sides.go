package objdiff

import (
	"fmt"
	"slices"
	"strings"

	"github.com/pmezard/go-difflib/difflib"
)

// Op is what a Row of a side-by-side diff shows.
type Op string

// The ops of a Row.
const (
	// OpEqual is a line both sides have.
	OpEqual Op = "equal"
	// OpChanged is a line that differs: Left is replaced by Right.
	OpChanged Op = "changed"
	// OpRemoved is a line only the left (live) side has.
	OpRemoved Op = "removed"
	// OpAdded is a line only the right (merged) side has.
	OpAdded Op = "added"
)

// Row is one line of a side-by-side diff: the live line on the left, the
// merged one on the right; a side is empty where it has no line.
type Row struct {
	Op          Op
	Left, Right string
}

// SideBySide is the diff of one object as two columns.
type SideBySide struct {
	// Name is the object's name (see Name).
	Name string
	// Rows are the lines, unchanged runs longer than twice the context
	// cut to their ends.
	Rows []Row
	// Changed is set when the sides differ.
	Changed bool
}

// SideBySides returns the side-by-side diff of every object of objs that
// changes, sorted by name, each side normalized (Normalize) and Secrets
// masked (MaskSecrets), as Write prints them.
func SideBySides(objs []Object) ([]SideBySide, error) {
	sorted := slices.Clone(objs)
	slices.SortStableFunc(sorted, func(a, b Object) int { return strings.Compare(a.Name, b.Name) })
	var out []SideBySide
	for _, o := range sorted {
		live, merged := MaskSecrets(Normalize(o.Live), Normalize(o.Merged))
		a, err := toYAML(live)
		if err != nil {
			return nil, fmt.Errorf("printing live %s: %w", o.Name, err)
		}
		b, err := toYAML(merged)
		if err != nil {
			return nil, fmt.Errorf("printing merged %s: %w", o.Name, err)
		}
		if a == b {
			continue
		}
		out = append(out, SideBySide{Name: o.Name, Rows: rows(lines(a), lines(b)), Changed: true})
	}
	return out, nil
}

// rows pairs the lines of a and b by their diff's opcodes.
func rows(a, b []string) []Row {
	trim := func(s string) string { return strings.TrimSuffix(s, "\n") }
	var out []Row
	for _, g := range difflib.NewMatcher(a, b).GetGroupedOpCodes(contextLines) {
		if len(out) > 0 {
			out = append(out, Row{Op: OpEqual, Left: "…", Right: "…"})
		}
		for _, c := range g {
			switch c.Tag {
			case 'e':
				for i := c.I1; i < c.I2; i++ {
					out = append(out, Row{Op: OpEqual, Left: trim(a[i]), Right: trim(b[c.J1+i-c.I1])})
				}
			case 'd':
				for i := c.I1; i < c.I2; i++ {
					out = append(out, Row{Op: OpRemoved, Left: trim(a[i])})
				}
			case 'i':
				for j := c.J1; j < c.J2; j++ {
					out = append(out, Row{Op: OpAdded, Right: trim(b[j])})
				}
			case 'r':
				n := max(c.I2-c.I1, c.J2-c.J1)
				for k := range n {
					r := Row{Op: OpChanged}
					if c.I1+k < c.I2 {
						r.Left = trim(a[c.I1+k])
					}
					if c.J1+k < c.J2 {
						r.Right = trim(b[c.J1+k])
					}
					out = append(out, r)
				}
			}
		}
	}
	return out
}
