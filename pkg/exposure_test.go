package pkg_test

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"go/types"
	"slices"
	"strings"
	"testing"
)

// internalExposed returns how the exported names of pkg expose types of
// internal packages: one sentence each, naming the path to the type.
// files and info, pkg's syntax and its type information, give the
// declarations of its names (what a type is declared as, a constant's
// value).
func internalExposed(pkg *types.Package, files []*ast.File, info *types.Info) []string {
	w := &exposure{pkg: pkg, seen: map[*types.TypeName]bool{}, found: map[string]bool{}}
	for _, name := range pkg.Scope().Names() {
		if obj := pkg.Scope().Lookup(name); obj.Exported() {
			w.typ(obj.Type(), pkg.Name()+"."+name)
		}
	}
	for _, f := range files {
		for _, decl := range f.Decls {
			d, ok := decl.(*ast.GenDecl)
			if !ok {
				continue
			}
			for _, spec := range d.Specs {
				switch s := spec.(type) {
				case *ast.TypeSpec:
					if s.Name.IsExported() && !s.Assign.IsValid() { // an alias is its type
						w.typ(info.TypeOf(s.Type), pkg.Name()+"."+s.Name.Name+" (its declaration)")
					}
				case *ast.ValueSpec:
					for i, n := range s.Names {
						if n.IsExported() && i < len(s.Values) {
							w.uses(info, s.Values[i], pkg.Name()+"."+n.Name+" (its value)")
						}
					}
				}
			}
		}
	}
	return slices.Sorted(func(yield func(string) bool) {
		for f := range w.found {
			if !yield(f) {
				return
			}
		}
	})
}

// exposure walks the types an exported name exposes.
type exposure struct {
	pkg *types.Package
	// seen are the named types of pkg/ already walked.
	seen map[*types.TypeName]bool
	// found are the sentences of internalExposed.
	found map[string]bool
}

// typ walks t, reached at where: an internal type is reported; a named
// type of pkg/ is walked into (its underlying type and exported methods)
// once; any other named type (api/, other modules) is an API of its own
// and is not.
func (w *exposure) typ(t types.Type, where string) {
	switch t := t.(type) {
	case nil, *types.Basic:
	case *types.Alias:
		if w.named(t.Obj(), where) {
			w.typeArgs(t.TypeArgs(), where)
			w.typ(t.Rhs(), where)
		}
	case *types.Named:
		if !w.named(t.Obj(), where) {
			return
		}
		w.typeArgs(t.TypeArgs(), where)
		if !under(t.Obj().Pkg().Path(), module+"/pkg") || w.seen[t.Obj()] {
			return
		}
		w.seen[t.Obj()] = true
		if name := t.Obj().Pkg().Name() + "." + t.Obj().Name(); !strings.HasPrefix(where, name) {
			where += " > " + name
		}
		w.typ(t.Underlying(), where)
		for m := range t.Methods() {
			if m.Exported() {
				w.typ(m.Type(), where+"."+m.Name())
			}
		}
	case *types.Pointer:
		w.typ(t.Elem(), where)
	case *types.Slice:
		w.typ(t.Elem(), where)
	case *types.Array:
		w.typ(t.Elem(), where)
	case *types.Chan:
		w.typ(t.Elem(), where)
	case *types.Map:
		w.typ(t.Key(), where)
		w.typ(t.Elem(), where)
	case *types.Signature:
		for _, tuple := range []*types.Tuple{t.Params(), t.Results()} {
			for v := range tuple.Variables() {
				w.typ(v.Type(), where)
			}
		}
		for tp := range t.TypeParams().TypeParams() {
			w.typ(tp.Constraint(), where)
		}
	case *types.Struct:
		for f := range t.Fields() {
			if f.Exported() || f.Embedded() {
				w.typ(f.Type(), where+"."+f.Name())
			}
		}
	case *types.Interface:
		for m := range t.ExplicitMethods() {
			if m.Exported() {
				w.typ(m.Type(), where+"."+m.Name())
			}
		}
		for e := range t.EmbeddedTypes() {
			w.typ(e, where)
		}
	case *types.Union:
		for i := range t.Len() {
			w.typ(t.Term(i).Type(), where)
		}
	case *types.TypeParam:
		w.typ(t.Constraint(), where)
	case *types.Tuple:
		for v := range t.Variables() {
			w.typ(v.Type(), where)
		}
	default:
		w.found[fmt.Sprintf("%s: a %T, which this test does not know how to walk", where, t)] = true
	}
}

