package storetest

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lookout-dev/lookout/internal/search"
	"github.com/lookout-dev/lookout/internal/store"
	"github.com/lookout-dev/lookout/internal/trace"
)

// llmSpan is the span a gateway call adds.
func llmSpan(id, name string) trace.Span {
	start := time.Date(2025, 3, 4, 5, 6, 7, 8000, time.UTC)
	return trace.Span{ID: id, Name: name, Kind: "llm", Start: start, End: start.Add(1500 * time.Millisecond),
		Attributes: json.RawMessage(`{"model":"gpt-4o","usage":{"input_tokens":12,"output_tokens":3}}`)}
}

func userEvent(text string) trace.Event {
	return trace.Event{Role: "user", Content: trace.TextContent(text)}
}

func assistantEvent(text string) trace.Event {
	return trace.Event{Role: "assistant", Content: trace.TextContent(text)}
}

// record runs RecordConversation and fails the test on error.
func (e *env) record(owner, datasetID string, step store.ConversationStep) string {
	e.t.Helper()
	id, err := e.st.RecordConversation(e.ctx, owner, datasetID, step)
	if err != nil {
		e.t.Fatalf("RecordConversation(trace %q, head %q): %v", step.TraceID, step.Head, err)
	}
	return id
}

// annotationsOf lists a trace's annotations as address, source, content
// and extra.
func (e *env) annotationsOf(traceID string) []string {
	e.t.Helper()
	as, err := e.st.ListAnnotations(e.ctx, traceID)
	if err != nil {
		e.t.Fatal(err)
	}
	out := make([]string, len(as))
	for i, a := range as {
		out[i] = fmt.Sprintf("%s %s %q %s", a.Address, a.Source, a.Content, a.Extra)
	}
	return out
}

