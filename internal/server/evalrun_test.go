package server

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lookout-dev/lookout/internal/eval"
	"github.com/lookout-dev/lookout/internal/formats"
	"github.com/lookout-dev/lookout/internal/store"
	"github.com/lookout-dev/lookout/internal/store/postgres"
	"github.com/lookout-dev/lookout/internal/store/postgres/pgtest"
	"github.com/lookout-dev/lookout/internal/store/sqlite"
	"github.com/lookout-dev/lookout/internal/store/storetest"
	"github.com/lookout-dev/lookout/internal/testcorpus"
	"github.com/lookout-dev/lookout/internal/trace"
)

// judge is a fake OpenAI-compatible endpoint: FAIL when the trace sent to it
// mentions the tool transfer_to_human_agents, else PASS. It counts the
// requests per trace (by the task text) and, once armed, stops answering
// after a number of requests until the request is cancelled, so that a test
// can stop a run half-way.
type judge struct {
	mu       sync.Mutex
	n        int
	perTrace map[string]int
	stallAt  int // 0: never
	stalled  chan struct{}
	once     sync.Once
}

func (j *judge) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	var req struct {
		Messages []struct{ Content string }
	}
	if err := json.Unmarshal(body, &req); err != nil || len(req.Messages) != 2 {
		http.Error(w, "bad request", 400)
		return
	}
	content := req.Messages[1].Content
	j.mu.Lock()
	j.n++
	n := j.n
	j.perTrace[content]++
	j.mu.Unlock()
	if j.stallAt > 0 && n >= j.stallAt {
		j.once.Do(func() { close(j.stalled) })
		<-r.Context().Done()
		j.mu.Lock()
		j.perTrace[content]-- // never answered: not a verdict
		j.mu.Unlock()
		return
	}
	verdict := "PASS"
	if strings.Contains(content, `"name":"transfer_to_human_agents"`) {
		verdict = "FAIL"
	}
	json.NewEncoder(w).Encode(map[string]any{"choices": []any{map[string]any{"message": map[string]string{"content": verdict + "\nbecause"}}}})
}

const tauCriteria = `[
  {"name": "no-cancel", "evaluator": "rule", "policy": "raise \"cancel\" if:\n    (call: ToolCall)\n    call is tool:cancel_reservation\n"},
  {"name": "solved", "evaluator": "code", "expr": "metadata.reward == 1", "required": true, "threshold": 0.5},
  {"name": "no-handoff", "evaluator": "llm", "prompt": "Did the agent solve it without handing off to a human?"}
]`

// TestEvalRunTauBench runs a rule, a code and an llm criterion over the
// tau-bench airline traces, stops the server half-way, starts a new one on
// the same database, and checks that the run finishes with every trace
// graded exactly once and results the test recomputes from the traces.
func TestEvalRunTauBench(t *testing.T) {
	tau := storetest.TauBench(t)
	backends := []struct {
		name string
		open func(t *testing.T) func() store.Store
	}{
		{"sqlite", func(t *testing.T) func() store.Store {
			path := filepath.Join(t.TempDir(), "lookout.db")
			return func() store.Store {
				st, err := sqlite.Open(context.Background(), path)
				if err != nil {
					t.Fatal(err)
				}
				return st
			}
		}},
		{"postgres", func(t *testing.T) func() store.Store {
			url := pgtest.URL(t)
			return func() store.Store {
				st, err := postgres.Open(context.Background(), url)
				if err != nil {
					t.Fatal(err)
				}
				return st
			}
		}},
	}
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) { evalRunTau(t, tau, b.open(t)) })
	}
}

