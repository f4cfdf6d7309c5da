package sqlite

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/lookout-dev/lookout/internal/store"
	"github.com/lookout-dev/lookout/internal/store/storetest"
)

func openB(b *testing.B) store.Store {
	st, err := Open(context.Background(), filepath.Join(b.TempDir(), "lookout.db"))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { st.Close() })
	return st
}

// go test -run XXX -bench . ./internal/store/sqlite
func BenchmarkAddTraces(b *testing.B) { storetest.BenchAddTraces(b, openB) }

func BenchmarkReads100k(b *testing.B) { storetest.BenchReads(b, openB, 100_000) }

// go test -run XXX -bench Index -benchtime 3x ./internal/store/sqlite
func BenchmarkIndex(b *testing.B)              { storetest.BenchIndex(b, openB, 2000) }
func BenchmarkAppendConversation(b *testing.B) { storetest.BenchAppendConversation(b, openB) }