// named reports obj, a type reached at where, if it is of an internal
// package, and whether to walk on.
func (w *exposure) named(obj *types.TypeName, where string) bool {
	if obj.Pkg() == nil { // error, comparable, any
		return false
	}
	if isInternal(obj.Pkg().Path()) {
		w.found[fmt.Sprintf("%s exposes %s.%s of an internal package", where, obj.Pkg().Path(), obj.Name())] = true
		return false
	}
	return true
}

// typeArgs walks the type arguments of an instantiated type.
func (w *exposure) typeArgs(args *types.TypeList, where string) {
	for a := range args.Types() {
		w.typ(a, where)
	}
}

// uses reports the names of internal packages expr refers to (go doc
// shows a constant's or variable's value), and walks the types of the
// others.
func (w *exposure) uses(info *types.Info, expr ast.Expr, where string) {
	ast.Inspect(expr, func(n ast.Node) bool {
		id, ok := n.(*ast.Ident)
		if !ok {
			return true
		}
		if obj := info.Uses[id]; obj != nil && obj.Pkg() != nil && isInternal(obj.Pkg().Path()) {
			w.found[fmt.Sprintf("%s names %s.%s of an internal package", where, obj.Pkg().Path(), obj.Name())] = true
		}
		return true
	})
}

// isInternal reports whether the package of import path p is internal to
// some tree (a path element "internal").
func isInternal(p string) bool {
	return slices.Contains(strings.Split(p, "/"), "internal")
}

// TestInternalExposedFinds: internalExposed finds a type of an internal
// package however an exported name exposes it, and nothing else.
func TestInternalExposedFinds(t *testing.T) {
	fset := token.NewFileSet()
	check := func(path, src string, imp types.Importer) (*types.Package, *ast.File, *types.Info) {
		t.Helper()
		f, err := parser.ParseFile(fset, path+".go", src, 0)
		if err != nil {
			t.Fatal(err)
		}
		info := &types.Info{Types: map[ast.Expr]types.TypeAndValue{}, Uses: map[*ast.Ident]types.Object{}}
		pkg, err := (&types.Config{Importer: imp}).Check(path, fset, []*ast.File{f}, info)
		if err != nil {
			t.Fatal(err)
		}
		return pkg, f, info
	}
	engine, _, _ := check(module+"/internal/engine", `package engine
type Options struct{ N int }
type Limits struct{}
const None = "none"`, nil)
	pkg, f, info := check(module+"/pkg/manager", `package manager
import "github.com/rukpak/rukpak/internal/engine"
type Alias = engine.Options
type Defined engine.Options
type Wrap struct {
	Inner *inner
	hidden engine.Limits
}
type inner struct{ X map[string][]engine.Limits }
func New(Wrap) error { return nil }
func (Wrap) Limits() []engine.Limits { return nil }
const None = engine.None
type Gen[T any] struct{}
var G Gen[engine.Options]
type Clean struct{ N int; own engine.Options }
func (Clean) own2() engine.Options { return engine.Options{} }
const Own = "none"`, importer(func(string) (*types.Package, error) { return engine, nil }))
	got := internalExposed(pkg, []*ast.File{f}, info)
	want := []string{
		"manager.Alias exposes " + module + "/internal/engine.Options of an internal package",
		"manager.Defined (its declaration) exposes " + module + "/internal/engine.Options of an internal package",
		"manager.G exposes " + module + "/internal/engine.Options of an internal package",
		"manager.New > manager.Wrap.Inner > manager.inner.X exposes " + module + "/internal/engine.Limits of an internal package",
		"manager.New > manager.Wrap.Limits exposes " + module + "/internal/engine.Limits of an internal package",
		"manager.None (its value) names " + module + "/internal/engine.None of an internal package",
	}
	if !slices.Equal(got, want) {
		t.Errorf("internalExposed:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// importer is a types.Importer of a function.
type importer func(path string) (*types.Package, error)

func (f importer) Import(path string) (*types.Package, error) { return f(path) }
