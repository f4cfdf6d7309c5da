package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"sync"
)

// PushRequest is the body of Invariant's push API, which Lookout accepts
// unchanged at POST /api/v1/push/trace.
type PushRequest struct {
	Messages    []json.RawMessage  `json:"messages"`              // one JSON array of events per trace
	Annotations [][]PushAnnotation `json:"annotations,omitempty"` // nil, or one list per trace
	Dataset     string             `json:"dataset,omitempty"`     // created on first push; "" keeps the traces outside any dataset
	Metadata    []json.RawMessage  `json:"metadata,omitempty"`    // nil, or one object per trace
}

// PushAnnotation is an annotation in the Invariant push shape.
type PushAnnotation struct {
	Content       string          `json:"content"`
	Address       string          `json:"address"`
	ExtraMetadata json.RawMessage `json:"extra_metadata,omitempty"`
}

// PushResponse is the answer to a push: the new trace ids in order ("" for
// a trace skipped because its index was taken), and the traces whose index
// was taken (with on_conflict skip or append).
type PushResponse struct {
	ID        []string        `json:"id"`
	Dataset   string          `json:"dataset,omitempty"`
	Skipped   []IndexConflict `json:"skipped,omitempty"`
	Reindexed []IndexConflict `json:"reindexed,omitempty"`
}

// IndexConflict is a trace of a push whose index the dataset already held.
type IndexConflict struct {
	Trace    int   `json:"trace"` // its place in the push, from 0
	Index    int64 `json:"index"`
	NewIndex int64 `json:"new_index"` // the index it got (reindexed)
}

// OnConflict values: what becomes of a pushed trace whose "index" the
// dataset already holds.
const (
	ConflictFail   = "fail"   // the push is refused (409), nothing stored
	ConflictSkip   = "skip"   // the trace is not stored
	ConflictAppend = "append" // the trace gets an index after the last one
)

// Push sends traces in the Invariant shape.
func (c *Client) Push(ctx context.Context, req PushRequest) (PushResponse, error) {
	var out PushResponse
	err := c.doJSON(ctx, http.MethodPost, "/api/v1/push/trace", nil, req, &out)
	return out, err
}

// PushTraces stores canonical traces (each a JSON object as `lookout convert
// --to canonical` writes) in the dataset, creating it on first push, in one
// request that the server stores atomically. Unlike the Invariant shape this
// keeps spans, names, indexes and unknown members.
func (c *Client) PushTraces(ctx context.Context, dataset string, traces []json.RawMessage) ([]string, error) {
	out, err := c.PushTracesWith(ctx, dataset, traces, "")
	return out.ID, err
}

// PushTracesWith is PushTraces with onConflict ("" is ConflictFail): what
// becomes of a trace whose index the dataset already holds.
func (c *Client) PushTracesWith(ctx context.Context, dataset string, traces []json.RawMessage, onConflict string) (PushResponse, error) {
	var out PushResponse
	err := c.do(ctx, http.MethodPost, "/api/v1/push/trace", nil, bytes.NewReader(pushBody(dataset, onConflict, traces)), "application/json", &out)
	return out, err
}

func pushBody(dataset, onConflict string, traces []json.RawMessage) []byte {
	n := 96 + len(dataset)
	for _, t := range traces {
		n += len(t) + 1
	}
	b := make([]byte, 0, n)
	b = append(b, '{')
	if dataset != "" {
		d, _ := json.Marshal(dataset)
		b = append(append(append(b, `"dataset":`...), d...), ',')
	}
	if onConflict != "" {
		m, _ := json.Marshal(onConflict)
		b = append(append(append(b, `"on_conflict":`...), m...), ',')
	}
	b = append(b, `"traces":[`...)
	for i, t := range traces {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, t...)
	}
	return append(b, "]}"...)
}

// PusherOptions tune a Pusher.
type PusherOptions struct {
	BatchTraces int // traces per request; default 500
	BatchBytes  int // bytes per request, roughly; default 8 MiB
	// OnBatch is called after each acknowledged batch with its trace count
	// and size in bytes (from the Pusher's sending goroutine).
	OnBatch func(traces int, bytes int64)
	// OnConflict: ConflictFail (or ""), ConflictSkip or ConflictAppend.
	OnConflict string
	// Conflict is called for each trace whose index was taken, with the
	// place AddPlaced gave it, its index and the one it got (-1: skipped).
	Conflict func(place string, index, newIndex int64)
}

// PushError is a batch the server refused because of one of its traces (an
// index the dataset already holds): Place is what AddPlaced gave the trace.
type PushError struct {
	Place string
	Index int64 // the trace's index
	Err   *Error
}

func (e *PushError) Error() string { return e.Place + ": " + e.Err.Error() }

func (e *PushError) Unwrap() error { return e.Err }

