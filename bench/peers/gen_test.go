package main

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"
)

// The load is what bench/README.md says it is: batches of 512 spans,
// 20-span traces split over two consecutive batches, about 930 bytes a
// span on the wire, JSON attributes that parse, and text that varies.
func TestGeneratorLoad(t *testing.T) {
	g := newGenerator(1, "agent-test", "tok7q2zx9")
	seen := map[string]int{} // trace id → spans seen
	firstBatch := map[string]int{}
	var size, spans int
	asks := map[string]bool{}
	var batches []batch
	for i := range 40 {
		b := g.next()
		b.body = bytes.Clone(b.body) // next reuses it
		if b.spans != batchSpans {
			t.Fatalf("batch %d has %d spans, want %d", i, b.spans, batchSpans)
		}
		batches = append(batches, b)
	}
	batches = append(batches, g.flush())
	completed := 0
	for i, b := range batches {
		var req tracepb.TracesData
		if err := proto.Unmarshal(b.body, &req); err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, ss := range req.ResourceSpans[0].ScopeSpans[0].Spans {
			n++
			id := traceHex(ss.TraceId)
			if _, ok := firstBatch[id]; !ok {
				firstBatch[id] = i
			} else if firstBatch[id] != i-1 && firstBatch[id] != i {
				t.Fatalf("trace %s has spans in batch %d and %d", id, firstBatch[id], i)
			}
			seen[id]++
			for _, kv := range ss.Attributes {
				if strings.HasSuffix(kv.Key, "messages") || strings.HasSuffix(kv.Key, "arguments") || strings.HasSuffix(kv.Key, "result") {
					if v := kv.Value.GetStringValue(); !json.Valid([]byte(v)) {
						t.Fatalf("%s is not JSON: %s", kv.Key, v)
					}
				}
				if kv.Key == "gen_ai.input.messages" && strings.Contains(kv.Value.GetStringValue(), `"user"`) {
					asks[kv.Value.GetStringValue()] = true
				}
				if kv.Key == "gen_ai.output.messages" && strings.Contains(kv.Value.GetStringValue(), `"stop"`) {
					v := kv.Value.GetStringValue()
					if !strings.Contains(v, "tok7q2zx9") {
						t.Fatalf("a final answer lacks the token: %s", v)
					}
				}
			}
		}
		if n != b.spans {
			t.Fatalf("batch %d: %d spans, said %d", i, n, b.spans)
		}
		for _, id := range b.complete {
			if seen[traceHex(id)] != traceSpans {
				t.Fatalf("batch %d says it completes trace %s, which has %d spans", i, traceHex(id), seen[traceHex(id)])
			}
			completed++
		}
		size += len(b.body)
		spans += b.spans
	}
	for id, n := range seen {
		if n != traceSpans {
			t.Fatalf("trace %s has %d spans, want %d", id, n, traceSpans)
		}
		if firstBatch[id] == len(batches)-1 {
			t.Fatalf("trace %s is all in the last batch, not split", id)
		}
	}
	if completed != len(seen) {
		t.Fatalf("%d traces completed, %d sent", completed, len(seen))
	}
	per := float64(size) / float64(spans)
	t.Logf("%d traces, %d spans, %.0f bytes a span", len(seen), spans, per)
	if per < 880 || per > 980 {
		t.Errorf("%.0f bytes a span, want about 930", per)
	}
	// Varied: the users' requests come from pools of 400 per agent kind,
	// each drawn from thousands of combinations.
	if len(asks) < len(seen)/2 {
		t.Errorf("%d distinct user requests in %d traces", len(asks), len(seen))
	}
}

func BenchmarkGenerator(b *testing.B) {
	g := newGenerator(1, "agent-test", "tok7q2zx9")
	for b.Loop() {
		g.next()
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*batchSpans)/1e3, "µs/span")
}
