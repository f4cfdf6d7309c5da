package eval

import (
	"errors"
	"sync"
)

// errWriterClosed is what Add returns after Close.
var errWriterClosed = errors.New("batch writer closed")

// batchWriter stores values in group commits while their producers go on:
// one goroutine (run) writes, in each call of write, every value waiting
// (up to maxBatch), so batches grow when writes (commits, fsyncs) are slow
// and stay small, for fresh progress, when they are fast. Add blocks while
// maxQueue values wait, which bounds the memory held. After a failed write
// nothing more is written: Add drops its value and returns the error at
// once, so producers never block on a writer that has stopped.
type batchWriter[T any] struct {
	maxBatch, maxQueue int
	write              func([]T) error

	mu     sync.Mutex
	cond   *sync.Cond
	queue  []T
	closed bool
	err    error // the first failed write
}

func newBatchWriter[T any](maxBatch, maxQueue int, write func([]T) error) *batchWriter[T] {
	w := &batchWriter[T]{maxBatch: max(maxBatch, 1), maxQueue: max(maxQueue, 1), write: write}
	w.cond = sync.NewCond(&w.mu)
	return w
}

// Add queues v, waiting while the queue is full. It returns the write
// error once a write has failed (v is then dropped).
func (w *batchWriter[T]) Add(v T) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	for len(w.queue) >= w.maxQueue && w.err == nil && !w.closed {
		w.cond.Wait()
	}
	switch {
	case w.err != nil:
		return w.err
	case w.closed:
		return errWriterClosed
	}
	w.queue = append(w.queue, v)
	w.cond.Broadcast()
	return nil
}

// Close tells run that no more values come: it returns once the queue is
// written.
func (w *batchWriter[T]) Close() {
	w.mu.Lock()
	w.closed = true
	w.cond.Broadcast()
	w.mu.Unlock()
}

// run writes until Close and an empty queue (nil), or until a write fails
// (that error).
func (w *batchWriter[T]) run() error {
	for {
		w.mu.Lock()
		for len(w.queue) == 0 && !w.closed {
			w.cond.Wait()
		}
		if len(w.queue) == 0 {
			w.mu.Unlock()
			return nil
		}
		b := w.queue[:min(len(w.queue), w.maxBatch)]
		w.queue = w.queue[len(b):]
		w.cond.Broadcast() // room for waiting producers
		w.mu.Unlock()
		if err := w.write(b); err != nil {
			w.mu.Lock()
			w.err, w.queue = err, nil
			w.cond.Broadcast()
			w.mu.Unlock()
			return err
		}
	}
}
