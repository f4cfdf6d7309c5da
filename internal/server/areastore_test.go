package server

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
)

// TestAreaStores holds each file's handlers to the interface of the store
// its file declares (an area's xxxStore): the methods it calls on s.st are
// exactly the interface's, so that an area asks for what it uses.
func TestAreaStores(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	ifaces := map[string]*ast.InterfaceType{} // every interface of the package
	declared := map[string][]string{}         // file: its area interfaces
	used := map[string]map[string]bool{}      // file: methods called on s.st
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		file, err := parser.ParseFile(fset, f, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(file, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.TypeSpec:
				if it, ok := n.Type.(*ast.InterfaceType); ok {
					ifaces[n.Name.Name] = it
					if strings.HasSuffix(n.Name.Name, "Store") && n.Name.Name != "serverStore" {
						declared[f] = append(declared[f], n.Name.Name)
					}
				}
			case *ast.SelectorExpr:
				if x, ok := n.X.(*ast.SelectorExpr); ok && x.Sel.Name == "st" {
					if id, ok := x.X.(*ast.Ident); ok && id.Name == "s" {
						if used[f] == nil {
							used[f] = map[string]bool{}
						}
						used[f][n.Sel.Name] = true
					}
				}
			}
			return true
		})
	}
	var methods func(name string) []string
	methods = func(name string) []string {
		var ms []string
		for _, m := range ifaces[name].Methods.List {
			if len(m.Names) == 0 { // embedded
				ms = append(ms, methods(m.Type.(*ast.Ident).Name)...)
			}
			for _, n := range m.Names {
				ms = append(ms, n.Name)
			}
		}
		return ms
	}
	if len(used) == 0 {
		t.Fatal("no calls on s.st found: the test no longer sees the handlers")
	}
	for f, calls := range used {
		if len(declared[f]) != 1 {
			t.Errorf("%s calls the store (%v) and declares %d area interfaces, want one", f, keys(calls), len(declared[f]))
			continue
		}
		want := methods(declared[f][0])
		sort.Strings(want)
		if got := keys(calls); !slices.Equal(slices.Compact(want), got) {
			t.Errorf("%s calls %v on the store; its %s has %v", f, got, declared[f][0], want)
		}
	}
	for f, names := range declared {
		if used[f] == nil {
			t.Errorf("%s declares %v and calls nothing on s.st", f, names)
		}
	}
}

func keys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
