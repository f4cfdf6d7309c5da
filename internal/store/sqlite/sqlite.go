// Package sqlite is the SQLite backend of the store (modernc.org/sqlite, pure
// Go): one file in WAL mode with foreign keys on and a busy timeout, one
// writer connection through which every write goes, and a pool of read-only
// connections. Commits are synchronous (synchronous=FULL), so a write that
// returned survives a crash of the process or of the machine.
package sqlite

import (
	"context"
	"database/sql"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"runtime"
	"strings"
	"time"

	"github.com/pressly/goose/v3"
	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/lookout-dev/lookout/internal/store"
	"github.com/lookout-dev/lookout/internal/store/internal/spanstore"
	"github.com/lookout-dev/lookout/internal/store/internal/storeutil"
)

//go:embed migrations/*.sql
var migrations embed.FS

// BusyTimeout is how long a connection waits for a lock held by another
// process (such as `lookout key create` beside `lookout serve`).
const BusyTimeout = 10 * time.Second

// keyUseEvery is how often the last use of an API key is recorded at most,
// so that reads do not each turn into a write.
const keyUseEvery = time.Minute

// Store is a SQLite store. It implements store.Store.
type Store struct {
	// store.SpanTraces, over the statements of otel.go
	spanstore.Traces
	w *sql.DB // one connection: all writes, serialized
	r *sql.DB // read-only connections
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
	writeDSN := common + "&_journal_mode=WAL&_synchronous=FULL&_txlock=immediate"
	if err := migrate(ctx, writeDSN); err != nil {
		return nil, fmt.Errorf("sqlite: %s: %w", path, err)
	}
	// The WAL file is cut back to 64 MiB after checkpoints. Statement
	// journals (a multi-row INSERT under constraints or triggers keeps one)
	// stay in memory: spilled to a temporary file they cost a write call
	// per page, a third of the search index's write time (ingest 475 →
	// 687-785 traces/s). They hold one statement's first-touched pages.
	w, err := sql.Open("sqlite", writeDSN+"&_pragma=cache_size(-32000)&_pragma=journal_size_limit(67108864)&_pragma=temp_store(2)")
	if err != nil {
		return nil, fmt.Errorf("sqlite: %s: %w", path, err)
	}
	w.SetMaxOpenConns(1)
	w.SetMaxIdleConns(1)
	w.SetConnMaxLifetime(0)
	w.SetConnMaxIdleTime(0)
	if err := w.PingContext(ctx); err != nil {
		w.Close()
		return nil, fmt.Errorf("sqlite: %s: %w", path, err)
	}
	r, err := sql.Open("sqlite", common+"&_query_only=1&_pragma=cache_size(-16000)")
	if err != nil {
		w.Close()
		return nil, fmt.Errorf("sqlite: %s: %w", path, err)
	}
	n := max(4, 2*runtime.GOMAXPROCS(0))
	r.SetMaxOpenConns(n)
	r.SetMaxIdleConns(n)
	r.SetConnMaxIdleTime(5 * time.Minute)
	if err := r.PingContext(ctx); err != nil {
		r.Close()
		w.Close()
		return nil, fmt.Errorf("sqlite: %s: %w", path, err)
	}
	s := &Store{w: w, r: r}
	s.Traces = spanstore.New(spanstore.Backend{Reader: spanReader{s.r}, Write: s.writeSpans, NotFound: notFound, Fail: fail})
	if err := s.ensureIndex(ctx); err != nil {
		s.Close()
		return nil, fmt.Errorf("sqlite: %s: search index: %w", path, err)
	}
	return s, nil
}

// migrate brings the schema up to date with goose, on a connection of its own.
func migrate(ctx context.Context, dsn string) error {
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return err
	}
	defer db.Close()
	sub, err := fs.Sub(migrations, "migrations")
	if err != nil {
		return err
	}
	p, err := goose.NewProvider(goose.DialectSQLite3, db, sub, goose.WithDisableGlobalRegistry(true),
		// Areas number their migrations apart (00003 evaluation, 00005
		// OpenTelemetry, ...) and may land in any order.
		goose.WithAllowOutofOrder(true))
	if err != nil {
		return fmt.Errorf("migrations: %w", err)
	}
	if _, err := p.Up(ctx); err != nil {
		return fmt.Errorf("migrations: %w", err)
	}
	return nil
}

// Close closes the database.
func (s *Store) Close() error {
	// Let SQLite refresh its query planner statistics, as it recommends at close.
	s.w.Exec("PRAGMA optimize")
	return errors.Join(s.r.Close(), s.w.Close())
}

