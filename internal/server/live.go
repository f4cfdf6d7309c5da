package server

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
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
// tells the explorer to fetch it again. With several servers on one
// PostgreSQL database, each tells the others through the store's change
// feed (NOTIFY): a page following a trace on one server hears of changes
// written through any of them.

// liveHub fans notifications of changed traces out to their listeners,
// and to the other servers through feed (nil: one server).
type liveHub struct {
	mu   sync.Mutex
	subs map[string]map[chan struct{}]struct{}

	feed    changeFeed
	origin  string              // this server, in its notices, which it skips when they come back
	pending map[string]struct{} // changed, not published yet
	notices []string            // other notices, not published yet
	wake    chan struct{}
	stop    context.CancelFunc
	done    sync.WaitGroup
	on      feedHandlers
	seen    map[string]time.Time // other servers, when last heard of
}

// feedHandlers are what the server does with the other servers' notices.
type feedHandlers struct {
	forget      func(ids []string)      // traces changed: what else it invalidates (shared reads)
	revoked     func()                  // a key was revoked: forget the keys seen
	loginFailed func(addr, name string) // a login failed: count it
}

// A notice is "origin kind [fields...]": noticeTraces with the ids of
// traces that changed, noticeKeys when an API key was revoked,
// noticeLogin with the client address and the account name (hex) of a
// failed login, noticeAlive every presenceEvery (and in answer to a server
// not heard of before) so that each server knows whether others share
// its database.
const (
	noticeTraces = "t"
	noticeKeys   = "k"
	noticeLogin  = "l"
	noticeAlive  = "a"
)

// A server counts another as present for presenceTTL after its last
// noticeAlive, which each sends every presenceEvery.
const (
	presenceEvery = 5 * time.Second
	presenceTTL   = 3 * presenceEvery
)

// changeFeed carries notices of changed traces between the servers of one
// database (PostgreSQL's LISTEN and NOTIFY).
type changeFeed interface {
	// PublishChanged sends a notice to every listener of the database.
	PublishChanged(ctx context.Context, notice string) error
	// ListenChanged calls notice with each notice published, until ctx
	// ends; after a lost connection, once listening again, it calls
	// missed (notices of the gap are lost).
	ListenChanged(ctx context.Context, notice func(string), missed func()) error
}

// maxNotice bounds a notice (PostgreSQL takes 8,000 bytes).
const maxNotice = 7000

// startFeed publishes this server's changes and hears the others'.
func (h *liveHub) startFeed(feed changeFeed, on feedHandlers, log *slog.Logger) {
	var b [8]byte
	rand.Read(b[:])
	// Under the lock: writers already running (the span builder) may be
	// telling of changes meanwhile (changed, send).
	h.mu.Lock()
	h.feed, h.origin, h.on = feed, hex.EncodeToString(b[:]), on
	h.wake = make(chan struct{}, 1)
	h.mu.Unlock()
	ctx, cancel := context.WithCancel(context.Background())
	h.stop = cancel
	h.done.Go(func() { h.publish(ctx, log) })
	h.done.Go(func() {
		// Once more a second after the first: servers that started
		// together may have spoken before the others listened.
		wait := time.Second
		for {
			h.send(noticeAlive)
			select {
			case <-ctx.Done():
				return
			case <-time.After(wait):
			}
			wait = presenceEvery
		}
	})
	h.done.Go(func() {
		err := feed.ListenChanged(ctx, h.heard, h.everyone)
		if err != nil && ctx.Err() == nil {
			log.Error("live updates from other servers stopped", "err", err)
		}
	})
}

// stopFeed ends the feed's work and waits for it.
func (h *liveHub) stopFeed() {
	if h.stop != nil {
		h.stop()
		h.done.Wait()
	}
}

// publish sends the pending changes in notices of many ids, as they come:
// a write does not wait for the database's round trip.
func (h *liveHub) publish(ctx context.Context, log *slog.Logger) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-h.wake:
		}
		h.mu.Lock()
		ids, notices := h.pending, h.notices
		h.pending, h.notices = nil, nil
		h.mu.Unlock()
		send := func(notice string) {
			if err := h.feed.PublishChanged(ctx, notice); err != nil && ctx.Err() == nil {
				log.Warn("notices to other servers: one was lost", "err", err)
			}
		}
		for _, n := range notices {
			send(n)
		}
		head := h.origin + " " + noticeTraces
		notice := append(make([]byte, 0, maxNotice), head...)
		for id := range ids {
			if len(notice)+1+len(id) > maxNotice {
				send(string(notice))
				notice = append(notice[:0], head...)
			}
			notice = append(append(notice, ' '), id...)
		}
		if len(notice) > len(head) {
			send(string(notice))
		}
	}
}

