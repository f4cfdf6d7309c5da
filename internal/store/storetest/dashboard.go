package storetest

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/lookout-dev/lookout/internal/store"
	"github.com/lookout-dev/lookout/internal/trace"
)

// testDashboard: a dataset's dashboard follows its traces as they are
// written, appended to (an error answering a call made before the append
// counts for its tool; the trace's time moves to its events' first
// timestamp) and deleted; other datasets' traces do not count.
func testDashboard(t *testing.T, open func(t *testing.T) store.Store) {
	e := newEnv(t, open)
	alice := e.user("alice")
	d := e.dataset(alice, "dash", false)
	other := e.dataset(alice, "other", false)
	call := trace.Event{Role: "assistant", ToolCalls: []trace.ToolCall{{ID: "c1", Function: trace.Function{Name: "book"}}}}
	ids := e.add(alice.ID, d.ID, store.NewTrace{Trace: &trace.Trace{Events: []trace.Event{{Role: "user", Content: trace.TextContent("hi")}, call}}},
		store.NewTrace{Trace: &trace.Trace{Events: []trace.Event{call}}})
	e.add(alice.ID, other.ID, store.NewTrace{Trace: &trace.Trace{Events: []trace.Event{call, call}}})
	dash := func(q store.DashboardQuery) store.Dashboard {
		t.Helper()
		x, err := e.st.Dashboard(e.ctx, d.ID, q)
		if err != nil {
			t.Fatal(err)
		}
		return x
	}
	if x := dash(store.DashboardQuery{}); x.Totals.Traces != 2 || x.Tools["book"] != (store.ToolStats{Calls: 2}) {
		t.Errorf("written: %d traces, tools %v", x.Totals.Traces, x.Tools)
	}
	at := time.Date(2025, 3, 4, 5, 6, 7, 0, time.UTC)
	if err := e.st.AppendEvents(e.ctx, ids[0], []trace.Event{{Role: "tool", ToolCallID: "c1", Content: trace.TextContent("Error: no seat"),
		Extra: trace.Fields{{Key: "timestamp", Value: json.RawMessage(`"` + at.Format(time.RFC3339) + `"`)}}}}); err != nil {
		t.Fatal(err)
	}
	if x := dash(store.DashboardQuery{}); x.Totals.Traces != 2 || x.Tools["book"] != (store.ToolStats{Calls: 2, Errors: 1}) || !x.From.Equal(at) {
		t.Errorf("appended: %d traces from %v, tools %v", x.Totals.Traces, x.From, x.Tools)
	}
	if x := dash(store.DashboardQuery{From: at, To: at.Add(time.Hour)}); x.Totals.Traces != 1 || len(x.Buckets) == 0 || x.Buckets[0].Traces != 1 {
		t.Errorf("the appended trace's hour: %+v", x)
	}
	if err := e.st.DeleteTrace(e.ctx, ids[1]); err != nil {
		t.Fatal(err)
	}
	if x := dash(store.DashboardQuery{TotalsOnly: true}); x.Totals.Traces != 1 {
		t.Errorf("deleted: %d traces", x.Totals.Traces)
	}
	if _, err := e.st.Dashboard(e.ctx, "00000000-0000-0000-0000-000000000001", store.DashboardQuery{}); err == nil {
		t.Error("a dashboard of no dataset")
	}
}