// fail wraps err with what was being done, mapping it to the store's errors:
// no rows and a missing foreign row are ErrNotFound, a unique constraint is
// ErrConflict, and an error after the context ended is the context's error.
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
	return tx.Commit()
}

// micros is a time as stored.
func micros(t time.Time) int64 { return t.UnixMicro() }

func optTime(n sql.NullInt64) *time.Time {
	if !n.Valid {
		return nil
	}
	t := storeutil.FromMicros(n.Int64)
	return &t
}

func optText(b []byte) any {
	if b == nil {
		return nil
	}
	return string(b)
}

// ---- users, keys and sessions ----

const userCols = `u.id, u.name, u.password_hash, u.created_at`

func scanUser(row interface{ Scan(...any) error }, extra ...any) (store.User, error) {
	var u store.User
	var created int64
	err := row.Scan(append([]any{&u.ID, &u.Name, &u.PasswordHash, &created}, extra...)...)
	u.CreatedAt = storeutil.FromMicros(created)
	return u, err
}

// CountUsers counts the users, not counting the local-mode user.
func (s *Store) CountUsers(ctx context.Context) (int, error) {
	var n int
	if err := s.r.QueryRowContext(ctx, `SELECT count(*) FROM users WHERE NOT is_local`).Scan(&n); err != nil {
		return 0, fail(ctx, err, "count users")
	}
	return n, nil
}

// CreateUser adds a user. The name of the local-mode user is reserved.
func (s *Store) CreateUser(ctx context.Context, name, passwordHash string) (store.User, error) {
	if err := storeutil.CheckName("user", name); err != nil {
		return store.User{}, fmt.Errorf("sqlite: create user: %w", err)
	}
	if err := storeutil.CheckText("password hash", passwordHash); err != nil {
		return store.User{}, fmt.Errorf("sqlite: create user: %w", err)
	}
	if name == store.LocalUserName {
		return store.User{}, fmt.Errorf("sqlite: create user %q: the name is reserved for local mode: %w", name, store.ErrConflict)
	}
	u := store.User{ID: storeutil.NewID(), Name: name, PasswordHash: passwordHash, CreatedAt: storeutil.Now()}
	_, err := s.w.ExecContext(ctx, `INSERT INTO users (id, name, password_hash, created_at) VALUES (?, ?, ?, ?)`,
		u.ID, u.Name, u.PasswordHash, micros(u.CreatedAt))
	if err != nil {
		return store.User{}, fail(ctx, err, "create user %q", name)
	}
	return u, nil
}

// UserByName finds a user by name.
func (s *Store) UserByName(ctx context.Context, name string) (store.User, error) {
	u, err := scanUser(s.r.QueryRowContext(ctx, `SELECT `+userCols+` FROM users u WHERE u.name = ?`, name))
	if err != nil {
		return store.User{}, fail(ctx, err, "user %q", name)
	}
	return u, nil
}

// UserByID finds a user by id.
func (s *Store) UserByID(ctx context.Context, id string) (store.User, error) {
	if !storeutil.ValidID(id) {
		return store.User{}, notFound("user %q", id)
	}
	u, err := scanUser(s.r.QueryRowContext(ctx, `SELECT `+userCols+` FROM users u WHERE u.id = ?`, id))
	if err != nil {
		return store.User{}, fail(ctx, err, "user %s", id)
	}
	return u, nil
}

// ListUsers lists every user, the local-mode one included, oldest first.
// (Not part of store.Store; `lookout key create` uses it when it can.)
func (s *Store) ListUsers(ctx context.Context) ([]store.User, error) {
	rows, err := s.r.QueryContext(ctx, `SELECT `+userCols+` FROM users u ORDER BY u.created_at, u.rowid`)
	if err != nil {
		return nil, fail(ctx, err, "list users")
	}
	defer rows.Close()
	users := []store.User{}
	for rows.Next() {
		u, err := scanUser(rows)
		if err != nil {
			return nil, fail(ctx, err, "list users")
		}
		users = append(users, u)
	}
	if err := rows.Err(); err != nil {
		return nil, fail(ctx, err, "list users")
	}
	return users, nil
}

