package pgtest

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"
)

func TestMain(m *testing.M) { Main(m) }

// TestURL checks that each URL is a schema of its own, first on the search
// path, and that the server is the one the environment names, if any.
func TestURL(t *testing.T) {
	ctx := context.Background()
	a, b := URL(t), URL(t)
	if a == b {
		t.Fatalf("two calls gave the same URL %s", a)
	}
	for _, u := range []string{a, b} {
		conn, err := pgx.Connect(ctx, u)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close(ctx)
		if _, err := conn.Exec(ctx, "CREATE TABLE t (x int)"); err != nil {
			t.Fatalf("%s: %v", u, err)
		}
		var schema string
		if err := conn.QueryRow(ctx, "SELECT schemaname FROM pg_tables WHERE tablename = 't' AND schemaname = current_schema()").Scan(&schema); err != nil {
			t.Fatalf("%s: the table is not in the current schema: %v", u, err)
		}
		var version int
		if err := conn.QueryRow(ctx, "SELECT current_setting('server_version_num')::int").Scan(&version); err != nil || version < 120000 {
			t.Errorf("server version %d (%v); want PostgreSQL 12 or later", version, err)
		}
	}
}

func TestWithSearchPath(t *testing.T) {
	cases := map[string]string{
		"postgres://u@h:5/db":                "postgres://u@h:5/db?search_path=s",
		"postgresql://u@/db?host=%2Ftmp&x=1": "postgresql://u@/db?host=%2Ftmp&search_path=s&x=1",
		"host=/tmp dbname=db":                "host=/tmp dbname=db search_path=s",
	}
	for in, want := range cases {
		if got := WithSearchPath(in, "s"); got != want {
			t.Errorf("WithSearchPath(%q) = %q, want %q", in, got, want)
		}
	}
}
