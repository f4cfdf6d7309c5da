package gateway

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/lookout-dev/lookout/internal/store"
	"github.com/lookout-dev/lookout/internal/trace"
)

// ConversationStore is what the recorder needs of the store.
type ConversationStore interface {
	FindConversation(ctx context.Context, datasetID string, heads []string) (store.Conversation, error)
	RecordConversation(ctx context.Context, ownerID, datasetID string, step store.ConversationStep) (string, error)
	RecordConversations(ctx context.Context, ownerID, datasetID string, steps []store.ConversationStep) ([]string, []error, error)
}

// Recorder writes the calls of conversations to the store off the request
// path, in the order they were made.
//
// A call is registered in memory (Lookup, then Record) before its answer
// goes back to the agent, so the agent's next call — which may come before
// the write commits — finds its conversation in memory; a conversation not
// in memory is looked up in the store by its heads (after a restart, or
// when memory let it go). One writer goroutine commits the calls in order,
// so a conversation's calls are appended in the order they were made.
//
// Shared says whether other servers write conversations to the store too
// (replicas on one PostgreSQL database), so that the agent's next call may
// reach another server: each call is then looked up in the store first
// (another server may have extended the conversation since this one saw
// it), and Record returns only once the call is committed, so that any
// server finds it. When it turns false again, what memory holds is
// forgotten (others may have moved those conversations on).
type Recorder struct {
	st  ConversationStore
	log *slog.Logger
	// Changed is told of each trace a commit changed (live updates).
	Changed func(traceID string)
	// Shared: see above (nil: never); set before the first call.
	Shared func() bool

	mu        sync.Mutex
	wasShared bool
	byHead    map[convKey]*Conversation
	order     []convKey // registration order, for eviction
	queue     chan *call
	sending   sync.WaitGroup // Record calls between registering and queueing
	started   bool
	closed    bool
	done      chan struct{}
}

// maxConversations bounds the conversations kept in memory; older ones are
// found again in the store.
const maxConversations = 20000

type convKey struct{ dataset, head string }

// Conversation is one agent run as the gateway sees it.
type Conversation struct {
	dataset, owner string
	// queued is the event count after the last call registered; head is
	// the head of those events.
	queued int
	head   string
	// Set by the writer only.
	traceID string
	stored  int // events committed
}

// call is one registered call waiting to be written.
type call struct {
	conv *Conversation
	// The conversation's events after the call: prior, those it held
	// before the call (shared with the caller, not changed), then own, the
	// call's.
	prior, own  []trace.Event
	spans       []trace.Span
	annotations []store.Annotation
	head        string
	committed   chan struct{} // Shared: closed when the call's batch is written
}

// NewRecorder returns a recorder over st.
func NewRecorder(st ConversationStore, log *slog.Logger) *Recorder {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Recorder{st: st, log: log, byHead: map[convKey]*Conversation{}, queue: make(chan *call, 4096), done: make(chan struct{})}
}

// Lookup finds the conversation whose events so far are a prefix of a
// call's events (heads = Heads(events)), and how many events it holds; a
// call that continues no conversation starts one (0 events).
func (r *Recorder) Lookup(ctx context.Context, ownerID, datasetID string, heads []string) (*Conversation, int, error) {
	shared := r.shared()
	r.mu.Lock()
	if shared {
		r.wasShared = true
	} else if r.wasShared {
		r.wasShared = false
		clear(r.byHead)
		r.order = nil
	}
	r.mu.Unlock()
	if !shared {
		r.mu.Lock()
		for k := len(heads); k > 0; k-- {
			if c := r.byHead[convKey{datasetID, heads[k-1]}]; c != nil && c.queued == k {
				r.mu.Unlock()
				return c, k, nil
			}
		}
		r.mu.Unlock()
	}
	if len(heads) > 0 {
		found, err := r.find(ctx, datasetID, heads)
		switch {
		case err == nil:
			c := &Conversation{dataset: datasetID, owner: ownerID, queued: found.Events, head: found.Head, traceID: found.TraceID, stored: found.Events}
			r.mu.Lock()
			// A call registered meanwhile knows better.
			if mem := r.byHead[convKey{datasetID, found.Head}]; mem != nil {
				c = mem
			} else {
				r.register(c)
			}
			n := c.queued
			r.mu.Unlock()
			return c, n, nil
		case !errors.Is(err, store.ErrNotFound):
			return nil, 0, err
		}
	}
	return &Conversation{dataset: datasetID, owner: ownerID}, 0, nil
}

