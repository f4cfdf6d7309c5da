package server

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lookout-dev/lookout/internal/formats"
	"github.com/lookout-dev/lookout/internal/store"
	"github.com/lookout-dev/lookout/internal/testcorpus"
)

// dashAnswer is GET /datasets/{id}/dashboard as the tests read it.
type dashAnswer struct {
	From, To      *time.Time
	BucketSeconds int64 `json:"bucket_seconds"`
	Totals        dashBucketJSON
	Buckets       []dashBucketJSON
	Models        []dashModelJSON
	DurationMs    percentilesJSON `json:"duration_ms"`
	LLMLatencyMs  percentilesJSON `json:"llm_latency_ms"`
	Policies      []dashPolicyJSON
	Criteria      []dashCriterionJSON
	Tools         []dashToolJSON
}

// TestDashboard: a dataset's dashboard on both backends, its counts
// checked against the corpus files read here: tau-bench airline's tool
// calls and errors by tool, violations posted for the traces that call
// cancel_reservation, scores from the traces' rewards; Langfuse and
// any-agent's tokens, cost and durations against each trace's usage, and
// time buckets against the traces' first span starts.
func TestDashboard(t *testing.T) {
	raw, err := os.ReadFile(testcorpus.File(t, "openai/tau-bench/gpt-4o-airline.json"))
	if err != nil {
		t.Fatal(err)
	}
	// The independent count: the file's own messages.
	var tau []struct {
		Reward float64 `json:"reward"`
		Traj   []struct {
			Role      string `json:"role"`
			Content   any    `json:"content"`
			Name      string `json:"name"`
			ToolCalls []struct {
				Function struct{ Name string } `json:"function"`
			} `json:"tool_calls"`
		} `json:"traj"`
	}
	if err := json.Unmarshal(raw, &tau); err != nil {
		t.Fatal(err)
	}
	calls, errs := map[string]int{}, map[string]int{}
	var cancels []int // traces that call cancel_reservation
	solved := 0
	for i, tr := range tau {
		cancel := false
		for _, m := range tr.Traj {
			for _, c := range m.ToolCalls {
				calls[c.Function.Name]++
				cancel = cancel || c.Function.Name == "cancel_reservation"
			}
			if s, ok := m.Content.(string); ok && m.Role == "tool" && strings.HasPrefix(strings.ToLower(s), "error:") {
				errs[m.Name]++
			}
		}
		if cancel {
			cancels = append(cancels, i)
		}
		if i < 50 && tr.Reward == 1 {
			solved++
		}
	}
	if len(tau) != 200 || len(cancels) == 0 || len(errs) == 0 || solved == 0 || solved == 50 {
		t.Fatalf("corpus: %d traces, %d cancelling, errors %v, %d solved", len(tau), len(cancels), errs, solved)
	}

	otelFiles := []string{"otel/langfuse/claude-agent-2025-12-22.trace.json", "otel/any-agent/AGNO_trace.json"}
	// The OpenTelemetry traces' times: their first span's start.
	var starts []time.Time
	for _, name := range otelFiles {
		data, err := os.ReadFile(testcorpus.File(t, name))
		if err != nil {
			t.Fatal(err)
		}
		dec, _, err := formats.Open(bytes.NewReader(data), name, formats.Auto)
		if err != nil {
			t.Fatal(err)
		}
		tr, err := dec.Next()
		if err != nil {
			t.Fatal(err)
		}
		var first time.Time
		for _, sp := range tr.Spans {
			if !sp.Start.IsZero() && (first.IsZero() || sp.Start.Before(first)) {
				first = sp.Start
			}
		}
		starts = append(starts, first)
	}

	forEachBackend(t, func(t *testing.T, st store.Store) {
		f := newFixture(t, st, Config{})
		f.addUser("alice")
		dashOf := func(ds, query string) dashAnswer {
			t.Helper()
			var d dashAnswer
			f.must(http.StatusOK, "GET", "/api/v1/datasets/"+ds+"/dashboard"+query, "alice", "").json(t, &d)
			return d
		}

		before := time.Now().Add(-time.Minute)
		ds := f.createDataset("alice", "airline", false)
		if r := f.do("POST", "/api/v1/datasets/"+ds+"/upload", "alice", bytes.NewReader(raw)); r.status != http.StatusOK && r.status != http.StatusCreated {
			t.Fatalf("upload: %d %s", r.status, r.body)
		}
		var page struct {
			Traces []struct{ ID string }
		}
		f.must(http.StatusOK, "GET", "/api/v1/datasets/"+ds+"/traces?limit=1000", "alice", "").json(t, &page)
		if len(page.Traces) != 200 {
			t.Fatalf("%d traces listed", len(page.Traces))
		}
		var pol struct{ ID string }
		f.must(http.StatusCreated, "POST", "/api/v1/datasets/"+ds+"/policies", "alice",
			`{"name": "no cancel", "source": "raise \"cancel_reservation called\" if:\n    (call: ToolCall)\n    call is tool:cancel_reservation\n"}`).json(t, &pol)
		for _, i := range cancels {
			// Two violations of the trace: it counts once.
			for k := 0; k < 2; k++ {
				f.must(http.StatusCreated, "POST", "/api/v1/traces/"+page.Traces[i].ID+"/annotations", "alice",
					fmt.Sprintf(`{"address": "messages.%d", "content": "cancel_reservation called", "source": "analyzer", "extra": {"policy_id": %q}}`, k, pol.ID))
			}
		}
		for i := 0; i < 50; i++ {
			f.must(http.StatusCreated, "POST", "/api/v1/traces/"+page.Traces[i].ID+"/scores", "alice",
				fmt.Sprintf(`{"criterion": "solved", "value": %v}`, tau[i].Reward == 1))
		}

		d := dashOf(ds, "")
		if d.Totals.Traces != 200 {
			t.Errorf("totals: %d traces", d.Totals.Traces)
		}
		n := 0
		for _, b := range d.Buckets {
			n += b.Traces
		}
		if n != 200 || len(d.Buckets) == 0 || len(d.Buckets) > store.MaxDashboardBuckets {
			t.Errorf("%d traces in %d buckets", n, len(d.Buckets))
		}
		got := map[string][2]int{}
		for _, tool := range d.Tools {
			got[tool.Name] = [2]int{tool.Calls, tool.Errors}
		}
		want := map[string][2]int{}
		for name, c := range calls {
			want[name] = [2]int{c, errs[name]}
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("tools %v, want %v", got, want)
		}
		if len(d.Policies) != 1 || d.Policies[0].ID != pol.ID || d.Policies[0].Name != "no cancel" || d.Policies[0].Traces != len(cancels) ||
			math.Abs(d.Policies[0].Rate-float64(len(cancels))/200) > 1e-9 {
			t.Errorf("policies %+v, want %d traces", d.Policies, len(cancels))
		}
		if len(d.Criteria) != 1 || d.Criteria[0].Criterion != "solved" || d.Criteria[0].Passed != solved || d.Criteria[0].Failed != 50-solved {
			t.Errorf("criteria %+v, want %d of 50 passed", d.Criteria, solved)
		}
		// tau-bench records no times: the traces are at their upload, in
		// the last day and not in a range that ends before it.
		q := func(from, to time.Time) string {
			return "?from=" + url.QueryEscape(from.Format(time.RFC3339Nano)) + "&to=" + url.QueryEscape(to.Format(time.RFC3339Nano))
		}
		if d := dashOf(ds, q(before, time.Now().Add(time.Minute))); d.Totals.Traces != 200 || len(d.Tools) != len(calls) {
			t.Errorf("last minutes: %d traces, %d tools", d.Totals.Traces, len(d.Tools))
		}
		if d := dashOf(ds, q(before.Add(-24*time.Hour), before)); d.Totals.Traces != 0 || len(d.Tools) != 0 || d.Policies[0].Traces != 0 || len(d.Criteria) != 0 {
			t.Errorf("the day before: %+v", d)
		}
		f.must(http.StatusBadRequest, "GET", "/api/v1/datasets/"+ds+"/dashboard?from=yesterday", "alice", "")

		// OpenTelemetry traces: tokens, cost, models and durations as each
		// trace's usage has them; buckets at their spans' times.
		ot := f.createDataset("alice", "otel", false)
		var in, out int64
		var cost float64
		var durs []float64
		models := map[string]bool{}
		for _, name := range otelFiles {
			data, err := os.ReadFile(testcorpus.File(t, name))
			if err != nil {
				t.Fatal(err)
			}
			if r := f.do("POST", "/api/v1/datasets/"+ot+"/upload", "alice", bytes.NewReader(data)); r.status != http.StatusOK && r.status != http.StatusCreated {
				t.Fatalf("upload %s: %d %s", name, r.status, r.body)
			}
		}
		f.must(http.StatusOK, "GET", "/api/v1/datasets/"+ot+"/traces", "alice", "").json(t, &page)
		for _, tr := range page.Traces {
			var a usageAnswer
			f.must(http.StatusOK, "GET", "/api/v1/traces/"+tr.ID+"?usage=1", "alice", "").json(t, &a)
			in, out, cost = in+*a.Usage.Input, out+*a.Usage.Output, cost+*a.Usage.Cost
			durs = append(durs, *a.Usage.DurationMs)
			for _, m := range a.Usage.Models {
				models[m] = true
			}
		}
		slices.Sort(durs)
		od := dashOf(ot, "")
		tot := od.Totals
		if tot.Traces != 2 || tot.InputTokens != in || tot.OutputTokens != out || math.Abs(tot.Cost-cost) > 1e-9 {
			t.Errorf("otel totals %+v, want %d in, %d out, cost %g", tot, in, out, cost)
		}
		var mIn, mOut int64
		var mCost float64
		for _, m := range od.Models {
			if m.Model != "" && !models[m.Model] {
				t.Errorf("model %q not in the traces' %v", m.Model, models)
			}
			mIn, mOut, mCost = mIn+m.InputTokens, mOut+m.OutputTokens, mCost+m.Cost
		}
		if len(od.Models) == 0 || mIn != in || mOut != out || math.Abs(mCost-cost) > 1e-9 {
			t.Errorf("models %+v: %d in, %d out, cost %g; want %d, %d, %g", od.Models, mIn, mOut, mCost, in, out, cost)
		}
		dm := od.DurationMs
		if dm.Count != 2 || dm.P50 == nil || math.Abs(*dm.P50-durs[0]) > 0.01 || math.Abs(*dm.P99-durs[1]) > 0.01 {
			t.Errorf("durations %+v, want %v", dm, durs)
		}
		if od.LLMLatencyMs.Count == 0 || *od.LLMLatencyMs.P50 <= 0 || *od.LLMLatencyMs.P99 < *od.LLMLatencyMs.P50 {
			t.Errorf("model call latencies %+v", od.LLMLatencyMs)
		}
		// Each trace in the bucket its first span starts in.
		start := *od.From
		if first := slices.MinFunc(starts, func(a, b time.Time) int { return a.Compare(b) }); !start.Equal(first.Truncate(time.Microsecond)) {
			t.Errorf("from %v, want the first span's start %v", start, first)
		}
		for _, s := range starts {
			k := int(s.Sub(od.Buckets[0].Start) / (time.Duration(od.BucketSeconds) * time.Second))
			if k < 0 || k >= len(od.Buckets) || od.Buckets[k].Traces == 0 {
				t.Errorf("trace starting %v: bucket %d of %+v", s, k, od.Buckets)
			}
		}
		// A range holding only the later trace.
		late := slices.MaxFunc(starts, func(a, b time.Time) int { return a.Compare(b) })
		if d := dashOf(ot, q(late, late.Add(time.Hour))); d.Totals.Traces != 1 {
			t.Errorf("from the later trace's start: %d traces", d.Totals.Traces)
		}
		var totals dashBucketJSON
		f.must(http.StatusOK, "GET", "/api/v1/datasets/"+ot+"/totals", "alice", "").json(t, &totals)
		if totals.Traces != 2 || totals.InputTokens != in || math.Abs(totals.Cost-cost) > 1e-9 {
			t.Errorf("totals %+v", totals)
		}
		f.must(http.StatusNotFound, "GET", "/api/v1/datasets/"+ot+"/dashboard", "", "")
	})
}
