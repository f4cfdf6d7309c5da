package search_test

import (
	"testing"

	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"

	"github.com/lookout-dev/lookout/bench/otelgen"
	"github.com/lookout-dev/lookout/internal/formats/otlp"
	"github.com/lookout-dev/lookout/internal/search"
	"github.com/lookout-dev/lookout/internal/trace"
)

// genaiTraces maps n batches of bench/peers' load (20-span GenAI agent
// traces) into traces.
func genaiTraces(tb testing.TB, n int) []*trace.Trace {
	g := otelgen.NewGenerator(1, "bench", "tok")
	var spans []otlp.Span
	for range n {
		var req tracepb.TracesData
		if err := proto.Unmarshal(g.Next().Body, &req); err != nil {
			tb.Fatal(err)
		}
		s, err := otlp.FromResourceSpans(req.ResourceSpans)
		if err != nil {
			tb.Fatal(err)
		}
		spans = append(spans, s...)
	}
	ts, err := otlp.Map(spans)
	if err != nil {
		tb.Fatal(err)
	}
	return ts
}

// BenchmarkIndexGenAI indexes GenAI agent traces as the indexer does: a
// text cache for each 32 traces.
func BenchmarkIndexGenAI(b *testing.B) {
	ts := genaiTraces(b, 8)
	spans := 0
	for _, t := range ts {
		spans += len(t.Spans)
	}
	b.ReportAllocs()
	n := 0
	for b.Loop() {
		var cache search.TextCache
		for i, t := range ts {
			if i%32 == 0 {
				cache = search.TextCache{}
			}
			search.IndexHashed(t, cache)
		}
		n += spans
	}
	b.ReportMetric(b.Elapsed().Seconds()*1e9/float64(n), "ns/span")
}
