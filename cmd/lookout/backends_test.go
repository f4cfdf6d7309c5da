package main

import (
	"path/filepath"
	"testing"

	"github.com/lookout-dev/lookout/internal/store/postgres/pgtest"
)

// cliBackend names a fresh database for --db.
type cliBackend struct {
	name string
	db   func(t *testing.T) string
}

// cliBackends are SQLite (a file in a temporary directory) and PostgreSQL
// (a fresh schema on the server LOOKOUT_TEST_POSTGRES names, else on a
// throwaway cluster); neither is ever skipped.
func cliBackends(t *testing.T) []cliBackend {
	return []cliBackend{
		{"sqlite", func(t *testing.T) string { return filepath.Join(t.TempDir(), "lookout.db") }},
		{"postgres", func(t *testing.T) string { return pgtest.URL(t) }},
	}
}
