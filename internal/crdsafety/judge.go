package crdsafety

import (
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// judge gathers the problems of the checked objects into findings.
type judge struct {
	opts    Options
	changes []Change
	// findings by ID, and their IDs in the order first found.
	byID  map[string]*Finding
	order []string
	// failing counts the objects with at least one problem.
	failing int
	// sample are the first objects seen, whatever their problems, and
	// seen how many objects one version listed at most.
	sample []ObjectFailure
	seen   int
}

// newJudge starts a judge explaining findings with changes (see Compare).
func newJudge(changes []Change, opts Options) *judge {
	return &judge{opts: opts, changes: changes, byID: map[string]*Finding{}}
}

// record adds an object read at version and its problems.
func (j *judge) record(version string, obj *unstructured.Unstructured, problems []problem) {
	if len(j.sample) < j.opts.MaxObjectsPerFinding {
		j.sample = append(j.sample, ObjectFailure{Namespace: obj.GetNamespace(), Name: obj.GetName()})
	}
	if len(problems) > 0 {
		j.failing++
	}
	for _, p := range problems {
		f := &Finding{Kind: p.kind, Version: version, Path: p.path}
		id := f.ID()
		if existing, ok := j.byID[id]; ok {
			f = existing
		} else {
			f.Message = j.explain(p.kind, version, p.path)
			j.byID[id] = f
			j.order = append(j.order, id)
		}
		f.Count++
		if len(f.Objects) < j.opts.MaxObjectsPerFinding {
			f.Objects = append(f.Objects, ObjectFailure{Namespace: obj.GetNamespace(), Name: obj.GetName(), Detail: p.detail})
		}
	}
}

// full reports whether the check should stop: MaxFailingObjects objects
// fail.
func (j *judge) full() bool { return j.failing >= j.opts.MaxFailingObjects }

// findings returns the object findings sorted by the order of versions,
// then path, then kind; more marks each as possibly affecting unchecked
// objects.
func (j *judge) findings(versions []string, more bool) []Finding {
	rank := make(map[string]int, len(versions))
	for i, v := range versions {
		rank[v] = i
	}
	out := make([]Finding, 0, len(j.order))
	for _, id := range j.order {
		f := *j.byID[id]
		f.More = more
		out = append(out, f)
	}
	sort.SliceStable(out, func(a, b int) bool {
		x, y := out[a], out[b]
		if x.Version != y.Version {
			return rank[x.Version] < rank[y.Version]
		}
		if x.Path != y.Path {
			return x.Path < y.Path
		}
		return x.Kind < y.Kind
	})
	return out
}

// explain says what schema change makes objects fail at path: the
// messages of the changes Compare found there (for a pruned value, also
// at a parent, which may have stopped keeping unknown fields), or a
// generic sentence.
func (j *judge) explain(kind Kind, version, path string) string {
	var msgs []string
	for p := path; ; p = parentPath(p) {
		for _, c := range j.changes {
			if c.Version == version && c.Path == p {
				msgs = append(msgs, c.Message)
			}
		}
		if len(msgs) > 0 || kind != KindPruned || p == "." || p == "" {
			break
		}
	}
	switch {
	case len(msgs) > 0:
		return strings.Join(msgs, "; ")
	case kind == KindPruned:
		return "the new schema no longer keeps this field"
	}
	return "values valid before fail the new schema"
}

// parentPath is the schema path one level up: ".a.b" to ".a", ".a[*]" to
// ".a", ".a" to ".". Quoted names are cut at their bracket.
func parentPath(p string) string {
	if strings.HasSuffix(p, "[*]") {
		return strings.TrimSuffix(p, "[*]")
	}
	i := strings.LastIndexAny(p, ".[")
	if i <= 0 {
		return "."
	}
	return p[:i]
}
