package otlp

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lookout-dev/lookout/internal/formats/internal/golden"
	"github.com/lookout-dev/lookout/internal/testcorpus"
)

// TestGolden keeps the canonical output of every OpenTelemetry corpus file
// (not Langfuse's expected ChatML outputs, which chatml_test reads) in
// testdata/golden; go test -update rewrites it.
func TestGolden(t *testing.T) {
	corpusDir := testcorpus.Dir(t)
	files, _ := filepath.Glob(filepath.Join(corpusDir, "otel/*/*.json"))
	var names []string
	for _, path := range files {
		if !strings.HasSuffix(path, ".chatml.json") {
			name, _ := filepath.Rel(corpusDir, path)
			names = append(names, filepath.ToSlash(name))
		}
	}
	if len(names) != 27 {
		t.Fatalf("found %d OpenTelemetry corpus files, want 27", len(names))
	}
	golden.Test(t, names, func(t testing.TB, name string) []byte {
		data, err := os.ReadFile(testcorpus.File(t, name))
		if err != nil {
			t.Fatal(err)
		}
		return data
	}, NewDecoder)
}
