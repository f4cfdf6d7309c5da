package sqlite

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/lookout-dev/lookout/internal/search"
	"github.com/lookout-dev/lookout/internal/store"
	"github.com/lookout-dev/lookout/internal/store/storetest"
)

// TestIndexFileRebuilt deletes the search index's file beside a database
// and opens the database again: the index is rebuilt from the traces, and
// a search issued at once finds every trace of its dataset, once. The
// background indexer is kept off for the second open, so that the search
// must index its dataset's queued traces itself.
func TestIndexFileRebuilt(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "lookout.db")
	st, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	u, err := st.CreateUser(ctx, "u", "x")
	if err != nil {
		t.Fatal(err)
	}
	var datasets []string
	tau := storetest.TauBench(t)
	for _, name := range []string{"a", "b"} {
		d, err := st.CreateDataset(ctx, store.Dataset{OwnerID: u.ID, Name: name})
		if err != nil {
			t.Fatal(err)
		}
		datasets = append(datasets, d.ID)
		batch := make([]store.NewTrace, len(tau))
		for i, tr := range tau {
			batch[i] = storetest.NewTraceOf(tr, "")
		}
		if _, err := st.AddTraces(ctx, u.ID, d.ID, batch); err != nil {
			t.Fatal(err)
		}
	}
	// Everything indexed: the queue is empty when the file goes.
	if _, err := st.SearchIndexStats(ctx); err != nil {
		t.Fatal(err)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	for _, suffix := range []string{"", "-wal", "-shm"} {
		if err := os.Remove(IndexPath(path) + suffix); err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
	}

	t.Setenv("LOOKOUT_INDEXER", "off")
	st, err = Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	q, err := search.Parse("airline")
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range datasets {
		res, err := st.SearchTraces(ctx, id, q, store.SearchOptions{Page: store.Page{Limit: 1000}, CountCap: 1000})
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Traces) != len(tau) || res.Total != int64(len(tau)) || res.Estimate {
			t.Fatalf("dataset %s right after the index file was rebuilt: %d traces on the page, total %d (estimate %v), want %d",
				id, len(res.Traces), res.Total, res.Estimate, len(tau))
		}
	}
}
