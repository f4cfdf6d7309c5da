package storetest

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/pressly/goose/v3"

	"github.com/lookout-dev/lookout/internal/store"
	"github.com/lookout-dev/lookout/internal/trace"
	"github.com/lookout-dev/lookout/internal/usage"
)

// tauSortFacts are what the sort test reads itself from the tau-bench
// file, apart from the importer: each trajectory's message count, the
// characters of its string contents, its assistant messages and reward.
type tauSortFacts struct {
	Messages, Chars, Assistant int
	Reward                     float64
}

func readTauSortFacts(t *testing.T) []tauSortFacts {
	t.Helper()
	data := tauBenchFile(t)
	var runs []struct {
		Reward float64 `json:"reward"`
		Traj   []struct {
			Role    string `json:"role"`
			Content any    `json:"content"`
		} `json:"traj"`
	}
	if err := json.Unmarshal(data, &runs); err != nil {
		t.Fatal(err)
	}
	out := make([]tauSortFacts, len(runs))
	for i, r := range runs {
		f := tauSortFacts{Messages: len(r.Traj), Reward: r.Reward}
		for _, m := range r.Traj {
			if s, ok := m.Content.(string); ok {
				f.Chars += len(s)
			}
			if m.Role == "assistant" {
				f.Assistant++
			}
		}
		out[i] = f
	}
	return out
}

