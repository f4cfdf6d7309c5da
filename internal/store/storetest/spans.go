package storetest

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/lookout-dev/lookout/internal/store"
	"github.com/lookout-dev/lookout/internal/trace"
)

// spanBuild makes a trace with one user event per span, its content the
// span's data, and fails for a span whose data is "bad". Builds may run at
// once: seen is guarded.
func spanBuild(mu *sync.Mutex, seen *[][]string) func(string, [][]byte) (*trace.Trace, error) {
	return func(otelID string, spans [][]byte) (*trace.Trace, error) {
		var got []string
		t := &trace.Trace{Name: "otel " + otelID}
		for _, s := range spans {
			got = append(got, string(s))
			if string(s) == "bad" {
				return nil, errors.New("a bad span")
			}
			t.Events = append(t.Events, trace.Event{Role: "user", Content: trace.TextContent(string(s))})
		}
		mu.Lock()
		*seen = append(*seen, got)
		mu.Unlock()
		return t, nil
	}
}

func contents(t *testing.T, e *env, id string) string {
	t.Helper()
	var out []string
	for _, ev := range e.get(id).Trace.Events {
		out = append(out, ev.Content.Text)
	}
	return strings.Join(out, ",")
}

func spans(kv ...string) []store.StoredSpan {
	var out []store.StoredSpan
	for i := 0; i < len(kv); i += 2 {
		out = append(out, store.StoredSpan{SpanID: kv[i], Data: []byte(kv[i+1])})
	}
	return out
}

func testAddSpans(t *testing.T, open func(t *testing.T) store.Store) {
	e := newEnv(t, open)
	alice := e.user("alice")
	d := e.dataset(alice, "otel", false)
	other := e.dataset(alice, "other", false)
	var seen [][]string
	var mu sync.Mutex
	build := spanBuild(&mu, &seen)
	add := func(datasetID string, groups ...store.SpanGroup) ([]string, []error) {
		t.Helper()
		ids, errs, err := e.st.AddSpans(e.ctx, alice.ID, datasetID, groups, build)
		if err != nil {
			t.Fatalf("AddSpans: %v", err)
		}
		if len(ids) != len(groups) || len(errs) != len(groups) {
			t.Fatalf("AddSpans: %d ids and %d errors for %d groups", len(ids), len(errs), len(groups))
		}
		return ids, errs
	}
	const a, b = "0af7651916cd43dd8448eb211c80319c", "4bf92f3577b34da6a3ce929d0e0e4736"

	// First spans of a: a new trace, spans in id order, a repeated span id
	// within the request taken once (the last).
	ids, errs := add(d.ID, store.SpanGroup{OTelTraceID: a, Spans: spans("s2", "two", "s1", "one-old", "s1", "one")})
	if errs[0] != nil {
		t.Fatal(errs[0])
	}
	ta := ids[0]
	if got := contents(t, e, ta); got != "one,two" {
		t.Errorf("first spans: events %q, want one,two", got)
	}
	if st := e.get(ta); st.Index != 0 || st.DatasetID != d.ID || st.Trace.Name != "otel "+a {
		t.Errorf("first spans: stored %+v", st)
	}
	// More spans of a, one of them sent again changed, with a new trace b
	// and a trace whose build fails, in one call.
	ids, errs = add(d.ID,
		store.SpanGroup{OTelTraceID: b, Spans: spans("x", "bx")},
		store.SpanGroup{OTelTraceID: a, Spans: spans("s3", "three", "s1", "ONE")},
		store.SpanGroup{OTelTraceID: "c", Spans: spans("y", "bad")})
	if ids[1] != ta || errs[1] != nil {
		t.Errorf("more spans of a: id %q (want %q), %v", ids[1], ta, errs[1])
	}
	if got := contents(t, e, ta); got != "ONE,two,three" {
		t.Errorf("more spans of a: events %q, want ONE,two,three", got)
	}
	if errs[0] != nil || ids[0] == "" || contents(t, e, ids[0]) != "bx" || e.get(ids[0]).Index != 1 {
		t.Errorf("trace b: %q %v", ids[0], errs[0])
	}
	if errs[2] == nil || ids[2] != "" {
		t.Errorf("a failed build: id %q, error %v", ids[2], errs[2])
	}
	if n := e.ds(d.ID).TraceCount; n != 2 {
		t.Errorf("dataset has %d traces, want 2 (a and b)", n)
	}
	// The failed group stored nothing: its next spans build alone.
	seen = nil
	ids, _ = add(d.ID, store.SpanGroup{OTelTraceID: "c", Spans: spans("z", "fine")})
	if fmt.Sprint(seen) != "[[fine]]" || contents(t, e, ids[0]) != "fine" {
		t.Errorf("after a failed build: build saw %v", seen)
	}
	// The same OpenTelemetry trace id in another dataset is another trace.
	ids, _ = add(other.ID, store.SpanGroup{OTelTraceID: a, Spans: spans("s9", "elsewhere")})
	if ids[0] == ta || contents(t, e, ids[0]) != "elsewhere" {
		t.Errorf("trace id a in another dataset: %q %q", ids[0], contents(t, e, ids[0]))
	}
	// A deleted trace takes its spans along: the trace id starts afresh.
	if err := e.st.DeleteTrace(e.ctx, ta); err != nil {
		t.Fatal(err)
	}
	seen = nil
	ids, _ = add(d.ID, store.SpanGroup{OTelTraceID: a, Spans: spans("s4", "four")})
	if ids[0] == ta || fmt.Sprint(seen) != "[[four]]" {
		t.Errorf("after delete: id %q, build saw %v", ids[0], seen)
	}
	_, _, err := e.st.AddSpans(e.ctx, alice.ID, missingID, []store.SpanGroup{{OTelTraceID: a, Spans: spans("s", "x")}}, build)
	wantErr(t, "unknown dataset", err, store.ErrNotFound)
}