// LocalUser returns the local-mode user, creating it on first use.
func (s *Store) LocalUser(ctx context.Context) (store.User, error) {
	const q = `SELECT ` + userCols + ` FROM users u WHERE u.is_local`
	u, err := scanUser(s.r.QueryRowContext(ctx, q))
	if err == nil {
		return u, nil
	}
	if !errors.Is(err, sql.ErrNoRows) {
		return store.User{}, fail(ctx, err, "local user")
	}
	err = s.write(ctx, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO users (id, name, password_hash, is_local, created_at) VALUES (?, ?, '', 1, ?) ON CONFLICT DO NOTHING`,
			storeutil.NewID(), store.LocalUserName, micros(storeutil.Now()))
		if err != nil {
			return err
		}
		u, err = scanUser(tx.QueryRowContext(ctx, q))
		return err
	})
	if err != nil {
		return store.User{}, fail(ctx, err, "create the local user")
	}
	return u, nil
}

const keyCols = `k.id, k.user_id, k.name, k.hash, k.last4, k.created_at, k.revoked_at, k.last_used`

func scanKey(row interface{ Scan(...any) error }) (store.APIKey, error) {
	var k store.APIKey
	var created int64
	var revoked, used sql.NullInt64
	err := row.Scan(&k.ID, &k.UserID, &k.Name, &k.Hash, &k.Last4, &created, &revoked, &used)
	k.CreatedAt = storeutil.FromMicros(created)
	k.RevokedAt, k.LastUsed = optTime(revoked), optTime(used)
	return k, err
}

// CreateAPIKey stores a new key of a user by its hash.
func (s *Store) CreateAPIKey(ctx context.Context, userID, name, hash, last4 string) (store.APIKey, error) {
	if hash == "" {
		return store.APIKey{}, fmt.Errorf("sqlite: create API key: no hash: %w", store.ErrInvalid)
	}
	if err := storeutil.CheckTexts("API key", "name", name, "hash", hash, "last4", last4); err != nil {
		return store.APIKey{}, fmt.Errorf("sqlite: create API key: %w", err)
	}
	if !storeutil.ValidID(userID) {
		return store.APIKey{}, notFound("create API key: user %q", userID)
	}
	k := store.APIKey{ID: storeutil.NewID(), UserID: userID, Name: name, Hash: hash, Last4: last4, CreatedAt: storeutil.Now()}
	_, err := s.w.ExecContext(ctx, `INSERT INTO api_keys (id, user_id, name, hash, last4, created_at) VALUES (?, ?, ?, ?, ?, ?)`,
		k.ID, k.UserID, k.Name, k.Hash, k.Last4, micros(k.CreatedAt))
	if err != nil {
		return store.APIKey{}, fail(ctx, err, "create API key for user %s", userID)
	}
	return k, nil
}

// ListAPIKeys lists a user's keys, revoked ones included, oldest first.
func (s *Store) ListAPIKeys(ctx context.Context, userID string) ([]store.APIKey, error) {
	if _, err := s.UserByID(ctx, userID); err != nil {
		return nil, err
	}
	rows, err := s.r.QueryContext(ctx, `SELECT `+keyCols+` FROM api_keys k WHERE k.user_id = ? ORDER BY k.created_at, k.rowid`, userID)
	if err != nil {
		return nil, fail(ctx, err, "list API keys of user %s", userID)
	}
	defer rows.Close()
	keys := []store.APIKey{}
	for rows.Next() {
		k, err := scanKey(rows)
		if err != nil {
			return nil, fail(ctx, err, "list API keys of user %s", userID)
		}
		keys = append(keys, k)
	}
	if err := rows.Err(); err != nil {
		return nil, fail(ctx, err, "list API keys of user %s", userID)
	}
	return keys, nil
}

// RevokeAPIKey revokes one of a user's keys (revoking twice keeps the first
// time).
func (s *Store) RevokeAPIKey(ctx context.Context, userID, keyID string) error {
	if !storeutil.ValidID(keyID) || !storeutil.ValidID(userID) {
		return notFound("API key %q of user %q", keyID, userID)
	}
	res, err := s.w.ExecContext(ctx, `UPDATE api_keys SET revoked_at = coalesce(revoked_at, ?) WHERE id = ? AND user_id = ?`,
		micros(storeutil.Now()), keyID, userID)
	if err != nil {
		return fail(ctx, err, "revoke API key %s", keyID)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return notFound("API key %s of user %s", keyID, userID)
	}
	return nil
}

// UserByAPIKey finds the user of a key that is not revoked, and records the
// key's use (at most once a minute).
func (s *Store) UserByAPIKey(ctx context.Context, hash string) (store.User, error) {
	var keyID string
	var used sql.NullInt64
	u, err := scanUser(s.r.QueryRowContext(ctx, `SELECT `+userCols+`, k.id, k.last_used FROM api_keys k JOIN users u ON u.id = k.user_id
		WHERE k.hash = ? AND k.revoked_at IS NULL`, hash), &keyID, &used)
	if err != nil {
		return store.User{}, fail(ctx, err, "API key")
	}
	now := storeutil.Now()
	if !used.Valid || now.Sub(storeutil.FromMicros(used.Int64)) >= keyUseEvery {
		if _, err := s.w.ExecContext(ctx, `UPDATE api_keys SET last_used = ? WHERE id = ?`, micros(now), keyID); err != nil {
			return store.User{}, fail(ctx, err, "record use of API key %s", keyID)
		}
	}
	return u, nil
}

// CreateSession stores a login session by its token hash; expired sessions
// are removed on the way.
func (s *Store) CreateSession(ctx context.Context, userID, tokenHash string, expires time.Time) error {
	if tokenHash == "" {
		return fmt.Errorf("sqlite: create session: no token hash: %w", store.ErrInvalid)
	}
	if err := storeutil.CheckText("session token hash", tokenHash); err != nil {
		return fmt.Errorf("sqlite: create session: %w", err)
	}
	if !storeutil.ValidID(userID) {
		return notFound("create session: user %q", userID)
	}
	now := storeutil.Now()
	err := s.write(ctx, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, `DELETE FROM sessions WHERE expires_at <= ?`, micros(now)); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx, `INSERT INTO sessions (token_hash, user_id, created_at, expires_at) VALUES (?, ?, ?, ?)`,
			tokenHash, userID, micros(now), expires.UnixMicro())
		return err
	})
	if err != nil {
		return fail(ctx, err, "create session for user %s", userID)
	}
	return nil
}

// UserBySession finds the user of a session that has not expired.
func (s *Store) UserBySession(ctx context.Context, tokenHash string) (store.User, error) {
	u, err := scanUser(s.r.QueryRowContext(ctx, `SELECT `+userCols+` FROM sessions s JOIN users u ON u.id = s.user_id
		WHERE s.token_hash = ? AND s.expires_at > ?`, tokenHash, micros(storeutil.Now())))
	if err != nil {
		return store.User{}, fail(ctx, err, "session")
	}
	return u, nil
}

// DeleteSession ends a session.
func (s *Store) DeleteSession(ctx context.Context, tokenHash string) error {
	res, err := s.w.ExecContext(ctx, `DELETE FROM sessions WHERE token_hash = ?`, tokenHash)
	if err != nil {
		return fail(ctx, err, "delete session")
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return notFound("session")
	}
	return nil
}

// ---- datasets ----

const datasetCols = `d.id, d.owner_id, u.name, d.name, d.public, d.metadata, d.created_at, d.last_pushed, d.trace_count`
const datasetFrom = ` FROM datasets d JOIN users u ON u.id = d.owner_id `

func scanDataset(row interface{ Scan(...any) error }) (store.Dataset, error) {
	var d store.Dataset
	var meta string
	var created int64
	var pushed sql.NullInt64
	err := row.Scan(&d.ID, &d.OwnerID, &d.OwnerName, &d.Name, &d.Public, &meta, &created, &pushed, &d.TraceCount)
	d.Metadata = []byte(meta)
	d.CreatedAt = storeutil.FromMicros(created)
	d.LastPushed = optTime(pushed)
	return d, err
}

// CreateDataset adds a dataset; a name the owner already uses is ErrConflict.
func (s *Store) CreateDataset(ctx context.Context, d store.Dataset) (store.Dataset, error) {
	if err := storeutil.CheckName("dataset", d.Name); err != nil {
		return store.Dataset{}, fmt.Errorf("sqlite: create dataset: %w", err)
	}
	if !storeutil.ValidID(d.OwnerID) {
		return store.Dataset{}, notFound("create dataset: owner %q", d.OwnerID)
	}
	meta := []byte("{}")
	if d.Metadata != nil {
		var err error
		if meta, err = storeutil.CompactObject(d.Metadata, "dataset metadata"); err != nil {
			return store.Dataset{}, fmt.Errorf("sqlite: create dataset: %w", err)
		}
	}
	out := store.Dataset{ID: storeutil.NewID(), OwnerID: d.OwnerID, Name: d.Name, Public: d.Public, Metadata: meta, CreatedAt: storeutil.Now()}
	err := s.write(ctx, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO datasets (id, owner_id, name, public, metadata, created_at) VALUES (?, ?, ?, ?, ?, ?)`,
			out.ID, out.OwnerID, out.Name, out.Public, string(meta), micros(out.CreatedAt))
		if err != nil {
			return err
		}
		return tx.QueryRowContext(ctx, `SELECT name FROM users WHERE id = ?`, out.OwnerID).Scan(&out.OwnerName)
	})
	if err != nil {
		return store.Dataset{}, fail(ctx, err, "create dataset %q", d.Name)
	}
	return out, nil
}

