package sqlite

import (
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"testing"

	"github.com/lookout-dev/lookout/internal/search"
	"github.com/lookout-dev/lookout/internal/store"
	"github.com/lookout-dev/lookout/internal/store/internal/indexer"
	"github.com/lookout-dev/lookout/internal/store/internal/storeutil"
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

// twoProcesses opens two stores on one new file, as a CLI beside the
// server, with their background indexers off (searches index their
// dataset themselves, or a test runs the loop's steps), and a dataset.
func twoProcesses(t *testing.T) (a, b *Store, userID, datasetID string) {
	t.Helper()
	t.Setenv("LOOKOUT_INDEXER", "off")
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "lookout.db")
	var err error
	if a, err = Open(ctx, path); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close() })
	if b, err = Open(ctx, path); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	u, err := a.CreateUser(ctx, "u", "x")
	if err != nil {
		t.Fatal(err)
	}
	d, err := a.CreateDataset(ctx, store.Dataset{OwnerID: u.ID, Name: "d"})
	if err != nil {
		t.Fatal(err)
	}
	return a, b, u.ID, d.ID
}

// pushTexts stores n traces, each one user message of text, through st.
func pushTexts(t *testing.T, st *Store, userID, datasetID string, n int, text string) []string {
	t.Helper()
	nts := make([]store.NewTrace, n)
	for i := range nts {
		nts[i] = store.NewTrace{Trace: &trace.Trace{Events: []trace.Event{{Role: "user", Content: trace.TextContent(text)}}}}
	}
	ids, err := st.AddTraces(context.Background(), userID, datasetID, nts)
	if err != nil {
		t.Fatal(err)
	}
	return ids
}

// searchIDs is the set of the traces a search through st finds, every page.
func searchIDs(t *testing.T, st *Store, datasetID, query string) map[string]bool {
	t.Helper()
	q, err := search.Parse(query)
	if err != nil {
		t.Fatal(err)
	}
	m := map[string]bool{}
	for cursor := ""; ; {
		res, err := st.SearchTraces(context.Background(), datasetID, q, store.SearchOptions{Page: store.Page{Limit: 500, Cursor: cursor}})
		if err != nil {
			t.Fatal(err)
		}
		for _, tr := range res.Traces {
			m[tr.ID] = true
		}
		if cursor = res.Next; cursor == "" {
			return m
		}
	}
}

// TestTextCacheAcrossProcesses: two stores on one file (a CLI beside the
// server). One indexes a text and keeps its id; the other deletes the only
// trace holding it, and its indexer deletes the text; the first, given the
// text again, must not reuse the id it kept: a search finds the new trace.
func TestTextCacheAcrossProcesses(t *testing.T) {
	a, b, u, d := twoProcesses(t)
	const text, word = "the zqalphaword text", "zqalphaword"
	first := pushTexts(t, a, u, d, 1, text)[0]
	if got := searchIDs(t, a, d, word); len(got) != 1 || !got[first] {
		t.Fatalf("first push: found %v", got)
	}
	if err := b.DeleteTrace(context.Background(), first); err != nil {
		t.Fatal(err)
	}
	if got := searchIDs(t, b, d, word); len(got) != 0 {
		t.Fatalf("after the delete: found %v", got)
	}
	second := pushTexts(t, a, u, d, 1, text)[0]
	if got := searchIDs(t, a, d, word); len(got) != 1 || !got[second] {
		t.Fatalf("the text pushed again after the other store deleted it: found %v, want [%s]", got, second)
	}
}

