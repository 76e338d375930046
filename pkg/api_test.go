// Package pkg_test checks that the public packages under pkg/ read as an
// API: every exported name has a doc comment, and no exported signature
// or field names a type of an internal package but through an alias
// (type Options = internal.EngineOptions), whose internal type must then
// read as an API itself; and that they keep to their layers (layers_test.go).
package pkg_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

func TestPublicAPI(t *testing.T) {
	fset := token.NewFileSet()
	pkgs := 0
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return err
		}
		parsed, err := parser.ParseDir(fset, path, func(fi fs.FileInfo) bool { return !strings.HasSuffix(fi.Name(), "_test.go") }, parser.ParseComments)
		if err != nil {
			return err
		}
		for _, p := range parsed {
			pkgs++
			checkPackage(t, fset, p)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if pkgs < 6 {
		t.Fatalf("checked %d packages, want pkg and pkg/{envtest,failure,format,manager,provisioner} at least", pkgs)
	}
}

func checkPackage(t *testing.T, fset *token.FileSet, p *ast.Package) {
	documented := false
	for _, f := range p.Files {
		documented = documented || f.Doc != nil
		internal := internalImports(f)
		for _, decl := range f.Decls {
			switch d := decl.(type) {
			case *ast.FuncDecl:
				if !d.Name.IsExported() || (d.Recv != nil && !exportedRecv(d.Recv)) {
					continue
				}
				if d.Doc == nil {
					t.Errorf("%s: func %s has no doc comment", fset.Position(d.Pos()), d.Name.Name)
				}
				checkTypes(t, fset, d.Type, internal, d.Name.Name)
			case *ast.GenDecl:
				for _, spec := range d.Specs {
					switch s := spec.(type) {
					case *ast.TypeSpec:
						if !s.Name.IsExported() {
							continue
						}
						if d.Doc == nil && s.Doc == nil {
							t.Errorf("%s: type %s has no doc comment", fset.Position(s.Pos()), s.Name.Name)
						}
						if sel, ok := s.Type.(*ast.SelectorExpr); ok && s.Assign.IsValid() {
							if id, ok := sel.X.(*ast.Ident); ok && internal[id.Name] != "" {
								checkAliased(t, internal[id.Name], sel.Sel.Name, s.Name.Name)
								continue
							}
						}
						checkTypes(t, fset, s.Type, internal, s.Name.Name)
					case *ast.ValueSpec:
						for _, n := range s.Names {
							if n.IsExported() && d.Doc == nil && s.Doc == nil {
								t.Errorf("%s: %s has no doc comment", fset.Position(n.Pos()), n.Name)
							}
						}
						if s.Type != nil {
							checkTypes(t, fset, s.Type, internal, s.Names[0].Name)
						}
					}
				}
			}
		}
	}
	if !documented {
		t.Errorf("package %s has no package doc comment", p.Name)
	}
}

// internalImports maps the local names of f's imports of internal packages
// to their paths.
func internalImports(f *ast.File) map[string]string {
	internal := map[string]string{}
	for _, imp := range f.Imports {
		path, _ := strconv.Unquote(imp.Path.Value)
		if !strings.Contains(path, "/internal/") && !strings.HasSuffix(path, "/internal") {
			continue
		}
		name := filepath.Base(path)
		if imp.Name != nil {
			name = imp.Name.Name
		}
		internal[name] = path
	}
	return internal
}

// checkAliased checks the struct type name of package path (of this
// module), which the exported alias "as" makes public: it must have a doc
// comment, and so must each exported field, whose types name no internal
// package.
func checkAliased(t *testing.T, path, name, as string) {
	rel, ok := strings.CutPrefix(path, module+"/")
	if !ok {
		t.Errorf("%s is an alias of %s.%s, of another module's internal package", as, path, name)
		return
	}
	fset := token.NewFileSet()
	parsed, err := parser.ParseDir(fset, filepath.Join("..", rel), func(fi fs.FileInfo) bool { return !strings.HasSuffix(fi.Name(), "_test.go") }, parser.ParseComments)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range parsed {
		for _, f := range p.Files {
			for _, decl := range f.Decls {
				d, ok := decl.(*ast.GenDecl)
				if !ok {
					continue
				}
				for _, spec := range d.Specs {
					s, ok := spec.(*ast.TypeSpec)
					if !ok || s.Name.Name != name {
						continue
					}
					if d.Doc == nil && s.Doc == nil {
						t.Errorf("%s: type %s (public as %s) has no doc comment", fset.Position(s.Pos()), name, as)
					}
					st, ok := s.Type.(*ast.StructType)
					if !ok {
						t.Errorf("%s: %s (public as %s) is not a struct", fset.Position(s.Pos()), name, as)
						return
					}
					internal := internalImports(f)
					for _, field := range st.Fields.List {
						if len(field.Names) == 0 || !field.Names[0].IsExported() {
							continue
						}
						if field.Doc == nil {
							t.Errorf("%s: field %s of %s (public as %s) has no doc comment", fset.Position(field.Pos()), field.Names[0].Name, name, as)
						}
						checkTypes(t, fset, field.Type, internal, as+"."+field.Names[0].Name)
					}
					return
				}
			}
		}
	}
	t.Errorf("%s is an alias of %s.%s, which is not found", as, path, name)
}

// checkTypes reports selector expressions (pkg.Type) of internal packages
// in n, skipping unexported struct fields.
func checkTypes(t *testing.T, fset *token.FileSet, n ast.Node, internal map[string]string, where string) {
	ast.Inspect(n, func(n ast.Node) bool {
		if f, ok := n.(*ast.Field); ok && len(f.Names) > 0 && !f.Names[0].IsExported() {
			return false
		}
		if sel, ok := n.(*ast.SelectorExpr); ok {
			if id, ok := sel.X.(*ast.Ident); ok && internal[id.Name] != "" {
				t.Errorf("%s: %s names %s.%s of an internal package", fset.Position(sel.Pos()), where, id.Name, sel.Sel.Name)
			}
		}
		return true
	})
}

func exportedRecv(recv *ast.FieldList) bool {
	typ := recv.List[0].Type
	if star, ok := typ.(*ast.StarExpr); ok {
		typ = star.X
	}
	if id, ok := typ.(*ast.Ident); ok {
		return id.IsExported()
	}
	return true
}
