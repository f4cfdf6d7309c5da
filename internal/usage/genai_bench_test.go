package usage_test

import (
	"testing"

	"github.com/lookout-dev/lookout/bench/otelgen/mapped"
	"github.com/lookout-dev/lookout/internal/usage"
)

// BenchmarkTotalsGenAI reads the usage of GenAI agent traces as a build
// does (storeutil's digest): each trace's totals, every span walked.
func BenchmarkTotalsGenAI(b *testing.B) {
	ts, spans := mapped.ForBench(b, 8)
	r := usage.NewReader(nil)
	b.ReportAllocs()
	n := 0
	for b.Loop() {
		for _, t := range ts {
			_ = r.Totals(t, nil)
		}
		n += spans
	}
	b.ReportMetric(b.Elapsed().Seconds()*1e9/float64(n), "ns/span")
}
