package server

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lookout-dev/lookout/internal/policy"
	"github.com/lookout-dev/lookout/internal/store/sqlite"
)

// Issue 19 (cost bounds): one slow or greedy policy must not hold up other
// users. These tests send the requests to a real server over a real
// SQLite store.

// backtrackCheck is issue 19's 1.5 KB request: each 'x' makes the
// backtracking engine try 2^22 ways (about half a second), and find tries
// all 60. It ran 28.6 s, and on after its client left.
func backtrackCheck() string {
	content := strings.Repeat("x"+strings.Repeat("a", 22)+"!", 60)
	return `{"policy": ` + jsonStr("raise \"x\" if:\n    (m: Message)\n    any(find(\"x(?!(a+)+$)\", m.content))\n") +
		`, "messages": [{"role": "user", "content": "` + content + `"}]}`
}

func newCostFixture(t *testing.T, cfg Config) *fixture {
	t.Helper()
	st, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "lookout.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	f := newFixture(t, st, cfg)
	f.addUser("alice")
	return f
}

func TestCheckTimeBudgetCoversRegex(t *testing.T) {
	f := newCostFixture(t, Config{})
	start := time.Now()
	r := f.doJSON("POST", "/api/v1/policy/check", "alice", backtrackCheck())
	d := time.Since(start)
	t.Logf("answered %d after %v: %s", r.status, d, r)
	if r.status != 422 || !strings.Contains(r.String(), `"class":"BudgetExceeded"`) || !strings.Contains(r.String(), "time budget of 10s") {
		t.Fatalf("want 422 BudgetExceeded (time budget of 10s), got %d %s", r.status, r)
	}
	if d > 20*time.Second { // the budget is 10 s; generous for -race
		t.Errorf("the check answered after %v", d)
	}
}

// TestDisconnectStopsCheck: a client that goes away ends its check, also
// in the middle of a backtracking match.
func TestDisconnectStopsCheck(t *testing.T) {
	type done struct {
		err error
		at  time.Time
	}
	checks := make(chan done, 1)
	testHookCheckDone = func(err error) { checks <- done{err, time.Now()} }
	t.Cleanup(func() { testHookCheckDone = nil })
	f := newCostFixture(t, Config{})
	ctx, cancel := context.WithCancel(context.Background())
	req, err := http.NewRequestWithContext(ctx, "POST", f.hs.URL+"/api/v1/policy/check", strings.NewReader(backtrackCheck()))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+f.keys["alice"])
	req.Header.Set("Content-Type", "application/json")
	var cancelled time.Time
	time.AfterFunc(500*time.Millisecond, func() { cancelled = time.Now(); cancel() })
	if resp, err := f.hs.Client().Do(req); err == nil {
		resp.Body.Close()
		t.Fatalf("the request was answered (%d) before the client left", resp.StatusCode)
	}
	select {
	case d := <-checks:
		lag := d.at.Sub(cancelled)
		t.Logf("the check ended %v after the client left: %v", lag, d.err)
		var re *policy.RuntimeError
		if d.err == nil || !strings.Contains(d.err.Error(), "cancelled") {
			t.Errorf("want a cancelled check, got %v (%T)", d.err, re)
		}
		if lag > 2*time.Second { // milliseconds in practice; generous for -race
			t.Errorf("the check ran %v after its client left", lag)
		}
	case <-time.After(8 * time.Second):
		t.Fatal("the check was still running 8 s after its client left")
	}
}

