package server

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lookout-dev/lookout/internal/store"
)

// slowTraces counts the reads that reach the store and holds each one until
// released, so that readers pile up on it.
type slowTraces struct {
	store.Store
	reads   atomic.Int32
	release chan struct{}
}

func (s *slowTraces) Trace(ctx context.Context, id string) (store.StoredTrace, error) {
	s.reads.Add(1)
	select {
	case <-s.release:
	case <-ctx.Done():
		return store.StoredTrace{}, ctx.Err()
	}
	return store.StoredTrace{ID: id}, nil
}

// TestTraceReadsShared: readers of one trace at the same time share one
// store read; a later reader reads again; a first reader that goes away
// does not fail the others.
func TestTraceReadsShared(t *testing.T) {
	st := &slowTraces{release: make(chan struct{})}
	var tr traceReads
	var wg sync.WaitGroup
	got := make([]store.StoredTrace, 5)
	errs := make([]error, 5)
	for i := range 5 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			got[i], errs[i] = tr.read(context.Background(), st, "t1")
		}()
	}
	for tr.waiting("t1") < 4 {
		time.Sleep(time.Millisecond)
	}
	close(st.release)
	wg.Wait()
	for i := range 5 {
		if errs[i] != nil || got[i].ID != "t1" {
			t.Fatalf("reader %d: %+v %v", i, got[i], errs[i])
		}
	}
	if n := st.reads.Load(); n != 1 {
		t.Errorf("%d store reads for 5 readers at once, want 1", n)
	}
	if _, err := tr.read(context.Background(), st, "t1"); err != nil || st.reads.Load() != 2 {
		t.Errorf("a later reader: %v, %d store reads (want 2)", err, st.reads.Load())
	}

	// The first reader gives up: the one waiting on its read reads again.
	st2 := &slowTraces{release: make(chan struct{})}
	ctx, cancel := context.WithCancel(context.Background())
	first := make(chan error, 1)
	go func() { _, err := tr.read(ctx, st2, "t2"); first <- err }()
	for st2.reads.Load() == 0 {
		time.Sleep(time.Millisecond)
	}
	second := make(chan error, 1)
	go func() { _, err := tr.read(context.Background(), st2, "t2"); second <- err }()
	for tr.waiting("t2") < 1 {
		time.Sleep(time.Millisecond)
	}
	cancel()
	if err := <-first; err == nil {
		t.Error("the cancelled reader got no error")
	}
	for st2.reads.Load() < 2 {
		time.Sleep(time.Millisecond)
	}
	close(st2.release)
	if err := <-second; err != nil {
		t.Errorf("the waiting reader failed with the first one's error: %v", err)
	}
}

// TestTraceReadsForget: after a write (forget), a new reader does not join
// the read that began before it, and that read's end does not end the new
// one's sharing.
func TestTraceReadsForget(t *testing.T) {
	st := &slowTraces{release: make(chan struct{})}
	var tr traceReads
	first := make(chan error, 1)
	go func() { _, err := tr.read(context.Background(), st, "t"); first <- err }()
	for st.reads.Load() == 0 {
		time.Sleep(time.Millisecond)
	}
	tr.forget("t")
	second := make(chan error, 1)
	go func() { _, err := tr.read(context.Background(), st, "t"); second <- err }()
	for deadline := time.Now().Add(5 * time.Second); st.reads.Load() < 2; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			close(st.release)
			t.Fatal("the reader after the write joined the read that began before it")
		}
	}
	close(st.release)
	if err := <-first; err != nil {
		t.Fatal(err)
	}
	if err := <-second; err != nil {
		t.Fatal(err)
	}
	if n := st.reads.Load(); n != 2 {
		t.Errorf("%d store reads, want 2: the reader after the write joined the read before it", n)
	}
}
