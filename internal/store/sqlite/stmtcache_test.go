package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"testing"

	"modernc.org/sqlite"
)

// TestStmtCache runs statements through a caching connection: each text
// prepared once, kept up to the bound (the least recently run going
// first), and every run, kept or not, doing what it says.
func TestStmtCache(t *testing.T) {
	ctx := context.Background()
	db := sql.OpenDB(cachingConnector{d: &sqlite.Driver{}, dsn: filepath.Join(t.TempDir(), "c.db")})
	defer db.Close()
	db.SetMaxOpenConns(1)
	if _, err := db.ExecContext(ctx, `CREATE TABLE t (k INTEGER, v TEXT)`); err != nil {
		t.Fatal(err)
	}
	for round := range 3 {
		for i := range stmtCacheSize + 20 {
			// Texts of their own beyond the bound; one text run often.
			q := fmt.Sprintf(`INSERT INTO t (k, v) VALUES (?, '%d')`, i)
			if _, err := db.ExecContext(ctx, q, round); err != nil {
				t.Fatal(err)
			}
			if _, err := db.ExecContext(ctx, `INSERT INTO t (k, v) VALUES (?, 'often')`, round); err != nil {
				t.Fatal(err)
			}
		}
	}
	// A statement that fails leaves its kept statement usable.
	if _, err := db.ExecContext(ctx, `INSERT INTO nope VALUES (1)`); err == nil {
		t.Fatal("an insert into a missing table succeeded")
	}
	var n, often int
	if err := db.QueryRowContext(ctx, `SELECT count(*), sum(v = 'often') FROM t`).Scan(&n, &often); err != nil {
		t.Fatal(err)
	}
	if want := 3 * 2 * (stmtCacheSize + 20); n != want || often != want/2 {
		t.Errorf("%d rows (%d often), want %d (%d)", n, often, want, want/2)
	}
	conn, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	err = conn.Raw(func(dc any) error {
		c := dc.(*cachingConn)
		if c.lru.Len() != stmtCacheSize || len(c.byText) != stmtCacheSize {
			t.Errorf("%d statements kept (%d by text), want %d", c.lru.Len(), len(c.byText), stmtCacheSize)
		}
		if c.byText[`INSERT INTO t (k, v) VALUES (?, 'often')`] == nil {
			t.Error("the statement run most is not kept")
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
