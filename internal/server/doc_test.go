package server

import (
	"bufio"
	"bytes"
	"context"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"testing"

	"github.com/lookout-dev/lookout/internal/store/sqlite"
)

// TestDocListsEveryRoute keeps the route list of doc.go equal to the routes
// the server registers, so that the package's documentation cannot fall
// behind the route table.
func TestDocListsEveryRoute(t *testing.T) {
	st, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "lookout.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	srv := New(Config{Store: st})
	t.Cleanup(srv.Close)

	src, err := os.ReadFile("doc.go")
	if err != nil {
		t.Fatal(err)
	}
	route := regexp.MustCompile(`^//\t(GET|POST|PUT|PATCH|DELETE|\*) +(/\S*)`)
	var documented []string
	sc := bufio.NewScanner(bytes.NewReader(src))
	for sc.Scan() {
		m := route.FindStringSubmatch(sc.Text())
		if m == nil {
			continue
		}
		if m[1] == "*" {
			documented = append(documented, m[2])
		} else {
			documented = append(documented, m[1]+" "+m[2])
		}
	}
	for _, p := range srv.patterns {
		if !slices.Contains(documented, p) {
			t.Errorf("doc.go does not list %s", p)
		}
	}
	for _, p := range documented {
		if !slices.Contains(srv.patterns, p) {
			t.Errorf("doc.go lists %s, which the server does not register", p)
		}
	}
}
