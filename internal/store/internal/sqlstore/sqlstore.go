// Package sqlstore is the part of the store that is the same SQL in both
// backends: users, API keys, sessions, datasets, policies, criteria, scores,
// evaluation runs and benchmarks, and a search's plan, page, count and hits
// over the backend's SearchIndex. Its statements are written once with $n
// placeholders, which PostgreSQL takes as they are and modernc's SQLite
// binds by number (the search statements have "?", as package search
// writes them). A Querier runs them over either driver; a Dialect holds
// what differs in spelling (how a time is stored, collation, row locks).
// What differs in kind (COPY, the search indexes, span ingest, migrations,
// connections) stays in the backends, as does mapping driver errors.
package sqlstore

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/lookout-dev/lookout/internal/store"
	"github.com/lookout-dev/lookout/internal/store/internal/indexer"
	"github.com/lookout-dev/lookout/internal/store/internal/storeutil"
	"github.com/lookout-dev/lookout/internal/trace"
)

// Row is one result row (database/sql's *sql.Row, pgx.Row).
type Row interface {
	Scan(dest ...any) error
}

// Rows is a result set; Close may be called more than once.
type Rows interface {
	Row
	Next() bool
	Err() error
	Close()
}

// Querier runs statements on a connection pool or in a transaction.
type Querier interface {
	// Exec runs a statement and returns how many rows it changed.
	Exec(ctx context.Context, query string, args ...any) (int64, error)
	Query(ctx context.Context, query string, args ...any) (Rows, error)
	QueryRow(ctx context.Context, query string, args ...any) Row
}

// SQLConn is what *sql.DB, *sql.Conn and *sql.Tx have in common.
type SQLConn interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// SQL is the Querier of a database/sql connection or transaction.
func SQL(c SQLConn) Querier { return sqlQuerier{c} }

type sqlQuerier struct{ c SQLConn }

func (q sqlQuerier) Exec(ctx context.Context, query string, args ...any) (int64, error) {
	res, err := q.c.ExecContext(ctx, query, args...)
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}

func (q sqlQuerier) Query(ctx context.Context, query string, args ...any) (Rows, error) {
	rows, err := q.c.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	return sqlRows{rows}, nil
}

func (q sqlQuerier) QueryRow(ctx context.Context, query string, args ...any) Row {
	return q.c.QueryRowContext(ctx, query, args...)
}

// sqlRows is *sql.Rows with pgx's Close (an error closing is in Err).
type sqlRows struct{ *sql.Rows }

func (r sqlRows) Close() { r.Rows.Close() }

// PgxConn is what pgxpool.Pool, pgx.Conn and pgx.Tx have in common.
type PgxConn interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// Pgx is the Querier of a pgx pool, connection or transaction.
func Pgx(c PgxConn) Querier { return pgxQuerier{c} }

type pgxQuerier struct{ c PgxConn }

func (q pgxQuerier) Exec(ctx context.Context, query string, args ...any) (int64, error) {
	tag, err := q.c.Exec(ctx, query, args...)
	return tag.RowsAffected(), err
}

func (q pgxQuerier) Query(ctx context.Context, query string, args ...any) (Rows, error) {
	return q.c.Query(ctx, query, args...)
}

func (q pgxQuerier) QueryRow(ctx context.Context, query string, args ...any) Row {
	return q.c.QueryRow(ctx, query, args...)
}

// Dialect is how a backend spells what the SQL of both differs in.
type Dialect struct {
	// Name prefixes the backend's errors ("sqlite", "postgres").
	Name string
	// MicrosTime stores times as Unix microseconds (SQLite) rather than
	// as timestamptz (PostgreSQL).
	MicrosTime bool
	// C follows a text column to order it by bytes (SQLite's default).
	C string
	// ForUpdate follows a SELECT that locks the rows it reads; SQLite has
	// one writer and needs none.
	ForUpdate string
	// ForShare follows a SELECT that keeps the rows it reads from being
	// deleted until the transaction ends.
	ForShare string
	// Seq is the column that orders the rows of one table by insertion
	// among rows created in the same microsecond; AnnotationSeq orders
	// annotations by creation.
	Seq, AnnotationSeq string
	// InList follows a column to match it with any of the texts of
	// argument $2 (a List); JSONList passes lists as JSON arrays
	// (SQLite has no array type).
	InList   string
	JSONList bool
	// Elems is a table of the elements of the List given as $1, one a
	// row, in column value.
	Elems string
	// ExtraIs is the condition that an annotation's extra object has
	// member $3 equal to the string $4.
	ExtraIs string
	// ScoreNumber is score s's value as a number for sorting: true 1,
	// false 0, a JSON number its value, anything else NULL (as the
	// search's JSONNumber reads a number).
	ScoreNumber string
	// SumObject names an aggregate function that sums JSON objects of
	// numbers or arrays of numbers by key (the SQLite backend's
	// lookout_sum_object); "" to sum the rows of json_each by key.
	SumObject string
	// NowMillis is the database's clock in Unix milliseconds, which
	// servers on one database agree on.
	NowMillis string
	// LockText is a statement that holds, until the transaction ends, a
	// lock named by the text $1, which other servers' transactions wait
	// for; "" where transactions that write take turns anyway (SQLite).
	LockText string
}

