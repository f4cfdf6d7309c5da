package storetest

import (
	"context"
	"database/sql"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode/utf16"

	"github.com/pressly/goose/v3"

	"github.com/lookout-dev/lookout/internal/search"
	"github.com/lookout-dev/lookout/internal/store"
	"github.com/lookout-dev/lookout/internal/testcorpus"
	"github.com/lookout-dev/lookout/internal/trace"
	"github.com/lookout-dev/lookout/internal/usage"
)

// tauRaw is what the test reads itself from the tau-bench file, apart from
// the importer: each trajectory's first user message (cut to 200 UTF-16
// code units) and its tool calls, in file order.
func tauRaw(t *testing.T) (firstUser []string, toolCalls []int) {
	t.Helper()
	data := tauBenchFile(t)
	var runs []struct {
		Traj []struct {
			Role      string          `json:"role"`
			Content   json.RawMessage `json:"content"`
			ToolCalls []any           `json:"tool_calls"`
		} `json:"traj"`
	}
	if err := json.Unmarshal(data, &runs); err != nil {
		t.Fatal(err)
	}
	for _, r := range runs {
		first, seen, calls := "", false, 0
		for _, m := range r.Traj {
			calls += len(m.ToolCalls)
			if m.Role != "user" || seen {
				continue
			}
			seen = true
			var s string
			if json.Unmarshal(m.Content, &s) != nil {
				t.Fatalf("a tau-bench user message's content is not a string: %.100s", m.Content)
			}
			if u := utf16.Encode([]rune(s)); len(u) > store.MaxFirstUser {
				s = string(utf16.Decode(u[:store.MaxFirstUser]))
			}
			first = s
		}
		firstUser, toolCalls = append(firstUser, first), append(toolCalls, calls)
	}
	return firstUser, toolCalls
}

