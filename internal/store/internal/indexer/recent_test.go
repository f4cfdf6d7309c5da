package indexer

import (
	"reflect"
	"testing"
	"time"
)

// TestRecentTracesHold checks that the loop leaves the rows of a trace it
// indexed within reindexAfter in the queue, says when the first may go
// again, and takes them once that time has passed.
func TestRecentTracesHold(t *testing.T) {
	r := &recentTraces{at: map[string]time.Time{}}
	t0 := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	entries := []Entry{{1, "a"}, {2, "b"}, {3, "a"}, {4, "c"}}
	kept, wake := r.hold(entries, t0)
	if !reflect.DeepEqual(kept, entries) || !wake.IsZero() {
		t.Fatalf("nothing indexed yet: kept %v, wake %v", kept, wake)
	}
	r.indexed([]string{"a"}, t0)
	r.indexed([]string{"c"}, t0.Add(300*time.Millisecond))
	kept, wake = r.hold(entries, t0.Add(500*time.Millisecond))
	if want := []Entry{{2, "b"}}; !reflect.DeepEqual(kept, want) {
		t.Errorf("kept %v, want %v", kept, want)
	}
	if want := t0.Add(reindexAfter); !wake.Equal(want) {
		t.Errorf("wake %v, want %v (a's turn)", wake, want)
	}
	kept, _ = r.hold(entries, t0.Add(reindexAfter))
	if want := []Entry{{1, "a"}, {2, "b"}, {3, "a"}}; !reflect.DeepEqual(kept, want) {
		t.Errorf("after a's time: kept %v, want %v", kept, want)
	}
	if _, ok := r.at["a"]; ok {
		t.Error("a's time is past but it is still remembered")
	}
	var none *recentTraces // searches' steps hold nothing
	if kept, wake := none.hold(entries, t0); !reflect.DeepEqual(kept, entries) || !wake.IsZero() {
		t.Errorf("a nil recentTraces held %v", kept)
	}
}