// testListSort: a trace list sorted by duration, tokens, cost, violations
// and a score, in both directions, paged through with small pages, is in
// the order the test computes from the tau-bench file itself (ties by
// index, missing values below every value, unscored traces last), and
// stays so after appends, new policy results and new scores change keys.
func testListSort(t *testing.T, open func(t *testing.T) store.Store) {
	e := newEnv(t, open)
	alice := e.user("alice")
	d := e.dataset(alice, "airline-sorted", false)
	tau := TauBench(t)
	facts := readTauSortFacts(t)
	if len(facts) != len(tau) {
		t.Fatalf("the file has %d trajectories, the importer read %d", len(facts), len(tau))
	}
	price, _, ok := usage.Default().Lookup("gpt-4o")
	if !ok {
		t.Fatal("the shipped price table has no gpt-4o")
	}
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	stamp := func(ts time.Time) trace.Fields {
		return trace.Fields{{Key: "timestamp", Value: json.RawMessage(`"` + ts.Format(time.RFC3339Nano) + `"`)}}
	}
	// What each trace's keys will be: every tenth trace has no times and
	// no tokens; the others last a second a message (first to last event)
	// and used chars/100 tokens in and a token an assistant message out
	// on gpt-4o, recorded on a span with no cost (priced with the
	// shipped table). Durations and tokens repeat: ties.
	type keys struct{ dur, tokens, cost, viol, score float64 }
	want := make([]keys, len(tau))
	scored := make([]bool, len(tau))
	nts := make([]store.NewTrace, len(tau))
	for i, tr := range tau {
		nt := NewTraceOf(tr, alice.ID)
		c := *nt.Trace
		f := facts[i]
		if i%10 == 9 {
			want[i] = keys{-1, -1, -1, 0, 0}
		} else {
			c.Events = slices.Clone(c.Events)
			first, last := c.Events[0], c.Events[len(c.Events)-1]
			first.Extra = append(slices.Clone(first.Extra), stamp(t0)...)
			last.Extra = append(slices.Clone(last.Extra), stamp(t0.Add(time.Duration(f.Messages)*time.Second))...)
			c.Events[0], c.Events[len(c.Events)-1] = first, last
			in, out := f.Chars/100, f.Assistant
			c.Spans = []trace.Span{{ID: "llm", Name: "chat gpt-4o", Kind: "LLM",
				Attributes: json.RawMessage(fmt.Sprintf(`{"gen_ai.request.model":"gpt-4o","gen_ai.usage.input_tokens":%d,"gen_ai.usage.output_tokens":%d}`, in, out))}}
			want[i] = keys{dur: float64(f.Messages) * 1000, tokens: float64(in + out), cost: (float64(in)*price.Input + float64(out)*price.Output) / 1e6}
		}
		nt.Trace = &c
		nts[i] = nt
	}
	ids := e.add(alice.ID, d.ID, nts...)
	idx := map[string]int64{}
	for _, s := range e.listAll(d.ID, 0) {
		idx[s.ID] = s.Index
	}
	// Policy results: 0 to 3 violations, none on every fifth trace.
	for i, id := range ids {
		n := (i * 7) % 4
		if i%5 == 0 {
			n = 0
		}
		var as []store.Annotation
		for k := range n {
			as = append(as, store.Annotation{Address: "messages." + strconv.Itoa(k), Content: "violation"})
		}
		if n > 0 {
			if err := e.st.ReplaceAnnotations(e.ctx, id, "analyzer", as); err != nil {
				t.Fatal(err)
			}
		}
		// A user's note is no violation.
		if i%6 == 0 {
			if _, err := e.st.CreateAnnotation(e.ctx, store.Annotation{TraceID: id, Address: "messages.0", Content: "note", Source: "user", Author: alice.ID}); err != nil {
				t.Fatal(err)
			}
		}
		want[i].viol = float64(n)
	}
	// Scores: the reward, as a number or a boolean; every eighth trace
	// from the fourth has none; some superseded (the current one counts).
	var first, then []store.Score
	for i, id := range ids {
		if i%8 == 3 {
			continue
		}
		r := facts[i].Reward
		v := strconv.FormatFloat(r, 'f', -1, 64)
		if i%2 == 0 {
			v = strconv.FormatBool(r == 1)
		}
		if i%16 == 1 {
			first = append(first, store.Score{TraceID: id, Criterion: "reward", Value: json.RawMessage(`0.5`), Source: "code"})
		}
		then = append(then, store.Score{TraceID: id, Criterion: "reward", Value: json.RawMessage(v), Source: "code"})
		want[i].score, scored[i] = r, true
	}
	for _, b := range [][]store.Score{first, then} {
		if _, err := e.st.AddScores(e.ctx, b); err != nil {
			t.Fatal(err)
		}
	}

	type sortCase struct {
		sort string
		key  func(k keys) float64
	}
	cases := []sortCase{
		{"time", func(keys) float64 { return 0 }},
		{"duration", func(k keys) float64 { return k.dur }},
		{"tokens", func(k keys) float64 { return k.tokens }},
		{"cost", func(k keys) float64 { return k.cost }},
		{"violations", func(k keys) float64 { return k.viol }},
		{"score:reward", func(k keys) float64 { return k.score }},
	}
	// expected is the order the test computes: by key, then index; for a
	// score, the scored traces so, then the others by index.
	expected := func(c sortCase, desc bool) []string {
		type item struct {
			id     string
			v      float64
			idx    int64
			scored bool
		}
		items := make([]item, len(ids))
		for i, id := range ids {
			items[i] = item{id, c.key(want[i]), idx[id], c.sort != "score:reward" || scored[i]}
		}
		slices.SortFunc(items, func(a, b item) int {
			if a.scored != b.scored {
				if a.scored {
					return -1
				}
				return 1
			}
			s := 1
			if desc {
				s = -1
			}
			if a.scored {
				if a.v < b.v {
					return -s
				}
				if a.v > b.v {
					return s
				}
			}
			if a.idx < b.idx {
				return -s
			}
			return s
		})
		out := make([]string, len(items))
		for i, it := range items {
			out[i] = it.id
		}
		return out
	}
	check := func(when string) {
		t.Helper()
		for _, c := range cases {
			for _, desc := range []bool{false, true} {
				for _, limit := range []int{7, 1000} {
					got := e.listSorted(d.ID, c.sort, desc, limit)
					w := expected(c, desc)
					if limit == 7 {
						// A page at an offset is the same rows.
						for _, off := range []int{1, 100, 170, 174, 175, 176, 199, 200, 250} {
							items, _, err := e.st.ListTraces(e.ctx, d.ID, store.Page{Sort: c.sort, Desc: desc, Offset: off, Limit: 7})
							if err != nil {
								t.Fatalf("%s: sort %s desc=%v offset %d: %v", when, c.sort, desc, off, err)
							}
							var page []string
							for _, it := range items {
								page = append(page, it.ID)
							}
							if ww := w[min(off, len(w)):min(off+7, len(w))]; !slices.Equal(page, ww) && !(len(page) == 0 && len(ww) == 0) {
								t.Errorf("%s: sort %s desc=%v offset %d: %d rows, not the %d expected", when, c.sort, desc, off, len(page), len(ww))
							}
						}
					}
					if !slices.Equal(got, w) {
						at := 0
						for at < len(got) && at < len(w) && got[at] == w[at] {
							at++
						}
						t.Errorf("%s: sort %s desc=%v limit %d: %d rows, first difference at row %d of %d", when, c.sort, desc, limit, len(got), at, len(w))
					}
				}
			}
		}
	}
	check("as written")

	// Keys change: a trace with no times gets events 500 s apart (the
	// longest), a trace loses its violations and another gains five, a
	// score is superseded and another deleted.
	if err := e.st.AppendEvents(e.ctx, ids[9], []trace.Event{
		{Role: "user", Content: trace.TextContent("again"), Extra: stamp(t0)},
		{Role: "assistant", Content: trace.TextContent("yes"), Extra: stamp(t0.Add(500 * time.Second))},
	}); err != nil {
		t.Fatal(err)
	}
	want[9].dur = 500000
	if err := e.st.ReplaceAnnotations(e.ctx, ids[1], "analyzer", nil); err != nil {
		t.Fatal(err)
	}
	want[1].viol = 0
	var five []store.Annotation
	for range 5 {
		five = append(five, store.Annotation{Address: "messages.0", Content: "violation"})
	}
	if err := e.st.ReplaceAnnotations(e.ctx, ids[10], "analyzer", five); err != nil {
		t.Fatal(err)
	}
	want[10].viol = 5
	if _, err := e.st.AddScores(e.ctx, []store.Score{{TraceID: ids[0], Criterion: "reward", Value: json.RawMessage(`0.25`), Source: "human"}}); err != nil {
		t.Fatal(err)
	}
	want[0].score = 0.25
	got, err := e.st.ListScores(e.ctx, store.ScoreFilter{TraceID: ids[2]})
	if err != nil || len(got) != 1 {
		t.Fatalf("scores of trace 2: %v %v", got, err)
	}
	if err := e.st.DeleteScore(e.ctx, got[0].ID); err != nil {
		t.Fatal(err)
	}
	scored[2] = false
	check("after changes")

	// A cursor continues only the sort and order it came from.
	_, next, err := e.st.ListTraces(e.ctx, d.ID, store.Page{Sort: "tokens", Limit: 5})
	if err != nil || next == "" {
		t.Fatalf("first page by tokens: %q %v", next, err)
	}
	for _, p := range []store.Page{{Sort: "tokens", Desc: true, Cursor: next}, {Sort: "cost", Cursor: next}, {Cursor: next}} {
		if _, _, err := e.st.ListTraces(e.ctx, d.ID, p); err == nil {
			t.Errorf("the cursor of sort tokens asc was taken by %+v", p)
		}
	}
	if _, _, err := e.st.ListTraces(e.ctx, d.ID, store.Page{Sort: "size"}); err == nil {
		t.Error("sort by size was taken")
	}
}

