package postgres

import (
	"context"
	"io/fs"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/pressly/goose/v3"

	"github.com/lookout-dev/lookout/internal/store"
	"github.com/lookout-dev/lookout/internal/store/postgres/pgtest"
	"github.com/lookout-dev/lookout/internal/store/storetest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

func open(t *testing.T) store.Store {
	t.Helper()
	st, err := Open(context.Background(), pgtest.URL(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

func TestStore(t *testing.T) {
	storetest.Run(t, open)
}

// TestCrash kills a writer process with SIGKILL mid-stream; every
// acknowledged trace must survive and no batch be partial.
func TestCrash(t *testing.T) {
	storetest.Crash(t, func(t *testing.T) string { return pgtest.URL(t) },
		func(ctx context.Context, dsn string) (store.Store, error) { return Open(ctx, dsn) })
}

// TestMigratePolicyMode: a policy saved before policies had a mode comes out
// of the migration as log, and the column takes nothing but block or log.
func TestMigratePolicyMode(t *testing.T) {
	ctx := context.Background()
	url := pgtest.URL(t)
	cc, err := pgx.ParseConfig(url)
	if err != nil {
		t.Fatal(err)
	}
	db := stdlib.OpenDB(*cc)
	defer db.Close()
	sub, err := fs.Sub(migrations, "migrations")
	if err != nil {
		t.Fatal(err)
	}
	p, err := goose.NewProvider(goose.DialectPostgres, db, sub, goose.WithDisableGlobalRegistry(true), goose.WithAllowOutofOrder(true))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.UpTo(ctx, 8); err != nil {
		t.Fatal(err)
	}
	const user, dataset, policy = "00000000-0000-4000-8000-000000000001", "00000000-0000-4000-8000-000000000002", "00000000-0000-4000-8000-000000000003"
	for _, q := range []string{
		`INSERT INTO users (id, name, created_at) VALUES ('` + user + `', 'alice', now())`,
		`INSERT INTO datasets (id, owner_id, name, created_at) VALUES ('` + dataset + `', '` + user + `', 'd', now())`,
		`INSERT INTO policies (id, dataset_id, name, source, created_at, updated_at) VALUES ('` + policy + `', '` + dataset + `', 'old', 'raise "x"', now(), now())`,
	} {
		if _, err := db.ExecContext(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	st, err := Open(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if got, err := st.Policy(ctx, policy); err != nil || got.Mode != store.PolicyLog || got.Source != `raise "x"` {
		t.Errorf("the policy saved before the migration: %+v, %v; want mode log", got, err)
	}
	if _, err := st.pool.Exec(ctx, `UPDATE policies SET mode = 'warn'`); err == nil {
		t.Error("the mode column took 'warn'")
	}
}
