package sqlite

import (
	"testing"

	"github.com/lookout-dev/lookout/internal/store/storetest"
)

// go test -run XXX -bench . ./internal/store/sqlite
func BenchmarkAddTraces(b *testing.B) { storetest.BenchAddTraces(b, open) }

func BenchmarkReads100k(b *testing.B) { storetest.BenchReads(b, open, 100_000) }

// go test -run XXX -bench Dashboard100k -benchtime 10x
func BenchmarkDashboard100k(b *testing.B) { storetest.BenchDashboard(b, open, 100_000) }

// go test -run XXX -bench Index -benchtime 3x ./internal/store/sqlite
func BenchmarkIndex(b *testing.B)              { storetest.BenchIndex(b, open, 2000) }
func BenchmarkAppendConversation(b *testing.B) { storetest.BenchAppendConversation(b, open) }
