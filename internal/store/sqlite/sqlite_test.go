package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/pressly/goose/v3"

	"github.com/lookout-dev/lookout/internal/store"
	"github.com/lookout-dev/lookout/internal/store/internal/sqlstore"
	"github.com/lookout-dev/lookout/internal/store/storetest"
)

func open(tb testing.TB) store.Store {
	tb.Helper()
	return openStore(tb, filepath.Join(tb.TempDir(), "lookout.db"))
}

// openStore opens the store at path, closed (and checked) when tb ends.
func openStore(tb testing.TB, path string) *Store {
	tb.Helper()
	st, err := Open(context.Background(), path)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		if err := st.Close(); err != nil {
			tb.Errorf("Close: %v", err)
		}
	})
	return st
}

func TestStore(t *testing.T) {
	storetest.Run(t, open)
}

// TestStoredSpanParts: compressed parts, written and read, and a damaged
// one.
func TestStoredSpanParts(t *testing.T) {
	storetest.StoredSpanParts(t, open, func(t *testing.T, st store.Store, traceID, spanID string, data []byte) {
		if _, err := st.(*Store).w.Exec(`INSERT INTO otel_span_parts (trace_id, span_id, data) VALUES (?, ?, ?)`, traceID, spanID, data); err != nil {
			t.Fatal(err)
		}
	}, func(t *testing.T, st store.Store, traceID string) []string {
		rows, err := st.(*Store).r.Query(`SELECT span_id FROM otel_span_parts WHERE trace_id = ? ORDER BY id`, traceID)
		if err != nil {
			t.Fatal(err)
		}
		var ids []string
		for rows.Next() {
			var id string
			if err := rows.Scan(&id); err != nil {
				t.Fatal(err)
			}
			ids = append(ids, id)
		}
		if err := rows.Close(); err != nil {
			t.Fatal(err)
		}
		return ids
	})
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
// foreign keys are enforced and a lock is waited for, on both connections;
// the writers of both files checkpoint seldom and keep statement journals
// in memory.
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
		{st.w, "wal_autocheckpoint", "15000"},
		{st.w, "temp_store", "2"}, // memory
		{st.iw, "synchronous", "2"},
		{st.iw, "wal_autocheckpoint", "15000"},
		{st.iw, "temp_store", "2"},
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

// unmigrated is a new database file with no migration run, and the
// migrations' provider on it, for a test to migrate step by step.
func unmigrated(t *testing.T) (string, *sql.DB, *goose.Provider) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "lookout.db")
	db, err := sql.Open("sqlite", path+"?_foreign_keys=1")
	if err != nil {
		t.Fatal(err)
	}
	p, err := sqlstore.Migrations(db, goose.DialectSQLite3, migrations)
	if err != nil {
		t.Fatal(err)
	}
	return path, db, p
}

// TestMigratePolicyMode: a policy saved before policies had a mode comes out
// of the migration as log, and the column takes nothing but block or log.
func TestMigratePolicyMode(t *testing.T) {
	path, db, p := unmigrated(t)
	storetest.MigratePolicyMode(t, p, db, "0", func() (store.Store, func(string) error) {
		st := openStore(t, path)
		return st, func(q string) error { _, err := st.w.Exec(q); return err }
	})
}

// TestMigrateSpanParts: spans stored a row each build as before, and
// join those accepted since.
func TestMigrateSpanParts(t *testing.T) {
	path, db, p := unmigrated(t)
	storetest.MigrateSpanParts(t, p, db, "0", "1", func() store.Store { return openStore(t, path) })
}

// TestLockedIsUnavailable: a write that waits in vain for a lock another
// process holds is store.ErrUnavailable (503, retry), and goes through
// once the lock is let go.
func TestLockedIsUnavailable(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "lookout.db")
	st := openStore(t, path)
	u, err := st.CreateUser(ctx, "alice", "hash")
	if err != nil {
		t.Fatal(err)
	}
	// Wait 50ms rather than BusyTimeout (the writer is one connection).
	if _, err := st.w.ExecContext(ctx, "PRAGMA busy_timeout = 50"); err != nil {
		t.Fatal(err)
	}
	other, err := sql.Open("sqlite", path+"?_txlock=immediate")
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	tx, err := other.BeginTx(ctx, nil) // holds the write lock
	if err != nil {
		t.Fatal(err)
	}
	_, err = st.CreateDataset(ctx, store.Dataset{OwnerID: u.ID, Name: "d"})
	if !errors.Is(err, store.ErrUnavailable) {
		t.Errorf("a write while another process holds the lock: %v; want store.ErrUnavailable", err)
	}
	if err := tx.Rollback(); err != nil {
		t.Fatal(err)
	}
	if _, err := st.CreateDataset(ctx, store.Dataset{OwnerID: u.ID, Name: "d"}); err != nil {
		t.Errorf("the write once the lock is let go: %v", err)
	}
}

// TestMigrateTraceSummary: a trace stored before digests were kept gets
// its digest when first listed or appended to, and keeps it.
func TestMigrateTraceSummary(t *testing.T) {
	path, db, p := unmigrated(t)
	storetest.MigrateTraceSummary(t, p, db, "0", func() (store.Store, func() int) {
		st := openStore(t, path)
		return st, func() int {
			var n int
			if err := st.w.QueryRow(`SELECT count(*) FROM trace_summaries`).Scan(&n); err != nil {
				t.Fatal(err)
			}
			return n
		}
	})
}

// TestMigrateListSort: traces stored before migration 20 sort by the keys
// it takes from their digests, annotations and scores.
func TestMigrateListSort(t *testing.T) {
	path, db, p := unmigrated(t)
	storetest.MigrateListSort(t, p, db, "0", "1", func() store.Store { return openStore(t, path) })
}

// TestStoredFormats: a database holding a form this release does not read
// is refused at open.
func TestStoredFormats(t *testing.T) {
	path := filepath.Join(t.TempDir(), "lookout.db")
	storetest.StoredFormats(t, func() (store.Store, error) { return Open(context.Background(), path) }, func(q string) {
		db, err := sql.Open("sqlite", path)
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		if _, err := db.Exec(q); err != nil {
			t.Fatal(err)
		}
	})
}
