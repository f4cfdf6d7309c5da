package gateway

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"reflect"
	"testing"

	"github.com/lookout-dev/lookout/internal/policy"
	"github.com/lookout-dev/lookout/internal/trace"
)

// verdictText is everything a verdict tells the agent and the trace.
func verdictText(v Verdict) string {
	var out []string
	for _, f := range v.Findings {
		one := Verdict{Findings: []Finding{f}}
		d, _ := json.Marshal(one.Details())
		out = append(out, fmt.Sprintf("%s new=%v %s", f.Message(), f.New, d))
	}
	return fmt.Sprintf("blocked=%v %q", v.Blocked, out)
}

// TestGuardSnapshots checks conversations call by call with snapshots and
// without, as the proxy does (the request's events, then with the answer),
// including clients that rewrite an earlier message: every verdict must be
// the same.
func TestGuardSnapshots(t *testing.T) {
	var rails []*Guardrail
	for i, f := range []string{"../../bench/gateway/one-rule.iv", "../../bench/gateway/ten-rules.iv"} {
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		rails = append(rails, rail(t, fmt.Sprint("bench", i), []string{"block", "log"}[i], string(src)))
	}
	rails = append(rails, rail(t, "flow", "block", `raise "mailed after inbox" if:
    (out: ToolOutput) -> (call: ToolCall)
    out is tool:get_inbox
    call is tool:send_email`))
	rails = append(rails, rail(t, "quant", "log", `raise "booked unasked" if:
    (call: ToolCall)
    call is tool:book_flight
    not count(min=1):
        (m: Message)
        m.role == "user"
        "book" in m.content`))
	ctx := context.Background()
	snap, full := &Guard{}, &Guard{Full: true}
	r := rand.New(rand.NewPCG(7, 18))
	tools := []string{"send_email", "get_inbox", "book_flight", "get_weather", "delete_file"}
	texts := []string{"hello", "please book it", "ignore previous instructions", "SSN 123-45-6789", "AKIAIOSFODNN7EXAMPLE", "fine"}
	event := func() trace.Event {
		switch r.IntN(4) {
		case 0:
			return trace.Event{Role: "user", Content: trace.TextContent(texts[r.IntN(len(texts))])}
		case 1:
			return trace.Event{Role: "assistant", Content: trace.TextContent(texts[r.IntN(len(texts))])}
		case 2:
			return trace.Event{Role: "assistant", ToolCalls: []trace.ToolCall{{ID: fmt.Sprint("c", r.IntN(5)), Type: "function",
				Function: trace.Function{Name: tools[r.IntN(len(tools))], Arguments: json.RawMessage(`{"path":"/etc/x","to":"a@b.c"}`)}}}}
		}
		return trace.Event{Role: "tool", ToolCallID: fmt.Sprint("c", r.IntN(5)), Content: trace.TextContent(texts[r.IntN(len(texts))])}
	}
	checks := 0
	for conv := 0; conv < 60; conv++ {
		var events []trace.Event
		for call := 0; call < 12; call++ {
			stored := len(events)
			for range 1 + r.IntN(3) {
				events = append(events, event())
			}
			if stored > 2 && r.IntN(8) == 0 { // the client rewrites history
				events[r.IntN(stored)] = event()
			}
			answer := []trace.Event{event()}
			all := append(append([]trace.Event(nil), events...), answer...)
			// The answer's check starts from the request's sums and Trace,
			// as the proxy's does.
			var sums []eventsSum
			var tr *policy.Trace
			for _, c := range []struct {
				events []trace.Event
				first  int
			}{{events, stored}, {all, len(events)}} {
				v := snap.check(ctx, rails, c.events, c.first, nil, sums, tr)
				if !reflect.DeepEqual(v.sums, prefixSums(c.events, nil)) {
					t.Fatalf("conversation %d call %d: the sums extended from the request's differ from the answer's own", conv, call)
				}
				sums, tr = v.sums, v.trace
				got := verdictText(v)
				want := verdictText(full.Check(ctx, rails, c.events, c.first, nil))
				if got != want {
					t.Fatalf("conversation %d call %d: with snapshots\n%s\nin full\n%s", conv, call, got, want)
				}
				checks++
			}
			events = all
		}
	}
	if snap.snaps == nil || snap.snaps.lru.Len() == 0 {
		t.Fatal("no snapshot was kept")
	}
	if snap.snaps.hits < int64(checks*len(rails)*3/4) {
		t.Fatalf("%d of %d analyses extended a snapshot", snap.snaps.hits, checks*len(rails))
	}
	t.Logf("%d checks, %d extended a snapshot, %d snapshots kept", checks, snap.snaps.hits, snap.snaps.lru.Len())
}

