package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/pressly/goose/v3"

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

// TestMigratePolicyMode: a policy saved before policies had a mode comes out
// of the migration as log, and the column takes nothing but block or log.
func TestMigratePolicyMode(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "lookout.db")
	db, err := sql.Open("sqlite", path+"?_foreign_keys=1")
	if err != nil {
		t.Fatal(err)
	}
	sub, err := fs.Sub(migrations, "migrations")
	if err != nil {
		t.Fatal(err)
	}
	p, err := goose.NewProvider(goose.DialectSQLite3, db, sub, goose.WithDisableGlobalRegistry(true), goose.WithAllowOutofOrder(true))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.UpTo(ctx, 8); err != nil {
		t.Fatal(err)
	}
	const user, dataset, policy = "00000000-0000-4000-8000-000000000001", "00000000-0000-4000-8000-000000000002", "00000000-0000-4000-8000-000000000003"
	for _, q := range []string{
		`INSERT INTO users (id, name, created_at) VALUES ('` + user + `', 'alice', 0)`,
		`INSERT INTO datasets (id, owner_id, name, created_at) VALUES ('` + dataset + `', '` + user + `', 'd', 0)`,
		`INSERT INTO policies (id, dataset_id, name, source, created_at, updated_at) VALUES ('` + policy + `', '` + dataset + `', 'old', 'raise "x"', 0, 0)`,
	} {
		if _, err := db.ExecContext(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	st, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if got, err := st.Policy(ctx, policy); err != nil || got.Mode != store.PolicyLog || got.Source != `raise "x"` {
		t.Errorf("the policy saved before the migration: %+v, %v; want mode log", got, err)
	}
	if _, err := st.w.ExecContext(ctx, `UPDATE policies SET mode = 'warn'`); err == nil {
		t.Error("the mode column took 'warn'")
	}
}

// TestLockedIsUnavailable: a write that waits in vain for a lock another
// process holds is store.ErrUnavailable (503, retry), and goes through
// once the lock is let go.
func TestLockedIsUnavailable(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "lookout.db")
	st, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
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