// nearHeads is how many of a call's longest prefixes are looked up first:
// a conversation's next call usually adds a message or a few (a tool's
// output, the user's next question), and probing every prefix of a long
// conversation's call took milliseconds (PostgreSQL, 500 events: 6 ms).
const nearHeads = 8

// find looks up the stored conversation that the longest of heads ends:
// the nearest prefixes first, then the rest of the prefixes the store
// looks up at most (the longest, which a conversation's next call
// matches).
func (r *Recorder) find(ctx context.Context, datasetID string, heads []string) (store.Conversation, error) {
	heads = heads[max(0, len(heads)-store.MaxConversationHeads):]
	near := max(0, len(heads)-nearHeads)
	found, err := r.st.FindConversation(ctx, datasetID, heads[near:])
	if near == 0 || !errors.Is(err, store.ErrNotFound) {
		return found, err
	}
	return r.st.FindConversation(ctx, datasetID, heads[:near])
}

func (r *Recorder) register(c *Conversation) {
	k := convKey{c.dataset, c.head}
	if _, ok := r.byHead[k]; !ok {
		r.order = append(r.order, k)
	}
	r.byHead[k] = c
	for len(r.byHead) > maxConversations && len(r.order) > 0 {
		old := r.order[0]
		r.order = r.order[1:]
		if oc := r.byHead[old]; oc != nil && oc.head == old.head {
			delete(r.byHead, old)
		}
	}
	if len(r.order) > 2*maxConversations { // keys of moved heads pile up
		live := r.order[:0]
		for _, k := range r.order {
			if oc := r.byHead[k]; oc != nil && oc.head == k.head {
				live = append(live, k)
			}
		}
		r.order = live
	}
}

// Record registers a call of conversation c: prior are the events c held
// before it (which Record and the writer only read, so they may be shared),
// own the events the call adds, head the head of all. The call is written
// in the background; Record waits only when the queue is full (until ctx
// ends: then the call is not recorded and the error says so), and, when
// Shared, until the call is committed (or ctx ends; the write goes on).
// Call it before answering the agent.
func (r *Recorder) Record(ctx context.Context, c *Conversation, prior, own []trace.Event, spans []trace.Span, annotations []store.Annotation, head string) error {
	from := len(prior)
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return errors.New("the recorder is closed")
	}
	if !r.started {
		r.started = true
		go r.write()
	}
	if c.queued != from {
		// Another call of the conversation came first (calls in parallel
		// from one prefix): this one branches into a trace of its own.
		c = &Conversation{dataset: c.dataset, owner: c.owner}
		own = append(append(make([]trace.Event, 0, len(prior)+len(own)), prior...), own...)
		prior = nil
	}
	if c.head != "" {
		if k := (convKey{c.dataset, c.head}); r.byHead[k] == c {
			delete(r.byHead, k)
		}
	}
	c.queued, c.head = len(prior)+len(own), head
	if head != "" {
		r.register(c)
	}
	r.sending.Add(1)
	r.mu.Unlock()
	defer r.sending.Done()
	cl := &call{conv: c, prior: prior, own: own, spans: spans, annotations: annotations, head: head}
	if r.shared() {
		cl.committed = make(chan struct{})
	}
	select {
	case r.queue <- cl:
	case <-ctx.Done():
		return ctx.Err()
	}
	if cl.committed != nil {
		select {
		case <-cl.committed:
		case <-ctx.Done():
		}
	}
	return nil
}

func (r *Recorder) shared() bool { return r.Shared != nil && r.Shared() }

