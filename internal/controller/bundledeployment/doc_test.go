package bundledeployment

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"reflect"
	"regexp"
	"runtime"
	"strings"
	"testing"
)

// docStep is one row of doc.go's step table.
type docStep struct {
	step, function, file string
}

// docSteps reads the step table of the package doc: the indented block
// whose header is "step  function  file  what it does". A row starts in
// the first column; a line indented further continues the row above.
func docSteps(t *testing.T) []docStep {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), "doc.go", nil, parser.ParseComments|parser.PackageClauseOnly)
	if err != nil {
		t.Fatal(err)
	}
	if f.Doc == nil {
		t.Fatal("doc.go has no package doc")
	}
	header := regexp.MustCompile(`^\tstep\s+function\s+file\s+what it does$`)
	columns := regexp.MustCompile(`\s{2,}`)
	var rows []docStep
	inTable := false
	for _, line := range strings.Split(f.Doc.Text(), "\n") {
		if !inTable {
			inTable = header.MatchString(line)
			continue
		}
		if !strings.HasPrefix(line, "\t") {
			break // the end of the indented block
		}
		row := strings.TrimPrefix(line, "\t")
		if strings.HasPrefix(row, " ") || strings.HasPrefix(row, "\t") {
			continue // a continuation of the row above
		}
		cols := columns.Split(row, 4)
		if len(cols) < 4 {
			t.Fatalf("doc.go's step table: row %q has %d columns, want step, function, file and what it does (columns are two or more spaces apart)", row, len(cols))
		}
		rows = append(rows, docStep{step: cols[0], function: cols[1], file: cols[2]})
	}
	if !inTable {
		t.Fatal(`doc.go has no step table (a header line "step  function  file  what it does" in an indented block)`)
	}
	return rows
}

// runStep is one step the code runs: its name and the name of the method
// it runs.
type runStep struct {
	name, function string
	always         bool
}

// codeSteps returns Reconciler.steps as run, with the name of each step's
// function read from the function value.
func codeSteps(t *testing.T) []runStep {
	t.Helper()
	var out []runStep
	for _, st := range (&Reconciler{}).steps() {
		fn := runtime.FuncForPC(reflect.ValueOf(st.run).Pointer())
		if fn == nil {
			t.Fatalf("step %q: cannot name its function", st.name)
		}
		// A method value is named "pkg.(*Reconciler).method-fm".
		full := strings.TrimSuffix(fn.Name(), "-fm")
		out = append(out, runStep{name: st.name, function: full[strings.LastIndex(full, ".")+1:], always: st.always})
	}
	return out
}

// declares reports whether the Go file declares a function or method
// named name.
func declares(t *testing.T, file, name string) bool {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), file, nil, parser.SkipObjectResolution)
	if err != nil {
		t.Fatalf("parsing %s: %v", file, err)
	}
	for _, d := range f.Decls {
		if fd, ok := d.(*ast.FuncDecl); ok && fd.Name.Name == name {
			return true
		}
	}
	return false
}

// TestStepsDocumented: doc.go's step table lists the steps Reconciler.steps
// runs, in the same order, each with the function it runs and the file
// that declares that function.
func TestStepsDocumented(t *testing.T) {
	doc, code := docSteps(t), codeSteps(t)
	for i := 0; i < max(len(doc), len(code)); i++ {
		switch {
		case i >= len(doc):
			t.Errorf("step %d %q (%s) runs (steps.go) but is not in doc.go's step table", i+1, code[i].name, code[i].function)
			continue
		case i >= len(code):
			t.Errorf("doc.go's step table lists step %d %q (%s), which Reconciler.steps does not run", i+1, doc[i].step, doc[i].function)
			continue
		}
		d, c := doc[i], code[i]
		if d.step != c.name {
			t.Errorf("step %d: doc.go's step table says %q, Reconciler.steps runs %q", i+1, d.step, c.name)
		}
		if d.function != c.function {
			t.Errorf("step %d %q: doc.go's step table names the function %s, the step runs %s", i+1, c.name, d.function, c.function)
		}
		if _, err := os.Stat(d.file); err != nil {
			t.Errorf("step %d %q: doc.go's step table names the file %s: %v", i+1, d.step, d.file, err)
		} else if !declares(t, d.file, d.function) {
			t.Errorf("step %d %q: doc.go's step table says %s declares %s; it does not", i+1, d.step, d.file, d.function)
		}
	}
}

// TestAlwaysStepsDocumented: the sentence before the step table names the
// steps that run even after an earlier one ended the list.
func TestAlwaysStepsDocumented(t *testing.T) {
	f, err := parser.ParseFile(token.NewFileSet(), "doc.go", nil, parser.ParseComments|parser.PackageClauseOnly)
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`but for ([a-z ,]+?), which run whenever`).FindStringSubmatch(strings.Join(strings.Fields(f.Doc.Text()), " "))
	if m == nil {
		t.Fatal(`doc.go does not say which steps always run ("… but for X and Y, which run whenever …")`)
	}
	var want []string
	for _, st := range codeSteps(t) {
		if st.always {
			want = append(want, st.name)
		}
	}
	var got []string
	for _, name := range regexp.MustCompile(`, | and `).Split(m[1], -1) {
		got = append(got, strings.TrimSpace(name))
	}
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("doc.go says the steps %q always run; Reconciler.steps marks %q", got, want)
	}
}
