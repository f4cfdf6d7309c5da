package otelgen

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
	g := NewGenerator(1, "agent-test", "tok7q2zx9")
	seen := map[string]int{} // trace id → spans seen
	firstBatch := map[string]int{}
	var size, spans int
	asks := map[string]bool{}
	var batches []Batch
	for i := range 40 {
		b := g.Next()
		b.Body = bytes.Clone(b.Body) // next reuses it
		if b.Spans != BatchSpans {
			t.Fatalf("batch %d has %d spans, want %d", i, b.Spans, BatchSpans)
		}
		batches = append(batches, b)
	}
	batches = append(batches, g.Flush())
	completed := 0
	for i, b := range batches {
		var req tracepb.TracesData
		if err := proto.Unmarshal(b.Body, &req); err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, ss := range req.ResourceSpans[0].ScopeSpans[0].Spans {
			n++
			id := TraceHex(ss.TraceId)
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
		if n != b.Spans {
			t.Fatalf("batch %d: %d spans, said %d", i, n, b.Spans)
		}
		for _, id := range b.Complete {
			if seen[TraceHex(id)] != TraceSpans {
				t.Fatalf("batch %d says it completes trace %s, which has %d spans", i, TraceHex(id), seen[TraceHex(id)])
			}
			completed++
		}
		size += len(b.Body)
		spans += b.Spans
	}
	for id, n := range seen {
		if n != TraceSpans {
			t.Fatalf("trace %s has %d spans, want %d", id, n, TraceSpans)
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
	g := NewGenerator(1, "agent-test", "tok7q2zx9")
	for b.Loop() {
		g.Next()
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*BatchSpans)/1e3, "µs/span")
}
