package otlp

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lookout-dev/lookout/internal/formats/internal/golden"
)

// TestGolden keeps the canonical output of every OpenTelemetry corpus file
// (not Langfuse's expected ChatML outputs, which chatml_test reads) in
// testdata/golden; go test -update rewrites it.
func TestGolden(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join(corpusDir, "otel/*/*.json"))
	n := 0
	for _, path := range files {
		if strings.HasSuffix(path, ".chatml.json") {
			continue
		}
		n++
		name, _ := filepath.Rel(corpusDir, path)
		name = filepath.ToSlash(name)
		t.Run(name, func(t *testing.T) {
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			golden.Check(t, name, golden.Output(NewDecoder(bytes.NewReader(data), name)))
		})
	}
	if n != 27 {
		t.Fatalf("found %d OpenTelemetry corpus files, want 27", n)
	}
}
