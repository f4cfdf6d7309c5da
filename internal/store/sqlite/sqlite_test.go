package sqlite

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/lookout-dev/lookout/internal/store"
	"github.com/lookout-dev/lookout/internal/store/storetest"
)

func open(t *testing.T) store.Store {
	t.Helper()
	st, err := Open(context.Background(), filepath.Join(t.TempDir(), "lookout.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := st.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return st
}

func TestStore(t *testing.T) {
	storetest.Run(t, open)
}

// TestCrash kills a writer process with SIGKILL mid-stream; every
// acknowledged trace must survive and no batch be partial.
func TestCrash(t *testing.T) {
	storetest.Crash(t,
		func(t *testing.T) string { return filepath.Join(t.TempDir(), "lookout.db") },
		func(ctx context.Context, dsn string) (store.Store, error) { return Open(ctx, dsn) })
}