// testAddSpansChangedMeanwhile: spans of the same trace stored by another
// request while this one rebuilt the trace are not lost: the trace is
// rebuilt again in the writing transaction.
func testAddSpansChangedMeanwhile(t *testing.T, open func(t *testing.T) store.Store) {
	e := newEnv(t, open)
	alice := e.user("alice")
	d := e.dataset(alice, "otel", false)
	var mu sync.Mutex
	var seen [][]string
	plain := spanBuild(&mu, &seen)
	const a = "0af7651916cd43dd8448eb211c80319c"
	ids, _, err := e.st.AddSpans(e.ctx, alice.ID, d.ID, []store.SpanGroup{{OTelTraceID: a, Spans: spans("s1", "one")}}, plain)
	if err != nil {
		t.Fatal(err)
	}
	interfered := false
	meddling := func(otelID string, sp [][]byte) (*trace.Trace, error) {
		if !interfered {
			interfered = true
			// Another request stores a span of the trace now.
			if _, _, err := e.st.AddSpans(e.ctx, alice.ID, d.ID, []store.SpanGroup{{OTelTraceID: a, Spans: spans("s2", "two")}}, plain); err != nil {
				t.Errorf("the other request: %v", err)
			}
		}
		return plain(otelID, sp)
	}
	got, errs, err := e.st.AddSpans(e.ctx, alice.ID, d.ID, []store.SpanGroup{{OTelTraceID: a, Spans: spans("s3", "three")}}, meddling)
	if err != nil || errs[0] != nil || got[0] != ids[0] {
		t.Fatalf("AddSpans: %v %v %v (trace %s)", got, errs, err, ids[0])
	}
	if c := contents(t, e, ids[0]); c != "one,two,three" {
		t.Errorf("events %q, want one,two,three: a span stored meanwhile was lost", c)
	}
}
