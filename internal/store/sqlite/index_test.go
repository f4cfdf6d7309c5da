package sqlite

import (
	"context"
	"fmt"
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

// TestTextWrittenTwice: a text two processes each write (neither has met
// it) is two rows; a search finds the traces of both, and each row goes
// once no trace holds it.
func TestTextWrittenTwice(t *testing.T) {
	t.Setenv("LOOKOUT_INDEXER", "off") // searches index their dataset themselves
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "lookout.db")
	a, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	u, err := a.CreateUser(ctx, "u", "x")
	if err != nil {
		t.Fatal(err)
	}
	d, err := a.CreateDataset(ctx, store.Dataset{OwnerID: u.ID, Name: "d"})
	if err != nil {
		t.Fatal(err)
	}
	q, err := search.Parse("zqtwiceword")
	if err != nil {
		t.Fatal(err)
	}
	push := func(st *Store) string {
		t.Helper()
		ids, err := st.AddTraces(ctx, u.ID, d.ID, []store.NewTrace{{Trace: &trace.Trace{
			Events: []trace.Event{{Role: "user", Content: trace.TextContent("the zqtwiceword text")}}}}})
		if err != nil {
			t.Fatal(err)
		}
		return ids[0]
	}
	found := func(st *Store) int {
		t.Helper()
		res, err := st.SearchTraces(ctx, d.ID, q, store.SearchOptions{Page: store.Page{Limit: 10}})
		if err != nil {
			t.Fatal(err)
		}
		return len(res.Traces)
	}
	texts := func() int64 {
		t.Helper()
		var n int64
		if err := a.r.QueryRowContext(ctx, `SELECT count(*) FROM search_texts WHERE text = 'the zqtwiceword text'`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	first := push(a)
	if found(a) != 1 {
		t.Fatal("first push not found")
	}
	second := push(b)
	if got := found(b); got != 2 {
		t.Fatalf("found %d traces, want 2", got)
	}
	if n := texts(); n != 2 {
		t.Fatalf("%d rows of the text, want 2 (each process wrote it)", n)
	}
	third := push(a) // a has met it: no third row
	if got := found(a); got != 3 || texts() != 2 {
		t.Fatalf("found %d traces over %d rows, want 3 over 2", got, texts())
	}
	for i, id := range []string{first, second, third} {
		if err := a.DeleteTrace(ctx, id); err != nil {
			t.Fatal(err)
		}
		if got := found(a); got != 2-i {
			t.Fatalf("after %d deletes: found %d, want %d", i+1, got, 2-i)
		}
	}
	if n := texts(); n != 0 {
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
	t.Setenv("LOOKOUT_INDEXER", "off") // steps are run by hand
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "lookout.db")
	a, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	u, err := a.CreateUser(ctx, "u", "x")
	if err != nil {
		t.Fatal(err)
	}
	d, err := a.CreateDataset(ctx, store.Dataset{OwnerID: u.ID, Name: "d"})
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for range 8 {
		var nts []store.NewTrace
		for range 100 {
			nts = append(nts, store.NewTrace{Trace: &trace.Trace{Events: []trace.Event{{Role: "user", Content: trace.TextContent("zqfirst text")}}}})
		}
		got, err := a.AddTraces(ctx, u.ID, d.ID, nts)
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, got...)
	}
	found := func(st *Store, word string) map[string]bool {
		t.Helper()
		q, err := search.Parse(word)
		if err != nil {
			t.Fatal(err)
		}
		m := map[string]bool{}
		for cursor := ""; ; {
			res, err := st.SearchTraces(ctx, d.ID, q, store.SearchOptions{Page: store.Page{Limit: 500, Cursor: cursor}})
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
	first := 0 // the first trace still queued
	for round, writer := range []*Store{b, a} {
		// A step writes a batch and reads the next (traces 256-511 of
		// those still queued).
		if n, err := a.ix.LoopStep(ctx); err != nil || n != indexer.BatchSize {
			t.Fatalf("round %d: step: %d, %v", round, n, err)
		}
		// A trace of the batch read ahead changes, and a search indexes
		// the whole queue with it.
		edited := ids[first+indexer.BatchSize+7]
		word := fmt.Sprintf("zqedit%d", round)
		if err := writer.AppendEvents(ctx, edited, []trace.Event{{Role: "assistant", Content: trace.TextContent(word)}}); err != nil {
			t.Fatal(err)
		}
		if got := found(writer, word); len(got) != 1 || !got[edited] {
			t.Fatalf("round %d: %s found in %v", round, word, got)
		}
		before := a.ix.Prefetched()
		if _, err := a.ix.LoopStep(ctx); err != nil {
			t.Fatal(err)
		}
		if used := a.ix.Prefetched() - before; used != int64(round) {
			t.Fatalf("round %d: %d batches read ahead were written, want %d", round, used, round)
		}
		if got := found(a, word); len(got) != 1 || !got[edited] {
			t.Fatalf("round %d: after the step, %s found in %v", round, word, got)
		}
		if got := found(a, "zqfirst"); len(got) != len(ids) {
			t.Fatalf("round %d: zqfirst found in %d traces, want %d", round, len(got), len(ids))
		}
		// More traces for the next round.
		var nts []store.NewTrace
		for range 2 * indexer.BatchSize {
			nts = append(nts, store.NewTrace{Trace: &trace.Trace{Events: []trace.Event{{Role: "user", Content: trace.TextContent("zqfirst text")}}}})
		}
		got, err := a.AddTraces(ctx, u.ID, d.ID, nts)
		if err != nil {
			t.Fatal(err)
		}
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
