package usage

import (
	"encoding/json"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/lookout-dev/lookout/internal/trace"
)

func near(a, b float64) bool {
	return math.Abs(a-b) <= 1e-12+1e-9*math.Max(math.Abs(a), math.Abs(b))
}

func TestSpan(t *testing.T) {
	type want struct {
		model          string
		in, out, total int64
		cost           float64
		latency        time.Duration
		has            uint8
	}
	const io = HasInput | HasOutput | HasTotal
	for _, tc := range []struct {
		name  string
		attrs string
		extra trace.Fields
		want  want
	}{
		{name: "OpenTelemetry GenAI, priced from the table",
			attrs: `{"gen_ai.request.model":"gpt-4o-mini","gen_ai.response.model":"gpt-4o-mini-2024-07-18","gen_ai.usage.input_tokens":197,"gen_ai.usage.output_tokens":36}`,
			want:  want{model: "gpt-4o-mini-2024-07-18", in: 197, out: 36, total: 233, cost: (197*0.15 + 36*0.6) / 1e6, has: io | HasCost | CostEstimated}},
		{name: "the response model wins whatever the order",
			attrs: `{"gen_ai.response.model":"b","gen_ai.request.model":"a"}`,
			want:  want{model: "b"}},
		{name: "OpenInference, numbers as strings, recorded cost",
			attrs: `{"llm.model_name":"claude-3-5-sonnet-20241022","llm.token_count.prompt":"100","llm.token_count.completion":"20","llm.token_count.total":"125","llm.cost.total":"0.0006"}`,
			want:  want{model: "claude-3-5-sonnet-20241022", in: 100, out: 20, total: 125, cost: 0.0006, has: io | HasCost}},
		{name: "OpenInference cost in parts",
			attrs: `{"llm.cost.prompt":0.001,"llm.cost.completion":0.002}`,
			want:  want{cost: 0.003, has: HasCost}},
		{name: "nested objects read as dotted keys",
			attrs: `{"llm":{"token_count":{"prompt":5,"completion":2}}}`,
			want:  want{in: 5, out: 2, total: 7, has: io}},
		{name: "a key of four parts is read, of five is not",
			attrs: `{"a":{"b":{"input_tokens":1}},"c":{"d":{"e":{"f":{"output_tokens":9}}}}}`,
			want:  want{in: 1, total: 1, has: HasInput | HasTotal}},
		{name: "MLflow token usage as JSON in a string",
			attrs: `{"mlflow.chat.tokenUsage":"{\"input_tokens\": 10, \"output_tokens\": 3, \"total_tokens\": 13}"}`,
			want:  want{in: 10, out: 3, total: 13, has: io}},
		{name: "JSON in a payload string is not read",
			attrs: `{"mlflow.spanOutputs":"{\"input_tokens\": 99}"}`,
			want:  want{}},
		{name: "a usage object quoted in an output, and max_tokens, are not usage",
			attrs: `{"output.value":"{\"usage\": {\"input_tokens\": 5}}","gen_ai.request.max_tokens":100}`,
			want:  want{}},
		{name: "a name must end at a dot",
			attrs: `{"myinput_tokens":5,"xmodel":"m"}`,
			want:  want{}},
		{name: "any-agent recorded costs",
			attrs: `{"gen_ai.request.model":"mistral/mistral-small-latest","gen_ai.usage.input_tokens":395,"gen_ai.usage.output_tokens":16,"gen_ai.usage.input_cost":3.95e-05,"gen_ai.usage.output_cost":4.8e-06}`,
			want:  want{model: "mistral/mistral-small-latest", in: 395, out: 16, total: 411, cost: 3.95e-05 + 4.8e-06, has: io | HasCost}},
		{name: "Snorkel step metadata",
			attrs: `{"agent":"primary_AI","tokens":12,"latency":0.3}`,
			want:  want{total: 12, latency: 300 * time.Millisecond, has: HasTotal | HasLatency}},
		{name: "an unknown model has tokens and no cost",
			attrs: `{"gen_ai.request.model":"house-model-7","gen_ai.usage.input_tokens":10}`,
			want:  want{model: "house-model-7", in: 10, total: 10, has: HasInput | HasTotal}},
		{name: "a malformed object keeps what came before the break",
			attrs: `{"gen_ai.usage.input_tokens":4, "x": [}`,
			want:  want{in: 4, total: 4, has: HasInput | HasTotal}},
		{name: "Langfuse observation members",
			attrs: `{"gen_ai.usage.input_tokens":1000}`,
			extra: trace.Fields{{Key: "model", Value: json.RawMessage(`"claude-sonnet-4-5-20250929"`)},
				{Key: "usageDetails", Value: json.RawMessage(`{"input":5,"output":94,"total":99}`)},
				{Key: "costDetails", Value: json.RawMessage(`{"input":1.5e-05,"output":0.00141,"total":0.001425}`)},
				{Key: "latency", Value: json.RawMessage(`3.733`)}},
			want: want{model: "claude-sonnet-4-5-20250929", in: 5, out: 94, total: 99, cost: 0.001425, latency: 3733 * time.Millisecond, has: io | HasCost | HasLatency}},
		{name: "Langfuse with no costDetails is priced",
			extra: trace.Fields{{Key: "model", Value: json.RawMessage(`"gpt-4o"`)},
				{Key: "usageDetails", Value: json.RawMessage(`{"input":1000,"output":100}`)},
				{Key: "costDetails", Value: json.RawMessage(`{}`)}},
			want: want{model: "gpt-4o", in: 1000, out: 100, total: 1100, cost: (1000*2.5 + 100*10) / 1e6, has: io | HasCost | CostEstimated}},
		{name: "Langfuse costDetails without total add up",
			extra: trace.Fields{{Key: "costDetails", Value: json.RawMessage(`{"input":0.5,"output":0.25}`)}},
			want:  want{cost: 0.75, has: HasCost}},
		{name: "metadata in Extra is read after the attributes",
			attrs: `{"model":"a"}`,
			extra: trace.Fields{{Key: "metadata", Value: json.RawMessage(`{"model":"b","prompt_tokens":3}`)}},
			want:  want{model: "a", in: 3, total: 3, has: HasInput | HasTotal}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sp := trace.Span{ID: "s", Attributes: json.RawMessage(tc.attrs), Extra: tc.extra}
			got := NewReader(Default()).Span(&sp)
			w := tc.want
			if got.Model != w.model || got.Input != w.in || got.Output != w.out || got.Total != w.total || !near(got.Cost, w.cost) || got.Latency != w.latency || got.Has != w.has {
				t.Errorf("got %+v\nwant %+v", got, w)
			}
		})
	}
}

