package storetest

import (
	"context"
	"database/sql"
	"testing"

	"github.com/pressly/goose/v3"

	"github.com/lookout-dev/lookout/internal/store"
)

// MigratePolicyMode checks that a policy saved before policies had a mode
// comes out of the migration as log, and that the column takes nothing but
// block or log. p migrates db, a new database of the backend, in which now
// is the SQL of a time; once db is closed, open opens the store on it
// (closed when t ends) with a function that runs a statement on it.
func MigratePolicyMode(t *testing.T, p *goose.Provider, db *sql.DB, now string, open func() (store.Store, func(query string) error)) {
	t.Helper()
	ctx := context.Background()
	if _, err := p.UpTo(ctx, 8); err != nil {
		t.Fatal(err)
	}
	const user, dataset, policy = "00000000-0000-4000-8000-000000000001", "00000000-0000-4000-8000-000000000002", "00000000-0000-4000-8000-000000000003"
	for _, q := range []string{
		`INSERT INTO users (id, name, created_at) VALUES ('` + user + `', 'alice', ` + now + `)`,
		`INSERT INTO datasets (id, owner_id, name, created_at) VALUES ('` + dataset + `', '` + user + `', 'd', ` + now + `)`,
		`INSERT INTO policies (id, dataset_id, name, source, created_at, updated_at) VALUES ('` + policy + `', '` + dataset + `', 'old', 'raise "x"', ` + now + `, ` + now + `)`,
	} {
		if _, err := db.ExecContext(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	st, exec := open()
	if got, err := st.Policy(ctx, policy); err != nil || got.Mode != store.PolicyLog || got.Source != `raise "x"` {
		t.Errorf("the policy saved before the migration: %+v, %v; want mode log", got, err)
	}
	if err := exec(`UPDATE policies SET mode = 'warn'`); err == nil {
		t.Error("the mode column took 'warn'")
	}
}
