package policy

// The detector model: an OpenAI-compatible chat completions endpoint that
// answers the model-backed detectors (modeldetectors.go). It is shared by
// every policy and analysis of a process: answers are cached by (detector,
// model, request hash) in a bounded LRU, identical requests in flight are
// sent once, and a semaphore bounds the requests in flight. Each request is
// bounded by the context of the analysis that asks (its deadline).

import (
	"container/list"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"net/url"
	"sync"

	"github.com/lookout-dev/lookout/internal/chat"
)

// DetectorModelConfig configures a DetectorModel.
type DetectorModelConfig struct {
	// Endpoint is the OpenAI-compatible endpoint (base URL such as
	// http://127.0.0.1:11434/v1), its key and the model to ask. URL and
	// Model are required.
	Endpoint chat.Endpoint
	// Concurrency bounds the requests in flight at once, over all
	// analyses; 0 means 4.
	Concurrency int
	// CacheEntries and CacheBytes bound the answers kept (the least
	// recently used go first); 0 means 4096 answers and 16 MiB.
	CacheEntries int
	CacheBytes   int
}

// DetectorModel answers model-backed detectors through an endpoint. It is
// safe for concurrent use; make one per process and give it to every
// policy (Policy.SetDetectorModel).
type DetectorModel struct {
	ep  chat.Endpoint
	sem chan struct{}

	mu      sync.Mutex
	cache   lru
	flights map[[32]byte]*flight
}

// flight is a request in progress that later askers of the same request
// wait for instead of sending it again.
type flight struct {
	done chan struct{}
	v    any
	err  error
}

// NewDetectorModel checks the configuration and returns the model.
func NewDetectorModel(cfg DetectorModelConfig) (*DetectorModel, error) {
	u, err := url.Parse(cfg.Endpoint.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("detector endpoint %q: want an http:// or https:// base URL such as http://127.0.0.1:11434/v1", cfg.Endpoint.URL)
	}
	if cfg.Endpoint.Model == "" {
		return nil, errors.New("detector endpoint: a model is required (--detector-model)")
	}
	if cfg.Concurrency <= 0 {
		cfg.Concurrency = 4
	}
	if cfg.CacheEntries <= 0 {
		cfg.CacheEntries = 4096
	}
	if cfg.CacheBytes <= 0 {
		cfg.CacheBytes = 16 << 20
	}
	return &DetectorModel{
		ep:      cfg.Endpoint,
		sem:     make(chan struct{}, cfg.Concurrency),
		cache:   lru{maxEntries: cfg.CacheEntries, maxBytes: cfg.CacheBytes, items: map[[32]byte]*list.Element{}},
		flights: map[[32]byte]*flight{},
	}, nil
}

// String names the endpoint and model, for messages.
func (m *DetectorModel) String() string { return m.ep.String() }

// modelAsk is one request of a detector, and how to read its answer.
type modelAsk struct {
	detector string
	req      chat.Request
	// parse reads the answer's content; an error means a malformed answer
	// (not cached). The value is cached and shared: it must not be changed.
	parse func(content string) (any, error)
}

// key hashes what determines the answer: detector, model and request.
func (a *modelAsk) key(model string) [32]byte {
	h := sha256.New()
	field := func(s string) {
		var n [8]byte
		binary.LittleEndian.PutUint64(n[:], uint64(len(s)))
		h.Write(n[:])
		h.Write([]byte(s))
	}
	field(a.detector)
	field(model)
	for _, msg := range a.req.Messages {
		field(msg.Role)
		field(msg.Content)
	}
	var n [8]byte
	binary.LittleEndian.PutUint64(n[:], math.Float64bits(a.req.Temperature))
	h.Write(n[:])
	binary.LittleEndian.PutUint64(n[:], uint64(a.req.MaxTokens))
	h.Write(n[:])
	if a.req.JSON {
		h.Write([]byte{1})
	}
	var k [32]byte
	h.Sum(k[:0])
	return k
}

