package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"

	"github.com/lookout-dev/lookout/internal/store"
	"github.com/lookout-dev/lookout/internal/store/postgres"
	"github.com/lookout-dev/lookout/internal/store/sqlite"
)

// defaultDB is the SQLite file used when --db is not given.
const defaultDB = "lookout.db"

const dbFlagHelp = "database: a SQLite file (created if missing) or a postgres:// URL"

// openStore opens (creating and migrating as needed) the store a --db flag
// names: a postgres:// or postgresql:// URL, else a SQLite file path.
func openStore(ctx context.Context, db string) (store.Store, error) {
	if isPostgresURL(db) {
		return postgres.Open(ctx, db)
	}
	return sqlite.Open(ctx, db)
}

// openExistingStore opens a database that must already exist: commands
// that only read or rebuild derived data must not leave an empty database
// behind a mistyped --db (serve and key/user create may create one).
func openExistingStore(ctx context.Context, db string) (store.Store, error) {
	if !isPostgresURL(db) {
		if _, err := os.Stat(db); errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("no database at %s (this command does not create one: check --db)", db)
		}
	}
	return openStore(ctx, db)
}

func isPostgresURL(db string) bool {
	return strings.HasPrefix(db, "postgres://") || strings.HasPrefix(db, "postgresql://")
}

// redactDB hides a password in a database URL for printing.
func redactDB(db string) string {
	if !isPostgresURL(db) {
		return db
	}
	scheme, rest, _ := strings.Cut(db, "://")
	at := strings.LastIndex(rest, "@")
	if at < 0 {
		return db
	}
	user, _, hasPW := strings.Cut(rest[:at], ":")
	if !hasPW {
		return db
	}
	return scheme + "://" + user + ":xxxxx" + rest[at:]
}
