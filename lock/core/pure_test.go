package core

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"strings"
	"testing"
)

// TestCoreIsPure: the core decides and does nothing else: no goroutine, no lock, no clock, no
// client. A decision that needs one of them belongs to the driver in package lock.
func TestCoreIsPure(t *testing.T) {
	fset := token.NewFileSet()
	pkgs, err := parser.ParseDir(fset, ".", func(fi os.FileInfo) bool {
		return !strings.HasSuffix(fi.Name(), "_test.go")
	}, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pkgs {
		for name, f := range p.Files {
			for _, imp := range f.Imports {
				switch path := strings.Trim(imp.Path.Value, `"`); {
				case path == "sync", path == "sync/atomic", strings.Contains(path, "redis"), path == "context":
					t.Errorf("%s imports %s", name, path)
				}
			}
			ast.Inspect(f, func(n ast.Node) bool {
				switch n := n.(type) {
				case *ast.GoStmt:
					t.Errorf("%s: a goroutine at %s", name, fset.Position(n.Pos()))
				case *ast.SelectorExpr:
					if x, ok := n.X.(*ast.Ident); ok && x.Name == "time" &&
						(n.Sel.Name == "Now" || n.Sel.Name == "Since" || n.Sel.Name == "Until" || n.Sel.Name == "Sleep" || n.Sel.Name == "AfterFunc" || n.Sel.Name == "NewTimer") {
						t.Errorf("%s: time.%s at %s: the core is given the time", name, n.Sel.Name, fset.Position(n.Pos()))
					}
				}
				return true
			})
		}
	}
}