func TestTotals(t *testing.T) {
	t0 := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	tr := &trace.Trace{Spans: []trace.Span{
		{ID: "root", Start: t0, End: t0.Add(5 * time.Second), Attributes: json.RawMessage(`{"gen_ai.request.model":"gpt-4o"}`)},
		{ID: "a", ParentID: "root", Start: t0.Add(time.Second), End: t0.Add(2 * time.Second),
			Attributes: json.RawMessage(`{"gen_ai.request.model":"gpt-4o","gen_ai.usage.input_tokens":1000,"gen_ai.usage.output_tokens":10}`)},
		{ID: "b", ParentID: "root", Start: t0.Add(2 * time.Second), End: t0.Add(7 * time.Second),
			Attributes: json.RawMessage(`{"llm.model_name":"claude-3-haiku","llm.token_count.prompt":50,"llm.token_count.completion":5,"llm.cost.total":0.5}`)},
		{ID: "c", ParentID: "root", Attributes: json.RawMessage(`{"model":"house","input_tokens":7}`)},
	}}
	var seen []string
	tot := NewReader(Default()).Totals(tr, func(i int, u *Span) { seen = append(seen, tr.Spans[i].ID) })
	wantCost := (1000*2.5+10*10)/1e6 + 0.5
	if tot.Input != 1057 || tot.Output != 15 || tot.Total != 1072 || !near(tot.Cost, wantCost) || tot.Unpriced != 1 ||
		tot.Duration != 7*time.Second || tot.Has&CostEstimated == 0 || tot.Has&HasDuration == 0 ||
		strings.Join(tot.Models, ",") != "gpt-4o,claude-3-haiku,house" || strings.Join(seen, ",") != "root,a,b,c" {
		t.Errorf("totals %+v, spans seen %v", tot, seen)
	}

	// An agent span repeating its model calls' tokens counts once; a
	// parent with tokens of its own (Snorkel's steps) counts too.
	agg := &trace.Trace{Spans: []trace.Span{
		{ID: "agent", Attributes: json.RawMessage(`{"gen_ai.request.model":"gpt-4o","gen_ai.usage.input_tokens":30,"gen_ai.usage.output_tokens":3}`)},
		{ID: "sub", ParentID: "agent", Attributes: json.RawMessage(`{"gen_ai.usage.input_tokens":20,"gen_ai.usage.output_tokens":2}`)},
		{ID: "l1", ParentID: "sub", Attributes: json.RawMessage(`{"gen_ai.usage.input_tokens":20,"gen_ai.usage.output_tokens":2}`)},
		{ID: "l2", ParentID: "agent", Attributes: json.RawMessage(`{"gen_ai.usage.input_tokens":10,"gen_ai.usage.output_tokens":1}`)},
		{ID: "step", Attributes: json.RawMessage(`{"tokens":5}`)},
		{ID: "substep", ParentID: "step", Attributes: json.RawMessage(`{"tokens":7}`)},
	}}
	var aggs []string
	tot = NewReader(Default()).Totals(agg, func(i int, u *Span) {
		if u.Has&Aggregate != 0 {
			aggs = append(aggs, agg.Spans[i].ID)
		}
	})
	if tot.Input != 30 || tot.Output != 3 || tot.Total != 45 || strings.Join(aggs, ",") != "agent,sub" || strings.Join(tot.Models, ",") != "gpt-4o" {
		t.Errorf("aggregates %v: %+v", aggs, tot)
	}

	// No span times: the events' timestamps give the duration.
	ev := &trace.Trace{Events: []trace.Event{
		{Role: "user", Extra: trace.Fields{{Key: "timestamp", Value: json.RawMessage(`"2025-01-01T00:00:03Z"`)}}},
		{Role: "assistant", Extra: trace.Fields{{Key: "timestamp", Value: json.RawMessage(`1735689610.5`)}}},
		{Role: "assistant", Extra: trace.Fields{{Key: "timestamp", Value: json.RawMessage(`"not a time"`)}}},
	}}
	if tot := OfTrace(ev, nil); tot.Duration != 7500*time.Millisecond || tot.Has != HasDuration {
		t.Errorf("event timestamps: %+v", tot)
	}
	if tot := OfTrace(&trace.Trace{}, Default()); tot.Has != 0 || tot.Models != nil {
		t.Errorf("empty trace: %+v", tot)
	}
	// No table: nothing is estimated.
	if tot := OfTrace(tr, nil); !near(tot.Cost, 0.5) || tot.Has&CostEstimated != 0 || tot.Unpriced != 2 {
		t.Errorf("no prices: %+v", tot)
	}
}

