package indexer

import (
	"bytes"
	"encoding/json"
	"sync"
	"time"

	"github.com/lookout-dev/lookout/internal/trace"
)

// Handover keeps traces a writer of this process has just stored, decoded,
// so that the indexer need not decode them again from their stored content
// (a sixth of the CPU of a push). A trace is given back only for the very
// content and metadata bytes it was stored with, so what is indexed is what
// is stored; a writer hands over only traces nothing changes afterwards.
// It is bounded: when full, new traces are not kept (the oldest are the
// ones the indexer reaches first), and those kept longer than a minute
// (deleted or indexed elsewhere meanwhile) make room.
type Handover struct {
	mu      sync.Mutex
	m       map[string]handed
	bytes   int
	maxSize int // content bytes kept at most
	maxN    int
}

type handed struct {
	content, meta []byte
	t             *trace.Trace
	at            time.Time
}

// handoverAge is how long a trace not taken stays.
const handoverAge = time.Minute

// NewDefaultHandover is the handover of a store: up to 4,096 traces of up
// to 16 MB of stored content in all (decoded, more), enough for an indexer
// that falls a few pushes of 500 traces behind (with 1,024, bench/ingest's
// indexer decoded traces again: 4.7 KB of content a tau-bench trace).
func NewDefaultHandover() *Handover { return NewHandover(4096, 16<<20) }

// NewHandover keeps up to maxN traces of up to maxSize content bytes in
// all.
func NewHandover(maxN, maxSize int) *Handover {
	return &Handover{m: map[string]handed{}, maxN: maxN, maxSize: maxSize}
}

// Put keeps t, stored as trace id with content and meta (the content
// encoded from t, the metadata column of the row). The caller gives t up:
// nothing may change it from now on.
func (h *Handover) Put(id string, content, meta []byte, t *trace.Trace) {
	if h == nil || t == nil {
		return
	}
	// As decoding the row gives it: the metadata its column holds, no
	// annotations (they are rows of their own).
	c := *t
	c.Metadata, c.Annotations = nil, nil
	if meta != nil {
		c.Metadata = json.RawMessage(meta)
	}
	t = &c
	h.mu.Lock()
	defer h.mu.Unlock()
	if old, ok := h.m[id]; ok {
		h.bytes -= len(old.content)
		delete(h.m, id)
	}
	now := time.Now()
	if len(h.m) >= h.maxN || h.bytes+len(content) > h.maxSize {
		for k, e := range h.m {
			if now.Sub(e.at) > handoverAge {
				h.bytes -= len(e.content)
				delete(h.m, k)
			}
		}
		if len(h.m) >= h.maxN || h.bytes+len(content) > h.maxSize {
			return
		}
	}
	h.m[id] = handed{content, meta, t, now}
	h.bytes += len(content)
}

// Take returns the trace kept for id if it was stored with exactly
// content and meta (nil otherwise), and forgets it either way.
func (h *Handover) Take(id string, content, meta []byte) *trace.Trace {
	if h == nil {
		return nil
	}
	h.mu.Lock()
	e, ok := h.m[id]
	if ok {
		h.bytes -= len(e.content)
		delete(h.m, id)
	}
	h.mu.Unlock()
	if !ok || !bytes.Equal(e.content, content) || !bytes.Equal(e.meta, meta) {
		return nil
	}
	return e.t
}