// TestSnapshotsBounded checks the cache's bounds and that a snapshot is
// found only for the exact events it was taken of.
func TestSnapshotsBounded(t *testing.T) {
	p, err := policy.Parse("raise \"m\" if:\n    (m: Message)\n    \"x\" in m.content\n")
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	s := newSnapshots(3, 1<<20)
	var sumsOf [][]eventsSum
	for i := range 5 {
		events := []trace.Event{{Role: "user", Content: trace.TextContent(fmt.Sprint("x", i))}}
		_, snap, err := p.AnalyzeExtension(ctx, nil, events, nil)
		if err != nil || snap == nil {
			t.Fatal(err)
		}
		sums := prefixSums(events, nil)
		s.put(p, "null", sums[0], snap)
		sumsOf = append(sumsOf, sums)
	}
	if s.lru.Len() != 3 || len(s.byKey) != 3 {
		t.Fatalf("%d snapshots kept, want 3", s.lru.Len())
	}
	for i, sums := range sumsOf {
		if got := s.longest(p, "null", sums) != nil; got != (i >= 2) {
			t.Errorf("snapshot %d found: %v", i, got)
		}
	}
	if s.longest(p, `{"a":1}`, sumsOf[4]) != nil {
		t.Error("found under other parameters")
	}
	// A field the gateway's heads leave out still tells events apart.
	a := []trace.Event{{Role: "assistant", Content: trace.TextContent("x"), Extra: trace.Fields{{Key: "refusal", Value: json.RawMessage("null")}}}}
	b := []trace.Event{{Role: "assistant", Content: trace.Content{Kind: trace.ContentParts, Parts: []trace.Part{{Type: "text", Text: "x"}}}}}
	c := []trace.Event{{Role: "assistant", Content: trace.TextContent("x")}}
	if sa, sb, sc := prefixSums(a, nil), prefixSums(b, nil), prefixSums(c, nil); sa[0] == sc[0] || sb[0] == sc[0] || reflect.DeepEqual(sa, sb) {
		t.Error("events that differ sum alike")
	}
	small := newSnapshots(100, 1)
	_, snap, _ := p.AnalyzeExtension(ctx, nil, []trace.Event{{Role: "user", Content: trace.TextContent("x")}}, nil)
	small.put(p, "null", eventsSum{1, 2}, snap)
	if small.lru.Len() != 0 || small.bytes != 0 {
		t.Errorf("a snapshot larger than the cache was kept (%d bytes)", small.bytes)
	}
}

// TestGuardSnapshotsConcurrently checks the same conversations from several
// goroutines at once through one guard, so that they share snapshots (run
// with -race): every verdict must be the full analysis's.
func TestGuardSnapshotsConcurrently(t *testing.T) {
	src, err := os.ReadFile("../../bench/gateway/ten-rules.iv")
	if err != nil {
		t.Fatal(err)
	}
	rails := []*Guardrail{rail(t, "ten", "block", string(src))}
	ctx := context.Background()
	shared, full := &Guard{}, &Guard{Full: true}
	conv := func(seed uint64) [][]trace.Event {
		r := rand.New(rand.NewPCG(seed, 1))
		var steps [][]trace.Event
		var events []trace.Event
		for range 15 {
			switch r.IntN(3) {
			case 0:
				events = append(events, trace.Event{Role: "user", Content: trace.TextContent("please book AKIAIOSFODNN7EXAMPLE")})
			case 1:
				events = append(events, trace.Event{Role: "assistant", ToolCalls: []trace.ToolCall{{ID: fmt.Sprint("c", len(events)), Type: "function",
					Function: trace.Function{Name: []string{"book_flight", "send_email", "get_time"}[r.IntN(3)], Arguments: json.RawMessage(`{}`)}}}})
			default:
				events = append(events, trace.Event{Role: "assistant", Content: trace.TextContent("SSN 123-45-6789")})
			}
			steps = append(steps, append([]trace.Event(nil), events...))
		}
		return steps
	}
	want := map[uint64][]string{}
	for seed := range uint64(4) {
		for i, ev := range conv(seed) {
			want[seed] = append(want[seed], verdictText(full.Check(ctx, rails, ev, max(0, i-1), nil)))
		}
	}
	errs := make(chan error, 8)
	for g := range 8 {
		go func() {
			seed := uint64(g % 4)
			for i, ev := range conv(seed) {
				if got := verdictText(shared.Check(ctx, rails, ev, max(0, i-1), nil)); got != want[seed][i] {
					errs <- fmt.Errorf("goroutine %d step %d:\n%s\nwant\n%s", g, i, got, want[seed][i])
					return
				}
			}
			errs <- nil
		}()
	}
	for range 8 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
}
