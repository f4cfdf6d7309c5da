package gateway

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"sync"
	"testing"

	"github.com/lookout-dev/lookout/internal/store"
	"github.com/lookout-dev/lookout/internal/store/sqlite"
	"github.com/lookout-dev/lookout/internal/trace"
)

// recorderStore is a SQLite store with a user and a dataset.
func recorderStore(t *testing.T) (*sqlite.Store, store.User, store.Dataset) {
	t.Helper()
	ctx := context.Background()
	st, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "rec.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	u, err := st.LocalUser(ctx)
	if err != nil {
		t.Fatal(err)
	}
	d, err := st.CreateDataset(ctx, store.Dataset{OwnerID: u.ID, Name: "rec", Metadata: json.RawMessage(`{}`)})
	if err != nil {
		t.Fatal(err)
	}
	return st, u, d
}

// TestRecorderConversations runs many conversations' calls through a
// recorder on a real SQLite store, concurrently and faster than one commit
// per call could keep up with, and checks that each conversation is one
// trace holding every event in order, each answer with its call's span.
func TestRecorderConversations(t *testing.T) {
	ctx := context.Background()
	st, u, d := recorderStore(t)
	rec := NewRecorder(st, nil)
	var mu sync.Mutex
	changed := map[string]int{}
	rec.Changed = func(id string) { mu.Lock(); changed[id]++; mu.Unlock() }

	const convs, turns = 8, 25
	var wg sync.WaitGroup
	for c := range convs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var events []trace.Event // what the agent sends: no span ids
			for turn := range turns {
				events = append(events, trace.Event{Role: "user", Content: trace.TextContent(fmt.Sprintf("conv %d turn %d", c, turn))})
				heads := Heads(events)
				conv, n, err := rec.Lookup(ctx, u.ID, d.ID, heads)
				if err != nil {
					t.Error(err)
					return
				}
				if want := 2 * turn; n != want {
					t.Errorf("conversation %d turn %d: found %d events, want %d", c, turn, n, want)
					return
				}
				span := fmt.Sprintf("c%dt%d", c, turn)
				answer := trace.Event{Role: "assistant", Content: trace.TextContent(fmt.Sprintf("answer %d.%d", c, turn)), SpanID: span}
				all := append(append([]trace.Event(nil), events...), answer)
				head := ExtendHeads(heads[len(heads)-1], []trace.Event{answer})[0]
				if err := rec.Record(ctx, conv, all[:n], all[n:], []trace.Span{{ID: span, Name: "call", Kind: "llm"}}, nil, head); err != nil {
					t.Error(err)
					return
				}
				answer.SpanID = "" // re-sent by the agent as it got it
				events = append(events, answer)
			}
		}()
	}
	wg.Wait()
	if err := rec.Close(ctx); err != nil {
		t.Fatal(err)
	}
	list, _, err := st.ListTraces(ctx, d.ID, store.Page{Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != convs {
		t.Fatalf("%d traces for %d conversations", len(list), convs)
	}
	for _, ts := range list {
		got, err := st.Trace(ctx, ts.ID)
		if err != nil {
			t.Fatal(err)
		}
		tr := got.Trace
		if len(tr.Events) != 2*turns || len(tr.Spans) != turns {
			t.Fatalf("trace %s: %d events and %d spans, want %d and %d", ts.ID, len(tr.Events), len(tr.Spans), 2*turns, turns)
		}
		var c int
		fmt.Sscanf(tr.Events[0].Content.Text, "conv %d", &c)
		for i, e := range tr.Events {
			turn := i / 2
			want, span := fmt.Sprintf("conv %d turn %d", c, turn), ""
			if i%2 == 1 {
				want, span = fmt.Sprintf("answer %d.%d", c, turn), fmt.Sprintf("c%dt%d", c, turn)
			}
			if e.Content.Text != want || e.SpanID != span {
				t.Fatalf("trace of conversation %d, event %d: %q on span %q, want %q on %q", c, i, e.Content.Text, e.SpanID, want, span)
			}
		}
		if changed[ts.ID] == 0 {
			t.Errorf("no change notice for trace %s", ts.ID)
		}
	}
}

// TestRecorderLongConversation finds a conversation of more events than
// the store looks up heads at once, after a restart (a new recorder: from
// the store, not from memory).
func TestRecorderLongConversation(t *testing.T) {
	ctx := context.Background()
	st, u, d := recorderStore(t)
	n := store.MaxConversationHeads + 200
	events := make([]trace.Event, n)
	for i := range events {
		events[i] = trace.Event{Role: "user", Content: trace.TextContent(fmt.Sprint("message ", i))}
	}
	heads := Heads(events)
	first := NewRecorder(st, nil)
	conv, from, err := first.Lookup(ctx, u.ID, d.ID, heads)
	if err != nil || from != 0 {
		t.Fatalf("a new conversation: %d events, %v", from, err)
	}
	if err := first.Record(ctx, conv, nil, events, nil, nil, heads[n-1]); err != nil {
		t.Fatal(err)
	}
	if err := first.Close(ctx); err != nil {
		t.Fatal(err)
	}
	next := append(append([]trace.Event(nil), events...), trace.Event{Role: "user", Content: trace.TextContent("one more")})
	_, from, err = NewRecorder(st, nil).Lookup(ctx, u.ID, d.ID, Heads(next))
	if err != nil || from != n {
		t.Fatalf("the next call of a %d-event conversation found %d events (%v), want %d", n, from, err, n)
	}
}

// TestRecordersShared: two Shared recorders on one store, as two replicas
// on one database, take turns at one conversation's calls; it stays one
// trace with every event in order, though each recorder's memory misses
// the other's calls (without Shared the first recorder, back at turn 2,
// would match its own stale turn 0 and start a second trace).
func TestRecordersShared(t *testing.T) {
	ctx := context.Background()
	st, u, d := recorderStore(t)
	recs := []*Recorder{NewRecorder(st, nil), NewRecorder(st, nil)}
	for _, r := range recs {
		r.Shared = func() bool { return true }
	}
	const turns = 5
	var events []trace.Event
	for turn := range turns {
		rec := recs[turn%2]
		events = append(events, trace.Event{Role: "user", Content: trace.TextContent(fmt.Sprintf("turn %d", turn))})
		heads := Heads(events)
		conv, n, err := rec.Lookup(ctx, u.ID, d.ID, heads)
		if err != nil {
			t.Fatal(err)
		}
		if n != 2*turn {
			t.Fatalf("turn %d on recorder %d: found %d events, want %d", turn, turn%2, n, 2*turn)
		}
		answer := trace.Event{Role: "assistant", Content: trace.TextContent(fmt.Sprintf("answer %d", turn))}
		all := append(append([]trace.Event(nil), events...), answer)
		head := ExtendHeads(heads[len(heads)-1], []trace.Event{answer})[0]
		// Record returns once the call is committed: the other recorder
		// finds it in the store at once.
		if err := rec.Record(ctx, conv, all[:n], all[n:], nil, nil, head); err != nil {
			t.Fatal(err)
		}
		events = append(events, answer)
	}
	for _, r := range recs {
		if err := r.Close(ctx); err != nil {
			t.Fatal(err)
		}
	}
	list, _, err := st.ListTraces(ctx, d.ID, store.Page{Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 1 {
		t.Fatalf("%d traces for one conversation through two recorders, want 1", len(list))
	}
	got, err := st.Trace(ctx, list[0].ID)
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Trace.Events) != 2*turns {
		t.Fatalf("%d events, want %d", len(got.Trace.Events), 2*turns)
	}
	for i, e := range got.Trace.Events {
		if e.Content.Text != events[i].Content.Text {
			t.Errorf("event %d: %q, want %q", i, e.Content.Text, events[i].Content.Text)
		}
	}
}

// TestRecorderFindsFarPrefix: a call that adds more messages than the
// recorder looks up first (nearHeads) still continues its conversation,
// found in the store by the older prefix.
func TestRecorderFindsFarPrefix(t *testing.T) {
	ctx := context.Background()
	st, u, d := recorderStore(t)
	var events []trace.Event
	for i := range 5 {
		events = append(events, trace.Event{Role: "user", Content: trace.TextContent(fmt.Sprintf("message %d", i))})
	}
	first := NewRecorder(st, nil)
	conv, n, err := first.Lookup(ctx, u.ID, d.ID, Heads(events))
	if err != nil || n != 0 {
		t.Fatalf("first call: %d events found, %v", n, err)
	}
	if err := first.Record(ctx, conv, nil, events, nil, nil, Heads(events)[len(events)-1]); err != nil {
		t.Fatal(err)
	}
	if err := first.Close(ctx); err != nil {
		t.Fatal(err)
	}
	for i := range 3 * nearHeads {
		events = append(events, trace.Event{Role: "tool", Content: trace.TextContent(fmt.Sprintf("output %d", i))})
	}
	_, n, err = NewRecorder(st, nil).Lookup(ctx, u.ID, d.ID, Heads(events))
	if err != nil || n != 5 {
		t.Fatalf("a call %d messages on: found %d events (%v), want the stored 5", 3*nearHeads, n, err)
	}
}
