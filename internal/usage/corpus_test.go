package usage

import (
	"bytes"
	"encoding/json"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/lookout-dev/lookout/internal/formats"
	"github.com/lookout-dev/lookout/internal/testcorpus"
	"github.com/lookout-dev/lookout/internal/trace"
)

// These tests decode corpus files as Lookout does and compare the totals
// with sums this file takes from the raw JSON by itself.

func decodeAll(t *testing.T, name string, data []byte) []*trace.Trace {
	t.Helper()
	dec, _, err := formats.Open(bytes.NewReader(data), name, formats.Auto)
	if err != nil {
		t.Fatal(err)
	}
	var out []*trace.Trace
	for {
		tr, err := dec.Next()
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		out = append(out, tr)
	}
}

type langfuseExport struct {
	Observations []struct {
		Model        string             `json:"model"`
		StartTime    time.Time          `json:"startTime"`
		EndTime      *time.Time         `json:"endTime"`
		UsageDetails map[string]float64 `json:"usageDetails"`
		CostDetails  map[string]float64 `json:"costDetails"`
	} `json:"observations"`
}

func TestLangfuseCorpus(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join(testcorpus.Dir(t), "otel", "langfuse", "*.trace.json"))
	if len(files) < 10 {
		t.Fatalf("%d Langfuse exports", len(files))
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			data, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			var raw langfuseExport
			if err := json.Unmarshal(data, &raw); err != nil {
				t.Fatal(err)
			}
			var in, out, total float64
			var cost float64
			var first, last time.Time
			for _, o := range raw.Observations {
				in += o.UsageDetails["input"]
				out += o.UsageDetails["output"]
				if v, ok := o.UsageDetails["total"]; ok {
					total += v
				} else {
					total += o.UsageDetails["input"] + o.UsageDetails["output"]
				}
				cost += o.CostDetails["total"]
				if first.IsZero() || o.StartTime.Before(first) {
					first = o.StartTime
				}
				if o.EndTime != nil && o.EndTime.After(last) {
					last = *o.EndTime
				}
			}
			trs := decodeAll(t, f, data)
			if len(trs) != 1 {
				t.Fatalf("%d traces", len(trs))
			}
			got := OfTrace(trs[0], Default())
			if float64(got.Input) != in || float64(got.Output) != out || float64(got.Total) != total || !near(got.Cost, cost) ||
				got.Has&CostEstimated != 0 || got.Duration != last.Sub(first) {
				t.Errorf("got in %d out %d total %d cost %g estimated %v duration %v\nwant in %g out %g total %g cost %g duration %v",
					got.Input, got.Output, got.Total, got.Cost, got.Has&CostEstimated != 0, got.Duration, in, out, total, cost, last.Sub(first))
			}
			if in == 0 {
				t.Error("the export records no tokens: the test checks nothing")
			}
		})
	}
}

// TestEstimateMatchesLangfuse strips the costs Langfuse recorded and
// prices the tokens from Lookout's table: for the models whose price has
// not changed since the export and that had no cached or reasoning tokens
// to price apart, the estimate is what Langfuse charged.
func TestEstimateMatchesLangfuse(t *testing.T) {
	for _, name := range []string{"claude-agent-2025-12-22", "agno-2025-06-11", "koog-2025-08-26", "pydantic-ai-tools-2025-12-04", "google-adk-2025-08-28", "vercel-aisdk-2025-11-17"} {
		t.Run(name, func(t *testing.T) {
			data, err := os.ReadFile(testcorpus.File(t, "otel/langfuse/"+name+".trace.json"))
			if err != nil {
				t.Fatal(err)
			}
			trs := decodeAll(t, name, data)
			recorded := OfTrace(trs[0], Default())
			for i := range trs[0].Spans {
				sp := &trs[0].Spans[i]
				for k := range sp.Extra {
					if sp.Extra[k].Key == "costDetails" {
						sp.Extra[k].Value = json.RawMessage(`{}`)
					}
				}
			}
			est := OfTrace(trs[0], Default())
			if est.Has&CostEstimated == 0 || est.Unpriced != 0 || math.Abs(est.Cost-recorded.Cost) > 1e-9+1e-6*recorded.Cost {
				t.Errorf("estimated %g (%+v), Langfuse recorded %g", est.Cost, est, recorded.Cost)
			}
		})
	}
}

