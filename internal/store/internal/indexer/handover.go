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
// A backend that names a row's version cheaply (PostgreSQL's xmin) hands a
// trace over with it, and the indexer compares versions instead of reading
// the content back (the read was a sixth of what the index cost PostgreSQL
// in bench/ingest). It is bounded: when full, new traces are not kept (the
// oldest are the ones the indexer reaches first), and those kept longer
// than a minute (deleted or indexed elsewhere meanwhile) make room.
type Handover struct {
	mu      sync.Mutex
	m       map[string]handed
	bytes   int
	maxSize int // content bytes kept at most
	maxN    int
}

type handed struct {
	version       string // "": content and meta name the row
	content, meta []byte // kept with no version
	size          int    // of the content
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
// encoded from t, the metadata column of the row) in the row version
// named version ("" where the backend names none). The caller gives t up:
// nothing may change it from now on.
func (h *Handover) Put(id, version string, content, meta []byte, t *trace.Trace) {
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
	e := handed{version: version, size: len(content), t: t}
	if version == "" {
		e.content, e.meta = content, meta
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if old, ok := h.m[id]; ok {
		h.bytes -= old.size
		delete(h.m, id)
	}
	now := time.Now()
	if len(h.m) >= h.maxN || h.bytes+e.size > h.maxSize {
		for k, e := range h.m {
			if now.Sub(e.at) > handoverAge {
				h.bytes -= e.size
				delete(h.m, k)
			}
		}
		if len(h.m) >= h.maxN || h.bytes+e.size > h.maxSize {
			return
		}
	}
	e.at = now
	h.m[id] = e
	h.bytes += e.size
}

// Versions returns the row versions the traces of ids were handed over
// for, "" where none (or none named).
func (h *Handover) Versions(ids []string) []string {
	vs := make([]string, len(ids))
	if h == nil {
		return vs
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	for i, id := range ids {
		vs[i] = h.m[id].version
	}
	return vs
}

// Take returns the trace kept for id if the row read is the one it was
// handed over for (nil otherwise), and forgets it either way: handed over
// with a version, the row's version is that one; with none, the row holds
// exactly content and meta.
func (h *Handover) Take(id, version string, content, meta []byte) *trace.Trace {
	if h == nil {
		return nil
	}
	h.mu.Lock()
	e, ok := h.m[id]
	if ok {
		h.bytes -= e.size
		delete(h.m, id)
	}
	h.mu.Unlock()
	switch {
	case !ok:
		return nil
	case e.version != "":
		if e.version != version {
			return nil
		}
	case !bytes.Equal(e.content, content) || !bytes.Equal(e.meta, meta):
		return nil
	}
	return e.t
}
