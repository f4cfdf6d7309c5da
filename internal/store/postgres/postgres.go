// Package postgres is the PostgreSQL backend of the store (pgx/v5 with a
// connection pool). Batches of traces are written with COPY inside one
// transaction, so a batch is stored whole or not at all.
package postgres

import (
	"context"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
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
	"github.com/lookout-dev/lookout/internal/store/internal/spanstore"
	"github.com/lookout-dev/lookout/internal/store/internal/storeutil"
)

//go:embed migrations/*.sql
var migrations embed.FS

// keyUseEvery is how often the last use of an API key is recorded at most.
const keyUseEvery = time.Minute

// Store is a PostgreSQL store. It implements store.Store.
type Store struct {
	// store.SpanTraces, over the statements of otel.go
	spanstore.Traces
	pool *pgxpool.Pool
	an   analyzer
}

var _ store.Store = (*Store)(nil)

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
	s.Traces = spanstore.New(spanstore.Backend{Reader: spanReader{s.pool}, Write: s.writeSpans, NotFound: notFound, Fail: fail})
	if err := s.ensureIndex(ctx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("postgres: search index: %w", err)
	}
	return s, nil
}

// migrate brings the schema up to date with goose, holding PostgreSQL's
// advisory lock so that servers starting together migrate once.
func migrate(ctx context.Context, cc *pgx.ConnConfig) error {
	db := stdlib.OpenDB(*cc)
	defer db.Close()
	sub, err := fs.Sub(migrations, "migrations")
	if err != nil {
		return err
	}
	locker, err := lock.NewPostgresSessionLocker()
	if err != nil {
		return err
	}
	p, err := goose.NewProvider(goose.DialectPostgres, db, sub, goose.WithDisableGlobalRegistry(true),
		// Areas number their migrations apart (00003 evaluation, 00005
		// OpenTelemetry, ...) and may land in any order.
		goose.WithAllowOutofOrder(true), goose.WithSessionLocker(locker))
	if err != nil {
		return fmt.Errorf("migrations: %w", err)
	}
	if _, err := p.Up(ctx); err != nil {
		return fmt.Errorf("migrations: %w", err)
	}
	return nil
}

// Close closes the pool.
func (s *Store) Close() error {
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
)

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
	return tx.Commit(end)
}

// read runs fn in a read-only transaction (one snapshot for its statements).
func (s *Store) read(ctx context.Context, fn func(tx pgx.Tx) error) error {
	return pgx.BeginTxFunc(ctx, s.pool, pgx.TxOptions{AccessMode: pgx.ReadOnly, IsoLevel: pgx.RepeatableRead}, fn)
}

func optText(b []byte) any {
	if b == nil {
		return nil
	}
	return string(b)
}

func utc(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	u := t.UTC()
	return &u
}

// ---- users, keys and sessions ----

const userCols = `u.id, u.name, u.password_hash, u.created_at`

func scanUser(row pgx.Row, extra ...any) (store.User, error) {
	var u store.User
	err := row.Scan(append([]any{&u.ID, &u.Name, &u.PasswordHash, &u.CreatedAt}, extra...)...)
	u.CreatedAt = u.CreatedAt.UTC()
	return u, err
}

// CountUsers counts the users, not counting the local-mode user.
func (s *Store) CountUsers(ctx context.Context) (int, error) {
	var n int
	if err := s.pool.QueryRow(ctx, `SELECT count(*) FROM users WHERE NOT is_local`).Scan(&n); err != nil {
		return 0, fail(ctx, err, "count users")
	}
	return n, nil
}

// CreateUser adds a user. The name of the local-mode user is reserved.
func (s *Store) CreateUser(ctx context.Context, name, passwordHash string) (store.User, error) {
	if err := storeutil.CheckName("user", name); err != nil {
		return store.User{}, fmt.Errorf("postgres: create user: %w", err)
	}
	if err := storeutil.CheckText("password hash", passwordHash); err != nil {
		return store.User{}, fmt.Errorf("postgres: create user: %w", err)
	}
	if name == store.LocalUserName {
		return store.User{}, fmt.Errorf("postgres: create user %q: the name is reserved for local mode: %w", name, store.ErrConflict)
	}
	u := store.User{ID: storeutil.NewID(), Name: name, PasswordHash: passwordHash, CreatedAt: storeutil.Now()}
	_, err := s.pool.Exec(ctx, `INSERT INTO users (id, name, password_hash, created_at) VALUES ($1, $2, $3, $4)`,
		u.ID, u.Name, u.PasswordHash, u.CreatedAt)
	if err != nil {
		return store.User{}, fail(ctx, err, "create user %q", name)
	}
	return u, nil
}

