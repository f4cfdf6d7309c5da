package postgres

import (
	"context"
	"testing"
	"time"
)

// The index's ANALYZE runs when the index grew, and one due before its
// gap is over runs when the gap is, so a push's last rows are analyzed
// too; a closed store starts none.
func TestAnalyzeGap(t *testing.T) {
	t.Setenv("LOOKOUT_INDEXER", "off")
	ctx := context.Background()
	st := open(t).(*Store)
	analyzed := func() int64 {
		var n int64
		if err := st.pool.QueryRow(ctx, `SELECT coalesce(analyze_count, 0) FROM pg_stat_user_tables WHERE relname = 'search_meta'`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	waitFor := func(want int64) {
		t.Helper()
		for deadline := time.Now().Add(30 * time.Second); analyzed() < want; {
			if time.Now().After(deadline) {
				t.Fatalf("analyzed %d times, want %d", analyzed(), want)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	busy := func() bool {
		st.an.mu.Lock()
		defer st.an.mu.Unlock()
		return st.an.running
	}
	setNext := func(d time.Duration) {
		st.an.mu.Lock()
		defer st.an.mu.Unlock()
		st.an.next = time.Now().Add(d)
	}
	base := analyzed()
	t0 := time.Now()
	st.noteIndexed(4999)
	if busy() {
		t.Fatal("analyzing before the index grew by 5,000 pieces")
	}
	st.noteIndexed(1)
	waitFor(base + 1)
	for busy() {
		time.Sleep(10 * time.Millisecond)
	}
	st.an.mu.Lock()
	gap := st.an.next.Sub(t0)
	st.an.mu.Unlock()
	if gap <= 0 {
		t.Fatal("no gap set after an ANALYZE")
	}

	// Due within the gap (held at 300 ms, whatever the ANALYZE took):
	// it waits for the gap, then runs.
	setNext(300 * time.Millisecond)
	st.noteIndexed(5000)
	st.an.mu.Lock()
	waiting := st.an.timer != nil && !st.an.running
	st.an.mu.Unlock()
	if !waiting {
		t.Fatal("an ANALYZE due within the gap is not waiting for it")
	}
	waitFor(base + 2)
	for busy() {
		time.Sleep(10 * time.Millisecond)
	}

	setNext(200 * time.Millisecond)
	st.noteIndexed(5000)
	st.an.stop()
	st.noteIndexed(5000)
	st.an.mu.Lock()
	left := st.an.timer != nil || st.an.running
	st.an.mu.Unlock()
	if left {
		t.Fatal("an ANALYZE waits or runs after stop")
	}
	time.Sleep(400 * time.Millisecond)
	if n := analyzed(); n != base+2 {
		t.Fatalf("analyzed %d times after stop, want %d", n, base+2)
	}
}
