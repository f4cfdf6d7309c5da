package eval

import (
	"errors"
	"slices"
	"sync"
	"testing"
	"time"
)

// gatedWrites is a write function that records each batch and then waits
// for the test to let it return (with the error the test gives).
type gatedWrites struct {
	mu      sync.Mutex
	batches [][]int
	started chan []int // each batch as its write begins
	release chan error // the result of the write in progress
}

func newGatedWrites() *gatedWrites {
	return &gatedWrites{started: make(chan []int, 100), release: make(chan error)}
}

func (g *gatedWrites) write(b []int) error {
	cp := slices.Clone(b)
	g.mu.Lock()
	g.batches = append(g.batches, cp)
	g.mu.Unlock()
	g.started <- cp
	return <-g.release
}

func (g *gatedWrites) next(t *testing.T) []int {
	t.Helper()
	select {
	case b := <-g.started:
		return b
	case <-time.After(10 * time.Second):
		t.Fatal("no write began within 10 s")
		return nil
	}
}

func runWriter(w *batchWriter[int]) chan error {
	done := make(chan error, 1)
	go func() { done <- w.run() }()
	return done
}

func wait(t *testing.T, ch chan error) error {
	t.Helper()
	select {
	case err := <-ch:
		return err
	case <-time.After(10 * time.Second):
		t.Fatal("still blocked after 10 s")
		return nil
	}
}

// While a write is in progress, values wait; the next write takes all
// of them, up to maxBatch, in the order they came.
func TestBatchWriterGroupsWaitingValues(t *testing.T) {
	g := newGatedWrites()
	w := newBatchWriter(3, 100, g.write)
	done := runWriter(w)
	if err := w.Add(0); err != nil {
		t.Fatal(err)
	}
	if b := g.next(t); !slices.Equal(b, []int{0}) {
		t.Fatalf("first batch %v, want [0]", b)
	}
	for i := 1; i <= 5; i++ { // queued while the first write blocks
		if err := w.Add(i); err != nil {
			t.Fatal(err)
		}
	}
	w.Close()
	g.release <- nil
	if b := g.next(t); !slices.Equal(b, []int{1, 2, 3}) {
		t.Fatalf("second batch %v, want [1 2 3] (maxBatch 3)", b)
	}
	g.release <- nil
	if b := g.next(t); !slices.Equal(b, []int{4, 5}) {
		t.Fatalf("third batch %v, want [4 5]", b)
	}
	g.release <- nil
	if err := wait(t, done); err != nil {
		t.Fatalf("run: %v", err)
	}
	if len(g.batches) != 3 {
		t.Fatalf("batches %v, want 3", g.batches)
	}
	if err := w.Add(6); !errors.Is(err, errWriterClosed) {
		t.Fatalf("Add after Close: %v, want errWriterClosed", err)
	}
}

// Add waits while maxQueue values are queued, and goes on once a write
// takes them.
func TestBatchWriterBoundsTheQueue(t *testing.T) {
	g := newGatedWrites()
	w := newBatchWriter(10, 2, g.write)
	done := runWriter(w)
	w.Add(0)
	g.next(t) // the writer holds [0]
	w.Add(1)
	w.Add(2) // the queue is full
	added := make(chan error, 1)
	go func() { added <- w.Add(3) }()
	select {
	case err := <-added:
		t.Fatalf("Add returned (%v) with a full queue", err)
	case <-time.After(50 * time.Millisecond):
	}
	g.release <- nil // the writer takes [1 2]: room again
	if b := g.next(t); !slices.Equal(b, []int{1, 2}) {
		t.Fatalf("second batch %v, want [1 2]", b)
	}
	if err := wait(t, added); err != nil {
		t.Fatalf("Add after room was made: %v", err)
	}
	w.Close()
	g.release <- nil
	if b := g.next(t); !slices.Equal(b, []int{3}) {
		t.Fatalf("last batch %v, want [3]", b)
	}
	g.release <- nil
	if err := wait(t, done); err != nil {
		t.Fatal(err)
	}
}

// A failed write stops the writer: run returns its error, the values
// queued are dropped, and every Add (one waiting on a full queue too)
// returns the error at once instead of blocking.
func TestBatchWriterStopsAtTheFirstFailedWrite(t *testing.T) {
	g := newGatedWrites()
	w := newBatchWriter(10, 1, g.write)
	done := runWriter(w)
	w.Add(0)
	g.next(t)
	w.Add(1) // queued: the queue is full
	blocked := make(chan error, 1)
	go func() { blocked <- w.Add(2) }()
	boom := errors.New("disk full")
	g.release <- boom
	if err := wait(t, done); !errors.Is(err, boom) {
		t.Fatalf("run: %v, want %v", err, boom)
	}
	if err := wait(t, blocked); !errors.Is(err, boom) {
		t.Fatalf("the waiting Add: %v, want %v", err, boom)
	}
	if err := w.Add(3); !errors.Is(err, boom) {
		t.Fatalf("Add after the failure: %v, want %v", err, boom)
	}
	w.Close()
	if len(g.batches) != 1 {
		t.Fatalf("batches %v: nothing may be written after a failure", g.batches)
	}
}

// Many producers at once: every value is written exactly once, and no
// batch is larger than maxBatch.
func TestBatchWriterConcurrentProducers(t *testing.T) {
	var mu sync.Mutex
	seen := map[int]int{}
	w := newBatchWriter(7, 20, func(b []int) error {
		if len(b) > 7 {
			t.Errorf("batch of %d, want at most 7", len(b))
		}
		mu.Lock()
		defer mu.Unlock()
		for _, v := range b {
			seen[v]++
		}
		return nil
	})
	done := runWriter(w)
	var wg sync.WaitGroup
	for p := range 8 {
		wg.Go(func() {
			for i := range 500 {
				if err := w.Add(p*1000 + i); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	w.Close()
	if err := wait(t, done); err != nil {
		t.Fatal(err)
	}
	if len(seen) != 8*500 {
		t.Fatalf("%d distinct values written, want %d", len(seen), 8*500)
	}
	for v, n := range seen {
		if n != 1 {
			t.Fatalf("value %d written %d times", v, n)
		}
	}
}
