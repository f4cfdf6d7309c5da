package server

import (
	"strings"
	"testing"
	"time"

	"github.com/lookout-dev/lookout/internal/store"
)

// TestIndexBacklogRefusesWrites checks the back-pressure of the search
// index: while the work queued for it is more than IndexCatchUp (as the
// monitor last read it), a push and an OTLP request get 503 with a
// Retry-After that grows with the work, capped at 30 s, and a message that
// says why; reads go on; once the backlog is read as small, writes pass.
func TestIndexBacklogRefusesWrites(t *testing.T) {
	forEachBackend(t, func(t *testing.T, st storeUnderTest) {
		f := newFixture(t, st, Config{IndexCatchUp: 10 * time.Second})
		f.addUser("alice")
		push := `{"dataset": "bp", "messages": [[{"role": "user", "content": "hello"}]]}`
		f.must(200, "POST", "/api/v1/push/trace", "alice", push)

		for _, c := range []struct {
			catchUp time.Duration
			retry   string
		}{{15 * time.Second, "5"}, {5 * time.Minute, "30"}} {
			f.srv.monitor.last.Store(&store.IndexBacklog{Queued: 123456, CatchUp: c.catchUp})
			r := f.doJSON("POST", "/api/v1/push/trace", "alice", push)
			if r.status != 503 || r.header.Get("Retry-After") != c.retry || !strings.Contains(r.String(), "123456 traces") {
				t.Fatalf("push with %v of index work queued: %d, Retry-After %q, %s", c.catchUp, r.status, r.header.Get("Retry-After"), r)
			}
			r = f.do("POST", "/v1/traces", "alice", strings.NewReader(`{"resourceSpans": []}`), "Content-Type", "application/json")
			if r.status != 503 || r.header.Get("Retry-After") != c.retry {
				t.Fatalf("OTLP with %v of index work queued: %d, Retry-After %q, %s", c.catchUp, r.status, r.header.Get("Retry-After"), r)
			}
			f.must(200, "GET", "/api/v1/datasets", "alice", "")
		}
		f.srv.monitor.last.Store(&store.IndexBacklog{Queued: 10, CatchUp: 9 * time.Second})
		f.must(200, "POST", "/api/v1/push/trace", "alice", push)
	})
}
