package formats

// The format packages keep the golden output of the corpus; the import
// registers -update so that `go test ./internal/formats/... -update` runs
// here too.
import _ "github.com/lookout-dev/lookout/internal/formats/internal/golden"
