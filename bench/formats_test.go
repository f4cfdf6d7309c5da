// Package bench holds Lookout's throughput benchmarks. Run them with
// `make bench`; figures go in README.md beside this file.
package bench

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/lookout-dev/lookout/bench/corpusdata"
	"github.com/lookout-dev/lookout/internal/formats"
	"github.com/lookout-dev/lookout/internal/testcorpus"
)

// decode reads every trace of data and returns the event count.
func decode(b *testing.B, r io.Reader, name string) int {
	dec, _, err := formats.Open(r, name, formats.Auto)
	if err != nil {
		b.Fatal(err)
	}
	events := 0
	for {
		t, err := dec.Next()
		if errors.Is(err, io.EOF) {
			return events
		}
		if err != nil {
			b.Fatal(err)
		}
		events += len(t.Events) + len(t.Spans)
	}
}

// BenchmarkCorpus parses each corpus file of every readable format.
func BenchmarkCorpus(b *testing.B) {
	files := map[string][]string{
		"invariant-json":  {corpusdata.TauBench},
		"invariant-jsonl": {"openai/explorer/sample_data.jsonl", "openai/explorer/webarena.jsonl"},
		"swe-agent":       {"openai/swe-agent/marshmallow-1867__function_calling_replace_from_source.traj"},
		"snorkel":         {"seeds/snorkel-example.json"},
		"mlflow":          {"seeds/mlflow-bedrock-trace.json"},
		"bedrock":         {"bedrock/test_multi_agent_collaborator.json", "bedrock/test_knowledge_base_results.json"},
		"otel": {"otel/langfuse/beeai-2025-08-01.trace.json", "otel/langfuse/csharp-agent-with-gemini-2026-03-09.trace.json",
			"otel/langfuse/agno-2025-06-11.trace.json", "otel/langfuse/langgraph-js-2025-10-30.trace.json", "otel/any-agent/LLAMA_INDEX_trace.json"},
	}
	for _, name := range []string{"invariant-json", "invariant-jsonl", "swe-agent", "snorkel", "mlflow", "bedrock", "otel"} {
		var inputs [][]byte
		var size int64
		for _, f := range files[name] {
			data, err := os.ReadFile(testcorpus.File(b, f))
			if err != nil {
				b.Fatal(err)
			}
			inputs = append(inputs, data)
			size += int64(len(data))
		}
		b.Run(name, func(b *testing.B) {
			b.SetBytes(size)
			b.ReportAllocs()
			for b.Loop() {
				for i, in := range inputs {
					decode(b, bytes.NewReader(in), files[name][i])
				}
			}
		})
	}
}

// BenchmarkInvariantJSONL200MB streams a 200 MB Invariant JSONL file made
// from the tau-bench traces, from disk, as `lookout validate` reads it.
func BenchmarkInvariantJSONL200MB(b *testing.B) {
	path := filepath.Join(b.TempDir(), "traces.jsonl")
	size, traces, err := corpusdata.WriteJSONL(path, testcorpus.Dir(b), 200<<20)
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(size)
	b.ReportAllocs()
	events := 0
	for b.Loop() {
		f, err := os.Open(path)
		if err != nil {
			b.Fatal(err)
		}
		events = decode(b, f, path)
		f.Close()
	}
	b.ReportMetric(float64(traces), "traces/op")
	b.ReportMetric(float64(events), "events/op")
}
