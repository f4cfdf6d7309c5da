package eval

import (
	"testing"

	"github.com/lookout-dev/lookout/internal/leaktest"
)

// TestMain fails the run when the tests leave goroutines running.
func TestMain(m *testing.M) { leaktest.Main(m) }
