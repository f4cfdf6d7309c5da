package storetest

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/lookout-dev/lookout/internal/store"
	"github.com/lookout-dev/lookout/internal/trace"
)

// BenchDashboard measures a dataset's dashboard (Dashboard) over n traces:
// the 200 tau-bench airline traces repeated, each given a model call span
// (model, tokens, latency) at a time spread over 30 days, one in ten a
// violation and one in five a score. "all" is the whole dataset, "week"
// its last 7 days, "totals" the totals alone; each reports p50 and p99.
func BenchDashboard(b *testing.B, open func(tb testing.TB) store.Store, n int) {
	// The search indexer would index the 100,000 traces while the
	// dashboards are timed: a dashboard does not need it.
	b.Setenv("LOOKOUT_INDEXER", "off")
	st := open(b)
	u, d := benchDataset(b, st)
	start := time.Now()
	FillDashboard(b, st, u.ID, d.ID, n)
	b.Logf("stored %d traces in %v", n, time.Since(start).Round(time.Millisecond))
	RunDashboard(b, st, d.ID, n)
}

// FillDashboard stores BenchDashboard's n traces in dataset datasetID.
func FillDashboard(b testing.TB, st store.Store, userID, datasetID string, n int) {
	tau := TauBench(b)
	ctx := context.Background()
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	step := 30 * 24 * time.Hour / time.Duration(n)
	models := []string{"gpt-4o", "gpt-4o-mini", "claude-sonnet-4"}
	var ids []string
	for len(ids) < n {
		batch := make([]store.NewTrace, min(1000, n-len(ids)))
		for i := range batch {
			k := len(ids) + i
			c := *tau[k%len(tau)]
			c.Annotations = nil
			at := t0.Add(time.Duration(k) * step)
			attrs, _ := json.Marshal(map[string]any{"gen_ai.request.model": models[k%len(models)],
				"gen_ai.usage.input_tokens": 500 + k%1000, "gen_ai.usage.output_tokens": 50 + k%200})
			c.Spans = []trace.Span{{ID: "s", Name: "chat", Kind: "llm", Start: at, End: at.Add(time.Duration(200+k%3000) * time.Millisecond), Attributes: attrs}}
			batch[i] = store.NewTrace{Trace: &c}
			if k%10 == 0 {
				batch[i].Annotations = []store.Annotation{{Address: "messages.1", Content: "violation", Source: "analyzer",
					Extra: json.RawMessage(`{"policy_id":"p1"}`)}}
			}
		}
		got, err := st.AddTraces(ctx, userID, datasetID, batch)
		if err != nil {
			b.Fatal(err)
		}
		ids = append(ids, got...)
	}
	var scores []store.Score
	for i := 0; i < len(ids); i += 5 {
		scores = append(scores, store.Score{TraceID: ids[i], Criterion: "solved", Value: json.RawMessage(fmt.Sprint(i%2 == 0)), Source: "human"})
		if len(scores) == 1000 || i+5 >= len(ids) {
			if _, err := st.AddScores(ctx, scores); err != nil {
				b.Fatal(err)
			}
			scores = scores[:0]
		}
	}
}

// RunDashboard times the dashboards of BenchDashboard's dataset.
func RunDashboard(b *testing.B, st store.Store, datasetID string, n int) {
	ctx := context.Background()
	end := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).Add(30 * 24 * time.Hour)
	for _, c := range []struct {
		name string
		q    store.DashboardQuery
	}{{"all", store.DashboardQuery{}}, {"week", store.DashboardQuery{From: end.Add(-7 * 24 * time.Hour), To: end}},
		{"totals", store.DashboardQuery{TotalsOnly: true}}} {
		b.Run(c.name, func(b *testing.B) {
			var lat []time.Duration
			var cpu time.Duration
			for b.Loop() {
				t, c0 := time.Now(), cpuTime()
				dash, err := st.Dashboard(ctx, datasetID, c.q)
				lat = append(lat, time.Since(t))
				cpu += cpuTime() - c0
				if err != nil {
					b.Fatal(err)
				}
				if c.q.From.IsZero() && dash.Totals.Traces != n || !c.q.TotalsOnly && len(dash.Tools) == 0 {
					b.Fatalf("%d traces, %d tools", dash.Totals.Traces, len(dash.Tools))
				}
			}
			reportLatency(b, lat)
			// The process's CPU time a dashboard (SQLite runs in it; for
			// PostgreSQL it is the client's share only), a figure that
			// holds on a busy host where wall times do not.
			b.ReportMetric(float64(cpu)/float64(len(lat))/1e6, "cpu-ms")
		})
	}
}