// UserByName finds a user by name.
func (s *Store) UserByName(ctx context.Context, name string) (store.User, error) {
	u, err := scanUser(s.pool.QueryRow(ctx, `SELECT `+userCols+` FROM users u WHERE u.name = $1`, name))
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
	u, err := scanUser(s.pool.QueryRow(ctx, `SELECT `+userCols+` FROM users u WHERE u.id = $1`, id))
	if err != nil {
		return store.User{}, fail(ctx, err, "user %s", id)
	}
	return u, nil
}

// ListUsers lists every user, the local-mode one included, oldest first.
// (Not part of store.Store; `lookout key create` uses it when it can.)
func (s *Store) ListUsers(ctx context.Context) ([]store.User, error) {
	rows, err := s.pool.Query(ctx, `SELECT `+userCols+` FROM users u ORDER BY u.created_at, u.id`)
	if err != nil {
		return nil, fail(ctx, err, "list users")
	}
	users, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (store.User, error) { return scanUser(r) })
	if err != nil {
		return nil, fail(ctx, err, "list users")
	}
	return nonNil(users), nil
}

func nonNil[T any](xs []T) []T {
	if xs == nil {
		return []T{}
	}
	return xs
}

// LocalUser returns the local-mode user, creating it on first use.
func (s *Store) LocalUser(ctx context.Context) (store.User, error) {
	const q = `SELECT ` + userCols + ` FROM users u WHERE u.is_local`
	u, err := scanUser(s.pool.QueryRow(ctx, q))
	if err == nil {
		return u, nil
	}
	if !errors.Is(err, pgx.ErrNoRows) {
		return store.User{}, fail(ctx, err, "local user")
	}
	if _, err := s.pool.Exec(ctx, `INSERT INTO users (id, name, password_hash, is_local, created_at) VALUES ($1, $2, '', true, $3) ON CONFLICT DO NOTHING`,
		storeutil.NewID(), store.LocalUserName, storeutil.Now()); err != nil {
		return store.User{}, fail(ctx, err, "create the local user")
	}
	if u, err = scanUser(s.pool.QueryRow(ctx, q)); err != nil {
		return store.User{}, fail(ctx, err, "local user")
	}
	return u, nil
}

const keyCols = `k.id, k.user_id, k.name, k.hash, k.last4, k.created_at, k.revoked_at, k.last_used`

func scanKey(row pgx.Row) (store.APIKey, error) {
	var k store.APIKey
	err := row.Scan(&k.ID, &k.UserID, &k.Name, &k.Hash, &k.Last4, &k.CreatedAt, &k.RevokedAt, &k.LastUsed)
	k.CreatedAt = k.CreatedAt.UTC()
	k.RevokedAt, k.LastUsed = utc(k.RevokedAt), utc(k.LastUsed)
	return k, err
}

// CreateAPIKey stores a new key of a user by its hash.
func (s *Store) CreateAPIKey(ctx context.Context, userID, name, hash, last4 string) (store.APIKey, error) {
	if hash == "" {
		return store.APIKey{}, fmt.Errorf("postgres: create API key: no hash: %w", store.ErrInvalid)
	}
	if err := storeutil.CheckTexts("API key", "name", name, "hash", hash, "last4", last4); err != nil {
		return store.APIKey{}, fmt.Errorf("postgres: create API key: %w", err)
	}
	if !storeutil.ValidID(userID) {
		return store.APIKey{}, notFound("create API key: user %q", userID)
	}
	k := store.APIKey{ID: storeutil.NewID(), UserID: userID, Name: name, Hash: hash, Last4: last4, CreatedAt: storeutil.Now()}
	_, err := s.pool.Exec(ctx, `INSERT INTO api_keys (id, user_id, name, hash, last4, created_at) VALUES ($1, $2, $3, $4, $5, $6)`,
		k.ID, k.UserID, k.Name, k.Hash, k.Last4, k.CreatedAt)
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
	rows, err := s.pool.Query(ctx, `SELECT `+keyCols+` FROM api_keys k WHERE k.user_id = $1 ORDER BY k.created_at, k.id`, userID)
	if err != nil {
		return nil, fail(ctx, err, "list API keys of user %s", userID)
	}
	keys, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (store.APIKey, error) { return scanKey(r) })
	if err != nil {
		return nil, fail(ctx, err, "list API keys of user %s", userID)
	}
	return nonNil(keys), nil
}

