package server

import (
	"fmt"
	"net/http"
	"sync"
	"time"
)

// Live traces (this file):
//
//	GET /api/v1/traces/{id}/live   server-sent events: "ready" once, then
//	                               "changed" whenever the trace's events,
//	                               spans or annotations change
//
// A trace that grows while an agent runs (spans over OTLP, events appended)
// tells the explorer to fetch it again. Notifications are within this
// server process: with several servers on one PostgreSQL database, a page
// hears of the changes made through its own server only.

// liveHub fans notifications of changed traces out to their listeners.
type liveHub struct {
	mu   sync.Mutex
	subs map[string]map[chan struct{}]struct{}
}

// subscribe returns a channel that receives (coalesced) a value each time
// the trace changes, and the function that ends the subscription.
func (h *liveHub) subscribe(id string) (<-chan struct{}, func()) {
	c := make(chan struct{}, 1)
	h.mu.Lock()
	if h.subs == nil {
		h.subs = map[string]map[chan struct{}]struct{}{}
	}
	if h.subs[id] == nil {
		h.subs[id] = map[chan struct{}]struct{}{}
	}
	h.subs[id][c] = struct{}{}
	h.mu.Unlock()
	return c, func() {
		h.mu.Lock()
		delete(h.subs[id], c)
		if len(h.subs[id]) == 0 {
			delete(h.subs, id)
		}
		h.mu.Unlock()
	}
}

// changed tells the listeners of each trace that it changed.
func (h *liveHub) changed(ids ...string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, id := range ids {
		for c := range h.subs[id] {
			select {
			case c <- struct{}{}:
			default: // one pending notice is enough
			}
		}
	}
}

// liveHeartbeat keeps idle streams open through proxies.
const liveHeartbeat = 25 * time.Second

// liveTrace streams change notices of one trace the caller may read.
func (s *Server) liveTrace(w http.ResponseWriter, r *http.Request, p *principal) error {
	st, err := s.traceAccess(r, p, false)
	if err != nil {
		return err
	}
	changes, stop := s.live.subscribe(st.ID)
	defer stop()
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	flush := func() {
		if f, ok := w.(http.Flusher); ok {
			f.Flush()
		}
	}
	fmt.Fprintf(w, "event: ready\ndata: {\"id\":%q}\n\n", st.ID)
	flush()
	beat := time.NewTicker(liveHeartbeat)
	defer beat.Stop()
	for {
		select {
		case <-r.Context().Done():
			return nil
		case <-changes:
			fmt.Fprintf(w, "event: changed\ndata: {\"id\":%q}\n\n", st.ID)
		case <-beat.C:
			fmt.Fprint(w, ": still here\n\n")
		}
		flush()
	}
}

// traceChanged is said after a write to traces: their listeners hear of it,
// and reads begun before it are not shared with later requests.
func (s *Server) traceChanged(ids ...string) {
	for _, id := range ids {
		s.reads.forget(id)
	}
	s.live.changed(ids...)
}
