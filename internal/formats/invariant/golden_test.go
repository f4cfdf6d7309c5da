package invariant

import (
	"testing"

	"github.com/lookout-dev/lookout/internal/formats/internal/golden"
)

// TestGolden keeps the canonical output of every corpus file this package
// reads in testdata/golden; go test -update rewrites it.
func TestGolden(t *testing.T) {
	var names []string
	for _, path := range corpusFiles(t) {
		names = append(names, rel(path))
	}
	golden.Test(t, names, readCorpus, NewDecoder)
}