// TestTextWrittenTwice: a text two processes each write (neither has met
// it) is two rows; a search finds the traces of both, and each row goes
// once no trace holds it.
func TestTextWrittenTwice(t *testing.T) {
	a, b, u, d := twoProcesses(t)
	ctx := context.Background()
	const text, word = "the zqtwiceword text", "zqtwiceword"
	rows := func() int64 {
		t.Helper()
		var n int64
		if err := a.r.QueryRowContext(ctx, `SELECT count(*) FROM search_texts WHERE text = ?`, text).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	first := pushTexts(t, a, u, d, 1, text)[0]
	if len(searchIDs(t, a, d, word)) != 1 {
		t.Fatal("first push not found")
	}
	second := pushTexts(t, b, u, d, 1, text)[0]
	if got := searchIDs(t, b, d, word); len(got) != 2 {
		t.Fatalf("found %d traces, want 2", len(got))
	}
	if n := rows(); n != 2 {
		t.Fatalf("%d rows of the text, want 2 (each process wrote it)", n)
	}
	third := pushTexts(t, a, u, d, 1, text)[0] // a has met it: no third row
	if got := searchIDs(t, a, d, word); len(got) != 3 || rows() != 2 {
		t.Fatalf("found %d traces over %d rows, want 3 over 2", len(got), rows())
	}
	for i, id := range []string{first, second, third} {
		if err := a.DeleteTrace(ctx, id); err != nil {
			t.Fatal(err)
		}
		if got := searchIDs(t, a, d, word); len(got) != 2-i {
			t.Fatalf("after %d deletes: found %d, want %d", i+1, len(got), 2-i)
		}
	}
	if n := rows(); n != 0 {
		t.Fatalf("%d rows of the text left once no trace holds it", n)
	}
}

// TestTextCacheGenerations: a text met again stays cached when the newer
// generation fills; one not met again is dropped with the older.
func TestTextCacheGenerations(t *testing.T) {
	var c textCache
	c.learned(0, 0, nil) // starts the cache at gen 0
	hash := func(i int) storeutil.TextHash {
		var h storeutil.TextHash
		h[0], h[1], h[2] = byte(i), byte(i>>8), byte(i>>16)
		return h
	}
	keep, drop := hash(1<<20-1), hash(1<<20-2)
	c.learned(0, 0, map[storeutil.TextHash]int64{keep: 1, drop: 2})
	fill := func(from int) {
		m := map[storeutil.TextHash]int64{}
		for i := from; i < from+maxCachedTexts; i++ {
			m[hash(i)] = int64(i + 10)
		}
		c.learned(0, 0, m)
	}
	lookup := func(h storeutil.TextHash) bool {
		got := map[storeutil.TextHash]int64{}
		c.known(0, map[storeutil.TextHash]string{h: ""}, got)
		_, ok := got[h]
		return ok
	}
	fill(0)
	if !lookup(keep) { // met again: moves into the newer generation
		t.Fatal("a text of the older generation was not found")
	}
	fill(maxCachedTexts)
	if !lookup(keep) {
		t.Error("a text met again was dropped")
	}
	if lookup(drop) {
		t.Error("a text not met again for two generations is still cached")
	}
	if len(c.ids)+len(c.old) > 2*maxCachedTexts {
		t.Errorf("the cache holds %d entries", len(c.ids)+len(c.old))
	}
}

// TestPrefetchedBatch: the background loop reads the next batch while a
// step writes. Here another process (a second store on the file), then
// this process's own search, index a newer version of a trace of the batch
// read ahead: after the other process's write the batch is read again;
// after its own search's, it is written without that trace. Either way
// the stale document must not be written over the newer one.
func TestPrefetchedBatch(t *testing.T) {
	a, b, u, d := twoProcesses(t) // steps are run by hand
	ctx := context.Background()
	ids := pushTexts(t, a, u, d, 800, "zqfirst text")
	found := func(st *Store, word string) map[string]bool { return searchIDs(t, st, d, word) }
	first := 0 // the first trace still queued
	for round, writer := range []*Store{b, a} {
		// A step writes a batch and reads the next (traces 256-511 of
		// those still queued).
		if n, err := a.ix.LoopStep(ctx); err != nil || n != indexer.BatchSize {
			t.Fatalf("round %d: step: %d, %v", round, n, err)
		}
		// Every other trace of this round's changes (the batch read ahead
		// holds some of them), and a search indexes the whole queue with
		// them.
		word := fmt.Sprintf("zqedit%d", round)
		edited := map[string]bool{}
		for k, id := range ids[first:] {
			if k%2 != 0 {
				continue
			}
			edited[id] = true
			if err := writer.AppendEvents(ctx, id, []trace.Event{{Role: "assistant", Content: trace.TextContent(word)}}); err != nil {
				t.Fatal(err)
			}
		}
		if got := found(writer, word); !maps.Equal(got, edited) {
			t.Fatalf("round %d: %s found in %d traces, want %d", round, word, len(got), len(edited))
		}
		before := a.ix.Prefetched()
		if _, err := a.ix.LoopStep(ctx); err != nil {
			t.Fatal(err)
		}
		if used := a.ix.Prefetched() - before; used != int64(round) {
			t.Fatalf("round %d: %d batches read ahead were written, want %d", round, used, round)
		}
		if got := found(a, word); !maps.Equal(got, edited) {
			t.Fatalf("round %d: after the step, %s found in %d traces, want %d", round, word, len(got), len(edited))
		}
		if got := found(a, "zqfirst"); len(got) != len(ids) {
			t.Fatalf("round %d: zqfirst found in %d traces, want %d", round, len(got), len(ids))
		}
		// More traces for the next round.
		got := pushTexts(t, a, u, d, 2*indexer.BatchSize, "zqfirst text")
		first = len(ids)
		ids = append(ids, got...)
	}
	// Undisturbed, the batch read ahead is written.
	before := a.ix.Prefetched()
	for range 2 {
		if _, err := a.ix.LoopStep(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if a.ix.Prefetched() != before+1 {
		t.Fatalf("%d batches read ahead were written, want 1", a.ix.Prefetched()-before)
	}
	if got := found(a, "zqfirst"); len(got) != len(ids) {
		t.Fatalf("zqfirst found in %d traces, want %d", len(got), len(ids))
	}
}
