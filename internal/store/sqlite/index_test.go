package sqlite

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/lookout-dev/lookout/internal/search"
	"github.com/lookout-dev/lookout/internal/store"
	"github.com/lookout-dev/lookout/internal/store/storetest"
	"github.com/lookout-dev/lookout/internal/trace"
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

// TestTextCacheAcrossProcesses: two stores on one file (a CLI beside the
// server). One indexes a text and keeps its id; the other deletes the only
// trace holding it, and its indexer deletes the text; the first, given the
// text again, must not reuse the id it kept: a search finds the new trace.
func TestTextCacheAcrossProcesses(t *testing.T) {
	t.Setenv("LOOKOUT_INDEXER", "off") // searches index their dataset themselves
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "lookout.db")
	a, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	u, err := a.CreateUser(ctx, "u", "x")
	if err != nil {
		t.Fatal(err)
	}
	d, err := a.CreateDataset(ctx, store.Dataset{OwnerID: u.ID, Name: "d"})
	if err != nil {
		t.Fatal(err)
	}
	q, err := search.Parse("zqalphaword")
	if err != nil {
		t.Fatal(err)
	}
	push := func(st *Store) string {
		t.Helper()
		ids, err := st.AddTraces(ctx, u.ID, d.ID, []store.NewTrace{{Trace: &trace.Trace{
			Events: []trace.Event{{Role: "user", Content: trace.TextContent("the zqalphaword text")}}}}})
		if err != nil {
			t.Fatal(err)
		}
		return ids[0]
	}
	found := func(st *Store) []string {
		t.Helper()
		res, err := st.SearchTraces(ctx, d.ID, q, store.SearchOptions{Page: store.Page{Limit: 10}})
		if err != nil {
			t.Fatal(err)
		}
		var ids []string
		for _, tr := range res.Traces {
			ids = append(ids, tr.ID)
		}
		return ids
	}
	first := push(a)
	if got := found(a); len(got) != 1 || got[0] != first {
		t.Fatalf("first push: found %v", got)
	}
	b, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if err := b.DeleteTrace(ctx, first); err != nil {
		t.Fatal(err)
	}
	if got := found(b); len(got) != 0 {
		t.Fatalf("after the delete: found %v", got)
	}
	second := push(a)
	if got := found(a); len(got) != 1 || got[0] != second {
		t.Fatalf("the text pushed again after the other store deleted it: found %v, want [%s]", got, second)
	}
}