// SQLite is the dialect of the SQLite backend.
var SQLite = Dialect{Name: "sqlite", MicrosTime: true, Seq: "rowid", AnnotationSeq: "rowid",
	ExtraIs: `json_extract(extra, '$."' || $3 || '"') = $4`, InList: `IN (SELECT value FROM json_each($2))`, JSONList: true,
	Elems:       `json_each($1)`,
	ScoreNumber: `CASE s.value WHEN 'true' THEN 1.0 WHEN 'false' THEN 0.0 ELSE (CASE WHEN json_valid(s.value) THEN CASE WHEN json_type(s.value) IN ('integer', 'real') THEN CASE WHEN abs(CAST(s.value AS REAL)) <= 1.7976931348623157e308 THEN CAST(s.value AS REAL) END END END) END`, SumObject: "lookout_sum_object",
	NowMillis: `CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER)`}

// Postgres is the dialect of the PostgreSQL backend.
var Postgres = Dialect{Name: "postgres", C: ` COLLATE "C"`, ForUpdate: ` FOR UPDATE`, ForShare: ` FOR SHARE`, Seq: "id", AnnotationSeq: "seq",
	ExtraIs: `extra IS NOT NULL AND extra::jsonb ->> $3 = $4`, InList: `= ANY($2::text[])`,
	Elems:       `unnest($1::uuid[]) AS value`,
	ScoreNumber: `CASE s.value WHEN 'true' THEN 1.0::float8 WHEN 'false' THEN 0.0::float8 ELSE (CASE WHEN jsonb_typeof(s.value::jsonb) = 'number' THEN CASE WHEN abs((s.value::jsonb)::numeric) <= 1.7976931348623157e308 THEN (s.value::jsonb)::numeric::float8 END END) END`,
	NowMillis:   `(extract(epoch FROM clock_timestamp()) * 1000)::bigint`,
	LockText:    `SELECT pg_advisory_xact_lock(hashtextextended($1, 0))`}

// Time is a time as the dialect stores it, for a statement's argument.
func (d *Dialect) Time(t time.Time) any {
	if d.MicrosTime {
		return t.UnixMicro()
	}
	return t.UTC()
}

// List is a list of texts as the dialect passes it.
func (d *Dialect) List(ss []string) (any, error) {
	if !d.JSONList {
		return ss, nil
	}
	b, err := json.Marshal(ss)
	return string(b), err
}

// Time scans a stored time of either backend (Unix microseconds or
// timestamptz) as UTC; NULL is the zero Time, not valid.
type Time struct {
	T     time.Time
	Valid bool
}

// Scan implements sql.Scanner.
func (t *Time) Scan(src any) error {
	switch v := src.(type) {
	case nil:
		*t = Time{}
	case int64:
		*t = Time{storeutil.FromMicros(v), true}
	case time.Time:
		*t = Time{v.UTC(), true}
	default:
		return fmt.Errorf("a time from %T", src)
	}
	return nil
}

// ScanTimestamptz implements pgtype.TimestamptzScanner, which pgx prefers
// to sql.Scanner and which does not box the value.
func (t *Time) ScanTimestamptz(v pgtype.Timestamptz) error {
	if !v.Valid {
		*t = Time{}
		return nil
	}
	if v.InfinityModifier != pgtype.Finite {
		return errors.New("an infinite time")
	}
	*t = Time{v.Time.UTC(), true}
	return nil
}

// NullString scans a text or uuid that may be NULL.
type NullString struct {
	S     string
	Valid bool
}

// Scan implements sql.Scanner.
func (n *NullString) Scan(src any) error {
	switch v := src.(type) {
	case nil:
		*n = NullString{}
	case string:
		*n = NullString{v, true}
	case []byte:
		*n = NullString{string(v), true}
	default:
		return fmt.Errorf("a string from %T", src)
	}
	return nil
}

