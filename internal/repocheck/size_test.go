package repocheck

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"
)

// Size limits of non-test Go files and of functions. A file or function
// over them says why: a comment line starting with "size:" in the
// function's doc comment, or, for a file, in a comment that is no
// declaration's doc.
const (
	maxFileLines = 400
	maxFuncLines = 60
)

// TestSizes walks every Go file of the repository (the nested modules too)
// and reports each non-test file and function over its limit without a
// reason.
func TestSizes(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			if path != root && (strings.HasPrefix(name, ".") || name == "testdata" || name == "bin" || name == "node_modules" || name == "vendor") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			return nil
		}
		n++
		rel, _ := filepath.Rel(root, path)
		for _, problem := range checkFile(t, path) {
			t.Errorf("%s: %s", rel, problem)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if n < 100 {
		t.Fatalf("found %d Go files under %s; the walk is not seeing the repository", n, root)
	}
}

// checkFile returns the size problems of one file.
func checkFile(t *testing.T, path string) []string {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, path, nil, parser.ParseComments)
	if err != nil {
		t.Errorf("parse %s: %v", path, err)
		return nil
	}
	var problems []string
	docs := make(map[*ast.CommentGroup]bool)
	for _, d := range f.Decls {
		switch d := d.(type) {
		case *ast.FuncDecl:
			docs[d.Doc] = true
			if d.Body == nil {
				continue
			}
			lines := fset.Position(d.End()).Line - fset.Position(d.Pos()).Line + 1
			if lines > maxFuncLines && !hasReason(d.Doc) {
				problems = append(problems, fmt.Sprintf("func %s is %d lines (over %d) without a \"size:\" reason in its doc", funcName(d), lines, maxFuncLines))
			}
		case *ast.GenDecl:
			docs[d.Doc] = true
		}
	}
	if lines := fset.File(f.Pos()).LineCount(); lines > maxFileLines {
		reason := false
		for _, c := range f.Comments {
			if !docs[c] && c != f.Doc && hasReason(c) {
				reason = true
			}
		}
		if !reason {
			problems = append(problems, fmt.Sprintf("%d lines (over %d) without a \"size:\" reason", lines, maxFileLines))
		}
	}
	return problems
}

// hasReason reports whether c has a line starting with "size:".
func hasReason(c *ast.CommentGroup) bool {
	if c == nil {
		return false
	}
	for _, line := range strings.Split(c.Text(), "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "size:") {
			return true
		}
	}
	return false
}

func funcName(d *ast.FuncDecl) string {
	if d.Recv == nil || len(d.Recv.List) == 0 {
		return d.Name.Name
	}
	typ := d.Recv.List[0].Type
	if s, ok := typ.(*ast.StarExpr); ok {
		typ = s.X
	}
	if g, ok := typ.(*ast.IndexExpr); ok {
		typ = g.X
	}
	if id, ok := typ.(*ast.Ident); ok {
		return id.Name + "." + d.Name.Name
	}
	return d.Name.Name
}