// Dataset finds a dataset by id.
func (s *Store) Dataset(ctx context.Context, id string) (store.Dataset, error) {
	if !storeutil.ValidID(id) {
		return store.Dataset{}, notFound("dataset %q", id)
	}
	d, err := scanDataset(s.r.QueryRowContext(ctx, `SELECT `+datasetCols+datasetFrom+`WHERE d.id = ?`, id))
	if err != nil {
		return store.Dataset{}, fail(ctx, err, "dataset %s", id)
	}
	return d, nil
}

// DatasetByName finds a dataset by owner and name.
func (s *Store) DatasetByName(ctx context.Context, ownerID, name string) (store.Dataset, error) {
	d, err := scanDataset(s.r.QueryRowContext(ctx, `SELECT `+datasetCols+datasetFrom+`WHERE d.owner_id = ? AND d.name = ?`, ownerID, name))
	if err != nil {
		return store.Dataset{}, fail(ctx, err, "dataset %q of user %s", name, ownerID)
	}
	return d, nil
}

// ListDatasets lists the user's datasets and every public one, oldest first.
func (s *Store) ListDatasets(ctx context.Context, userID string) ([]store.Dataset, error) {
	rows, err := s.r.QueryContext(ctx, `SELECT `+datasetCols+datasetFrom+`WHERE d.owner_id = ? OR d.public ORDER BY d.created_at, d.id`, userID)
	if err != nil {
		return nil, fail(ctx, err, "list datasets")
	}
	defer rows.Close()
	ds := []store.Dataset{}
	for rows.Next() {
		d, err := scanDataset(rows)
		if err != nil {
			return nil, fail(ctx, err, "list datasets")
		}
		ds = append(ds, d)
	}
	if err := rows.Err(); err != nil {
		return nil, fail(ctx, err, "list datasets")
	}
	return ds, nil
}

