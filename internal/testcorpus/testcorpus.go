// Package testcorpus finds the shared test data (../shared/corpus and
// ../shared/conformance beside the repository) for tests and benchmarks in
// any package, whatever their directory depth. Tests read the data in place.
package testcorpus

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// Find returns the path of elem under the shared directory: the directory
// "shared" beside the repository (the directory holding go.mod), found by
// walking up from the working directory, which for a test is its package's
// directory. It reports an error naming the expected place when the path is
// absent.
func Find(elem ...string) (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			p := filepath.Join(append([]string{dir, "..", "shared"}, elem...)...)
			p = filepath.Clean(p)
			if _, err := os.Stat(p); err != nil {
				return "", fmt.Errorf("the shared test data must sit beside the repository: %w", err)
			}
			return p, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("no go.mod above the working directory: cannot find the shared test data")
		}
		dir = parent
	}
}

// Dir returns the shared corpus directory, failing tb when it is absent.
func Dir(tb testing.TB) string {
	tb.Helper()
	return must(tb, "corpus")
}

// File returns the path of a file of the shared corpus, given relative to
// the corpus directory with slashes, failing tb when it is absent.
func File(tb testing.TB, rel string) string {
	tb.Helper()
	return must(tb, "corpus", filepath.FromSlash(rel))
}

// Conformance returns the directory of a conformance suite under
// shared/conformance ("invariant"), failing tb when it is absent.
func Conformance(tb testing.TB, suite string) string {
	tb.Helper()
	return must(tb, "conformance", suite)
}

func must(tb testing.TB, elem ...string) string {
	tb.Helper()
	p, err := Find(elem...)
	if err != nil {
		tb.Fatal(err)
	}
	return p
}
