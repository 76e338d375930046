package pkg_test

import (
	"fmt"
	"go/parser"
	"go/token"
	"os/exec"
	"path"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"

	"golang.org/x/tools/go/packages"
)

// module is rukpak's module path.
const module = "github.com/rukpak/rukpak"

// assemblies are the packages of pkg/ that may import internal/; every
// other package of pkg/ is a contract. pkg/doc.go says which is which.
var assemblies = []string{module + "/pkg/envtest", module + "/pkg/manager"}

// below are the trees of packages the assemblies are built on, which must
// not import them (their tests may).
var below = []string{module + "/api", module + "/config", module + "/internal"}

// TestLayers: no contract of pkg/ imports internal/ or an assembly, even
// through other packages, and nothing below the assemblies (internal/,
// api/, config/, the contracts) imports an assembly but its tests.
func TestLayers(t *testing.T) {
	deps := moduleDeps(t)
	contracts := contractsOf(deps)
	if len(contracts) < 3 {
		t.Fatalf("contracts %v: want pkg/failure, pkg/format, pkg/provisioner at least", contracts)
	}
	for _, p := range contracts {
		for _, d := range deps[p] {
			if under(d, module+"/internal") || slices.Contains(assemblies, d) {
				t.Errorf("contract %s imports %s (through %s)", p, d, via(deps, p, d))
			}
		}
	}
	for p, ds := range deps {
		if !slices.Contains(contracts, p) && !slices.ContainsFunc(below, func(b string) bool { return under(p, b) }) {
			continue
		}
		for _, a := range assemblies {
			if slices.Contains(ds, a) {
				t.Errorf("%s imports the assembly %s (through %s)", p, a, via(deps, p, a))
			}
		}
	}
}

// apiFree are packages that know nothing of rukpak's API: their callers
// pass them its names (the apply engine's field manager, owner kind and
// keys) and turn their errors into its reasons.
var apiFree = []string{module + "/internal/apply"}

// TestAPIFree: no package of apiFree imports anything under api/, even
// through other packages.
func TestAPIFree(t *testing.T) {
	deps := moduleDeps(t)
	for _, p := range apiFree {
		ds, ok := deps[p]
		if !ok {
			t.Errorf("%s is not a package of the module", p)
			continue
		}
		for _, d := range ds {
			if under(d, module+"/api") {
				t.Errorf("%s imports %s (through %s)", p, d, via(deps, p, d))
			}
		}
	}
}

// TestLayersDocumented: pkg/doc.go lists each package of pkg/ in its layer.
func TestLayersDocumented(t *testing.T) {
	f, err := parser.ParseFile(token.NewFileSet(), "doc.go", nil, parser.ParseComments|parser.PackageClauseOnly)
	if err != nil {
		t.Fatal(err)
	}
	doc := f.Doc.Text()
	contractsDoc, assembliesDoc, ok := strings.Cut(doc, "Assemblies ")
	if !ok {
		t.Fatal("pkg/doc.go has no paragraph on the assemblies")
	}
	listed := func(text, p string) bool {
		return regexp.MustCompile(`(?m)^  - ` + regexp.QuoteMeta(path.Base(p)) + `:`).MatchString(text)
	}
	deps := moduleDeps(t)
	for _, p := range contractsOf(deps) {
		if p != module+"/pkg" && !listed(contractsDoc, p) {
			t.Errorf("pkg/doc.go does not list the contract %s before the assemblies", p)
		}
	}
	for _, a := range assemblies {
		if _, ok := deps[a]; !ok {
			t.Errorf("assembly %s is not a package", a)
		}
		if !listed(assembliesDoc, a) {
			t.Errorf("pkg/doc.go does not list the assembly %s among the assemblies", a)
		}
	}
}

// TestNoInternalTypes: no exported name of a package of pkg/ (the
// assemblies included) is, or exposes, a type of an internal package, so
// that `go doc ./pkg/...` is the whole API and a change of internal/ is
// never a change of it. An exported name may not be an alias of such a
// type or be declared as one (type T internal.T); nor may one appear in
// a function's signature, a variable's or constant's type or value, or a
// type's exported fields, embedded fields and exported methods, followed
// through every type of pkg/ they name.
func TestNoInternalTypes(t *testing.T) {
	cfg := &packages.Config{Mode: packages.NeedName | packages.NeedTypes | packages.NeedSyntax | packages.NeedTypesInfo, Dir: "."}
	loaded, err := packages.Load(cfg, "./...")
	if err != nil {
		t.Fatal(err)
	}
	if len(loaded) < 6 {
		t.Fatalf("loaded %d packages of pkg/, want pkg and pkg/{envtest,failure,format,manager,provisioner} at least", len(loaded))
	}
	for _, p := range loaded {
		for _, e := range p.Errors {
			t.Errorf("loading %s: %v", p.PkgPath, e)
		}
		if p.Types == nil {
			continue
		}
		for _, exposed := range internalExposed(p.Types, p.Syntax, p.TypesInfo) {
			t.Error(exposed)
		}
	}
}

// pkgs are the module's packages (test files left out): the packages each
// imports directly and those it imports directly or not.
type pkgs struct{ imports, deps map[string][]string }

var listed = sync.OnceValues(func() (pkgs, error) {
	cmd := exec.Command("go", "list", "-f", "{{.ImportPath}}\t{{join .Imports \" \"}}\t{{join .Deps \" \"}}", "./...")
	cmd.Dir = ".."
	out, err := cmd.Output()
	if err != nil {
		return pkgs{}, fmt.Errorf("go list: %w", err)
	}
	l := pkgs{imports: map[string][]string{}, deps: map[string][]string{}}
	for line := range strings.Lines(string(out)) {
		fields := strings.Split(strings.TrimSuffix(line, "\n"), "\t")
		if len(fields) == 3 {
			l.imports[fields[0]] = strings.Fields(fields[1])
			l.deps[fields[0]] = strings.Fields(fields[2])
		}
	}
	return l, nil
})

// moduleDeps returns the packages of the module (test files left out) and
// the packages each imports, directly or not.
func moduleDeps(t *testing.T) map[string][]string {
	t.Helper()
	l, err := listed()
	if err != nil {
		t.Fatal(err)
	}
	return l.deps
}

// contractsOf returns the packages of pkg/ that are not assemblies.
func contractsOf(deps map[string][]string) []string {
	var contracts []string
	for p := range deps {
		if under(p, module+"/pkg") && !slices.Contains(assemblies, p) {
			contracts = append(contracts, p)
		}
	}
	slices.Sort(contracts)
	return contracts
}

// via names a package of deps[from] (or from itself) that imports to
// directly, for the message of an unwanted import.
func via(deps map[string][]string, from, to string) string {
	l, _ := listed()
	for _, d := range append([]string{from}, deps[from]...) {
		if slices.Contains(l.imports[d], to) {
			return d
		}
	}
	return from
}

func under(p, tree string) bool { return p == tree || strings.HasPrefix(p, tree+"/") }
