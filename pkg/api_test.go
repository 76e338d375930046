// Package pkg_test checks that the public packages under pkg/ read as an
// API: every exported name and every exported field of an exported struct
// type has a doc comment; and that they keep to their layers, none
// exposing a type of internal/ (layers_test.go).
package pkg_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
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
		for _, decl := range f.Decls {
			switch d := decl.(type) {
			case *ast.FuncDecl:
				if !d.Name.IsExported() || (d.Recv != nil && !exportedRecv(d.Recv)) {
					continue
				}
				if d.Doc == nil {
					t.Errorf("%s: func %s has no doc comment", fset.Position(d.Pos()), d.Name.Name)
				}
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
						checkFields(t, fset, s)
					case *ast.ValueSpec:
						for _, n := range s.Names {
							if n.IsExported() && d.Doc == nil && s.Doc == nil {
								t.Errorf("%s: %s has no doc comment", fset.Position(n.Pos()), n.Name)
							}
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

// checkFields reports the exported fields of s, if it is a struct type,
// that have no doc comment.
func checkFields(t *testing.T, fset *token.FileSet, s *ast.TypeSpec) {
	st, ok := s.Type.(*ast.StructType)
	if !ok {
		return
	}
	for _, field := range st.Fields.List {
		if len(field.Names) > 0 && field.Names[0].IsExported() && field.Doc == nil && field.Comment == nil {
			t.Errorf("%s: field %s of %s has no doc comment", fset.Position(field.Pos()), field.Names[0].Name, s.Name.Name)
		}
	}
}

// exportedRecv reports whether a method's receiver is of an exported type.
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
