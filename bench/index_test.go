package bench

import (
	"testing"

	"github.com/lookout-dev/lookout/bench/corpusdata"
	"github.com/lookout-dev/lookout/internal/search"
	"github.com/lookout-dev/lookout/internal/testcorpus"
	"github.com/lookout-dev/lookout/internal/trace"
)

// BenchmarkSearchIndex extracts the search index's pieces, facets and
// metadata values of the tau-bench traces: the CPU every stored trace costs
// before a row of the index is written. Bytes are those of the traces'
// canonical JSON.
func BenchmarkSearchIndex(b *testing.B) {
	traces, err := corpusdata.Traces(testcorpus.Dir(b), corpusdata.TauBench)
	if err != nil {
		b.Fatal(err)
	}
	var size int64
	for _, t := range traces {
		size += int64(len(trace.AppendTrace(nil, t)))
	}
	b.Run("all", func(b *testing.B) {
		b.SetBytes(size)
		for b.Loop() {
			for _, t := range traces {
				search.Index(t)
			}
		}
	})
	b.Run("meta", func(b *testing.B) {
		b.SetBytes(size)
		for b.Loop() {
			for _, t := range traces {
				search.Meta(t.Metadata)
			}
		}
	})
}
