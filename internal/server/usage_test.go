package server

import (
	"bytes"
	"context"
	"encoding/json"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lookout-dev/lookout/internal/store/sqlite"
	"github.com/lookout-dev/lookout/internal/testcorpus"
	"github.com/lookout-dev/lookout/internal/usage"
)

type usageAnswer struct {
	Trace json.RawMessage `json:"trace"`
	Usage struct {
		Input         *int64   `json:"input_tokens"`
		Output        *int64   `json:"output_tokens"`
		Total         *int64   `json:"total_tokens"`
		Cost          *float64 `json:"cost"`
		CostEstimated bool     `json:"cost_estimated"`
		Unpriced      int      `json:"unpriced_spans"`
		DurationMs    *float64 `json:"duration_ms"`
		Models        []string `json:"models"`
		PricesAsOf    string   `json:"prices_as_of"`
		Spans         map[string]struct {
			Model         string   `json:"model"`
			Input         *int64   `json:"input_tokens"`
			Output        *int64   `json:"output_tokens"`
			Cost          *float64 `json:"cost"`
			CostEstimated bool     `json:"cost_estimated"`
			LatencyMs     *float64 `json:"latency_ms"`
			Aggregate     bool     `json:"aggregate"`
		} `json:"spans"`
	} `json:"usage"`
}

// uploadFile uploads a file's bytes into a new dataset as alice and returns
// the first trace's id.
func uploadFile(t *testing.T, f *fixture, name string, data []byte) string {
	t.Helper()
	ds := f.createDataset("alice", name, false)
	r := f.do("POST", "/api/v1/datasets/"+ds+"/upload", "alice", bytes.NewReader(data))
	if r.status != http.StatusOK && r.status != http.StatusCreated {
		t.Fatalf("upload: %d %s", r.status, r.body)
	}
	var up struct{ IDs []string }
	r.json(t, &up)
	if len(up.IDs) == 0 {
		t.Fatalf("upload stored nothing: %s", r.body)
	}
	return up.IDs[0]
}

// TestTraceUsage: GET /traces/{id}?usage=1 answers the trace as without it
// and the totals of the Langfuse export's own usageDetails and
// costDetails, taken here from the raw file; a price file prices what the
// source did not.
func TestTraceUsage(t *testing.T) {
	st, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "lookout.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	prices, err := usage.Parse([]byte(`{"as_of":"2030-01-02","models":{"mistral-small":{"input":1000,"output":2000}}}`), "test-prices.json")
	if err != nil {
		t.Fatal(err)
	}
	f := newFixture(t, st, Config{Prices: prices})
	f.addUser("alice")

	data, err := os.ReadFile(testcorpus.File(t, "otel/langfuse/claude-agent-2025-12-22.trace.json"))
	if err != nil {
		t.Fatal(err)
	}
	var raw struct {
		Observations []struct {
			ID           string
			UsageDetails map[string]float64
			CostDetails  map[string]float64
		}
	}
	if err := json.Unmarshal(data, &raw); err != nil {
		t.Fatal(err)
	}
	var in, out int64
	var cost float64
	priced := 0
	for _, o := range raw.Observations {
		in += int64(o.UsageDetails["input"])
		out += int64(o.UsageDetails["output"])
		cost += o.CostDetails["total"]
		if len(o.CostDetails) > 0 {
			priced++
		}
	}
	id := uploadFile(t, f, "langfuse", data)
	plain := f.must(http.StatusOK, "GET", "/api/v1/traces/"+id, "alice", "")
	var a usageAnswer
	f.must(http.StatusOK, "GET", "/api/v1/traces/"+id+"?usage=1", "alice", "").json(t, &a)
	u := a.Usage
	if !sameJSON(t, a.Trace, plain.body) {
		t.Errorf("the trace member differs from the trace alone")
	}
	if u.Input == nil || *u.Input != in || u.Output == nil || *u.Output != out || u.Cost == nil || math.Abs(*u.Cost-cost) > 1e-12 || u.CostEstimated ||
		u.DurationMs == nil || *u.DurationMs <= 0 || strings.Join(u.Models, ",") != "claude-sonnet-4-5-20250929" || u.PricesAsOf != "2030-01-02" {
		t.Errorf("usage %+v; want in %d out %d cost %g", u, in, out, cost)
	}
	withCost := 0
	for _, s := range u.Spans {
		if s.Cost != nil {
			withCost++
		}
	}
	if withCost != priced || priced == 0 {
		t.Errorf("%d spans with a cost, want %d: %+v", withCost, priced, u.Spans)
	}

	// any-agent spans with their recorded costs taken out: priced from the
	// server's table, marked estimated.
	aa, err := os.ReadFile(testcorpus.File(t, "otel/any-agent/AGNO_trace.json"))
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	dec := json.NewDecoder(bytes.NewReader(aa))
	dec.UseNumber() // 128-bit trace ids
	if err := dec.Decode(&doc); err != nil {
		t.Fatal(err)
	}
	var ain, aout float64
	for _, s := range doc["spans"].([]any) {
		attrs := s.(map[string]any)["attributes"].(map[string]any)
		delete(attrs, "gen_ai.usage.input_cost")
		delete(attrs, "gen_ai.usage.output_cost")
		xn, _ := attrs["gen_ai.usage.input_tokens"].(json.Number)
		yn, _ := attrs["gen_ai.usage.output_tokens"].(json.Number)
		x, _ := xn.Float64()
		y, _ := yn.Float64()
		ain, aout = ain+x, aout+y
	}
	stripped, _ := json.Marshal(doc)
	id = uploadFile(t, f, "anyagent", stripped)
	a = usageAnswer{}
	f.must(http.StatusOK, "GET", "/api/v1/traces/"+id+"?usage=true", "alice", "").json(t, &a)
	want := (ain*1000 + aout*2000) / 1e6
	if a.Usage.Cost == nil || math.Abs(*a.Usage.Cost-want) > 1e-9 || !a.Usage.CostEstimated || ain == 0 {
		t.Errorf("estimated usage %+v; want cost %g", a.Usage, want)
	}
	est := 0
	for _, s := range a.Usage.Spans {
		if s.CostEstimated {
			est++
		}
	}
	if est != 3 {
		t.Errorf("%d spans estimated, want the 3 model calls: %+v", est, a.Usage.Spans)
	}

	for _, q := range []string{"?usage=2", "?usage=1&format=invariant"} {
		if r := f.doJSON("GET", "/api/v1/traces/"+id+q, "alice", ""); r.status != http.StatusBadRequest {
			t.Errorf("%s: %d %s", q, r.status, r.body)
		}
	}
	// Who may not read the trace learns nothing of its usage.
	if r := f.doJSON("GET", "/api/v1/traces/"+id+"?usage=1", "", ""); r.status != http.StatusNotFound && r.status != http.StatusUnauthorized {
		t.Errorf("anonymous: %d %s", r.status, r.body)
	}
}
