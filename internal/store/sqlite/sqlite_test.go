package sqlite

import (
	"context"
	"database/sql"
	"os"
	"path/filepath"
	"testing"

	"github.com/lookout-dev/lookout/internal/store"
	"github.com/lookout-dev/lookout/internal/store/storetest"
)

func open(t *testing.T) store.Store {
	t.Helper()
	st, err := Open(context.Background(), filepath.Join(t.TempDir(), "lookout.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := st.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return st
}

func TestStore(t *testing.T) {
	storetest.Run(t, open)
}

// TestCrash kills a writer process with SIGKILL mid-stream; every
// acknowledged trace must survive and no batch be partial.
func TestCrash(t *testing.T) {
	storetest.Crash(t,
		func(t *testing.T) string { return filepath.Join(t.TempDir(), "lookout.db") },
		func(ctx context.Context, dsn string) (store.Store, error) { return Open(ctx, dsn) })
}

// TestPragmas: the file is in WAL mode (its header says so, so it stays that
// way for every later opener), commits are synchronous=FULL on the writer,
// foreign keys are enforced and a lock is waited for, on both connections.
func TestPragmas(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "lookout.db")
	st, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		db     *sql.DB
		pragma string
		want   string
	}{
		{st.w, "journal_mode", "wal"},
		{st.w, "synchronous", "2"}, // FULL
		{st.w, "foreign_keys", "1"},
		{st.w, "busy_timeout", "10000"},
		{st.r, "journal_mode", "wal"},
		{st.r, "foreign_keys", "1"},
		{st.r, "busy_timeout", "10000"},
		{st.r, "query_only", "1"},
	} {
		var got string
		if err := c.db.QueryRowContext(ctx, "PRAGMA "+c.pragma).Scan(&got); err != nil {
			t.Fatal(err)
		}
		if got != c.want {
			t.Errorf("PRAGMA %s = %s, want %s", c.pragma, got, c.want)
		}
	}
	if _, err := st.r.ExecContext(ctx, "CREATE TABLE x (y int)"); err == nil {
		t.Error("the read-only pool can write")
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	// Bytes 18 and 19 of the header are 2 for a WAL database.
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(b) < 100 || string(b[:16]) != "SQLite format 3\x00" || b[18] != 2 || b[19] != 2 {
		t.Errorf("%s is not a WAL-mode SQLite file (header bytes 18, 19: %d, %d)", path, b[18], b[19])
	}
}
