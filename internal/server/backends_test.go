package server

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/lookout-dev/lookout/internal/store"
	"github.com/lookout-dev/lookout/internal/store/postgres"
	"github.com/lookout-dev/lookout/internal/store/postgres/pgtest"
	"github.com/lookout-dev/lookout/internal/store/sqlite"
)

// TestMain stops the throwaway PostgreSQL cluster pgtest may start and
// fails the run when the tests leave goroutines running (leaktest).
func TestMain(m *testing.M) { pgtest.Main(m) }

type storeUnderTest = store.Store

// forEachBackend runs fn against a fresh store of every backend: SQLite in a
// temporary file, and PostgreSQL in a fresh schema (of the server
// LOOKOUT_TEST_POSTGRES names, else of a throwaway cluster). Neither is ever
// skipped.
func forEachBackend(t *testing.T, fn func(t *testing.T, st store.Store)) {
	t.Run("sqlite", func(t *testing.T) {
		st, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "lookout.db"))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		fn(t, st)
	})
	t.Run("postgres", func(t *testing.T) {
		st, err := postgres.Open(context.Background(), pgtest.URL(t))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		fn(t, st)
	})
}
