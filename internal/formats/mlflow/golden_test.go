package mlflow

import (
	"testing"

	"github.com/lookout-dev/lookout/internal/formats/internal/golden"
)

// TestGolden keeps the canonical output of every corpus file this package
// reads in testdata/golden; go test -update rewrites it.
func TestGolden(t *testing.T) {
	golden.Test(t, []string{seedFile}, readCorpus, NewDecoder)
}
