package invariant

import (
	"bytes"
	"testing"

	"github.com/lookout-dev/lookout/internal/formats/internal/golden"
)

// TestGolden keeps the canonical output of every corpus file this package
// reads in testdata/golden; go test -update rewrites it.
func TestGolden(t *testing.T) {
	for _, path := range corpusFiles(t) {
		name := rel(path)
		t.Run(name, func(t *testing.T) {
			data := readCorpus(t, name)
			golden.Check(t, name, golden.Output(NewDecoder(bytes.NewReader(data), name)))
		})
	}
}
