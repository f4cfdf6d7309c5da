package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"strings"
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

// TestBatcher inserts n rows through a batcher for counts around its
// chunk sizes: every row once, in the order added, and the statements the
// connection keeps for it one a power of two of rows, at most eight.
func TestBatcher(t *testing.T) {
	ctx := context.Background()
	db := sql.OpenDB(cachingConnector{d: &sqlite.Driver{}, dsn: filepath.Join(t.TempDir(), "b.db")})
	defer db.Close()
	db.SetMaxOpenConns(1)
	if _, err := db.ExecContext(ctx, `CREATE TABLE t (n INTEGER, i INTEGER, v TEXT)`); err != nil {
		t.Fatal(err)
	}
	counts := []int{0, 1, 2, 3, 7, 64, 100, 127, 128, 129, 255, 300}
	for _, n := range counts {
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		b := batcher{tx: tx, head: `INSERT INTO t (n, i, v) VALUES `, cols: 3}
		for i := range n {
			if err := b.add(ctx, n, i, fmt.Sprint("row ", i)); err != nil {
				t.Fatal(err)
			}
		}
		if err := b.flush(ctx); err != nil {
			t.Fatal(err)
		}
		if err := tx.Commit(); err != nil {
			t.Fatal(err)
		}
		rows, err := db.QueryContext(ctx, `SELECT i, v FROM t WHERE n = ? ORDER BY rowid`, n)
		if err != nil {
			t.Fatal(err)
		}
		got := 0
		for rows.Next() {
			var i int
			var v string
			if err := rows.Scan(&i, &v); err != nil {
				t.Fatal(err)
			}
			if i != got || v != fmt.Sprint("row ", got) {
				t.Errorf("n=%d: row %d is (%d, %q)", n, got, i, v)
			}
			got++
		}
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
		rows.Close()
		if got != n {
			t.Errorf("n=%d: %d rows inserted", n, got)
		}
	}
	conn, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	err = conn.Raw(func(dc any) error {
		kept := 0
		for text := range dc.(*cachingConn).byText {
			if !strings.HasPrefix(text, `INSERT INTO t (n, i, v) VALUES `) {
				continue
			}
			kept++
			if rows := strings.Count(text, "(?"); rows&(rows-1) != 0 || rows > batchRows {
				t.Errorf("a statement of %d rows kept", rows)
			}
		}
		if kept == 0 || kept > 8 {
			t.Errorf("%d statements kept for the batcher, want 1 to 8", kept)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