// testConversations records a conversation over three steps and checks
// that it reads back as recorded, is found by its heads, is searchable,
// and that steps that cannot apply write nothing.
func testConversations(t *testing.T, open func(t *testing.T) store.Store) {
	e := newEnv(t, open)
	ctx := e.ctx
	alice := e.user("alice")
	d := e.dataset(alice, "gateway", false)
	other := e.dataset(alice, "other", false)
	e.add(alice.ID, d.ID, simple("pushed", 1, nil)) // index 0

	// A new conversation: a trace of the dataset with the next index.
	first := &trace.Trace{Name: "chat", Metadata: json.RawMessage(`{"session":"s1"}`),
		Events: []trace.Event{userEvent("book a flight to Lisbon"), assistantEvent("Which date?")},
		Spans:  []trace.Span{llmSpan("call-1", "openai gpt-4o")}}
	violation := store.Annotation{Address: "messages.1.content:0-5", Content: "guardrail: asked twice", Source: "analyzer",
		Extra: json.RawMessage(`{"policy_id":"p1","mode":"log"}`)}
	id := e.record(alice.ID, d.ID, store.ConversationStep{Trace: first, Head: "h2", Annotations: []store.Annotation{violation}})
	st := e.get(id)
	if st.DatasetID != d.ID || st.OwnerID != alice.ID || st.Index != 1 {
		t.Errorf("new conversation trace: dataset %s, owner %s, index %d; want %s, %s, 1", st.DatasetID, st.OwnerID, st.Index, d.ID, alice.ID)
	}
	if got, want := canonical(st.Trace), canonical(first); got != want {
		t.Errorf("the new trace reads back as\n%s\nwant\n%s", got, want)
	}
	if ds := e.ds(d.ID); ds.TraceCount != 2 || ds.LastPushed == nil {
		t.Errorf("dataset after a new conversation: %d traces, last pushed %v; want 2 and a time", ds.TraceCount, ds.LastPushed)
	}
	wantAnns := []string{`messages.1.content:0-5 analyzer "guardrail: asked twice" {"policy_id":"p1","mode":"log"}`}
	if got := e.annotationsOf(id); !slices.Equal(got, wantAnns) {
		t.Errorf("annotations of the new trace: %q, want %q", got, wantAnns)
	}
	if c, err := e.st.FindConversation(ctx, d.ID, []string{"h0", "h2"}); err != nil || c != (store.Conversation{TraceID: id, Head: "h2", Events: 2}) {
		t.Errorf("FindConversation after the first step = %+v, %v", c, err)
	}

	// Two more steps extend it: events, spans and annotations appended.
	more := []trace.Event{userEvent("May 3rd"), {Role: "assistant", ToolCalls: []trace.ToolCall{{ID: "t1", Type: "function",
		Function: trace.Function{Name: "book_flight", Arguments: json.RawMessage(`{"to":"Lisbon","date":"2025-05-03"}`)}}}}}
	if got := e.record(alice.ID, d.ID, store.ConversationStep{TraceID: id, ExpectEvents: 2, Events: more,
		Spans: []trace.Span{llmSpan("call-2", "openai gpt-4o")}, Head: "h4",
		Annotations: []store.Annotation{{Address: "messages.3.tool_calls.0", Content: "booking", Source: "analyzer"}}}); got != id {
		t.Fatalf("extending returned trace %s, want %s", got, id)
	}
	last := []trace.Event{{Role: "tool", ToolCallID: "t1", Content: trace.TextContent("confirmation ZX81Q")}}
	e.record(alice.ID, d.ID, store.ConversationStep{TraceID: id, ExpectEvents: 4, Events: last, Head: "h5"})
	want := *first
	want.Events = slices.Concat(first.Events, more, last)
	want.Spans = append(slices.Clone(first.Spans), llmSpan("call-2", "openai gpt-4o"))
	st = e.get(id)
	if got := canonical(st.Trace); got != canonical(&want) {
		t.Errorf("the extended trace reads back as\n%s\nwant\n%s", got, canonical(&want))
	}
	if st.Index != 1 {
		t.Errorf("extending moved the trace to index %d", st.Index)
	}
	wantAnns = append(wantAnns, `messages.3.tool_calls.0 analyzer "booking" `)
	if got := e.annotationsOf(id); !slices.Equal(got, wantAnns) {
		t.Errorf("annotations of the extended trace: %q, want %q", got, wantAnns)
	}
	for _, s := range e.listAll(d.ID, 0) {
		if s.ID == id && (s.EventCount != 5 || s.AnnotationCount != 2) {
			t.Errorf("list: %d events, %d annotations; want 5, 2", s.EventCount, s.AnnotationCount)
		}
	}
	if ds := e.ds(d.ID); ds.TraceCount != 2 {
		t.Errorf("extending changed the trace count to %d", ds.TraceCount)
	}

	// The appended events and spans are searchable.
	for q, hits := range map[string][]string{
		`zx81q`:               {"messages.4.content:13-18"},
		`lisbon`:              {"messages.0.content:17-23", "messages.3.tool_calls.0.function.arguments.to:0-6"},
		`tool:book_flight`:    nil,
		`kind:llm "gpt-4o"`:   {"spans.call-1.attributes.model:0-6", "spans.call-1.name:7-13", "spans.call-2.attributes.model:0-6", "spans.call-2.name:7-13"},
		`"may 3rd" role:user`: {"messages.2.content:0-7"},
	} {
		pq, err := search.Parse(q)
		if err != nil {
			t.Fatal(err)
		}
		got := e.searchAll(d.ID, pq, 10, 0)
		if len(got) != 1 || got[0].ID != id || hits != nil && !slices.Equal(got[0].Hits, hits) {
			t.Errorf("search %q: %s; want trace %s with hits %q", q, describe(got), id, hits)
		}
	}

	// Found by its newest head only; the longest of several.
	short := e.record(alice.ID, d.ID, store.ConversationStep{Trace: &trace.Trace{Events: []trace.Event{userEvent("hi")}}, Head: "h1"})
	for _, c := range []struct {
		heads []string
		want  string
	}{
		{[]string{"h5"}, id},
		{[]string{"h1", "h5", "nope"}, id},
		{[]string{"h1"}, short},
		{[]string{"h1", "h2", "h4"}, short}, // h2 and h4 are the long one's past heads
	} {
		c1, err := e.st.FindConversation(ctx, d.ID, c.heads)
		if err != nil || c1.TraceID != c.want {
			t.Errorf("FindConversation(%q) = %+v, %v; want trace %s", c.heads, c1, err, c.want)
		}
	}
	if c, _ := e.st.FindConversation(ctx, d.ID, []string{"h5"}); c.Events != 5 || c.Head != "h5" {
		t.Errorf("FindConversation(h5) = %+v, want 5 events", c)
	}
	// Among equals, the latest recorded.
	time.Sleep(2 * time.Millisecond)
	twin := e.record(alice.ID, d.ID, store.ConversationStep{Trace: &trace.Trace{Events: []trace.Event{userEvent("hi again")}}, Head: "h1b"})
	if c, err := e.st.FindConversation(ctx, d.ID, []string{"h1", "h1b"}); err != nil || c.TraceID != twin {
		t.Errorf("FindConversation of two of one event = %+v, %v; want the later, %s", c, err, twin)
	}
	time.Sleep(2 * time.Millisecond)
	e.record(alice.ID, d.ID, store.ConversationStep{TraceID: short, ExpectEvents: 1, Head: "h1c"})
	if c, err := e.st.FindConversation(ctx, d.ID, []string{"h1c", "h1b"}); err != nil || c.TraceID != short || c.Events != 1 {
		t.Errorf("FindConversation after a step of no events = %+v, %v; want %s", c, err, short)
	}
	many := make([]string, store.MaxConversationHeads)
	for i := range many {
		many[i] = fmt.Sprintf("miss-%d", i)
	}
	many[len(many)-1] = "h5"
	if c, err := e.st.FindConversation(ctx, d.ID, many); err != nil || c.TraceID != id {
		t.Errorf("FindConversation of %d heads = %+v, %v", len(many), c, err)
	}

	// Steps that cannot apply write nothing.
	snapshot := canonical(e.get(id).Trace)
	annsBefore := e.annotationsOf(id)
	pushed := e.ds(d.ID).TraceCount
	other1 := e.record(alice.ID, other.ID, store.ConversationStep{Trace: &trace.Trace{Events: []trace.Event{userEvent("elsewhere")}}, Head: "o1"})
	step := func(traceID string, expect int) store.ConversationStep {
		return store.ConversationStep{TraceID: traceID, ExpectEvents: expect, Events: []trace.Event{userEvent("never stored")},
			Spans: []trace.Span{llmSpan("never", "x")}, Head: "bad", Annotations: []store.Annotation{{Address: "messages.0", Content: "never", Source: "analyzer"}}}
	}
	errCases := []struct {
		name string
		call func() error
		want error
	}{
		{"an ExpectEvents already passed", func() error { _, err := e.st.RecordConversation(ctx, alice.ID, d.ID, step(id, 4)); return err }, store.ErrConflict},
		{"an ExpectEvents ahead", func() error { _, err := e.st.RecordConversation(ctx, alice.ID, d.ID, step(id, 6)); return err }, store.ErrConflict},
		{"a trace of another dataset", func() error { _, err := e.st.RecordConversation(ctx, alice.ID, d.ID, step(other1, 1)); return err }, store.ErrNotFound},
		{"a trace of this dataset, said to be of another", func() error {
			_, err := e.st.RecordConversation(ctx, alice.ID, other.ID, step(id, 5))
			return err
		}, store.ErrNotFound},
		{"an unknown trace", func() error { _, err := e.st.RecordConversation(ctx, alice.ID, d.ID, step(missingID, 0)); return err }, store.ErrNotFound},
		{"a malformed trace id", func() error { _, err := e.st.RecordConversation(ctx, alice.ID, d.ID, step("x", 0)); return err }, store.ErrNotFound},
		{"an unknown dataset", func() error {
			_, err := e.st.RecordConversation(ctx, alice.ID, missingID, store.ConversationStep{Trace: &trace.Trace{}, Head: "x"})
			return err
		}, store.ErrNotFound},
		{"no head", func() error {
			_, err := e.st.RecordConversation(ctx, alice.ID, d.ID, store.ConversationStep{TraceID: id, ExpectEvents: 5})
			return err
		}, store.ErrInvalid},
		{"a new trace without its trace", func() error {
			_, err := e.st.RecordConversation(ctx, alice.ID, d.ID, store.ConversationStep{Head: "x"})
			return err
		}, store.ErrInvalid},
		{"a new trace with events beside it", func() error {
			_, err := e.st.RecordConversation(ctx, alice.ID, d.ID, store.ConversationStep{Trace: &trace.Trace{}, Events: more, Head: "x"})
			return err
		}, store.ErrInvalid},
		{"an extension with a trace", func() error {
			_, err := e.st.RecordConversation(ctx, alice.ID, d.ID, store.ConversationStep{TraceID: id, ExpectEvents: 5, Trace: first, Head: "x"})
			return err
		}, store.ErrInvalid},
		{"an annotation without a source", func() error {
			s := step(id, 5)
			s.Annotations[0].Source = ""
			_, err := e.st.RecordConversation(ctx, alice.ID, d.ID, s)
			return err
		}, store.ErrInvalid},
		{"no heads", func() error { _, err := e.st.FindConversation(ctx, d.ID, nil); return err }, store.ErrNotFound},
		{"no matching head", func() error { _, err := e.st.FindConversation(ctx, d.ID, []string{"nope"}); return err }, store.ErrNotFound},
		{"another dataset's head", func() error { _, err := e.st.FindConversation(ctx, other.ID, []string{"h5"}); return err }, store.ErrNotFound},
		{"an unknown dataset's head", func() error { _, err := e.st.FindConversation(ctx, missingID, []string{"h5"}); return err }, store.ErrNotFound},
		{"too many heads", func() error {
			_, err := e.st.FindConversation(ctx, d.ID, append(many, "h5"))
			return err
		}, store.ErrInvalid},
	}
	for _, c := range errCases {
		wantErr(t, c.name, c.call(), c.want)
	}
	if got := canonical(e.get(id).Trace); got != snapshot {
		t.Errorf("a refused step changed the trace:\n%s\nwas\n%s", got, snapshot)
	}
	if got := e.annotationsOf(id); !slices.Equal(got, annsBefore) {
		t.Errorf("a refused step changed the annotations: %q, were %q", got, annsBefore)
	}
	if c, _ := e.st.FindConversation(ctx, d.ID, []string{"h5", "bad"}); c.Head != "h5" || c.Events != 5 {
		t.Errorf("a refused step changed the head: %+v", c)
	}
	if got := e.ds(d.ID).TraceCount; got != pushed {
		t.Errorf("refused steps changed the trace count from %d to %d", pushed, got)
	}

	// A conversation row goes with its trace, and with its dataset.
	if err := e.st.DeleteTrace(ctx, id); err != nil {
		t.Fatal(err)
	}
	_, err := e.st.FindConversation(ctx, d.ID, []string{"h5"})
	wantErr(t, "the conversation of a deleted trace", err, store.ErrNotFound)
	_, err = e.st.RecordConversation(ctx, alice.ID, d.ID, step(id, 5))
	wantErr(t, "extending a deleted trace", err, store.ErrNotFound)
	if c, err := e.st.FindConversation(ctx, d.ID, []string{"h1c"}); err != nil || c.TraceID != short {
		t.Errorf("deleting one trace lost another's conversation: %+v, %v", c, err)
	}
	if err := e.st.DeleteDataset(ctx, other.ID); err != nil {
		t.Fatal(err)
	}
	_, err = e.st.FindConversation(ctx, other.ID, []string{"o1"})
	wantErr(t, "the conversation of a deleted dataset", err, store.ErrNotFound)
}