// heard is a notice from the feed, of another server (this server's own
// notices come back too, and are skipped).
func (h *liveHub) heard(notice string) {
	fields := strings.Fields(notice)
	if len(fields) < 2 || fields[0] == h.origin {
		return
	}
	switch fields[1] {
	case noticeAlive:
		h.mu.Lock()
		if h.seen == nil {
			h.seen = map[string]time.Time{}
		}
		_, known := h.seen[fields[0]]
		h.seen[fields[0]] = time.Now()
		h.mu.Unlock()
		if !known { // a server just started: it hears of this one at once
			h.send(noticeAlive)
		}
	case noticeKeys:
		if h.on.revoked != nil {
			h.on.revoked()
		}
	case noticeLogin:
		if len(fields) != 4 || h.on.loginFailed == nil {
			return
		}
		addr, err1 := hex.DecodeString(fields[2])
		name, err2 := hex.DecodeString(fields[3])
		if err1 == nil && err2 == nil {
			h.on.loginFailed(string(addr), string(name))
		}
	case noticeTraces:
		ids := fields[2:]
		if h.on.forget != nil {
			h.on.forget(ids)
		}
		h.notify(ids)
	}
}

// others is how many other servers on the database were heard of within
// presenceTTL.
func (h *liveHub) others() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	n := 0
	for origin, at := range h.seen {
		if time.Since(at) < presenceTTL {
			n++
		} else {
			delete(h.seen, origin)
		}
	}
	return n
}

// othersAlive says whether other servers share the database.
func (h *liveHub) othersAlive() bool { return h.others() > 0 }

// keyRevoked tells the other servers to forget the keys they have seen.
func (h *liveHub) keyRevoked() { h.send(noticeKeys) }

// loginFailed tells the other servers of a failed login, which their
// limits count as their own.
func (h *liveHub) loginFailed(addr, name string) {
	if len(addr)+len(name) < maxNotice/2-64 {
		h.send(noticeLogin + " " + hex.EncodeToString([]byte(addr)) + " " + hex.EncodeToString([]byte(name)))
	}
}

// send queues a notice of kind and fields for the other servers.
func (h *liveHub) send(kindFields string) {
	h.mu.Lock()
	if h.feed == nil {
		h.mu.Unlock()
		return
	}
	if len(h.notices) < maxQueuedNotices {
		h.notices = append(h.notices, h.origin+" "+kindFields)
	}
	wake := h.wake
	h.mu.Unlock()
	select {
	case wake <- struct{}{}:
	default:
	}
}

// maxQueuedNotices bounds the notices waiting to be published (a flood of
// failed logins, the database slow): past it, new ones are dropped.
const maxQueuedNotices = 10_000

// everyone tells every listener its trace may have changed, and forgets
// the keys seen: notices were lost while the feed reconnected.
func (h *liveHub) everyone() {
	if h.on.revoked != nil {
		h.on.revoked()
	}
	h.mu.Lock()
	ids := make([]string, 0, len(h.subs))
	for id := range h.subs {
		ids = append(ids, id)
	}
	h.mu.Unlock()
	if h.on.forget != nil {
		h.on.forget(ids)
	}
	h.notify(ids)
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

// changed tells the listeners of each trace that it changed, here and,
// through the feed, on the other servers.
func (h *liveHub) changed(ids ...string) {
	h.notify(ids)
	h.mu.Lock()
	if h.feed == nil {
		h.mu.Unlock()
		return
	}
	if h.pending == nil {
		h.pending = map[string]struct{}{}
	}
	for _, id := range ids {
		h.pending[id] = struct{}{}
	}
	wake := h.wake
	h.mu.Unlock()
	select {
	case wake <- struct{}{}:
	default: // a publish is due already
	}
}

// notify tells this server's listeners of each trace that it changed.
func (h *liveHub) notify(ids []string) {
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