// RevokeAPIKey revokes one of a user's keys (revoking twice keeps the first
// time).
func (s *Store) RevokeAPIKey(ctx context.Context, userID, keyID string) error {
	if !storeutil.ValidID(keyID) || !storeutil.ValidID(userID) {
		return notFound("API key %q of user %q", keyID, userID)
	}
	tag, err := s.pool.Exec(ctx, `UPDATE api_keys SET revoked_at = coalesce(revoked_at, $1) WHERE id = $2 AND user_id = $3`,
		storeutil.Now(), keyID, userID)
	if err != nil {
		return fail(ctx, err, "revoke API key %s", keyID)
	}
	if tag.RowsAffected() == 0 {
		return notFound("API key %s of user %s", keyID, userID)
	}
	return nil
}

// UserByAPIKey finds the user of a key that is not revoked, and records the
// key's use (at most once a minute).
func (s *Store) UserByAPIKey(ctx context.Context, hash string) (store.User, error) {
	var keyID string
	var used *time.Time
	u, err := scanUser(s.pool.QueryRow(ctx, `SELECT `+userCols+`, k.id, k.last_used FROM api_keys k JOIN users u ON u.id = k.user_id
		WHERE k.hash = $1 AND k.revoked_at IS NULL`, hash), &keyID, &used)
	if err != nil {
		return store.User{}, fail(ctx, err, "API key")
	}
	now := storeutil.Now()
	if used == nil || now.Sub(*used) >= keyUseEvery {
		if _, err := s.pool.Exec(ctx, `UPDATE api_keys SET last_used = $1 WHERE id = $2`, now, keyID); err != nil {
			return store.User{}, fail(ctx, err, "record use of API key %s", keyID)
		}
	}
	return u, nil
}

// CreateSession stores a login session by its token hash; expired sessions
// are removed on the way.
func (s *Store) CreateSession(ctx context.Context, userID, tokenHash string, expires time.Time) error {
	if tokenHash == "" {
		return fmt.Errorf("postgres: create session: no token hash: %w", store.ErrInvalid)
	}
	if err := storeutil.CheckText("session token hash", tokenHash); err != nil {
		return fmt.Errorf("postgres: create session: %w", err)
	}
	if !storeutil.ValidID(userID) {
		return notFound("create session: user %q", userID)
	}
	now := storeutil.Now()
	err := s.write(ctx, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `DELETE FROM sessions WHERE expires_at <= $1`, now); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `INSERT INTO sessions (token_hash, user_id, created_at, expires_at) VALUES ($1, $2, $3, $4)`,
			tokenHash, userID, now, expires.UTC())
		return err
	})
	if err != nil {
		return fail(ctx, err, "create session for user %s", userID)
	}
	return nil
}

// UserBySession finds the user of a session that has not expired.
func (s *Store) UserBySession(ctx context.Context, tokenHash string) (store.User, error) {
	u, err := scanUser(s.pool.QueryRow(ctx, `SELECT `+userCols+` FROM sessions s JOIN users u ON u.id = s.user_id
		WHERE s.token_hash = $1 AND s.expires_at > $2`, tokenHash, storeutil.Now()))
	if err != nil {
		return store.User{}, fail(ctx, err, "session")
	}
	return u, nil
}

// DeleteSession ends a session.
func (s *Store) DeleteSession(ctx context.Context, tokenHash string) error {
	tag, err := s.pool.Exec(ctx, `DELETE FROM sessions WHERE token_hash = $1`, tokenHash)
	if err != nil {
		return fail(ctx, err, "delete session")
	}
	if tag.RowsAffected() == 0 {
		return notFound("session")
	}
	return nil
}

// ---- datasets ----

const datasetCols = `d.id, d.owner_id, u.name, d.name, d.public, d.metadata, d.created_at, d.last_pushed, d.trace_count`
const datasetFrom = ` FROM datasets d JOIN users u ON u.id = d.owner_id `

func scanDataset(row pgx.Row) (store.Dataset, error) {
	var d store.Dataset
	var meta string
	err := row.Scan(&d.ID, &d.OwnerID, &d.OwnerName, &d.Name, &d.Public, &meta, &d.CreatedAt, &d.LastPushed, &d.TraceCount)
	d.Metadata = json.RawMessage(meta)
	d.CreatedAt = d.CreatedAt.UTC()
	d.LastPushed = utc(d.LastPushed)
	return d, err
}

