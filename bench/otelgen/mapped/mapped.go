// Package mapped gives the generator's load as Lookout maps it: the traces
// of bench/peers' GenAI agent runs, for benchmarks of what reads them
// (the search index, the JSON scanner). It is apart from otelgen because
// the OTLP package's own tests use otelgen.
package mapped

import (
	"fmt"
	"testing"

	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"

	"github.com/lookout-dev/lookout/bench/otelgen"
	"github.com/lookout-dev/lookout/internal/formats/otlp"
	"github.com/lookout-dev/lookout/internal/trace"
)

// Traces maps the first batches requests of a generator (seed 1) into
// traces; a trace whose two halves fall in different batches is whole only
// when both are among them.
func Traces(batches int) ([]*trace.Trace, error) {
	g := otelgen.NewGenerator(1, "bench", "tok")
	var spans []otlp.Span
	for range batches {
		var req tracepb.TracesData
		if err := proto.Unmarshal(g.Next().Body, &req); err != nil {
			return nil, fmt.Errorf("generated request: %w", err)
		}
		s, err := otlp.FromResourceSpans(req.ResourceSpans)
		if err != nil {
			return nil, err
		}
		spans = append(spans, s...)
	}
	return otlp.Map(spans)
}

// ForBench is Traces for a benchmark, which fails on an error, with the
// number of spans the traces hold (for a figure a span).
func ForBench(b testing.TB, batches int) (ts []*trace.Trace, spans int) {
	b.Helper()
	ts, err := Traces(batches)
	if err != nil {
		b.Fatal(err)
	}
	for _, t := range ts {
		spans += len(t.Spans)
	}
	return ts, spans
}
