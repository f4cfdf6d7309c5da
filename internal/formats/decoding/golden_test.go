package decoding_test

// This package has no golden files; the import registers -update so that
// `go test ./internal/formats/... -update` runs here too.
import _ "github.com/lookout-dev/lookout/internal/formats/internal/golden"