// CreateDataset adds a dataset; a name the owner already uses is ErrConflict.
func (s *Store) CreateDataset(ctx context.Context, d store.Dataset) (store.Dataset, error) {
	if err := storeutil.CheckName("dataset", d.Name); err != nil {
		return store.Dataset{}, fmt.Errorf("postgres: create dataset: %w", err)
	}
	if !storeutil.ValidID(d.OwnerID) {
		return store.Dataset{}, notFound("create dataset: owner %q", d.OwnerID)
	}
	meta := json.RawMessage("{}")
	if d.Metadata != nil {
		var err error
		if meta, err = storeutil.CompactObject(d.Metadata, "dataset metadata"); err != nil {
			return store.Dataset{}, fmt.Errorf("postgres: create dataset: %w", err)
		}
	}
	out := store.Dataset{ID: storeutil.NewID(), OwnerID: d.OwnerID, Name: d.Name, Public: d.Public, Metadata: meta, CreatedAt: storeutil.Now()}
	err := s.pool.QueryRow(ctx, `INSERT INTO datasets (id, owner_id, name, public, metadata, created_at) VALUES ($1, $2, $3, $4, $5, $6)
		RETURNING (SELECT name FROM users WHERE id = $2)`,
		out.ID, out.OwnerID, out.Name, out.Public, string(meta), out.CreatedAt).Scan(&out.OwnerName)
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
	d, err := scanDataset(s.pool.QueryRow(ctx, `SELECT `+datasetCols+datasetFrom+`WHERE d.id = $1`, id))
	if err != nil {
		return store.Dataset{}, fail(ctx, err, "dataset %s", id)
	}
	return d, nil
}

// DatasetByName finds a dataset by owner and name.
func (s *Store) DatasetByName(ctx context.Context, ownerID, name string) (store.Dataset, error) {
	if !storeutil.ValidID(ownerID) {
		return store.Dataset{}, notFound("dataset %q of user %q", name, ownerID)
	}
	d, err := scanDataset(s.pool.QueryRow(ctx, `SELECT `+datasetCols+datasetFrom+`WHERE d.owner_id = $1 AND d.name = $2`, ownerID, name))
	if err != nil {
		return store.Dataset{}, fail(ctx, err, "dataset %q of user %s", name, ownerID)
	}
	return d, nil
}

// ListDatasets lists the user's datasets and every public one, oldest first.
func (s *Store) ListDatasets(ctx context.Context, userID string) ([]store.Dataset, error) {
	var rows pgx.Rows
	var err error
	if storeutil.ValidID(userID) {
		rows, err = s.pool.Query(ctx, `SELECT `+datasetCols+datasetFrom+`WHERE d.owner_id = $1 OR d.public ORDER BY d.created_at, d.id`, userID)
	} else {
		rows, err = s.pool.Query(ctx, `SELECT `+datasetCols+datasetFrom+`WHERE d.public ORDER BY d.created_at, d.id`)
	}
	if err != nil {
		return nil, fail(ctx, err, "list datasets")
	}
	ds, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (store.Dataset, error) { return scanDataset(r) })
	if err != nil {
		return nil, fail(ctx, err, "list datasets")
	}
	return nonNil(ds), nil
}

// DeleteDataset removes a dataset with its traces, annotations and policies.
func (s *Store) DeleteDataset(ctx context.Context, id string) error {
	if !storeutil.ValidID(id) {
		return notFound("dataset %q", id)
	}
	err := s.write(ctx, func(tx pgx.Tx) error {
		if err := lockTexts(ctx, tx, true); err != nil {
			return err
		}
		used, err := datasetTexts(ctx, tx, id)
		if err != nil {
			return err
		}
		tag, err := tx.Exec(ctx, `DELETE FROM datasets WHERE id = $1`, id)
		if err != nil {
			return err
		}
		if tag.RowsAffected() == 0 {
			return notFound("dataset %s", id)
		}
		return sweepTexts(ctx, tx, used)
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
	tag, err := s.pool.Exec(ctx, `UPDATE datasets SET public = $2 WHERE id = $1`, id, public)
	if err != nil {
		return fail(ctx, err, "set dataset %s public", id)
	}
	if tag.RowsAffected() == 0 {
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
		return nil, fmt.Errorf("postgres: set metadata of dataset %s: %w", id, err)
	}
	var out json.RawMessage
	err := s.write(ctx, func(tx pgx.Tx) error {
		var old string
		if err := tx.QueryRow(ctx, `SELECT metadata FROM datasets WHERE id = $1 FOR UPDATE`, id).Scan(&old); err != nil {
			return err
		}
		var err error
		if replace {
			out, err = storeutil.CompactObject(meta, "dataset metadata")
		} else {
			out, err = storeutil.MergeObject(json.RawMessage(old), meta)
		}
		if err != nil {
			return err
		}
		_, err = tx.Exec(ctx, `UPDATE datasets SET metadata = $1 WHERE id = $2`, string(out), id)
		return err
	})
	if err != nil {
		return nil, fail(ctx, err, "set metadata of dataset %s", id)
	}
	return out, nil
}