func TestAnyAgentCorpus(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join(testcorpus.Dir(t), "otel", "any-agent", "*.json"))
	if len(files) < 5 {
		t.Fatalf("%d any-agent files", len(files))
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			data, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			var raw struct {
				Spans []struct {
					Start      int64          `json:"start_time"`
					End        int64          `json:"end_time"`
					Attributes map[string]any `json:"attributes"`
				} `json:"spans"`
			}
			if err := json.Unmarshal(data, &raw); err != nil {
				t.Fatal(err)
			}
			var in, out, cost float64
			var first, last int64
			models := map[string]bool{}
			for _, s := range raw.Spans {
				a := s.Attributes
				x, _ := a["gen_ai.usage.input_tokens"].(float64)
				y, _ := a["gen_ai.usage.output_tokens"].(float64)
				c, _ := a["gen_ai.usage.input_cost"].(float64)
				d, _ := a["gen_ai.usage.output_cost"].(float64)
				in, out, cost = in+x, out+y, cost+c+d
				if m, ok := a["gen_ai.request.model"].(string); ok {
					models[m] = true
				}
				if first == 0 || s.Start < first {
					first = s.Start
				}
				last = max(last, s.End)
			}
			trs := decodeAll(t, f, data)
			got := OfTrace(trs[0], Default())
			if float64(got.Input) != in || float64(got.Output) != out || !near(got.Cost, cost) || got.Has&CostEstimated != 0 ||
				got.Duration != time.Duration(last-first) || len(got.Models) != len(models) || in == 0 {
				t.Errorf("got %+v\nwant in %g out %g cost %g duration %v models %v", got, in, out, cost, time.Duration(last-first), models)
			}
		})
	}
}

func TestSnorkelCorpus(t *testing.T) {
	data, err := os.ReadFile(testcorpus.File(t, "seeds/snorkel-example.json"))
	if err != nil {
		t.Fatal(err)
	}
	var raw []any
	if err := json.Unmarshal(data, &raw); err != nil {
		t.Fatal(err)
	}
	trs := decodeAll(t, "snorkel-example.json", data)
	if len(trs) != len(raw) {
		t.Fatalf("%d traces from %d roots", len(trs), len(raw))
	}
	for i, root := range raw {
		var tokens float64
		var lat []time.Duration
		var walk func(step map[string]any)
		walk = func(step map[string]any) {
			m, _ := step["metadata"].(map[string]any)
			n, _ := m["tokens"].(float64)
			tokens += n
			if l, ok := m["latency"].(float64); ok {
				lat = append(lat, time.Duration(l*float64(time.Second)))
			}
			subs, _ := step["substeps"].([]any)
			for _, s := range subs {
				walk(s.(map[string]any))
			}
		}
		walk(root.(map[string]any))
		r := NewReader(Default())
		var gotLat []time.Duration
		got := r.Totals(trs[i], func(_ int, u *Span) { gotLat = append(gotLat, u.Latency) })
		if float64(got.Total) != tokens || got.Has&(HasInput|HasOutput|HasCost) != 0 || got.Unpriced != len(lat) || len(gotLat) != len(lat) || tokens == 0 {
			t.Errorf("trace %d: %+v; want %g tokens, %d steps", i, got, tokens, len(lat))
		}
		var a, b time.Duration
		for k := range lat {
			a += lat[k]
		}
		for k := range gotLat {
			b += gotLat[k]
		}
		if (a - b).Abs() > time.Microsecond {
			t.Errorf("trace %d: latencies add to %v, want %v", i, b, a)
		}
	}
}

// TestMLflowCorpus: the corpus's MLflow trace (Bedrock spans) records no
// usage; its duration is its spans' extent.
func TestMLflowCorpus(t *testing.T) {
	data, err := os.ReadFile(testcorpus.File(t, "seeds/mlflow-bedrock-trace.json"))
	if err != nil {
		t.Fatal(err)
	}
	var raw struct {
		Spans []struct {
			Start json.Number `json:"start_time"` // a number, or a string of one
			End   json.Number `json:"end_time"`
		} `json:"spans"`
	}
	if err := json.Unmarshal(data, &raw); err != nil {
		t.Fatal(err)
	}
	ns := func(v json.Number) int64 {
		n, _ := strconv.ParseInt(string(v), 10, 64)
		return n
	}
	var first, last int64
	for _, s := range raw.Spans {
		if a := ns(s.Start); first == 0 || a < first {
			first = a
		}
		last = max(last, ns(s.End))
	}
	got := OfTrace(decodeAll(t, "mlflow-bedrock-trace.json", data)[0], Default())
	if got.Duration != time.Duration(last-first) || first == 0 || got.Has&(HasInput|HasTotal|HasCost) != 0 {
		t.Errorf("got %+v, want duration %v", got, time.Duration(last-first))
	}
}