// Pusher pushes canonical traces in batches, one request at a time (so
// indexes follow the order of Add) while the next batch is being filled.
// Each acknowledged batch is stored for good; a batch the server finds too
// large (413) is sent in halves; any other failed batch stops the Pusher and
// Add and Close return its error.
type Pusher struct {
	c       *Client
	dataset string
	opt     PusherOptions

	cur     pushBatch
	curSize int
	queue   chan pushBatch
	done    chan struct{}

	mu     sync.Mutex
	err    error
	ids    []string
	closed bool
}

// NewPusher returns a Pusher into dataset. Close it to send the last batch.
func (c *Client) NewPusher(ctx context.Context, dataset string, opt PusherOptions) *Pusher {
	if opt.BatchTraces <= 0 {
		opt.BatchTraces = 500
	}
	if opt.BatchBytes <= 0 {
		opt.BatchBytes = 8 << 20
	}
	p := &Pusher{c: c, dataset: dataset, opt: opt, queue: make(chan pushBatch, 1), done: make(chan struct{})}
	go p.send(ctx)
	return p
}

func (p *Pusher) send(ctx context.Context) {
	defer close(p.done)
	for batch := range p.queue {
		if p.Err() != nil {
			continue // drain
		}
		if err := p.pushSplit(ctx, batch); err != nil {
			p.mu.Lock()
			p.err = err
			p.mu.Unlock()
		}
	}
}

// pushBatch is a batch of traces with the places AddPlaced gave them.
type pushBatch struct {
	traces []json.RawMessage
	places []string
}

func (b pushBatch) slice(i, j int) pushBatch { return pushBatch{b.traces[i:j], b.places[i:j]} }

// pushSplit pushes a batch; when the server finds it too large (413) it
// pushes the two halves instead, down to single traces.
func (p *Pusher) pushSplit(ctx context.Context, batch pushBatch) error {
	res, err := p.c.PushTracesWith(ctx, p.dataset, batch.traces, p.opt.OnConflict)
	var e *Error
	if errors.As(err, &e) && e.Status == http.StatusRequestEntityTooLarge && len(batch.traces) > 1 {
		half := len(batch.traces) / 2
		if err := p.pushSplit(ctx, batch.slice(0, half)); err != nil {
			return err
		}
		return p.pushSplit(ctx, batch.slice(half, len(batch.traces)))
	}
	if errors.As(err, &e) && e.Status == http.StatusConflict {
		// Name the trace by the place it was added from.
		var d struct {
			Trace *int  `json:"trace"`
			Index int64 `json:"index"`
		}
		if json.Unmarshal(e.Details, &d) == nil && d.Trace != nil && *d.Trace >= 0 && *d.Trace < len(batch.places) {
			return &PushError{Place: batch.places[*d.Trace], Index: d.Index, Err: e}
		}
	}
	if err == nil && len(res.ID) != len(batch.traces) {
		err = errors.New("server acknowledged " + strconv.Itoa(len(res.ID)) + " of " + strconv.Itoa(len(batch.traces)) + " traces")
	}
	if err != nil {
		return err
	}
	p.mu.Lock()
	for _, id := range res.ID {
		if id != "" {
			p.ids = append(p.ids, id)
		}
	}
	p.mu.Unlock()
	if p.opt.Conflict != nil {
		for _, c := range res.Skipped {
			p.opt.Conflict(batch.places[c.Trace], c.Index, -1)
		}
		for _, c := range res.Reindexed {
			p.opt.Conflict(batch.places[c.Trace], c.Index, c.NewIndex)
		}
	}
	if p.opt.OnBatch != nil {
		var size int64
		for _, t := range batch.traces {
			size += int64(len(t))
		}
		p.opt.OnBatch(len(batch.traces), size)
	}
	return nil
}

// Err is the error that stopped the Pusher, if any.
func (p *Pusher) Err() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.err
}

// Add queues one canonical trace (the Pusher keeps the slice: do not reuse
// it). It blocks while a full batch waits for the one in flight.
func (p *Pusher) Add(t json.RawMessage) error { return p.AddPlaced(t, "") }

// AddPlaced is Add with the trace's place in the caller's input (such as
// FILE:LINE:COL), which errors and Conflict name it by.
func (p *Pusher) AddPlaced(t json.RawMessage, place string) error {
	if err := p.Err(); err != nil {
		return err
	}
	p.cur.traces = append(p.cur.traces, t)
	p.cur.places = append(p.cur.places, place)
	p.curSize += len(t)
	if len(p.cur.traces) >= p.opt.BatchTraces || p.curSize >= p.opt.BatchBytes {
		p.queue <- p.cur
		p.cur, p.curSize = pushBatch{}, 0
	}
	return nil
}

// Close sends the last batch, waits for every batch and returns the first
// error.
func (p *Pusher) Close() error {
	p.mu.Lock()
	closed := p.closed
	p.closed = true
	p.mu.Unlock()
	if !closed {
		if len(p.cur.traces) > 0 {
			p.queue <- p.cur
			p.cur = pushBatch{}
		}
		close(p.queue)
	}
	<-p.done
	return p.Err()
}

// IDs are the ids of the stored traces, in order (skipped ones left out).
func (p *Pusher) IDs() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.ids...)
}
