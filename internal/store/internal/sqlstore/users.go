package sqlstore

import (
	"context"
	"time"

	"github.com/lookout-dev/lookout/internal/store"
	"github.com/lookout-dev/lookout/internal/store/internal/storeutil"
)

// keyUseEvery is how often the last use of an API key is recorded at most,
// so that reads do not each turn into a write.
const keyUseEvery = time.Minute

const userCols = `u.id, u.name, u.password_hash, u.created_at`

func scanUser(row Row, extra ...any) (store.User, error) {
	var u store.User
	var created Time
	err := row.Scan(append([]any{&u.ID, &u.Name, &u.PasswordHash, &created}, extra...)...)
	u.CreatedAt = created.T
	return u, err
}

func scanUserRow(row Row) (store.User, error) { return scanUser(row) }

// CountUsers counts the users, not counting the local-mode user.
func (s *Store) CountUsers(ctx context.Context) (int, error) {
	var n int
	if err := s.R.QueryRow(ctx, `SELECT count(*) FROM users WHERE NOT is_local`).Scan(&n); err != nil {
		return 0, s.Fail(ctx, err, "count users")
	}
	return n, nil
}

// CreateUser adds a user. The name of the local-mode user is reserved.
func (s *Store) CreateUser(ctx context.Context, name, passwordHash string) (store.User, error) {
	if err := storeutil.CheckName("user", name); err != nil {
		return store.User{}, s.errorf("create user: %w", err)
	}
	if err := storeutil.CheckText("password hash", passwordHash); err != nil {
		return store.User{}, s.errorf("create user: %w", err)
	}
	if name == store.LocalUserName {
		return store.User{}, s.errorf("create user %q: the name is reserved for local mode: %w", name, store.ErrConflict)
	}
	u := store.User{ID: storeutil.NewID(), Name: name, PasswordHash: passwordHash, CreatedAt: storeutil.Now()}
	err := s.Write(ctx, func(tx Querier) error {
		var others int
		if err := tx.QueryRow(ctx, `SELECT count(*) FROM users WHERE NOT is_local`).Scan(&others); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `INSERT INTO users (id, name, password_hash, created_at) VALUES ($1, $2, $3, $4)`,
			u.ID, u.Name, u.PasswordHash, s.D.Time(u.CreatedAt)); err != nil {
			return err
		}
		if others > 0 {
			return nil
		}
		// The first user ends local mode and takes over what it made, so
		// that nothing pushed before is left to a user no one can sign in
		// as: datasets and their traces, benchmarks, and API keys (a key
		// made in local mode goes on working, as this user's).
		for _, q := range []string{
			`UPDATE datasets SET owner_id = $1 WHERE owner_id IN (SELECT id FROM users WHERE is_local)`,
			`UPDATE traces SET owner_id = $1 WHERE owner_id IN (SELECT id FROM users WHERE is_local)`,
			`UPDATE benchmarks SET owner_id = $1 WHERE owner_id IN (SELECT id FROM users WHERE is_local)`,
			`UPDATE api_keys SET user_id = $1 WHERE user_id IN (SELECT id FROM users WHERE is_local)`,
		} {
			if _, err := tx.Exec(ctx, q, u.ID); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return store.User{}, s.Fail(ctx, err, "create user %q", name)
	}
	return u, nil
}

// UserByName finds a user by name.
func (s *Store) UserByName(ctx context.Context, name string) (store.User, error) {
	u, err := scanUser(s.R.QueryRow(ctx, `SELECT `+userCols+` FROM users u WHERE u.name = $1`, name))
	if err != nil {
		return store.User{}, s.Fail(ctx, err, "user %q", name)
	}
	return u, nil
}

// UserByID finds a user by id.
func (s *Store) UserByID(ctx context.Context, id string) (store.User, error) {
	if !storeutil.ValidID(id) {
		return store.User{}, s.notFound("user %q", id)
	}
	u, err := scanUser(s.R.QueryRow(ctx, `SELECT `+userCols+` FROM users u WHERE u.id = $1`, id))
	if err != nil {
		return store.User{}, s.Fail(ctx, err, "user %s", id)
	}
	return u, nil
}

// ListUsers lists every user, the local-mode one included, oldest first.
// (Not part of store.Store; `lookout key create` uses it when it can.)
func (s *Store) ListUsers(ctx context.Context) ([]store.User, error) {
	rows, err := s.R.Query(ctx, `SELECT `+userCols+` FROM users u ORDER BY u.created_at, u.`+s.D.Seq)
	users, err := collect(rows, err, scanUserRow)
	if err != nil {
		return nil, s.Fail(ctx, err, "list users")
	}
	return users, nil
}

// LocalUser returns the local-mode user, creating it on first use.
func (s *Store) LocalUser(ctx context.Context) (store.User, error) {
	const q = `SELECT ` + userCols + ` FROM users u WHERE u.is_local`
	u, err := scanUser(s.R.QueryRow(ctx, q))
	if err == nil {
		return u, nil
	}
	if !NoRows(err) {
		return store.User{}, s.Fail(ctx, err, "local user")
	}
	err = s.Write(ctx, func(tx Querier) error {
		// A concurrent first use inserts it too: the one that loses reads
		// the winner's.
		_, err := tx.Exec(ctx, `INSERT INTO users (id, name, password_hash, is_local, created_at) VALUES ($1, $2, '', true, $3) ON CONFLICT DO NOTHING`,
			storeutil.NewID(), store.LocalUserName, s.D.Time(storeutil.Now()))
		if err != nil {
			return err
		}
		u, err = scanUser(tx.QueryRow(ctx, q))
		return err
	})
	if err != nil {
		return store.User{}, s.Fail(ctx, err, "create the local user")
	}
	return u, nil
}

const keyCols = `k.id, k.user_id, k.name, k.hash, k.last4, k.created_at, k.revoked_at, k.last_used`

func scanKey(row Row) (store.APIKey, error) {
	var k store.APIKey
	var created, revoked, used Time
	err := row.Scan(&k.ID, &k.UserID, &k.Name, &k.Hash, &k.Last4, &created, &revoked, &used)
	k.CreatedAt, k.RevokedAt, k.LastUsed = created.T, revoked.Ptr(), used.Ptr()
	return k, err
}

// CreateAPIKey stores a new key of a user by its hash.
func (s *Store) CreateAPIKey(ctx context.Context, userID, name, hash, last4 string) (store.APIKey, error) {
	if hash == "" {
		return store.APIKey{}, s.errorf("create API key: no hash: %w", store.ErrInvalid)
	}
	if err := storeutil.CheckTexts("API key", "name", name, "hash", hash, "last4", last4); err != nil {
		return store.APIKey{}, s.errorf("create API key: %w", err)
	}
	if !storeutil.ValidID(userID) {
		return store.APIKey{}, s.notFound("create API key: user %q", userID)
	}
	k := store.APIKey{ID: storeutil.NewID(), UserID: userID, Name: name, Hash: hash, Last4: last4, CreatedAt: storeutil.Now()}
	_, err := s.W.Exec(ctx, `INSERT INTO api_keys (id, user_id, name, hash, last4, created_at) VALUES ($1, $2, $3, $4, $5, $6)`,
		k.ID, k.UserID, k.Name, k.Hash, k.Last4, s.D.Time(k.CreatedAt))
	if err != nil {
		return store.APIKey{}, s.Fail(ctx, err, "create API key for user %s", userID)
	}
	return k, nil
}

// ListAPIKeys lists a user's keys, revoked ones included, oldest first.
func (s *Store) ListAPIKeys(ctx context.Context, userID string) ([]store.APIKey, error) {
	if _, err := s.UserByID(ctx, userID); err != nil {
		return nil, err
	}
	rows, err := s.R.Query(ctx, `SELECT `+keyCols+` FROM api_keys k WHERE k.user_id = $1 ORDER BY k.created_at, k.`+s.D.Seq, userID)
	keys, err := collect(rows, err, scanKey)
	if err != nil {
		return nil, s.Fail(ctx, err, "list API keys of user %s", userID)
	}
	return keys, nil
}

// RevokeAPIKey revokes one of a user's keys (revoking twice keeps the first
// time).
func (s *Store) RevokeAPIKey(ctx context.Context, userID, keyID string) error {
	if !storeutil.ValidID(keyID) || !storeutil.ValidID(userID) {
		return s.notFound("API key %q of user %q", keyID, userID)
	}
	n, err := s.W.Exec(ctx, `UPDATE api_keys SET revoked_at = coalesce(revoked_at, $1) WHERE id = $2 AND user_id = $3`,
		s.D.Time(storeutil.Now()), keyID, userID)
	if err != nil {
		return s.Fail(ctx, err, "revoke API key %s", keyID)
	}
	if n == 0 {
		return s.notFound("API key %s of user %s", keyID, userID)
	}
	return nil
}

// UserByAPIKey finds the user of a key that is not revoked, and records the
// key's use (at most once a minute).
func (s *Store) UserByAPIKey(ctx context.Context, hash string) (store.User, error) {
	var keyID string
	var used Time
	u, err := scanUser(s.R.QueryRow(ctx, `SELECT `+userCols+`, k.id, k.last_used FROM api_keys k JOIN users u ON u.id = k.user_id
		WHERE k.hash = $1 AND k.revoked_at IS NULL`, hash), &keyID, &used)
	if err != nil {
		return store.User{}, s.Fail(ctx, err, "API key")
	}
	now := storeutil.Now()
	if !used.Valid || now.Sub(used.T) >= keyUseEvery {
		if _, err := s.W.Exec(ctx, `UPDATE api_keys SET last_used = $1 WHERE id = $2`, s.D.Time(now), keyID); err != nil {
			return store.User{}, s.Fail(ctx, err, "record use of API key %s", keyID)
		}
	}
	return u, nil
}

// CreateSession stores a login session by its token hash; expired sessions
// are removed on the way.
func (s *Store) CreateSession(ctx context.Context, userID, tokenHash string, expires time.Time) error {
	if tokenHash == "" {
		return s.errorf("create session: no token hash: %w", store.ErrInvalid)
	}
	if err := storeutil.CheckText("session token hash", tokenHash); err != nil {
		return s.errorf("create session: %w", err)
	}
	if !storeutil.ValidID(userID) {
		return s.notFound("create session: user %q", userID)
	}
	now := storeutil.Now()
	err := s.Write(ctx, func(tx Querier) error {
		if _, err := tx.Exec(ctx, `DELETE FROM sessions WHERE expires_at <= $1`, s.D.Time(now)); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `INSERT INTO sessions (token_hash, user_id, created_at, expires_at) VALUES ($1, $2, $3, $4)`,
			tokenHash, userID, s.D.Time(now), s.D.Time(expires))
		return err
	})
	if err != nil {
		return s.Fail(ctx, err, "create session for user %s", userID)
	}
	return nil
}

// UserBySession finds the user of a session that has not expired.
func (s *Store) UserBySession(ctx context.Context, tokenHash string) (store.User, error) {
	u, err := scanUser(s.R.QueryRow(ctx, `SELECT `+userCols+` FROM sessions s JOIN users u ON u.id = s.user_id
		WHERE s.token_hash = $1 AND s.expires_at > $2`, tokenHash, s.D.Time(storeutil.Now())))
	if err != nil {
		return store.User{}, s.Fail(ctx, err, "session")
	}
	return u, nil
}

// DeleteSession ends a session.
func (s *Store) DeleteSession(ctx context.Context, tokenHash string) error {
	n, err := s.W.Exec(ctx, `DELETE FROM sessions WHERE token_hash = $1`, tokenHash)
	if err != nil {
		return s.Fail(ctx, err, "delete session")
	}
	if n == 0 {
		return s.notFound("session")
	}
	return nil
}