// Close writes what is queued (until ctx ends) and stops the writer.
func (r *Recorder) Close(ctx context.Context) error {
	r.mu.Lock()
	started, closed := r.started, r.closed
	r.closed = true
	r.mu.Unlock()
	if !started || closed {
		return nil
	}
	r.sending.Wait()
	close(r.queue)
	select {
	case <-r.done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// maxBatch bounds the calls one transaction writes.
const maxBatch = 256

// write commits the queued calls, as many as are waiting in one
// transaction per dataset: a commit waits for the disk (a few milliseconds
// here), so one per call would cap the gateway at a few hundred calls a
// second.
func (r *Recorder) write() {
	defer close(r.done)
	for cl := range r.queue {
		batch := []*call{cl}
	drain:
		for len(batch) < maxBatch {
			select {
			case next, ok := <-r.queue:
				if !ok {
					break drain
				}
				batch = append(batch, next)
			default:
				break drain
			}
		}
		r.commit(batch)
	}
}

// group is the calls of one conversation in a batch, written as one step.
type group struct {
	conv  *Conversation
	calls []*call
}

// commit writes a batch of calls: per dataset one transaction, per
// conversation one step (its calls' events appended at once).
func (r *Recorder) commit(batch []*call) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	defer func() {
		for _, cl := range batch {
			if cl.committed != nil {
				close(cl.committed)
			}
		}
	}()
	type dsKey struct{ owner, dataset string }
	var order []dsKey
	byDS := map[dsKey][]*group{}
	byConv := map[*Conversation]*group{}
	for _, cl := range batch {
		if g := byConv[cl.conv]; g != nil {
			g.calls = append(g.calls, cl)
			continue
		}
		g := &group{conv: cl.conv, calls: []*call{cl}}
		byConv[cl.conv] = g
		k := dsKey{cl.conv.owner, cl.conv.dataset}
		if byDS[k] == nil {
			order = append(order, k)
		}
		byDS[k] = append(byDS[k], g)
	}
	for _, k := range order {
		groups := byDS[k]
		steps := make([]store.ConversationStep, len(groups))
		for i, g := range groups {
			steps[i] = g.step()
		}
		ids, errs, err := r.st.RecordConversations(ctx, k.owner, k.dataset, steps)
		if err != nil {
			r.log.Error("gateway: recording calls failed", "dataset", k.dataset, "calls", len(groups), "err", err)
			for _, g := range groups {
				g.conv.traceID = "" // the next call starts a trace with every event
			}
			continue
		}
		for i, g := range groups {
			if errs[i] == nil {
				g.done(ids[i])
				r.changed(ids[i])
				continue
			}
			// The trace moved on or went: the calls start a trace of their own.
			g.conv.traceID = ""
			step := g.step()
			id, err := r.st.RecordConversation(ctx, k.owner, k.dataset, step)
			if err != nil {
				r.log.Error("gateway: recording a call failed", "dataset", k.dataset, "err", err)
				continue
			}
			g.done(id)
			r.changed(id)
		}
	}
}

// step is the group's calls as one step: appended to the conversation's
// trace when it holds what the first call found, else a new trace with
// every event of the last call.
func (g *group) step() store.ConversationStep {
	c, first, last := g.conv, g.calls[0], g.calls[len(g.calls)-1]
	// Each call's own events, not the last call's copy of them: a re-sent
	// message has lost what the call that made it recorded (its span).
	added := make([]trace.Event, 0, last.events()-len(first.prior))
	var spans []trace.Span
	var anns []store.Annotation
	for _, cl := range g.calls {
		added = append(added, cl.own...)
		spans = append(spans, cl.spans...)
		anns = append(anns, cl.annotations...)
	}
	step := store.ConversationStep{Head: last.head, Annotations: anns}
	if c.traceID != "" && c.stored == len(first.prior) {
		step.TraceID, step.ExpectEvents = c.traceID, c.stored
		step.Events, step.Spans = added, spans
		return step
	}
	all := append(append(make([]trace.Event, 0, len(first.prior)+len(added)), first.prior...), added...)
	step.Trace = &trace.Trace{Name: traceName(all), Metadata: []byte(`{"source":"gateway"}`), Events: all, Spans: spans}
	return step
}

// done notes that the group's calls are in trace id.
func (g *group) done(id string) {
	g.conv.traceID, g.conv.stored = id, g.calls[len(g.calls)-1].events()
}

// events is the number of the conversation's events after the call.
func (cl *call) events() int { return len(cl.prior) + len(cl.own) }

func (r *Recorder) changed(id string) {
	if r.Changed != nil {
		r.Changed(id)
	}
}

// traceName is the first user message, shortened, as the trace's name.
func traceName(events []trace.Event) string {
	for i := range events {
		if events[i].Role != "user" {
			continue
		}
		s := []rune(events[i].Content.String())
		if len(s) > 80 {
			s = append(s[:79], '…')
		}
		return string(s)
	}
	return "gateway conversation"
}
