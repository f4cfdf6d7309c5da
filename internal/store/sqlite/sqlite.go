// Package sqlite is the SQLite backend of the store (modernc.org/sqlite, pure
// Go): one file in WAL mode with foreign keys on and a busy timeout, one
// writer connection through which every write goes, and a pool of read-only
// connections. Commits are synchronous (synchronous=FULL), so a write that
// returned survives a crash of the process or of the machine. The writers
// write their WAL through walVFS (walvfs.go), a commit's frames in a few
// write calls. The search index is a second file beside it with a writer
// of its own (index.go).
package sqlite

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"time"

	"github.com/pressly/goose/v3"
	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/lookout-dev/lookout/internal/store"
	"github.com/lookout-dev/lookout/internal/store/internal/indexer"
	"github.com/lookout-dev/lookout/internal/store/internal/spanstore"
	"github.com/lookout-dev/lookout/internal/store/internal/sqlstore"
)

//go:embed migrations/*.sql
var migrations embed.FS

// writerPragmas are the writers' settings (the main file's and the index
// file's), as DSN parameters.
//
//   - A checkpoint every 15,000 pages of WAL (59 MiB), not SQLite's 1,000:
//     a checkpoint copies each page once however often it was written
//     since the last, and the small tables written at random places (a
//     trace's summary keys, its dashboard row, its OpenTelemetry id) are
//     written again by most commits. Under bench/peers' load the server
//     then wrote 8.3 KB a span instead of 9.8 and read 6.5 KB instead of
//     8.0, for 3-8% less CPU a span. The WAL file is cut back to 64 MiB
//     after a checkpoint, which it stays under.
//   - Statement journals (a multi-row INSERT under constraints or triggers
//     keeps one) stay in memory: spilled to a temporary file they cost a
//     write call per page, a third of the search index's write time
//     (ingest 475 → 687-785 traces/s). They hold one statement's
//     first-touched pages.
//   - A page cache of 4 MB, not 32. When SQLite's B-tree balancing puts
//     new pages in order, it swaps their numbers through the lock-byte
//     page's (page 262,145 of 4 KiB pages), which the cache then counts as
//     its highest page: the transaction's end walks the whole cache to
//     drop pages past the end of the file. With 32 MB those walks were
//     1.5% of the server's CPU under bench/peers' load; the smaller cache
//     took about 3% less CPU a span in all (alternating runs), with no
//     loss in bench/ingest or the large-trace benchmarks. A transaction
//     larger than the cache spills pages to the WAL before its commit.
const writerPragmas = "&_pragma=cache_size(-4000)&_pragma=wal_autocheckpoint(15000)&_pragma=journal_size_limit(67108864)&_pragma=temp_store(2)"

// BusyTimeout is how long a connection waits for a lock held by another
// process (such as `lookout key create` beside `lookout serve`).
const BusyTimeout = 10 * time.Second

// Store is a SQLite store. It implements store.Store.
type Store struct {
	sqlstore.Store
	// store.SpanTraces, over the statements of otel.go
	spanstore.Traces
	w  *sql.DB // one connection: all writes, serialized
	r  *sql.DB // read-only connections, the index file attached
	iw *sql.DB // one connection: the index file's writes
	ix *indexer.Indexer
	// handover: traces just written, decoded, for the indexer
	handover *indexer.Handover
	texts    textCache // ids of the index's texts, for the indexer
	path     string
}

var _ store.Store = (*Store)(nil)

