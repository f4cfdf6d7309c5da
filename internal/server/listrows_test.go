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

// listRow is a row of GET /datasets/{id}/traces or /search.
type listRow struct {
	ID              string   `json:"id"`
	EventCount      int      `json:"event_count"`
	AnnotationCount int      `json:"annotation_count"`
	ViolationCount  *int     `json:"violation_count"`
	ToolCallCount   *int     `json:"tool_call_count"`
	FirstUser       string   `json:"first_user"`
	Input           *int64   `json:"input_tokens"`
	Output          *int64   `json:"output_tokens"`
	Total           *int64   `json:"total_tokens"`
	Cost            *float64 `json:"cost"`
	CostEstimated   bool     `json:"cost_estimated"`
	Unpriced        int      `json:"unpriced_spans"`
	DurationMs      *float64 `json:"duration_ms"`
	Hits            []string `json:"hits"`
	Snippet         *struct {
		Before, Match, After string
	} `json:"snippet"`
}

// TestListRows: a list's rows carry the usage that GET /traces/{id}?usage=1
// computes from the whole trace (priced with the server's table), the
// first user message, tool calls and violations; a search's rows the
// snippet around their first hit.
func TestListRows(t *testing.T) {
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

	rowsOf := func(ds string) []listRow {
		t.Helper()
		var page struct{ Traces []listRow }
		f.must(http.StatusOK, "GET", "/api/v1/datasets/"+ds+"/traces", "alice", "").json(t, &page)
		return page.Traces
	}
	// Langfuse (recorded costs), and any-agent with its costs taken out
	// (priced from the table, estimated).
	lf, err := os.ReadFile(testcorpus.File(t, "otel/langfuse/claude-agent-2025-12-22.trace.json"))
	if err != nil {
		t.Fatal(err)
	}
	aa, err := os.ReadFile(testcorpus.File(t, "otel/any-agent/AGNO_trace.json"))
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	dec := json.NewDecoder(bytes.NewReader(aa))
	dec.UseNumber()
	if err := dec.Decode(&doc); err != nil {
		t.Fatal(err)
	}
	for _, s := range doc["spans"].([]any) {
		attrs := s.(map[string]any)["attributes"].(map[string]any)
		delete(attrs, "gen_ai.usage.input_cost")
		delete(attrs, "gen_ai.usage.output_cost")
	}
	stripped, _ := json.Marshal(doc)
	for _, c := range []struct {
		name      string
		data      []byte
		estimated bool
	}{{"langfuse", lf, false}, {"anyagent", stripped, true}} {
		ds := f.createDataset("alice", c.name, false)
		if r := f.do("POST", "/api/v1/datasets/"+ds+"/upload", "alice", bytes.NewReader(c.data)); r.status != http.StatusOK && r.status != http.StatusCreated {
			t.Fatalf("upload: %d %s", r.status, r.body)
		}
		rows := rowsOf(ds)
		if len(rows) != 1 {
			t.Fatalf("%s: %d rows", c.name, len(rows))
		}
		row := rows[0]
		var a usageAnswer
		f.must(http.StatusOK, "GET", "/api/v1/traces/"+row.ID+"?usage=1", "alice", "").json(t, &a)
		u := a.Usage
		same := func(x, y *int64) bool { return (x == nil) == (y == nil) && (x == nil || *x == *y) }
		if !same(row.Input, u.Input) || !same(row.Output, u.Output) || !same(row.Total, u.Total) || row.Input == nil ||
			row.Cost == nil || u.Cost == nil || math.Abs(*row.Cost-*u.Cost) > 1e-9 || row.CostEstimated != u.CostEstimated || row.CostEstimated != c.estimated ||
			row.Unpriced != u.Unpriced || row.DurationMs == nil || u.DurationMs == nil || math.Abs(*row.DurationMs-*u.DurationMs) > 0.001 {
			t.Errorf("%s: row %+v; the trace's usage %+v", c.name, row, u)
		}
	}

	// Messages, tool calls, violations, snippets.
	ds := f.createDataset("alice", "chat", false)
	var ids []string
	f.must(http.StatusOK, "POST", "/api/v1/push/trace", "alice", `{"dataset":"chat","messages":[
		[{"role":"system","content":"You help."},{"role":"user","content":"I want to fly to Seattle tomorrow, please find me a seat."},
		 {"role":"assistant","content":null,"tool_calls":[{"id":"1","type":"function","function":{"name":"search_flights","arguments":{"to":"SEA"}}},{"id":"2","type":"function","function":{"name":"get_user","arguments":{}}}]}],
		[{"role":"user","content":"nothing here"}]]}`).json(t, &struct{ ID *[]string }{&ids})
	if len(ids) != 2 {
		t.Fatalf("pushed %v", ids)
	}
	f.must(http.StatusCreated, "POST", "/api/v1/traces/"+ids[0]+"/annotations", "alice", `{"address":"messages.1","content":"violation","source":"analyzer"}`)
	f.must(http.StatusCreated, "POST", "/api/v1/traces/"+ids[0]+"/annotations", "alice", `{"address":"messages.1","content":"a note"}`)
	rows := rowsOf(ds)
	if len(rows) != 2 || rows[0].FirstUser != "I want to fly to Seattle tomorrow, please find me a seat." || rows[0].ToolCallCount == nil || *rows[0].ToolCallCount != 2 ||
		rows[0].ViolationCount == nil || *rows[0].ViolationCount != 1 || rows[0].AnnotationCount != 2 || rows[1].FirstUser != "nothing here" ||
		*rows[1].ToolCallCount != 0 || *rows[1].ViolationCount != 0 || rows[0].Input != nil || rows[0].Cost != nil {
		t.Errorf("rows %+v", rows)
	}
	var res struct{ Traces []listRow }
	f.must(http.StatusOK, "GET", "/api/v1/datasets/"+ds+"/search?q=seattle", "alice", "").json(t, &res)
	if len(res.Traces) != 1 || res.Traces[0].Snippet == nil {
		t.Fatalf("search: %+v", res.Traces)
	}
	sn := res.Traces[0].Snippet
	if sn.Before != "I want to fly to " || sn.Match != "Seattle" || sn.After != " tomorrow, please find me a seat." || res.Traces[0].FirstUser == "" ||
		!strings.HasPrefix(res.Traces[0].Hits[0], "messages.1.content:17-24") {
		t.Errorf("search row %+v, snippet %+v", res.Traces[0], *sn)
	}
}
