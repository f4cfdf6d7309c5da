package jsonscan_test

import (
	"testing"

	"github.com/lookout-dev/lookout/bench/otelgen/mapped"
	"github.com/lookout-dev/lookout/internal/jsonscan"
)

// genaiAttributes returns the attributes of bench/peers' GenAI spans as
// the canonical spans hold them: JSON objects whose message and payload
// strings are most of their bytes.
func genaiAttributes(b *testing.B) ([][]byte, int) {
	ts, err := mapped.Traces(4)
	if err != nil {
		b.Fatal(err)
	}
	var out [][]byte
	n := 0
	for _, t := range ts {
		for _, sp := range t.Spans {
			out, n = append(out, sp.Attributes), n+len(sp.Attributes)
		}
	}
	return out, n
}

// BenchmarkScanGenAI skips, and walks the strings of, GenAI spans'
// attributes, as the usage digest and the search index do.
func BenchmarkScanGenAI(b *testing.B) {
	attrs, size := genaiAttributes(b)
	b.Run("skip", func(b *testing.B) {
		b.SetBytes(int64(size))
		s := jsonscan.NewStrict(nil)
		for b.Loop() {
			for _, a := range attrs {
				s.Reset(a)
				if err := s.Skip(); err != nil {
					b.Fatal(err)
				}
			}
		}
	})
	b.Run("strings", func(b *testing.B) {
		b.SetBytes(int64(size))
		s := jsonscan.New(nil)
		n := 0
		fn := func(raw []byte, escaped bool) { n += len(raw) }
		for b.Loop() {
			for _, a := range attrs {
				s.Reset(a)
				if err := s.Strings(fn); err != nil {
					b.Fatal(err)
				}
			}
		}
	})
}
