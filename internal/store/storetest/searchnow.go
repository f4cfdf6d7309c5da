package storetest

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"testing"

	"github.com/lookout-dev/lookout/internal/search"
	"github.com/lookout-dev/lookout/internal/store"
	"github.com/lookout-dev/lookout/internal/trace"
)

// testSearchRightAfterWrite checks that the search index, written in the
// background apart from the traces, never makes a search miss what was
// acknowledged before it: while other goroutines push batches and delete
// in another dataset (keeping the indexer busy), each trace added to the
// dataset under test, and each event appended to one, is found by a search
// issued right after the write returned; a deleted trace is not.
func testSearchRightAfterWrite(t *testing.T, open func(t *testing.T) store.Store) {
	e := newEnv(t, open)
	u := e.user("now")
	d := e.dataset(u, "now", false)
	busy := e.dataset(u, "busy", false)
	tau := TauBench(t)

	ctx, cancel := context.WithCancel(e.ctx)
	var wg sync.WaitGroup
	for w := range 2 {
		wg.Go(func() {
			for b := 0; b < 40 && ctx.Err() == nil; b++ {
				batch := make([]store.NewTrace, 20)
				for i := range batch {
					batch[i] = store.NewTrace{Trace: tau[(w*37+b*20+i)%len(tau)]}
				}
				ids, err := e.st.AddTraces(ctx, u.ID, busy.ID, batch)
				if err != nil {
					if ctx.Err() == nil {
						t.Errorf("background push: %v", err)
					}
					return
				}
				if b%3 == 0 {
					e.st.DeleteTrace(ctx, ids[0])
				}
			}
		})
	}
	defer func() { cancel(); wg.Wait() }()

	find := func(src string) int {
		t.Helper()
		q, err := search.Parse(src)
		if err != nil {
			t.Fatal(err)
		}
		res, err := e.st.SearchTraces(e.ctx, d.ID, q, store.SearchOptions{Page: store.Page{Limit: 10}})
		if err != nil {
			t.Fatalf("search %q: %v", src, err)
		}
		return len(res.Traces)
	}
	// A trace with no text to index (no events) is indexed too, and found
	// by its metadata.
	e.add(u.ID, d.ID, store.NewTrace{Trace: &trace.Trace{Metadata: json.RawMessage(`{"empty": "zqempty"}`)}})
	if n := find("meta:empty=zqempty"); n != 1 {
		t.Fatalf("a trace without events: a search right after its push finds %d traces, want 1", n)
	}
	for i := range 15 {
		word := fmt.Sprintf("zqnow%04dx", i)
		tr := &trace.Trace{Events: []trace.Event{{Role: "user", Content: trace.TextContent("please find " + word)}}}
		// Handed over, as the server's push does: the indexer takes the
		// trace as it is instead of decoding it.
		res, err := e.st.AddTracesWith(e.ctx, u.ID, d.ID, []store.NewTrace{{Trace: tr}}, store.AddOptions{HandOver: true})
		if err != nil {
			t.Fatal(err)
		}
		ids := res.IDs
		if n := find(word); n != 1 {
			t.Fatalf("trace %d: a search right after its push finds %d traces, want 1", i, n)
		}
		more := word + "y"
		if err := e.st.AppendEvents(e.ctx, ids[0], []trace.Event{{Role: "assistant", Content: trace.TextContent("found " + more)}}); err != nil {
			t.Fatal(err)
		}
		if n := find(more); n != 1 {
			t.Fatalf("trace %d: a search right after an append finds %d traces, want 1", i, n)
		}
		if i%5 == 4 {
			if err := e.st.DeleteTrace(e.ctx, ids[0]); err != nil {
				t.Fatal(err)
			}
			if n := find(word); n != 0 {
				t.Fatalf("trace %d: a search right after its delete finds %d traces, want 0", i, n)
			}
		}
	}
}