// testConversationsConcurrently runs steps on one trace side by side, all
// expecting the same event count: one of each round succeeds, the others
// are ErrConflict and leave nothing behind.
func testConversationsConcurrently(t *testing.T, open func(t *testing.T) store.Store) {
	e := newEnv(t, open)
	alice := e.user("alice")
	d := e.dataset(alice, "gateway", false)
	id := e.record(alice.ID, d.ID, store.ConversationStep{Trace: &trace.Trace{Events: []trace.Event{userEvent("start")}}, Head: "h1"})
	const rounds, racers = 5, 4
	events := 1
	var winners []string
	for round := range rounds {
		var wg sync.WaitGroup
		errs := make([]error, racers)
		for r := range racers {
			wg.Go(func() {
				text := fmt.Sprintf("round %d racer %d", round, r)
				_, errs[r] = e.st.RecordConversation(e.ctx, alice.ID, d.ID, store.ConversationStep{TraceID: id, ExpectEvents: events,
					Events: []trace.Event{assistantEvent(text)}, Spans: []trace.Span{llmSpan(text, "x")}, Head: text,
					Annotations: []store.Annotation{{Address: fmt.Sprintf("messages.%d", events), Content: text, Source: "analyzer"}}})
			})
		}
		wg.Wait()
		won := -1
		for r, err := range errs {
			switch {
			case err == nil && won >= 0:
				t.Fatalf("round %d: racers %d and %d both extended the trace at %d events", round, won, r, events)
			case err == nil:
				won = r
			case !errors.Is(err, store.ErrConflict):
				t.Fatalf("round %d, racer %d: %v, want ErrConflict", round, r, err)
			}
		}
		if won < 0 {
			t.Fatalf("round %d: no racer succeeded: %v", round, errs)
		}
		winners = append(winners, fmt.Sprintf("round %d racer %d", round, won))
		events++
	}
	st := e.get(id)
	var got, spans []string
	for _, ev := range st.Trace.Events[1:] {
		got = append(got, ev.Content.Text)
	}
	for _, s := range st.Trace.Spans {
		spans = append(spans, s.ID)
	}
	if !slices.Equal(got, winners) || !slices.Equal(spans, winners) {
		t.Errorf("after %d rounds the trace holds events %q and spans %q; want the winners %q", rounds, got, spans, winners)
	}
	var anns []string
	as, err := e.st.ListAnnotations(e.ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range as {
		anns = append(anns, a.Content)
	}
	if !slices.Equal(anns, winners) {
		t.Errorf("annotations %q, want the winners' %q", anns, winners)
	}
	if c, err := e.st.FindConversation(e.ctx, d.ID, []string{winners[len(winners)-1]}); err != nil || c.Events != events {
		t.Errorf("FindConversation(the last winner's head) = %+v, %v; want %d events", c, err, events)
	}
	// Only the winners' events are in the search index.
	pq, err := search.Parse(`racer`)
	if err != nil {
		t.Fatal(err)
	}
	var wantHits []string
	for k := range rounds {
		wantHits = append(wantHits, fmt.Sprintf("messages.%d.content:8-13", k+1))
	}
	if res := e.searchAll(d.ID, pq, 10, 0); len(res) != 1 || !slices.Equal(res[0].Hits, wantHits) {
		t.Errorf("search racer: %s; want one trace with hits %q", describe(res), wantHits)
	}
}

// testConversationsBatch records steps of several traces in one call: the
// ones that apply are stored, each refused one is left out with its error,
// and the traces read back as if the steps had been recorded one by one.
func testConversationsBatch(t *testing.T, open func(t *testing.T) store.Store) {
	e := newEnv(t, open)
	alice := e.user("alice")
	d := e.dataset(alice, "gateway", false)
	other := e.dataset(alice, "other", false)
	a := e.record(alice.ID, d.ID, store.ConversationStep{Trace: &trace.Trace{Events: []trace.Event{userEvent("a")}}, Head: "a1"})
	b := e.record(alice.ID, d.ID, store.ConversationStep{Trace: &trace.Trace{Events: []trace.Event{userEvent("b")}}, Head: "b1"})
	elsewhere := e.record(alice.ID, other.ID, store.ConversationStep{Trace: &trace.Trace{Events: []trace.Event{userEvent("x")}}, Head: "x1"})
	note := store.Annotation{Address: "messages.1", Content: "seen", Source: "analyzer", Extra: json.RawMessage(`{"policy_id":"p"}`)}
	steps := []store.ConversationStep{
		{TraceID: a, ExpectEvents: 1, Events: []trace.Event{assistantEvent("a2")}, Spans: []trace.Span{llmSpan("s-a", "openai")}, Head: "a2", Annotations: []store.Annotation{note}},
		{TraceID: b, ExpectEvents: 5, Events: []trace.Event{assistantEvent("b2")}, Head: "b2"},
		{Trace: &trace.Trace{Name: "new", Events: []trace.Event{userEvent("c"), assistantEvent("c2")}}, Head: "c2"},
		{TraceID: elsewhere, ExpectEvents: 1, Events: []trace.Event{assistantEvent("x2")}, Head: "x2"},
		{TraceID: "00000000-0000-4000-8000-000000000000", ExpectEvents: 0, Events: []trace.Event{assistantEvent("?")}, Head: "q"},
		{Trace: &trace.Trace{Name: "second new", Events: []trace.Event{userEvent("d")}}, Head: "d1"},
		// Exclusive: refused for a head the dataset holds (b's), not for a new one.
		{Trace: &trace.Trace{Name: "taken", Events: []trace.Event{userEvent("t")}}, Head: "b1", Exclusive: true},
		{Trace: &trace.Trace{Name: "exclusive", Events: []trace.Event{userEvent("e")}}, Head: "e1", Exclusive: true},
	}
	ids, errs, err := e.st.RecordConversations(e.ctx, alice.ID, d.ID, steps)
	if err != nil {
		t.Fatal(err)
	}
	if len(ids) != len(steps) || len(errs) != len(steps) {
		t.Fatalf("%d ids and %d errors for %d steps", len(ids), len(errs), len(steps))
	}
	wantErr := []error{nil, store.ErrConflict, nil, store.ErrNotFound, store.ErrNotFound, nil, store.ErrConflict, nil}
	for i, w := range wantErr {
		if (w == nil) != (errs[i] == nil) || (w != nil && !errors.Is(errs[i], w)) {
			t.Errorf("step %d: error %v, want %v", i, errs[i], w)
		}
		if (errs[i] == nil) != (ids[i] != "") {
			t.Errorf("step %d: id %q with error %v", i, ids[i], errs[i])
		}
	}
	if ids[0] != a {
		t.Errorf("the extended trace's id is %q, want %q", ids[0], a)
	}
	if got := e.get(a).Trace; len(got.Events) != 2 || got.Events[1].Content.Text != "a2" || len(got.Spans) != 1 {
		t.Errorf("trace a after the batch: %s", canonical(got))
	}
	if anns := e.annotationsOf(a); len(anns) != 1 {
		t.Errorf("trace a's annotations: %v", anns)
	}
	if got := e.get(b).Trace; len(got.Events) != 1 {
		t.Errorf("a refused step wrote to its trace: %s", canonical(got))
	}
	if got := e.get(elsewhere).Trace; len(got.Events) != 1 {
		t.Errorf("a step naming another dataset's trace wrote to it: %s", canonical(got))
	}
	c, dd := e.get(ids[2]), e.get(ids[5])
	if c.Trace.Name != "new" || dd.Trace.Name != "second new" || c.Index == dd.Index || c.DatasetID != d.ID {
		t.Errorf("new traces: %q index %d, %q index %d", c.Trace.Name, c.Index, dd.Trace.Name, dd.Index)
	}
	if n := e.ds(d.ID).TraceCount; n != 5 {
		t.Errorf("the dataset holds %d traces after the batch, want 5 (a, b and three new: the refused one not written)", n)
	}
	for head, want := range map[string]string{"a2": a, "c2": ids[2], "d1": ids[5], "b1": b, "e1": ids[7]} {
		conv, err := e.st.FindConversation(e.ctx, d.ID, []string{head})
		if err != nil || conv.TraceID != want {
			t.Errorf("head %s: %+v %v, want trace %s", head, conv, err, want)
		}
	}
	if _, err := e.st.FindConversation(e.ctx, d.ID, []string{"b2"}); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("the refused step's head was recorded: %v", err)
	}
}

