package server

import (
	"context"
	"errors"
	"sync"

	"github.com/lookout-dev/lookout/internal/store"
)

// traceReads shares one store read of a trace among the requests that ask
// for it at the same time: opening a long trace in the explorer asks for its
// first events, the whole trace and its annotations at once, and each would
// otherwise inflate and decode the same megabytes. Nothing is kept once the
// read is done, and a write through this server (forget) stops later
// requests from joining a read that began before it, so a client reads its
// own writes. Readers must not change the trace they get.
type traceReads struct {
	mu       sync.Mutex
	inflight map[string]*traceRead
}

// traceGetter reads a trace.
type traceGetter interface {
	Trace(ctx context.Context, id string) (store.StoredTrace, error)
}

type traceRead struct {
	done    chan struct{}
	waiting int // readers sharing this read besides the first
	t       store.StoredTrace
	err     error
}

func (tr *traceReads) read(ctx context.Context, st traceGetter, id string) (store.StoredTrace, error) {
	tr.mu.Lock()
	if c, ok := tr.inflight[id]; ok {
		c.waiting++
		tr.mu.Unlock()
		select {
		case <-c.done:
			if c.err != nil && ctx.Err() == nil && (errors.Is(c.err, context.Canceled) || errors.Is(c.err, context.DeadlineExceeded)) {
				return tr.read(ctx, st, id) // the first caller went away, not this one
			}
			return c.t, c.err
		case <-ctx.Done():
			return store.StoredTrace{}, ctx.Err()
		}
	}
	if tr.inflight == nil {
		tr.inflight = map[string]*traceRead{}
	}
	c := &traceRead{done: make(chan struct{})}
	tr.inflight[id] = c
	tr.mu.Unlock()
	c.t, c.err = st.Trace(ctx, id)
	tr.mu.Lock()
	if tr.inflight[id] == c {
		delete(tr.inflight, id)
	}
	tr.mu.Unlock()
	close(c.done)
	return c.t, c.err
}

// waiting reports how many readers wait on the read of id in flight.
func (tr *traceReads) waiting(id string) int {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	if c, ok := tr.inflight[id]; ok {
		return c.waiting
	}
	return -1
}

// forget makes the next readers of id start a read of their own: the trace
// changed after the read in flight began.
func (tr *traceReads) forget(id string) {
	tr.mu.Lock()
	delete(tr.inflight, id)
	tr.mu.Unlock()
}