// Open opens (creating and migrating as needed) the SQLite database at path.
func Open(ctx context.Context, path string) (*Store, error) {
	if path == "" {
		return nil, errors.New("sqlite: no database path")
	}
	if strings.ContainsAny(path, "?#") || strings.HasPrefix(path, "file:") {
		return nil, fmt.Errorf("sqlite: database path %q: give a plain file name (without ?, # or file:)", path)
	}
	common := fmt.Sprintf("%s?_busy_timeout=%d&_foreign_keys=1", path, BusyTimeout.Milliseconds())
	// The writers' WAL writes go through walVFS (walvfs.go); readers write
	// nothing.
	if err := registerWALVFS(); err != nil {
		return nil, err
	}
	writeDSN := common + "&_journal_mode=WAL&_synchronous=FULL&_txlock=immediate&vfs=" + walVFSName
	if err := migrate(ctx, writeDSN); err != nil {
		return nil, fmt.Errorf("sqlite: %s: %w", path, err)
	}
	w := sql.OpenDB(cachingConnector{d: &sqlite.Driver{}, dsn: writeDSN + writerPragmas})
	w.SetMaxOpenConns(1)
	w.SetMaxIdleConns(1)
	w.SetConnMaxLifetime(0)
	w.SetConnMaxIdleTime(0)
	if err := w.PingContext(ctx); err != nil {
		w.Close()
		return nil, fmt.Errorf("sqlite: %s: %w", path, err)
	}
	// The index file: derived data, but synchronous too, since the queue
	// rows it replaces are gone once it commits.
	iw := sql.OpenDB(cachingConnector{d: &sqlite.Driver{}, dsn: fmt.Sprintf("%s?_busy_timeout=%d", IndexPath(path), BusyTimeout.Milliseconds()) +
		"&_journal_mode=WAL&_synchronous=FULL&_txlock=immediate&vfs=" + walVFSName + writerPragmas})
	iw.SetMaxOpenConns(1)
	iw.SetMaxIdleConns(1)
	iw.SetConnMaxLifetime(0)
	iw.SetConnMaxIdleTime(0)
	if err := iw.PingContext(ctx); err != nil {
		iw.Close()
		w.Close()
		return nil, fmt.Errorf("sqlite: %s: %w", IndexPath(path), err)
	}
	r := sql.OpenDB(attacher{d: readDriver(), dsn: common + "&_query_only=1&_pragma=cache_size(-16000)", index: IndexPath(path)})
	n := max(4, 2*runtime.GOMAXPROCS(0))
	r.SetMaxOpenConns(n)
	r.SetMaxIdleConns(n)
	r.SetConnMaxIdleTime(5 * time.Minute)
	if err := r.PingContext(ctx); err != nil {
		r.Close()
		iw.Close()
		w.Close()
		return nil, fmt.Errorf("sqlite: %s: %w", path, err)
	}
	s := &Store{w: w, r: r, iw: iw, path: path}
	s.handover = indexer.NewDefaultHandover()
	s.Store = sqlstore.Store{D: sqlstore.SQLite, R: sqlstore.SQL(r), W: sqlstore.SQL(w), Fail: fail, Hooks: sqlstore.Hooks{InsertAnnotations: insertAnnotations, InsertTraces: insertTraces,
		AppendToTrace: appendToTrace, AddScores: addScores, PutStatuses: putStatuses}, Search: searchIndex{s: s}, Handover: s.handover,
		// A read of two statements needs no snapshot here: every write
		// that could come between them is the caller's own.
		Read: func(ctx context.Context, fn func(sqlstore.Querier) error) error { return fn(sqlstore.SQL(r)) },
		Write: func(ctx context.Context, fn func(sqlstore.Querier) error) error {
			return s.write(ctx, func(tx *sql.Tx) error { return fn(sqlstore.SQL(tx)) })
		},
	}
	s.Traces = spanstore.New(spanstore.Backend{Reader: spanReader{s.r}, Write: s.writeSpans, NotFound: notFound, Fail: fail, Handover: s.handover})
	if err := s.ensureIndex(ctx); err != nil {
		s.Close()
		return nil, fmt.Errorf("sqlite: %s: search index: %w", path, err)
	}
	s.ix = indexer.Start(indexBackend{s}, "sqlite")
	return s, nil
}

// migrate brings the schema up to date, on a connection of its own.
func migrate(ctx context.Context, dsn string) error {
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return err
	}
	defer db.Close()
	return sqlstore.Migrate(ctx, db, goose.DialectSQLite3, migrations)
}

// Close closes the database.
// Ping reads from the database file (a read connection, as requests do).
func (s *Store) Ping(ctx context.Context) error {
	var one int
	if err := s.r.QueryRowContext(ctx, `SELECT 1`).Scan(&one); err != nil {
		return fail(ctx, err, "ping")
	}
	return nil
}

func (s *Store) Close() error {
	if s.ix != nil {
		s.ix.Stop()
	}
	// Let SQLite refresh its query planner statistics, as it recommends at close.
	s.w.Exec("PRAGMA optimize")
	s.iw.Exec("PRAGMA optimize")
	return errors.Join(s.r.Close(), s.iw.Close(), s.w.Close())
}

// kick tells the search indexer of traces queued by this process.
func (s *Store) kick() {
	if s.ix != nil {
		s.ix.Kick()
	}
}

// fail wraps err with what was being done, mapping it to the store's errors:
// no rows and a missing foreign row are ErrNotFound, a unique constraint is
// ErrConflict, a lock waited for in vain is ErrUnavailable, and an error
// after the context ended is the context's error.
func fail(ctx context.Context, err error, format string, args ...any) error {
	what := fmt.Sprintf(format, args...)
	if ce := ctx.Err(); ce != nil && !errors.Is(err, ce) {
		return fmt.Errorf("sqlite: %s: %w (%v)", what, ce, err)
	}
	var se *sqlite.Error
	if errors.As(err, &se) {
		switch se.Code() {
		case sqlite3.SQLITE_CONSTRAINT_UNIQUE, sqlite3.SQLITE_CONSTRAINT_PRIMARYKEY:
			return fmt.Errorf("sqlite: %s: %w (%v)", what, store.ErrConflict, err)
		case sqlite3.SQLITE_CONSTRAINT_FOREIGNKEY:
			return fmt.Errorf("sqlite: %s: %w (%v)", what, store.ErrNotFound, err)
		}
		// Another process held the lock past BusyTimeout (any extended
		// busy code): it will let go, so the request can be retried.
		if se.Code()&0xff == sqlite3.SQLITE_BUSY {
			return fmt.Errorf("sqlite: %s: %w (%v)", what, store.ErrUnavailable, err)
		}
	}
	if errors.Is(err, sql.ErrNoRows) {
		return fmt.Errorf("sqlite: %s: %w", what, store.ErrNotFound)
	}
	return fmt.Errorf("sqlite: %s: %w", what, err)
}

// notFound is the error for an id that names nothing.
func notFound(format string, args ...any) error {
	return fmt.Errorf("sqlite: %s: %w", fmt.Sprintf(format, args...), store.ErrNotFound)
}

// write runs fn in a transaction on the writer connection (BEGIN IMMEDIATE).
func (s *Store) write(ctx context.Context, fn func(tx *sql.Tx) error) error {
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	if err := fn(tx); err != nil {
		tx.Rollback()
		return err
	}
	if err := tx.Commit(); err != nil {
		return err
	}
	s.kick()
	return nil
}

// micros is a time as stored.
func micros(t time.Time) int64 { return t.UnixMicro() }