// testConversationLong grows a conversation over many steps, small and
// large (appends are stored as parts, deflated when large, and the trace
// encoded whole again now and then: storeutil.AppendContent), and checks
// after each that it reads back as recorded, and at the end that its last
// events are searchable.
func testConversationLong(t *testing.T, open func(t *testing.T) store.Store) {
	e := newEnv(t, open)
	alice := e.user("alice")
	d := e.dataset(alice, "gateway", false)
	want := &trace.Trace{Name: "long", Metadata: json.RawMessage(`{"session":"long"}`),
		Events: []trace.Event{userEvent("plan my trip")}, Spans: []trace.Span{llmSpan("call-0", "openai gpt-4o")}}
	id := e.record(alice.ID, d.ID, store.ConversationStep{Trace: want, Head: "h1"})
	want = &trace.Trace{Name: want.Name, Metadata: want.Metadata, Events: slices.Clone(want.Events), Spans: slices.Clone(want.Spans)}
	for step := 1; step <= 60; step++ {
		filler := strings.Repeat(fmt.Sprintf("weather report %d, cloudy and mild; ", step), 1+step%7*40)
		events := []trace.Event{assistantEvent(filler), userEvent(fmt.Sprintf("and on day %d?", step))}
		var spans []trace.Span
		if step%3 == 0 {
			spans = []trace.Span{llmSpan(fmt.Sprintf("call-%d", step), "openai gpt-4o")}
		}
		e.record(alice.ID, d.ID, store.ConversationStep{TraceID: id, ExpectEvents: len(want.Events), Events: events, Spans: spans,
			Head: fmt.Sprintf("h%d", len(want.Events)+2)})
		want.Events = append(want.Events, events...)
		want.Spans = append(want.Spans, spans...)
		if step%7 == 0 || step == 60 {
			if got := canonical(e.get(id).Trace); got != canonical(want) {
				t.Fatalf("after step %d the trace reads back as\n%.2000s\nwant\n%.2000s", step, got, canonical(want))
			}
		}
	}
	for _, s := range e.listAll(d.ID, 0) {
		if s.ID == id && s.EventCount != len(want.Events) {
			t.Errorf("list: %d events, want %d", s.EventCount, len(want.Events))
		}
	}
	pq, err := search.Parse(`"day 60"`)
	if err != nil {
		t.Fatal(err)
	}
	last := fmt.Sprintf("messages.%d.content:7-13", len(want.Events)-1)
	if got := e.searchAll(d.ID, pq, 10, 0); len(got) != 1 || got[0].ID != id || !slices.Contains(got[0].Hits, last) {
		t.Errorf("search \"day 60\": %s; want trace %s with hit %s", describe(got), id, last)
	}
}
