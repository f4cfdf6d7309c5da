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

// PushResponse is the answer to a push: the new trace ids in order.
type PushResponse struct {
	ID      []string `json:"id"`
	Dataset string   `json:"dataset,omitempty"`
}

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
	var out PushResponse
	err := c.do(ctx, http.MethodPost, "/api/v1/push/trace", nil, bytes.NewReader(pushBody(dataset, traces)), "application/json", &out)
	return out.ID, err
}

func pushBody(dataset string, traces []json.RawMessage) []byte {
	n := 64 + len(dataset)
	for _, t := range traces {
		n += len(t) + 1
	}
	b := make([]byte, 0, n)
	b = append(b, '{')
	if dataset != "" {
		d, _ := json.Marshal(dataset)
		b = append(append(append(b, `"dataset":`...), d...), ',')
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
}

// Pusher pushes canonical traces in batches, one request at a time (so
// indexes follow the order of Add) while the next batch is being filled.
// Each acknowledged batch is stored for good; a batch the server finds too
// large (413) is sent in halves; any other failed batch stops the Pusher and
// Add and Close return its error.
type Pusher struct {
	c       *Client
	dataset string
	opt     PusherOptions

	cur     []json.RawMessage
	curSize int
	queue   chan []json.RawMessage
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
	p := &Pusher{c: c, dataset: dataset, opt: opt, queue: make(chan []json.RawMessage, 1), done: make(chan struct{})}
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

// pushSplit pushes a batch; when the server finds it too large (413) it
// pushes the two halves instead, down to single traces.
func (p *Pusher) pushSplit(ctx context.Context, batch []json.RawMessage) error {
	ids, err := p.c.PushTraces(ctx, p.dataset, batch)
	var e *Error
	if errors.As(err, &e) && e.Status == http.StatusRequestEntityTooLarge && len(batch) > 1 {
		half := len(batch) / 2
		if err := p.pushSplit(ctx, batch[:half]); err != nil {
			return err
		}
		return p.pushSplit(ctx, batch[half:])
	}
	if err == nil && len(ids) != len(batch) {
		err = errors.New("server acknowledged " + strconv.Itoa(len(ids)) + " of " + strconv.Itoa(len(batch)) + " traces")
	}
	if err != nil {
		return err
	}
	p.mu.Lock()
	p.ids = append(p.ids, ids...)
	p.mu.Unlock()
	if p.opt.OnBatch != nil {
		var size int64
		for _, t := range batch {
			size += int64(len(t))
		}
		p.opt.OnBatch(len(batch), size)
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
func (p *Pusher) Add(t json.RawMessage) error {
	if err := p.Err(); err != nil {
		return err
	}
	p.cur = append(p.cur, t)
	p.curSize += len(t)
	if len(p.cur) >= p.opt.BatchTraces || p.curSize >= p.opt.BatchBytes {
		p.queue <- p.cur
		p.cur, p.curSize = nil, 0
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
		if len(p.cur) > 0 {
			p.queue <- p.cur
			p.cur = nil
		}
		close(p.queue)
	}
	<-p.done
	return p.Err()
}

// IDs are the ids of the acknowledged traces, in order.
func (p *Pusher) IDs() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.ids...)
}
