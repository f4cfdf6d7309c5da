package postgres

import (
	"context"
	"database/sql"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/pressly/goose/v3"

	"github.com/lookout-dev/lookout/internal/store"
	"github.com/lookout-dev/lookout/internal/store/internal/sqlstore"
	"github.com/lookout-dev/lookout/internal/store/postgres/pgtest"
	"github.com/lookout-dev/lookout/internal/store/storetest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

func open(tb testing.TB) store.Store {
	tb.Helper()
	st, err := Open(context.Background(), pgtest.URL(tb))
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { st.Close() })
	return st
}

func TestStore(t *testing.T) {
	storetest.Run(t, open)
}

// TestStoredSpanParts: compressed parts, written and read, and a damaged
// one.
func TestStoredSpanParts(t *testing.T) {
	storetest.StoredSpanParts(t, open, func(t *testing.T, st store.Store, traceID, spanID string, data []byte) {
		if _, err := st.(*Store).pool.Exec(context.Background(), `INSERT INTO otel_span_parts (trace_id, span_id, data) VALUES ($1, $2, $3)`, traceID, spanID, data); err != nil {
			t.Fatal(err)
		}
	}, func(t *testing.T, st store.Store, traceID string) []string {
		rows, err := st.(*Store).pool.Query(context.Background(), `SELECT span_id FROM otel_span_parts WHERE trace_id = $1 ORDER BY id`, traceID)
		if err != nil {
			t.Fatal(err)
		}
		ids, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			t.Fatal(err)
		}
		return ids
	})
}

// TestCrash kills a writer process with SIGKILL mid-stream; every
// acknowledged trace must survive and no batch be partial.
func TestCrash(t *testing.T) {
	storetest.Crash(t, func(t *testing.T) string { return pgtest.URL(t) },
		func(ctx context.Context, dsn string) (store.Store, error) { return Open(ctx, dsn) })
}

// unmigrated is a new database with no migration run, its URL, and the
// migrations' provider on it, for a test to migrate step by step.
func unmigrated(t *testing.T) (string, *sql.DB, *goose.Provider) {
	t.Helper()
	url := pgtest.URL(t)
	cc, err := pgx.ParseConfig(url)
	if err != nil {
		t.Fatal(err)
	}
	db := stdlib.OpenDB(*cc)
	p, err := sqlstore.Migrations(db, goose.DialectPostgres, migrations)
	if err != nil {
		t.Fatal(err)
	}
	return url, db, p
}

// TestMigrateSpanParts: spans stored a row each build as before, and
// join those accepted since.
func TestMigrateSpanParts(t *testing.T) {
	url, db, p := unmigrated(t)
	storetest.MigrateSpanParts(t, p, db, "now()", "true", func() store.Store {
		st, err := Open(context.Background(), url)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		return st
	})
}

// TestMigratePolicyMode: a policy saved before policies had a mode comes out
// of the migration as log, and the column takes nothing but block or log.
func TestMigratePolicyMode(t *testing.T) {
	url, db, p := unmigrated(t)
	storetest.MigratePolicyMode(t, p, db, "now()", func() (store.Store, func(string) error) {
		st, err := Open(context.Background(), url)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		return st, func(q string) error { _, err := st.pool.Exec(context.Background(), q); return err }
	})
}

// TestMigrateTraceSummary: a trace stored before digests were kept gets
// its digest when first listed or appended to, and keeps it.
func TestMigrateTraceSummary(t *testing.T) {
	url, db, p := unmigrated(t)
	storetest.MigrateTraceSummary(t, p, db, "now()", func() (store.Store, func() int) {
		st, err := Open(context.Background(), url)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		return st, func() int {
			var n int
			if err := st.pool.QueryRow(context.Background(), `SELECT count(*) FROM trace_summaries`).Scan(&n); err != nil {
				t.Fatal(err)
			}
			return n
		}
	})
}

// TestMigrateListSort: traces stored before migration 20 sort by the keys
// it takes from their digests, annotations and scores.
func TestMigrateListSort(t *testing.T) {
	url, db, p := unmigrated(t)
	storetest.MigrateListSort(t, p, db, "now()", "true", func() store.Store {
		st, err := Open(context.Background(), url)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		return st
	})
}

// TestStoredFormats: a database holding a form this release does not read
// is refused at open.
func TestStoredFormats(t *testing.T) {
	url := pgtest.URL(t)
	storetest.StoredFormats(t, func() (store.Store, error) { return Open(context.Background(), url) }, func(q string) {
		cc, err := pgx.ParseConfig(url)
		if err != nil {
			t.Fatal(err)
		}
		db := stdlib.OpenDB(*cc)
		defer db.Close()
		if _, err := db.Exec(q); err != nil {
			t.Fatal(err)
		}
	})
}
