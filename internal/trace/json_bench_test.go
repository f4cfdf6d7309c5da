package trace

import (
	"os"
	"testing"

	"github.com/lookout-dev/lookout/internal/jsonscan"
	"github.com/lookout-dev/lookout/internal/testcorpus"
)

// BenchmarkDecodeEventsTauBench measures the event decoder alone, without
// line splitting or format logic, over the 4 MB tau-bench file.
func BenchmarkDecodeEventsTauBench(b *testing.B) {
	data, err := os.ReadFile(testcorpus.File(b, "openai/tau-bench/gpt-4o-airline.json"))
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	s := jsonscan.New(data)
	for b.Loop() {
		s.Reset(data)
		err := s.Array(func(int) error {
			return s.Object(func(k string) error {
				if k == "traj" {
					_, err := DecodeEvents(s, "traj")
					return err
				}
				return s.Skip()
			})
		})
		if err != nil {
			b.Fatal(err)
		}
	}
}