func TestLookup(t *testing.T) {
	p := Default()
	for model, want := range map[string]string{
		"gpt-4o":                                  "gpt-4o",
		"gpt-4o-2024-08-06":                       "gpt-4o",
		"gpt-4o-2024-05-13":                       "gpt-4o-2024-05-13",
		"gpt-4o-mini-2024-07-18":                  "gpt-4o-mini",
		"GPT-4o":                                  "gpt-4o",
		"gpt-4.1-2025-04-14":                      "gpt-4.1",
		"gpt-5-mini-2025-08-07":                   "gpt-5-mini",
		"claude-sonnet-4-5-20250929":              "claude-sonnet-4-5",
		"claude-sonnet-4-20250514":                "claude-sonnet-4",
		"mistral/mistral-small-latest":            "mistral-small",
		"meta-llama/Llama-3.3-70B-Instruct-Turbo": "llama-3.3-70b",
		"projects/p/locations/europe-central2/publishers/google/models/gemini-2.5-flash": "gemini-2.5-flash",
		"gemini-2.5-flash-lite-preview-06-17":                                            "gemini-2.5-flash-lite",
		"anthropic.claude-3-haiku-20240307-v1:0":                                         "claude-3-haiku",
		"us.anthropic.claude-3-5-sonnet-20241022-v2:0":                                   "claude-3-5-sonnet",
		"gpt-45":             "",
		"house-model":        "",
		"":                   "",
		".gpt-4o":            "",
		"o3-mini-2025-01-31": "o3-mini",
	} {
		_, got, ok := p.Lookup(model)
		if got != want || ok != (want != "") {
			t.Errorf("Lookup(%q) = %q, %v; want %q", model, got, ok, want)
		}
	}
}

func TestDefaultTable(t *testing.T) {
	p := Default()
	if p.AsOf == "" || p.Len() < 40 {
		t.Fatalf("as_of %q, %d models", p.AsOf, p.Len())
	}
	if _, err := time.Parse("2006-01-02", p.AsOf); err != nil {
		t.Errorf("as_of: %v", err)
	}
	// Each provider the table promises.
	for _, m := range []string{"gpt-4o", "claude-3-5-sonnet", "gemini-2.5-pro", "mistral-large", "llama-3.1-70b"} {
		if pr, _, ok := p.Lookup(m); !ok || pr.Input <= 0 || pr.Output < pr.Input {
			t.Errorf("%s: %+v %v", m, pr, ok)
		}
	}
}