// listSorted walks every page of a sorted trace list and returns the ids.
func (e *env) listSorted(datasetID, sort string, desc bool, limit int) []string {
	e.t.Helper()
	var ids []string
	cursor := ""
	for pages := 0; ; pages++ {
		if pages > 100000 {
			e.t.Fatal("ListTraces does not end")
		}
		items, next, err := e.st.ListTraces(e.ctx, datasetID, store.Page{Cursor: cursor, Limit: limit, Sort: sort, Desc: desc})
		if err != nil {
			e.t.Fatalf("ListTraces(sort %s, cursor %q): %v", sort, cursor, err)
		}
		if len(items) > limit {
			e.t.Fatalf("ListTraces gave %d items for limit %d", len(items), limit)
		}
		for _, s := range items {
			ids = append(ids, s.ID)
		}
		if next == "" {
			return ids
		}
		cursor = next
	}
}

// MigrateListSort checks migration 20 on traces stored before it: summary
// rows get their dataset, index and sort keys from their digest, the
// violation count from the annotations, score_keys from the current scores,
// and a trace with no summary row (stored before migration 18) is listed
// in a sorted list once its digest is computed. p migrates db as in
// MigratePolicyMode; now is the SQL of a time, true of a true boolean.
func MigrateListSort(t *testing.T, p *goose.Provider, db *sql.DB, now, trueSQL string, open func() store.Store) {
	t.Helper()
	ctx := context.Background()
	if _, err := p.UpTo(ctx, 19); err != nil {
		t.Fatal(err)
	}
	const user, dataset = "00000000-0000-4000-8000-000000000001", "00000000-0000-4000-8000-000000000002"
	tr := []string{"00000000-0000-7000-8000-000000000010", "00000000-0000-7000-8000-000000000011", "00000000-0000-7000-8000-000000000012"}
	old := &trace.Trace{Events: []trace.Event{{Role: "user", Content: trace.TextContent("book a flight")}}}
	content := strings.ReplaceAll(string(trace.AppendTrace(nil, old)), "'", "''")
	qs := []string{
		`INSERT INTO users (id, name, created_at) VALUES ('` + user + `', 'alice', ` + now + `)`,
		`INSERT INTO datasets (id, owner_id, name, created_at) VALUES ('` + dataset + `', '` + user + `', 'd', ` + now + `)`,
	}
	for i, id := range tr {
		qs = append(qs, fmt.Sprintf(`INSERT INTO traces (id, dataset_id, owner_id, idx, event_count, created_at, encoding, content) VALUES ('%s', '%s', '%s', %d, 1, %s, 0, '%s')`,
			id, dataset, user, i, now, content))
	}
	qs = append(qs,
		// Trace 0: tokens in and out, spans over 3 s; trace 2: a total
		// only; trace 1: no summary row at all.
		`INSERT INTO trace_summaries (trace_id, summary) VALUES ('`+tr[0]+`', '{"first_user":"book a flight","has_user":true,"input_tokens":5,"output_tokens":7,"has":3,"span_first":1000000,"span_last":4000000}')`,
		`INSERT INTO trace_summaries (trace_id, summary) VALUES ('`+tr[2]+`', '{"first_user":"book a flight","has_user":true,"total_tokens":40,"has":4}')`,
	)
	for i, a := range []struct {
		trace int
		src   string
	}{{0, "analyzer"}, {0, "analyzer"}, {1, "analyzer"}, {2, "user"}} {
		qs = append(qs, fmt.Sprintf(`INSERT INTO annotations (id, trace_id, address, content, source, created_at, updated_at) VALUES ('00000000-0000-7000-8000-0000000000a%d', '%s', 'messages.0', 'v', '%s', %s, %s)`,
			i, tr[a.trace], a.src, now, now))
	}
	for i, s := range []struct {
		trace   int
		value   string
		version int
		current bool
	}{{1, "true", 1, true}, {0, "0.9", 1, false}, {0, "0.25", 2, true}} {
		cur := "NOT " + trueSQL
		if s.current {
			cur = trueSQL
		}
		qs = append(qs, fmt.Sprintf(`INSERT INTO scores (id, trace_id, criterion, value, source, version, current, created_at) VALUES ('00000000-0000-7000-8000-0000000000b%d', '%s', 'q', '%s', 'code', %d, %s, %s)`,
			i, tr[s.trace], s.value, s.version, cur, now))
	}
	for _, q := range qs {
		if _, err := db.ExecContext(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	st := open()
	for _, c := range []struct {
		sort string
		want []int64
	}{
		{"tokens", []int64{2, 0, 1}},
		{"duration", []int64{0, 2, 1}},
		{"violations", []int64{0, 1, 2}},
		{"score:q", []int64{1, 0, 2}},
	} {
		items, _, err := st.ListTraces(ctx, dataset, store.Page{Sort: c.sort, Desc: true})
		if err != nil {
			t.Fatal(err)
		}
		var got []int64
		for _, it := range items {
			got = append(got, it.Index)
		}
		if !slices.Equal(got, c.want) {
			t.Errorf("sort %s desc after the migration: %v, want %v", c.sort, got, c.want)
		}
	}
}