func evalRunTau(t *testing.T, tau []*trace.Trace, open func() store.Store) {
	ctx := context.Background()
	j := &judge{perTrace: map[string]int{}, stallAt: 100, stalled: make(chan struct{})}
	js := httptest.NewServer(j)
	defer js.Close()
	llm := &eval.LLM{URL: js.URL, Model: "fake"}

	// First server: load the traces, start the run, stop when the judge
	// has seen 100 requests.
	st := open()
	f := newFixture(t, st, Config{LLM: llm, EvalConcurrency: 4})
	u := f.addUser("alice")
	d, err := st.CreateDataset(ctx, store.Dataset{OwnerID: u.ID, Name: "tau"})
	if err != nil {
		t.Fatal(err)
	}
	nts := make([]store.NewTrace, len(tau))
	for i, tr := range tau {
		nts[i] = storetest.NewTraceOf(tr, "alice")
	}
	ids, err := st.AddTraces(ctx, u.ID, d.ID, nts)
	if err != nil {
		t.Fatal(err)
	}
	var run runJSON
	f.must(201, "POST", "/api/v1/datasets/"+d.ID+"/eval/runs", "alice", `{"name": "tau", "criteria": `+tauCriteria+`}`).json(t, &run)
	select {
	case <-j.stalled:
	case <-time.After(60 * time.Second):
		t.Fatal("the judge never saw 100 requests")
	}
	f.srv.StopRuns()
	f.hs.Close()
	before, err := st.RunStatuses(ctx, run.ID)
	if err != nil {
		t.Fatal(err)
	}
	finishedBefore := map[string]bool{}
	for _, s := range before {
		finishedBefore[s.TraceID] = true
	}
	if n := len(finishedBefore); n == 0 || n >= len(tau) {
		t.Fatalf("%d traces finished before the stop; want some but not all", n)
	}
	if r, _ := st.Run(ctx, run.ID); r.State != store.RunRunning {
		t.Fatalf("state after the stop %q, want running", r.State)
	}
	st.Close()

	// Second server on the same database: it resumes the run.
	j.mu.Lock()
	j.stallAt = 0
	answeredBefore := map[string]int{}
	for k, v := range j.perTrace {
		answeredBefore[k] = v
	}
	j.mu.Unlock()
	st = open()
	defer st.Close()
	f2 := newFixture(t, st, Config{LLM: llm, EvalConcurrency: 4})
	f2.keys = f.keys
	if err := f2.srv.ResumeRuns(ctx); err != nil {
		t.Fatal(err)
	}
	r := f2.must(200, "GET", "/api/v1/eval/runs/"+run.ID+"/events", "alice", "")
	events := parseSSE(t, string(r.body))
	last := events[len(events)-1]
	if last.name != "done" {
		t.Fatalf("last event %+v", last)
	}
	var done runJSON
	if err := json.Unmarshal([]byte(last.data), &done); err != nil {
		t.Fatal(err)
	}
	defer f2.srv.StopRuns()
	if done.State != "done" || done.Progress.Done != int64(len(tau)) || done.Progress.Errors != 0 {
		t.Fatalf("run after the restart: %+v", done)
	}

	// Every trace graded once on every criterion: one status each, one
	// score each, all first versions (a redone trace would have a second).
	statuses, err := st.RunStatuses(ctx, run.ID)
	if err != nil {
		t.Fatal(err)
	}
	if len(statuses) != 3*len(tau) {
		t.Fatalf("%d statuses, want %d", len(statuses), 3*len(tau))
	}
	scores, err := st.ListScores(ctx, store.ScoreFilter{DatasetID: d.ID, History: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(scores) != 3*len(tau) {
		t.Fatalf("%d scores, want %d", len(scores), 3*len(tau))
	}
	got := map[string]map[string]bool{} // trace → criterion → pass
	for _, s := range scores {
		if s.Version != 1 || s.RunID != run.ID {
			t.Fatalf("score %+v: a trace was graded twice", s)
		}
		if got[s.TraceID] == nil {
			got[s.TraceID] = map[string]bool{}
		}
		got[s.TraceID][s.Criterion] = string(s.Value) == "true"
	}
	// Traces finished before the stop were not judged again; the others
	// were judged once more at most (those answered but not yet stored).
	j.mu.Lock()
	for i, tr := range tau {
		key := "Did the agent solve it without handing off to a human?\n\n" + string(trace.AppendEvents(nil, tr.Events))
		n := j.perTrace[key]
		switch {
		case finishedBefore[ids[i]] && (n != 1 || answeredBefore[key] != 1):
			t.Errorf("trace %d, finished before the stop, was judged %d times", i, n)
		case n < 1 || n > 2:
			t.Errorf("trace %d was judged %d times", i, n)
		}
	}
	j.mu.Unlock()

	// Recompute independently from the traces.
	var passed = map[string]int{}
	for i, tr := range tau {
		cancel, handoff := false, false
		for _, ev := range tr.Events {
			for _, c := range ev.ToolCalls {
				cancel = cancel || c.Function.Name == "cancel_reservation"
				handoff = handoff || c.Function.Name == "transfer_to_human_agents"
			}
		}
		var meta struct{ Reward float64 }
		if err := json.Unmarshal(tr.Metadata, &meta); err != nil {
			t.Fatal(err)
		}
		want := map[string]bool{"no-cancel": !cancel, "solved": meta.Reward == 1, "no-handoff": !handoff}
		for c, w := range want {
			if got[ids[i]][c] != w {
				t.Errorf("trace %d %s: got %v, want %v", i, c, got[ids[i]][c], w)
			}
			if w {
				passed[c]++
			}
		}
	}
	if passed["solved"] != 84 || passed["no-cancel"] != 200-46 || passed["no-handoff"] != 200-48 {
		t.Errorf("independent counts %v (the corpus changed?)", passed)
	}
	for _, s := range done.Summary {
		if s.Passed != passed[s.Criterion] || s.Failed != len(tau)-passed[s.Criterion] || s.Rate == nil ||
			*s.Rate != float64(passed[s.Criterion])/float64(len(tau)) {
			t.Errorf("summary %+v, want %d passed", s, passed[s.Criterion])
		}
	}
	// The rule's failures carry the violation's ranges.
	for _, s := range scores {
		if s.Criterion == "no-cancel" && string(s.Value) == "false" && !strings.Contains(string(s.Extra), `"ranges":["messages.`) {
			t.Errorf("rule failure without ranges: %s", s.Extra)
		}
	}
}

// TestEvalSnorkelSteps grades every AI_RESPONSE step of the hierarchical
// seed through the API and reads back per-step scores and statuses.
func TestEvalSnorkelSteps(t *testing.T) {
	forEachBackend(t, func(t *testing.T, st storeUnderTest) {
		f := newFixture(t, st, Config{})
		u := f.addUser("alice")
		ctx := context.Background()
		d, err := st.CreateDataset(ctx, store.Dataset{OwnerID: u.ID, Name: "snorkel"})
		if err != nil {
			t.Fatal(err)
		}
		file, err := os.Open(testcorpus.File(t, "seeds/snorkel-example.json"))
		if err != nil {
			t.Fatal(err)
		}
		defer file.Close()
		dec, _, err := formats.Open(file, "snorkel-example.json", "")
		if err != nil {
			t.Fatal(err)
		}
		var nts []store.NewTrace
		var trs []*trace.Trace
		for {
			tr, err := dec.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			trs = append(trs, tr)
			nts = append(nts, storetest.NewTraceOf(tr, "alice"))
		}
		ids, err := st.AddTraces(ctx, u.ID, d.ID, nts)
		if err != nil {
			t.Fatal(err)
		}
		var run runJSON
		f.must(201, "POST", "/api/v1/datasets/"+d.ID+"/eval/runs", "alice",
			`{"criteria": [{"name": "sure", "evaluator": "code", "target": "step:AI_RESPONSE", "expr": "\"Sure\" in step.value"}]}`).json(t, &run)
		done := waitRun(t, f, "alice", run.ID)
		if done.State != "done" {
			t.Fatalf("run %+v", done)
		}
		var status struct{ Traces map[string]map[string]string }
		f.must(200, "GET", "/api/v1/datasets/"+d.ID+"/eval/status", "alice", "").json(t, &status)
		for i, id := range ids {
			if status.Traces[id]["sure"] != "evaluated" {
				t.Errorf("trace %d status %v", i, status.Traces[id])
			}
			var out struct{ Scores []scoreJSON }
			f.must(200, "GET", "/api/v1/traces/"+id+"/scores", "alice", "").json(t, &out)
			want := map[string]string{}
			for _, s := range trs[i].Spans {
				if s.Kind == "AI_RESPONSE" {
					var v string
					json.Unmarshal(s.Value, &v)
					want[trace.SpanAddress(s.ID).String()] = map[bool]string{true: "true", false: "false"}[strings.Contains(v, "Sure")]
				}
			}
			if len(out.Scores) != len(want) || len(want) == 0 {
				t.Fatalf("trace %d: %d scores for %d AI_RESPONSE steps", i, len(out.Scores), len(want))
			}
			for _, s := range out.Scores {
				if want[s.Address] != string(s.Value) || s.Source != "code" {
					t.Errorf("trace %d score %+v, want %s", i, s, want[s.Address])
				}
			}
		}
		// A person grades one step, which supersedes the run's score.
		var out struct{ Scores []scoreJSON }
		f.must(200, "GET", "/api/v1/traces/"+ids[0]+"/scores", "alice", "").json(t, &out)
		f.must(201, "POST", "/api/v1/traces/"+ids[0]+"/scores", "alice", `{"criterion": "sure", "value": false, "address": "`+out.Scores[0].Address+`"}`)
		f.must(200, "GET", "/api/v1/traces/"+ids[0]+"/scores?history=true", "alice", "").json(t, &out)
		if len(out.Scores) != 3 {
			t.Errorf("history %+v", out.Scores)
		}
		f.srv.StopRuns()
	})
}