// ask answers one request: from the cache, by waiting for the same request
// in flight, or by sending it.
func (m *DetectorModel) ask(ctx context.Context, a modelAsk) (any, error) {
	key := a.key(m.ep.Model)
	for {
		m.mu.Lock()
		if v, ok := m.cache.get(key); ok {
			m.mu.Unlock()
			return v, nil
		}
		if f, ok := m.flights[key]; ok {
			m.mu.Unlock()
			select {
			case <-f.done:
			case <-ctx.Done():
				return nil, m.wrap(ctxErr(ctx))
			}
			if f.err != nil && isContextErr(f.err) && ctx.Err() == nil {
				continue // the other asker's deadline passed, not ours: ask again
			}
			return f.v, f.err
		}
		f := &flight{done: make(chan struct{})}
		m.flights[key] = f
		m.mu.Unlock()
		var size int
		f.v, size, f.err = m.send(ctx, a)
		m.mu.Lock()
		delete(m.flights, key)
		if f.err == nil {
			m.cache.add(key, f.v, size)
		}
		m.mu.Unlock()
		close(f.done)
		return f.v, f.err
	}
}

// send sends a request once a slot is free and parses its answer.
func (m *DetectorModel) send(ctx context.Context, a modelAsk) (any, int, error) {
	select {
	case m.sem <- struct{}{}:
	case <-ctx.Done():
		return nil, 0, m.wrap(ctxErr(ctx))
	}
	content, err := m.ep.Complete(ctx, a.req)
	<-m.sem
	if err != nil {
		return nil, 0, m.wrap(err)
	}
	v, err := a.parse(content)
	if err != nil {
		return nil, 0, m.wrap(fmt.Errorf("%w: %v; the answer was: %s", chat.ErrMalformed, err, clipText(content, 200)))
	}
	return v, len(content) + 64, nil
}

func (m *DetectorModel) wrap(err error) error {
	return fmt.Errorf("model endpoint %s: %w", m.ep.String(), err)
}

// askAll answers requests concurrently (at most Concurrency in flight
// over the whole process). The first failure stops the others and is the
// error returned.
func (m *DetectorModel) askAll(ctx context.Context, asks []modelAsk) ([]any, error) {
	out := make([]any, len(asks))
	if len(asks) == 1 {
		v, err := m.ask(ctx, asks[0])
		out[0] = v
		return out, err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		first error
		next  int
	)
	// as many workers as requests may be in flight, each taking the next
	// request until none is left or one failed
	for range min(len(asks), cap(m.sem)) {
		wg.Go(func() {
			for {
				mu.Lock()
				i := next
				next++
				stop := first != nil
				mu.Unlock()
				if stop || i >= len(asks) {
					return
				}
				v, err := m.ask(ctx, asks[i])
				if err != nil {
					mu.Lock()
					if first == nil {
						first = err
						cancel()
					}
					mu.Unlock()
					return
				}
				out[i] = v
			}
		})
	}
	wg.Wait()
	return out, first
}

func ctxErr(ctx context.Context) error {
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return fmt.Errorf("no answer before the check's deadline: %w", ctx.Err())
	}
	return fmt.Errorf("check stopped: %w", ctx.Err())
}

func isContextErr(err error) bool {
	return errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled)
}

// clipText shortens s to at most n bytes, at a character boundary.
func clipText(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && s[n]&0xC0 == 0x80 {
		n--
	}
	return s[:n] + "…"
}

// lru is a cache of parsed answers bounded by entries and bytes. Callers
// hold DetectorModel.mu.
type lru struct {
	maxEntries, maxBytes, bytes int
	order                       list.List // front: most recently used
	items                       map[[32]byte]*list.Element
}

type lruEntry struct {
	key  [32]byte
	v    any
	size int
}

func (c *lru) get(k [32]byte) (any, bool) {
	e, ok := c.items[k]
	if !ok {
		return nil, false
	}
	c.order.MoveToFront(e)
	return e.Value.(*lruEntry).v, true
}

func (c *lru) add(k [32]byte, v any, size int) {
	if size > c.maxBytes {
		return
	}
	if e, ok := c.items[k]; ok {
		c.bytes -= e.Value.(*lruEntry).size
		c.order.Remove(e)
	}
	c.items[k] = c.order.PushFront(&lruEntry{key: k, v: v, size: size})
	c.bytes += size
	for c.order.Len() > c.maxEntries || c.bytes > c.maxBytes {
		e := c.order.Back()
		le := e.Value.(*lruEntry)
		c.order.Remove(e)
		delete(c.items, le.key)
		c.bytes -= le.size
	}
}