// TestCheckViolationCap: issue 19's 37 KB request, every ordered pair of
// 1,000 messages, answered 94 MB; now the first 1,000 and "truncated".
func TestCheckViolationCap(t *testing.T) {
	f := newCostFixture(t, Config{})
	var msgs []string
	for i := range 1000 {
		msgs = append(msgs, fmt.Sprintf(`{"role": "user", "content": "m%d"}`, i))
	}
	body := `{"policy": ` + jsonStr("raise PolicyViolation(\"different\", a, b) if:\n    (a: Message)\n    (b: Message)\n    a.content != b.content\n") +
		`, "messages": [` + strings.Join(msgs, ",") + `]}`
	r := f.must(200, "POST", "/api/v1/policy/check", "alice", body)
	var out struct {
		Errors    []json.RawMessage
		Truncated bool
	}
	r.json(t, &out)
	if len(out.Errors) != 1000 || !out.Truncated {
		t.Fatalf("%d violations, truncated %v; want 1000 and true", len(out.Errors), out.Truncated)
	}
	if len(r.body) > 2<<20 {
		t.Errorf("the answer is %d bytes", len(r.body))
	}
	// A result under the cap has no "truncated" member.
	r = f.must(200, "POST", "/api/v1/policy/check", "alice", strings.Replace(body, strings.Join(msgs, ","), strings.Join(msgs[:3], ","), 1))
	if strings.Contains(r.String(), "truncated") {
		t.Errorf("untruncated result: %s", r)
	}
}

// TestHugePolicyRefused: a 400 KB policy (200,000 attributes) ran for
// minutes when saved or checked; it is refused within the budget.
func TestHugePolicyRefused(t *testing.T) {
	f := newCostFixture(t, Config{})
	src := "raise \"x\" if:\n    (m: Message)\n    m.content" + strings.Repeat(".a", 200_000) + " == 1\n"
	ds := f.createDataset("alice", "d", false)
	for _, c := range []struct{ path, body string }{
		{"/api/v1/policy/check", `{"policy": ` + jsonStr(src) + `, "messages": []}`},
		{"/api/v1/datasets/" + ds + "/policies", `{"name": "huge", "source": ` + jsonStr(src) + `}`},
	} {
		start := time.Now()
		r := f.doJSON("POST", c.path, "alice", c.body)
		d := time.Since(start)
		t.Logf("%s: %d after %v", c.path, r.status, d)
		if r.status != 422 || len(r.body) > 64<<10 {
			t.Errorf("%s: want a short 422, got %d (%d bytes)", c.path, r.status, len(r.body))
		}
		if d > 30*time.Second { // the budget is 10 s; generous for -race
			t.Errorf("%s: refused after %v", c.path, d)
		}
	}
}

// TestCheckFloodLeavesPushes: 16 expensive checks at once take at most one
// slot per core; the rest wait briefly or get 503 with Retry-After, and a
// push meanwhile is answered promptly.
func TestCheckFloodLeavesPushes(t *testing.T) {
	f := newCostFixture(t, Config{})
	ds := f.createDataset("alice", "pushes", false)
	push := func(i int) time.Duration {
		start := time.Now()
		f.must(200, "POST", "/api/v1/push/trace", "alice",
			fmt.Sprintf(`{"dataset": %q, "messages": [[{"role": "user", "content": "push %d"}]]}`, ds, i))
		return time.Since(start)
	}
	push(0) // warm up the dataset and the connection pool
	var wg sync.WaitGroup
	statuses := make(chan response, 16)
	for range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			statuses <- f.doJSON("POST", "/api/v1/policy/check", "alice", backtrackCheck())
		}()
	}
	time.Sleep(500 * time.Millisecond) // the flood is under way
	var worst time.Duration
	for i := 1; i <= 5; i++ {
		worst = max(worst, push(i))
		time.Sleep(100 * time.Millisecond)
	}
	t.Logf("slowest of 5 pushes during the flood: %v", worst)
	if worst > time.Second {
		t.Errorf("a push took %v during a flood of checks", worst)
	}
	wg.Wait()
	close(statuses)
	busy := 0
	for r := range statuses {
		switch r.status {
		case 503:
			busy++
			if r.header.Get("Retry-After") == "" || !strings.Contains(r.String(), `"code":"unavailable"`) {
				t.Errorf("503 without Retry-After or code: %v %s", r.header, r)
			}
		case 422: // ran and hit the budget
		default:
			t.Errorf("check: %d %s", r.status, r)
		}
	}
	if busy == 0 {
		t.Error("16 expensive checks at once: none was refused")
	}
	t.Logf("%d of 16 checks refused with 503", busy)
}
