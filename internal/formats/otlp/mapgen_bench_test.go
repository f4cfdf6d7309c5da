package otlp

import (
	"testing"

	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"

	"github.com/lookout-dev/lookout/bench/otelgen"
)

// BenchmarkMapSpansGenAI maps the spans of bench/peers' load (GenAI agent
// traces, their messages as JSON text in attributes) a trace at a time,
// as a receiver does: the mapping is a tenth of the server's CPU there.
func BenchmarkMapSpansGenAI(b *testing.B) {
	g := otelgen.NewGenerator(1, "bench", "tok")
	var groups [][]Span
	bytes := 0
	for range 4 {
		batch := g.Next()
		var td tracepb.TracesData
		if err := proto.Unmarshal(batch.Body, &td); err != nil {
			b.Fatal(err)
		}
		spans, err := FromResourceSpans(td.ResourceSpans)
		if err != nil {
			b.Fatal(err)
		}
		at := map[string]int{}
		for _, sp := range spans {
			k, ok := at[sp.TraceID]
			if !ok {
				k = len(groups)
				at[sp.TraceID] = k
				groups = append(groups, nil)
			}
			groups[k] = append(groups[k], sp)
		}
		bytes += len(batch.Body)
	}
	n := 0
	for _, gr := range groups {
		n += len(gr)
	}
	b.SetBytes(int64(bytes))
	b.ReportAllocs()
	for b.Loop() {
		for _, gr := range groups {
			if _, err := MapSpans(gr); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.ReportMetric(float64(n*b.N)/b.Elapsed().Seconds(), "spans/s")
}
