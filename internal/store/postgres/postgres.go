// Package postgres is the PostgreSQL backend of the store (pgx/v5 with a
// connection pool). Batches of traces are written with COPY inside one
// transaction, so a batch is stored whole or not at all.
package postgres

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"runtime"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/pressly/goose/v3"
	"github.com/pressly/goose/v3/lock"

	"github.com/lookout-dev/lookout/internal/store"
	"github.com/lookout-dev/lookout/internal/store/internal/indexer"
	"github.com/lookout-dev/lookout/internal/store/internal/spanstore"
	"github.com/lookout-dev/lookout/internal/store/internal/sqlstore"
)

//go:embed migrations/*.sql
var migrations embed.FS

// Store is a PostgreSQL store. It implements store.Store.
type Store struct {
	sqlstore.Store
	// store.SpanTraces, over the statements of otel.go
	spanstore.Traces
	pool *pgxpool.Pool
	an   analyzer
	ix   *indexer.Indexer
	// handover: traces just written, decoded, for the indexer
	handover *indexer.Handover
}

var _ store.Store = (*Store)(nil)

// DefaultConnectTimeout bounds a connection attempt when the URL does not.
const DefaultConnectTimeout = 10 * time.Second

// Open connects to the database at url (postgres://... or a key=value
// string; pool_max_conns and the like are honoured) and migrates it. The
// schema is created in the first schema of the search path.
func Open(ctx context.Context, url string) (*Store, error) {
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, fmt.Errorf("postgres: %w", err)
	}
	if !strings.Contains(url, "pool_max_conns") {
		cfg.MaxConns = int32(max(8, 4*runtime.GOMAXPROCS(0)))
	}
	if cfg.ConnConfig.ConnectTimeout == 0 {
		// Unset (connect_timeout, PGCONNECT_TIMEOUT): while the server's
		// host does not answer, a request fails (503) after this rather
		// than when TCP gives up, minutes later.
		cfg.ConnConfig.ConnectTimeout = DefaultConnectTimeout
	}
	if err := migrate(ctx, cfg.ConnConfig); err != nil {
		return nil, fmt.Errorf("postgres: %w", err)
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("postgres: %w", err)
	}
	if err := pool.Ping(ctx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("postgres: %w", err)
	}
	s := &Store{pool: pool}
	q := sqlstore.Pgx(pool)
	s.handover = indexer.NewDefaultHandover()
	s.Store = sqlstore.Store{D: sqlstore.Postgres, R: q, W: q, Fail: fail, Hooks: sqlstore.Hooks{InsertAnnotations: insertAnnotations, InsertTraces: insertTraces,
		AppendToTrace: appendToTrace, AddScores: addScores, PutStatuses: putStatuses, TxVersion: txVersion}, Search: searchIndex{s: s}, Handover: s.handover,
		Read: func(ctx context.Context, fn func(sqlstore.Querier) error) error {
			return s.read(ctx, func(tx pgx.Tx) error { return fn(sqlstore.Pgx(tx)) })
		},
		Write: func(ctx context.Context, fn func(sqlstore.Querier) error) error {
			return s.write(ctx, func(tx pgx.Tx) error { return fn(sqlstore.Pgx(tx)) })
		},
	}
	s.Traces = spanstore.New(spanstore.Backend{Reader: spanReader{s.pool}, Write: s.writeSpans, NotFound: notFound, Fail: fail, Handover: s.handover})
	if err := s.ensureIndex(ctx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("postgres: search index: %w", err)
	}
	s.ix = indexer.Start(indexBackend{s}, "postgres")
	return s, nil
}

// migrate brings the schema up to date, holding PostgreSQL's advisory
// lock so that servers starting together migrate once.
func migrate(ctx context.Context, cc *pgx.ConnConfig) error {
	db := stdlib.OpenDB(*cc)
	defer db.Close()
	locker, err := lock.NewPostgresSessionLocker()
	if err != nil {
		return err
	}
	return sqlstore.Migrate(ctx, db, goose.DialectPostgres, migrations, goose.WithSessionLocker(locker))
}

// Close closes the pool.
// Ping asks the server for a round trip on a pooled connection.
func (s *Store) Ping(ctx context.Context) error {
	if err := s.pool.Ping(ctx); err != nil {
		return fail(ctx, err, "ping")
	}
	return nil
}

func (s *Store) Close() error {
	if s.ix != nil {
		s.ix.Stop()
	}
	s.an.stop()
	s.pool.Close()
	return nil
}

// PostgreSQL error codes the store maps.
const (
	uniqueViolation     = "23505"
	foreignKeyViolation = "23503"
	badCharacter        = "22021" // character_not_in_repertoire
	untranslatable      = "22P05"
	badText             = "22P02" // invalid_text_representation

	adminShutdown      = "57P01"
	crashShutdown      = "57P02"
	cannotConnectNow   = "57P03" // starting up, shutting down, in recovery
	tooManyConnections = "53300"
	protocolViolation  = "08P01"
)

