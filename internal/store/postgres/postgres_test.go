package postgres

import (
	"context"
	"testing"

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