// testDigests: a trace list's rows carry the digest computed when the
// trace was written (first user message, tool calls, usage, duration) and
// the violation count, kept up to date by appends and rebuilds.
func testDigests(t *testing.T, open func(t *testing.T) store.Store) {
	e := newEnv(t, open)
	alice := e.user("alice")

	// The 200 tau-bench traces, against the test's own reading of the file.
	d := e.dataset(alice, "airline", false)
	tau := TauBench(t)
	nts := make([]store.NewTrace, len(tau))
	for i, tr := range tau {
		nts[i] = NewTraceOf(tr, alice.ID)
	}
	ids := e.add(alice.ID, d.ID, nts...)
	firstUser, toolCalls := tauRaw(t)
	if len(firstUser) != len(tau) {
		t.Fatalf("the file has %d trajectories, the importer read %d", len(firstUser), len(tau))
	}
	rows := e.listAll(d.ID, 0)
	nonEmpty, calls := 0, 0
	for i, s := range rows {
		if s.Digest.FirstUser != firstUser[i] {
			t.Errorf("trace %d: first user message %q, want %q", i, s.Digest.FirstUser, firstUser[i])
		}
		if s.Digest.ToolCalls != toolCalls[i] {
			t.Errorf("trace %d: %d tool calls, want %d", i, s.Digest.ToolCalls, toolCalls[i])
		}
		if s.Digest.FirstUser != "" {
			nonEmpty++
		}
		calls += s.Digest.ToolCalls
	}
	// The comparison above is only as good as what it compared.
	if nonEmpty < 190 || calls < 1000 {
		t.Errorf("%d of the first user messages are not empty and there are %d tool calls: the corpus was not read", nonEmpty, calls)
	}

	// Usage and duration agree with internal/usage's reading of the whole
	// trace (no price table: the costs recorded), over every corpus file.
	u := e.dataset(alice, "usage", false)
	var all []*trace.Trace
	for _, f := range Corpus(t) {
		all = append(all, f.Traces...)
	}
	for i := 0; i < len(all); i += 100 {
		var batch []store.NewTrace
		for _, tr := range all[i:min(i+100, len(all))] {
			nt := NewTraceOf(tr, alice.ID)
			nt.Trace.Index = nil // the files' indexes repeat: here they are in corpus order
			batch = append(batch, nt)
		}
		e.add(alice.ID, u.ID, batch...)
	}
	withTokens, withDuration := 0, 0
	for i, s := range e.listAll(u.ID, 0) {
		want := usage.OfTrace(all[i], nil)
		got := s.Digest.Usage
		if got.Input != want.Input || got.Output != want.Output || got.Total != want.Total || math.Abs(got.Cost-want.Cost) > 1e-9 ||
			got.Has != want.Has&(usage.HasInput|usage.HasOutput|usage.HasTotal|usage.HasCost) || got.Unpriced != want.Unpriced {
			t.Errorf("trace %d: usage %+v, want %+v", i, got, want)
		}
		dur, ok := got.Bounds.Duration()
		// Times are kept to the microsecond.
		if ok != (want.Has&usage.HasDuration != 0) || ok && absDur(dur-want.Duration) > time.Microsecond {
			t.Errorf("trace %d: duration %v (%v), want %v (%v)", i, dur, ok, want.Duration, want.Has&usage.HasDuration != 0)
		}
		if got.Has&usage.HasInput != 0 {
			withTokens++
		}
		if ok {
			withDuration++
		}
	}
	if withTokens == 0 || withDuration == 0 {
		t.Errorf("%d corpus traces with tokens, %d with a duration: nothing was compared", withTokens, withDuration)
	}

	// Violations are the analyzer's annotations, counted as they change.
	for _, a := range []store.Annotation{
		{TraceID: ids[3], Address: "messages.0", Content: "v1", Source: "analyzer"},
		{TraceID: ids[3], Address: "messages.1", Content: "v2", Source: "analyzer"},
		{TraceID: ids[3], Address: "messages.1", Content: "a note", Source: "user", Author: alice.ID},
		{TraceID: ids[5], Address: "messages.0", Content: "a note", Source: "user", Author: alice.ID},
	} {
		if _, err := e.st.CreateAnnotation(e.ctx, a); err != nil {
			t.Fatal(err)
		}
	}
	counts := func() map[int][2]int {
		out := map[int][2]int{}
		for i, s := range e.listAll(d.ID, 0) {
			if s.AnnotationCount != 0 || s.ViolationCount != 0 {
				out[i] = [2]int{s.AnnotationCount, s.ViolationCount}
			}
		}
		return out
	}
	if got := counts(); len(got) != 2 || got[3] != [2]int{3, 2} || got[5] != [2]int{1, 0} {
		t.Errorf("annotations and violations %v, want trace 3: 3 and 2, trace 5: 1 and 0", got)
	}
	if err := e.st.ReplaceAnnotations(e.ctx, ids[3], "analyzer", nil); err != nil {
		t.Fatal(err)
	}
	if got := counts(); len(got) != 2 || got[3] != [2]int{1, 0} {
		t.Errorf("after the analyzer's results went: %v, want trace 3: 1 and 0", got)
	}
	// A search's rows carry the same.
	q, err := search.Parse("is:annotated")
	if err != nil {
		t.Fatal(err)
	}
	res, err := e.st.SearchTraces(e.ctx, d.ID, q, store.SearchOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Traces) != 2 || res.Traces[0].Digest.FirstUser != firstUser[3] || res.Traces[0].Digest.ToolCalls != toolCalls[3] || res.Traces[0].AnnotationCount != 1 {
		t.Errorf("search rows: %+v", res.Traces)
	}

	testDigestAppends(t, e, alice)
}

func absDur(d time.Duration) time.Duration {
	if d < 0 {
		return -d
	}
	return d
}