// unreachable reports whether err says the server cannot be reached or
// dropped the connection (down, restarting, out of connections), so that
// the same request may succeed later: the pool makes new connections as
// they are needed, so nothing else is needed to recover.
func unreachable(err error) bool {
	var ce *pgconn.ConnectError
	if errors.As(err, &ce) {
		// Any failure to connect, connect_timeout and a refused login
		// included: the server was reachable at start, and what has
		// changed since can change back without a restart of ours.
		return true
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return false // a deadline of ours, not the server's absence
	}
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		switch pe.Code {
		case adminShutdown, crashShutdown, cannotConnectNow, tooManyConnections:
			return true
		}
		// Class 08 is a connection exception, but a protocol violation
		// is this client's fault: retrying would not help.
		if strings.HasPrefix(pe.Code, "08") && pe.Code != protocolViolation {
			return true
		}
	}
	var ne net.Error
	// SafeToRetry: failed before anything was sent (such as a pooled
	// connection the server had closed). A net.Error or an EOF is a
	// connection that broke under a statement.
	return pgconn.SafeToRetry(err) || errors.As(err, &ne) ||
		errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF)
}

// fail wraps err with what was being done, mapping it to the store's errors.
func fail(ctx context.Context, err error, format string, args ...any) error {
	what := fmt.Sprintf(format, args...)
	if ce := ctx.Err(); ce != nil && !errors.Is(err, ce) {
		return fmt.Errorf("postgres: %s: %w (%v)", what, ce, err)
	}
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		switch pe.Code {
		case uniqueViolation:
			return fmt.Errorf("postgres: %s: %w (%v)", what, store.ErrConflict, err)
		case foreignKeyViolation:
			return fmt.Errorf("postgres: %s: %w (%v)", what, store.ErrNotFound, err)
		case badCharacter, untranslatable, badText:
			return fmt.Errorf("postgres: %s: %w (%v)", what, store.ErrInvalid, err)
		}
	}
	if ctx.Err() == nil && unreachable(err) {
		return fmt.Errorf("postgres: %s: %w (%v)", what, store.ErrUnavailable, err)
	}
	if errors.Is(err, pgx.ErrNoRows) {
		return fmt.Errorf("postgres: %s: %w", what, store.ErrNotFound)
	}
	return fmt.Errorf("postgres: %s: %w", what, err)
}

func notFound(format string, args ...any) error {
	return fmt.Errorf("postgres: %s: %w", fmt.Sprintf(format, args...), store.ErrNotFound)
}

// write runs fn in a transaction. Once fn has succeeded the commit is not
// cut short by ctx: an error then means the transaction did not commit, never
// that it might have.
func (s *Store) write(ctx context.Context, fn func(tx pgx.Tx) error) error {
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return err
	}
	end, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
	defer cancel()
	if err := fn(tx); err != nil {
		tx.Rollback(end)
		return err
	}
	if err := tx.Commit(end); err != nil {
		return err
	}
	if s.ix != nil {
		s.ix.Kick()
	}
	return nil
}

// read runs fn in a read-only transaction (one snapshot for its statements).
func (s *Store) read(ctx context.Context, fn func(tx pgx.Tx) error) error {
	return pgx.BeginTxFunc(ctx, s.pool, pgx.TxOptions{AccessMode: pgx.ReadOnly, IsoLevel: pgx.RepeatableRead}, fn)
}

// changesChannel is the NOTIFY channel of changed traces between the
// servers of one database.
const changesChannel = "lookout_traces"

// PublishChanged sends notice to every server listening on the database.
func (s *Store) PublishChanged(ctx context.Context, notice string) error {
	if _, err := s.pool.Exec(ctx, `SELECT pg_notify($1, $2)`, changesChannel, notice); err != nil {
		return fail(ctx, err, "publish changed traces")
	}
	return nil
}

// ListenChanged listens on a connection of its own (not the pool's), and
// on another after a lost one, calling missed each time it listens again.
func (s *Store) ListenChanged(ctx context.Context, notice func(string), missed func()) error {
	first := true
	for {
		err := s.listen(ctx, notice, func() {
			if !first {
				missed()
			}
			first = false
		})
		if ctx.Err() != nil {
			return nil
		}
		slog.Warn("postgres: listening for changed traces; again in a second", "err", err)
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(time.Second):
		}
	}
}

func (s *Store) listen(ctx context.Context, notice func(string), listening func()) error {
	conn, err := pgx.ConnectConfig(ctx, s.pool.Config().ConnConfig.Copy())
	if err != nil {
		return err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	if _, err := conn.Exec(ctx, "LISTEN "+changesChannel); err != nil {
		return err
	}
	listening()
	for {
		n, err := conn.WaitForNotification(ctx)
		if err != nil {
			return err
		}
		notice(n.Payload)
	}
}
