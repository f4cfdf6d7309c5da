package search_test

import (
	"testing"

	"github.com/lookout-dev/lookout/bench/otelgen/mapped"
	"github.com/lookout-dev/lookout/internal/search"
)

// BenchmarkIndexGenAI indexes GenAI agent traces as the indexer does: a
// text cache for each 32 traces.
func BenchmarkIndexGenAI(b *testing.B) {
	ts, spans := mapped.ForBench(b, 8)
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