// testDigestAppends: appends (AppendEvents, a gateway conversation's steps
// with spans) and an OpenTelemetry trace's rebuilds change the digest.
func testDigestAppends(t *testing.T, e *env, alice store.User) {
	d := e.dataset(alice, "live", false)
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	sys := store.NewTrace{Trace: &trace.Trace{Name: "live", Events: []trace.Event{{Role: "system", Content: trace.TextContent("be brief"),
		Extra: trace.Fields{{Key: "timestamp", Value: json.RawMessage(`"` + t0.Format(time.RFC3339) + `"`)}}}}}}
	id := e.add(alice.ID, d.ID, sys)[0]
	digest := func() store.Digest {
		t.Helper()
		rows := e.listAll(d.ID, 0)
		if len(rows) != 1 {
			t.Fatalf("%d rows", len(rows))
		}
		return rows[0].Digest
	}
	if g := digest(); g.FirstUser != "" || g.ToolCalls != 0 {
		t.Errorf("before appends: %+v", g)
	}
	long := strings.Repeat("é", 150) + strings.Repeat("😀", 40) // 150 + 80 code units
	if err := e.st.AppendEvents(e.ctx, id, []trace.Event{
		{Role: "user", Content: trace.Content{Kind: trace.ContentParts, Parts: []trace.Part{{Type: "text", Text: long}, {Type: "image"}}},
			Extra: trace.Fields{{Key: "timestamp", Value: json.RawMessage(`"` + t0.Add(90*time.Second).Format(time.RFC3339) + `"`)}}},
		{Role: "assistant", ToolCalls: []trace.ToolCall{{ID: "a", Function: trace.Function{Name: "f"}}, {ID: "b", Function: trace.Function{Name: "g"}}}},
	}); err != nil {
		t.Fatal(err)
	}
	want := strings.Repeat("é", 150) + strings.Repeat("😀", 25) // 200 units, no half emoji
	g := digest()
	if g.FirstUser != want || g.ToolCalls != 2 {
		t.Errorf("after an append: first user %q, %d tool calls; want %q, 2", g.FirstUser, g.ToolCalls, want)
	}
	if dur, ok := g.Usage.Bounds.Duration(); !ok || dur != 90*time.Second {
		t.Errorf("after an append: duration %v %v, want 1m30s", dur, ok)
	}
	// A later user message does not replace the first.
	if err := e.st.AppendEvents(e.ctx, id, []trace.Event{{Role: "user", Content: trace.TextContent("later")},
		{Role: "assistant", ToolCalls: []trace.ToolCall{{ID: "c", Function: trace.Function{Name: "f"}}}}}); err != nil {
		t.Fatal(err)
	}
	if g := digest(); g.FirstUser != want || g.ToolCalls != 3 {
		t.Errorf("after a second append: first user %q, %d tool calls; want the first, 3", g.FirstUser, g.ToolCalls)
	}

	// A gateway conversation: steps with spans that record tokens and cost.
	g2 := e.dataset(alice, "gateway", false)
	call := func(id, in, out string, cost string, start time.Time) trace.Span {
		attrs := `{"gen_ai.request.model":"gpt-4o","gen_ai.usage.input_tokens":` + in + `,"gen_ai.usage.output_tokens":` + out
		if cost != "" {
			attrs += `,"gen_ai.usage.cost":` + cost
		}
		return trace.Span{ID: id, Name: "chat", Start: start, End: start.Add(time.Second), Attributes: json.RawMessage(attrs + "}")}
	}
	cid, err := e.st.RecordConversation(e.ctx, alice.ID, g2.ID, store.ConversationStep{Head: "h1", Trace: &trace.Trace{
		Events: []trace.Event{{Role: "user", Content: trace.TextContent("hi")}}, Spans: []trace.Span{call("s1", "100", "10", "0.5", t0)}}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.st.RecordConversation(e.ctx, alice.ID, g2.ID, store.ConversationStep{TraceID: cid, ExpectEvents: 1, Head: "h2",
		Events: []trace.Event{{Role: "assistant", ToolCalls: []trace.ToolCall{{ID: "x", Function: trace.Function{Name: "f"}}}}},
		Spans:  []trace.Span{call("s2", "200", "20", "", t0.Add(10*time.Second))}}); err != nil {
		t.Fatal(err)
	}
	rows := e.listAll(g2.ID, 0)
	if len(rows) != 1 {
		t.Fatalf("gateway: %d rows", len(rows))
	}
	gu := rows[0].Digest.Usage
	dur, _ := gu.Bounds.Duration()
	if rows[0].Digest.FirstUser != "hi" || rows[0].Digest.ToolCalls != 1 || gu.Input != 300 || gu.Output != 30 || gu.Cost != 0.5 || gu.Unpriced != 1 ||
		gu.ByModel["gpt-4o"] != (store.ModelTokens{Input: 200, Output: 20, Spans: 1}) || dur != 11*time.Second {
		t.Errorf("gateway conversation after a step: %+v (duration %v)", rows[0].Digest, dur)
	}

	// An OpenTelemetry trace: built, then rebuilt with more spans.
	o := e.dataset(alice, "otel", false)
	build := func(_ string, spans [][]byte) (*trace.Trace, error) {
		tr := &trace.Trace{}
		for _, s := range spans {
			tr.Events = append(tr.Events, trace.Event{Role: "user", Content: trace.TextContent(string(s))})
		}
		return tr, nil
	}
	for _, sp := range []store.StoredSpan{{SpanID: "a", Data: []byte("first")}, {SpanID: "b", Data: []byte("second")}} {
		if _, errs, err := e.st.AddSpans(e.ctx, alice.ID, o.ID, []store.SpanGroup{{OTelTraceID: "t1", Spans: []store.StoredSpan{sp}}}, build); err != nil || errs[0] != nil {
			t.Fatal(err, errs)
		}
	}
	rows = e.listAll(o.ID, 0)
	if len(rows) != 1 || rows[0].Digest.FirstUser != "first" || rows[0].EventCount != 2 {
		t.Errorf("OpenTelemetry trace rebuilt: %+v", rows)
	}
}

// MigrateTraceSummary checks that a trace stored before digests were kept
// (migration 18) gets its digest when first listed, stores it (summaries
// counts the stored digests), and that an append then merges into it. p
// migrates db as in MigratePolicyMode; now is the SQL of a time.
func MigrateTraceSummary(t *testing.T, p *goose.Provider, db *sql.DB, now string, open func() (store.Store, func() int)) {
	t.Helper()
	ctx := context.Background()
	if _, err := p.UpTo(ctx, 17); err != nil {
		t.Fatal(err)
	}
	const user, dataset, tr, tr2 = "00000000-0000-4000-8000-000000000001", "00000000-0000-4000-8000-000000000002", "00000000-0000-7000-8000-000000000003", "00000000-0000-7000-8000-000000000004"
	old := &trace.Trace{Events: []trace.Event{{Role: "system", Content: trace.TextContent("sys")}, {Role: "user", Content: trace.TextContent("book a flight")},
		{Role: "assistant", ToolCalls: []trace.ToolCall{{ID: "1", Function: trace.Function{Name: "search"}}}}}}
	content := strings.ReplaceAll(string(trace.AppendTrace(nil, old)), "'", "''")
	for _, q := range []string{
		`INSERT INTO users (id, name, created_at) VALUES ('` + user + `', 'alice', ` + now + `)`,
		`INSERT INTO datasets (id, owner_id, name, created_at) VALUES ('` + dataset + `', '` + user + `', 'd', ` + now + `)`,
		`INSERT INTO traces (id, dataset_id, owner_id, idx, event_count, created_at, encoding, content) VALUES ('` + tr + `', '` + dataset + `', '` + user + `', 0, 3, ` + now + `, 0, '` + content + `')`,
		`INSERT INTO traces (id, dataset_id, owner_id, idx, event_count, created_at, encoding, content) VALUES ('` + tr2 + `', '` + dataset + `', '` + user + `', 1, 3, ` + now + `, 0, '` + content + `')`,
	} {
		if _, err := db.ExecContext(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	st, summaries := open()
	if n := summaries(); n != 0 {
		t.Fatalf("%d digests stored before the traces were listed", n)
	}
	more := []trace.Event{{Role: "assistant", ToolCalls: []trace.ToolCall{{ID: "2", Function: trace.Function{Name: "book"}}}}}
	// The second trace is appended to before it is ever listed: the
	// append computes its digest from the whole trace.
	if err := st.AppendEvents(ctx, tr2, more); err != nil {
		t.Fatal(err)
	}
	if n := summaries(); n != 1 {
		t.Errorf("%d digests stored after an append, want 1", n)
	}
	for range 2 {
		items, _, err := st.ListTraces(ctx, dataset, store.Page{Limit: 1})
		if err != nil {
			t.Fatal(err)
		}
		if len(items) != 1 || items[0].Digest.FirstUser != "book a flight" || items[0].Digest.ToolCalls != 1 {
			t.Fatalf("the trace stored before: %+v", items)
		}
		if n := summaries(); n != 2 {
			t.Errorf("%d digests stored after listing, want 2", n)
		}
	}
	if err := st.AppendEvents(ctx, tr, more); err != nil {
		t.Fatal(err)
	}
	items, _, err := st.ListTraces(ctx, dataset, store.Page{})
	if err != nil || len(items) != 2 {
		t.Fatalf("after the appends: %+v, %v", items, err)
	}
	for _, it := range items {
		if it.Digest.FirstUser != "book a flight" || it.Digest.ToolCalls != 2 || it.EventCount != 4 {
			t.Errorf("after an append: %+v", it)
		}
	}
}

// tauBenchFile is the corpus's tau-bench airline file, which the digest
// and sort tests read themselves, apart from the importer.
func tauBenchFile(t *testing.T) []byte {
	t.Helper()
	dir, err := testcorpus.Find("corpus")
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(dir, "openai", "tau-bench", "gpt-4o-airline.json"))
	if err != nil {
		t.Fatal(err)
	}
	return data
}