// ScanText implements pgtype.TextScanner (text and uuid columns).
func (n *NullString) ScanText(v pgtype.Text) error {
	*n = NullString{v.String, v.Valid}
	return nil
}

// Ptr is the time, or nil for NULL.
func (t Time) Ptr() *time.Time {
	if !t.Valid {
		return nil
	}
	tt := t.T
	return &tt
}

// Store is the shared part of a backend's store; the backends embed it.
type Store struct {
	D Dialect
	// R runs single reads, W single writes.
	R, W Querier
	// Read runs fn with one snapshot for its statements; Write runs fn in
	// a write transaction.
	Read, Write func(ctx context.Context, fn func(q Querier) error) error
	// Hooks does what the backend does its own way.
	Hooks Hooks
	// Search is the backend's search index.
	Search SearchIndex
	// Handover takes traces handed over (AddOptions.HandOver) to the
	// search indexer; nil for none.
	Handover *indexer.Handover
	// Fail wraps a driver error with what was being done, mapping it to
	// the store's errors (ErrNotFound, ErrConflict, ...).
	Fail func(ctx context.Context, err error, format string, args ...any) error
}

// Hooks are the parts of shared operations a backend does its own way:
// its bulk writes. tx is a transaction of Write.
type Hooks struct {
	// InsertAnnotations writes prepared annotations.
	InsertAnnotations func(ctx context.Context, tx Querier, as []store.Annotation) error
	// InsertTraces writes new traces whose indexes are set, with their
	// annotations (the caller updates their dataset and queues them for
	// the search index).
	InsertTraces func(ctx context.Context, tx Querier, ownerID, datasetID string, rows []storeutil.Row, now time.Time) error
	// AppendToTrace adds events and spans to the end of a stored trace
	// (the caller queues it for the search index) and returns its event
	// count after; check, when not nil, sees the trace's dataset and event
	// count before anything is written.
	AppendToTrace func(ctx context.Context, tx Querier, id string, events []trace.Event, spans []trace.Span, check func(datasetID string, events int) error) (int, error)
	// AddScores inserts scores, each superseding its target's current one.
	AddScores func(ctx context.Context, tx Querier, scores []store.Score) ([]store.Score, error)
	// PutStatuses records the statuses of a run's results.
	PutStatuses func(ctx context.Context, tx Querier, runID string, results []store.TraceResult, now time.Time) error
	// TxVersion names the row versions tx writes, for the Handover; nil
	// where the rows' content names them.
	TxVersion func(ctx context.Context, tx Querier) (string, error)
}

// SQLTx is the transaction under a Querier of SQL, else nil.
func SQLTx(q Querier) *sql.Tx {
	sq, _ := q.(sqlQuerier)
	tx, _ := sq.c.(*sql.Tx)
	return tx
}

// PgxTx is the transaction under a Querier of Pgx, else nil.
func PgxTx(q Querier) pgx.Tx {
	pq, _ := q.(pgxQuerier)
	tx, _ := pq.c.(pgx.Tx)
	return tx
}

// errorf is an error of the backend.
func (s *Store) errorf(format string, args ...any) error {
	return fmt.Errorf(s.D.Name+": "+format, args...)
}

// notFound is the error for an id that names nothing.
func (s *Store) notFound(format string, args ...any) error {
	return fmt.Errorf("%s: %s: %w", s.D.Name, fmt.Sprintf(format, args...), store.ErrNotFound)
}

// collect scans every row (a non-nil slice when there are none).
func collect[T any](rows Rows, err error, scan func(Row) (T, error)) ([]T, error) {
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := []T{}
	for rows.Next() {
		x, err := scan(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, x)
	}
	return out, rows.Err()
}

// exists checks that a row of table has the id.
func (s *Store) exists(ctx context.Context, q Querier, table, id string) error {
	if !storeutil.ValidID(id) {
		return s.notFound("%s %q", table, id)
	}
	var one int
	if err := q.QueryRow(ctx, `SELECT 1 FROM `+table+`s WHERE id = $1`, id).Scan(&one); err != nil {
		return s.Fail(ctx, err, "%s %s", table, id)
	}
	return nil
}

// NoRows reports whether err is either driver's "no rows".
func NoRows(err error) bool {
	return errors.Is(err, sql.ErrNoRows) || errors.Is(err, pgx.ErrNoRows)
}

// nobody is an id no row has, for a user id that is not one.
const nobody = "00000000-0000-0000-0000-000000000000"

// OptText is JSON text for a column that may be NULL (nil).
func OptText(b []byte) any {
	if b == nil {
		return nil
	}
	return string(b)
}
