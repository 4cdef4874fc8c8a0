package scoreorchestrator_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"
)

// maxFunctionLines is the longest a function of the code that ships may be, counted from its
// `func` to its closing brace, both lines included: past it, a function does several things
// that want names of their own, read top-down as steps.
const maxFunctionLines = 80

// TestFunctionLength fails when a function of the non-test code under internal/ and cmd/ is
// longer than maxFunctionLines, naming each with its length.
func TestFunctionLength(t *testing.T) {
	for _, root := range []string{"internal", "cmd"} {
		err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
				return err
			}
			for name, lines := range functionLengths(t, path) {
				if lines > maxFunctionLines {
					t.Errorf("%s is %d lines, over %d: split it into named steps", name, lines, maxFunctionLines)
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
}

// functionLengths returns the length in lines of every function with a body in a Go file, by
// "path: name", a method's name prefixed with its receiver's type ("path: Reconciler.Reconcile").
func functionLengths(t *testing.T, path string) map[string]int {
	t.Helper()
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]int{}
	for _, decl := range f.Decls {
		fn, ok := decl.(*ast.FuncDecl)
		if !ok || fn.Body == nil {
			continue
		}
		name := fn.Name.Name
		if fn.Recv != nil && len(fn.Recv.List) == 1 {
			name = receiverType(fn.Recv.List[0].Type) + "." + name
		}
		key := filepath.ToSlash(path) + ": " + name
		// Several init functions in a file share a name: the longest stands for them.
		out[key] = max(out[key], fset.Position(fn.End()).Line-fset.Position(fn.Pos()).Line+1)
	}
	return out
}

// receiverType is the name of a method's receiver type, without pointer or type parameters.
func receiverType(e ast.Expr) string {
	for {
		switch x := e.(type) {
		case *ast.StarExpr:
			e = x.X
		case *ast.IndexExpr:
			e = x.X
		case *ast.IndexListExpr:
			e = x.X
		case *ast.Ident:
			return x.Name
		default:
			return "?"
		}
	}
}