func TestParse(t *testing.T) {
	p, err := Parse([]byte(`{"as_of":"2026-01-01","models":{"gpt-4o":{"input":1,"output":2},"My-Model":{"input":3,"output":4}}}`), "ours.json")
	if err != nil {
		t.Fatal(err)
	}
	if pr, _, _ := p.Lookup("gpt-4o-2024-08-06"); pr != (Price{1, 2}) {
		t.Errorf("replaced: %+v", pr)
	}
	if pr, n, _ := p.Lookup("my-model-v2"); pr != (Price{3, 4}) || n != "my-model" {
		t.Errorf("added: %+v %q", pr, n)
	}
	if _, _, ok := p.Lookup("claude-3-haiku"); !ok || p.AsOf != "2026-01-01" || p.Len() != Default().Len()+1 {
		t.Errorf("kept: %v, as_of %q, %d models", ok, p.AsOf, p.Len())
	}
	if pr, _, _ := Default().Lookup("gpt-4o"); pr != (Price{2.5, 10}) {
		t.Errorf("the default table changed: %+v", pr)
	}
	q, err := Parse([]byte(`{"models":{}}`), "empty.json")
	if err != nil || q.AsOf != Default().AsOf {
		t.Errorf("no as_of: %v %q", err, q.AsOf)
	}

	for _, tc := range []struct{ in, want string }{
		{`{"models":{"m":{"input":"1","output":2}}}`, `$.models.m.input`},
		{`{"models":{"m":{"input":1}}}`, `needs both input and output`},
		{`{"models":{"m":{"input":1,"output":2,"cached":3}}}`, `$.models.m.cached`},
		{`{"models":{"m":{"input":-1,"output":2}}}`, `must not be negative`},
		{`{"models":[]}`, `$.models`},
		{`{"models":{"m":{"input":1,"output":2}}`, `prices file bad.json`},
		{`{} x`, `prices file bad.json`},
	} {
		_, err := Parse([]byte(tc.in), "bad.json")
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "bad.json") {
			t.Errorf("Parse(%s) = %v; want an error with %q", tc.in, err, tc.want)
		}
	}
	if _, err := Load("/nonexistent/prices.json"); err == nil || !strings.Contains(err.Error(), "/nonexistent/prices.json") {
		t.Errorf("Load of a missing file: %v", err)
	}
}

func BenchmarkOfTrace(b *testing.B) {
	tr := &trace.Trace{}
	for i := 0; i < 100; i++ {
		tr.Spans = append(tr.Spans, trace.Span{ID: "s", Attributes: json.RawMessage(`{"gen_ai.system":"openai","gen_ai.request.model":"gpt-4o","gen_ai.usage.input_tokens":1000,"gen_ai.usage.output_tokens":10,"input.value":"a long prompt that is skipped past","llm":{"token_count":{"total":1010}}}`)})
	}
	r := NewReader(Default())
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		_ = r.Totals(tr, nil)
	}
}

// TestEveryNameRead: each name of each member is read under a dotted key
// and as a nested key (wanted's lookup of last parts lets none through
// unread), and a key that only ends like a name of one part is not.
func TestEveryNameRead(t *testing.T) {
	var r Reader
	for fi, names := range fieldNames {
		for _, name := range names {
			value := `7`
			if fi == fModel {
				value = `"m"`
			}
			dotted := `{"x.` + name + `":` + value + `}`
			nested := `{"x":{"` + strings.ReplaceAll(name, ".", `":{"`) + `":` + value + strings.Repeat("}", strings.Count(name, ".")+1) + `}`
			if fi == fLatency {
				continue // read as seconds from Snorkel's own field too; TestSpan covers it
			}
			for _, attrs := range []string{dotted, nested} {
				r.f.reset()
				r.f.walk([]byte(attrs))
				if r.f.rank[fi] < 0 {
					t.Errorf("%s: %s not read", attrs, name)
				}
			}
			if !strings.Contains(name, ".") {
				r.f.reset()
				r.f.walk([]byte(`{"x` + name + `":` + value + `}`))
				for fj, rank := range r.f.rank {
					if rank >= 0 {
						t.Errorf("x%s read as %s", name, fieldNames[fj][rank])
					}
				}
			}
		}
	}
}