// DeleteDataset removes a dataset with its traces, annotations and policies.
func (s *Store) DeleteDataset(ctx context.Context, id string) error {
	if !storeutil.ValidID(id) {
		return notFound("dataset %q", id)
	}
	err := s.write(ctx, func(tx *sql.Tx) error {
		if err := markDatasetTexts(ctx, tx, id); err != nil {
			return err
		}
		res, err := tx.ExecContext(ctx, `DELETE FROM datasets WHERE id = ?`, id)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return notFound("dataset %s", id)
		}
		return sweepMarkedTexts(ctx, tx)
	})
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		return fail(ctx, err, "delete dataset %s", id)
	}
	return err
}

// SetDatasetPublic makes a dataset public or private.
func (s *Store) SetDatasetPublic(ctx context.Context, id string, public bool) error {
	if !storeutil.ValidID(id) {
		return notFound("dataset %q", id)
	}
	res, err := s.w.ExecContext(ctx, `UPDATE datasets SET public = ? WHERE id = ?`, public, id)
	if err != nil {
		return fail(ctx, err, "set dataset %s public", id)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return notFound("dataset %s", id)
	}
	return nil
}

// SetDatasetMetadata merges meta into, or replaces, a dataset's metadata.
func (s *Store) SetDatasetMetadata(ctx context.Context, id string, meta json.RawMessage, replace bool) (json.RawMessage, error) {
	if !storeutil.ValidID(id) {
		return nil, notFound("dataset %q", id)
	}
	if err := storeutil.CheckObject(meta, "dataset metadata", false); err != nil {
		return nil, fmt.Errorf("sqlite: set metadata of dataset %s: %w", id, err)
	}
	var out json.RawMessage
	err := s.write(ctx, func(tx *sql.Tx) error {
		var old string
		if err := tx.QueryRowContext(ctx, `SELECT metadata FROM datasets WHERE id = ?`, id).Scan(&old); err != nil {
			return err
		}
		var err error
		if replace {
			out, err = storeutil.CompactObject(meta, "dataset metadata")
		} else {
			out, err = storeutil.MergeObject([]byte(old), meta)
		}
		if err != nil {
			return err
		}
		_, err = tx.ExecContext(ctx, `UPDATE datasets SET metadata = ? WHERE id = ?`, string(out), id)
		return err
	})
	if err != nil {
		return nil, fail(ctx, err, "set metadata of dataset %s", id)
	}
	return out, nil
}
