// Package indexer keeps a store's search index apart from the writes of
// traces. A trace's write commits the trace and queues its id (a row of
// search_queue, in the same transaction); the indexer reads the queue in
// large batches on a connection of its own, computes the traces' index
// documents from their stored content, writes them and removes the queue
// rows, so index work runs beside the writer instead of inside it. The
// queue is the durable watermark: on start, and after a crash, the indexer
// goes on from what is left in it (a batch written but not removed is
// written again: documents replace what a trace had).
//
// A search stays exact: WaitFor, called before it, returns once every
// queue row of its dataset that existed when it was called is indexed,
// indexing them itself rather than waiting for the background's turn, so
// a search sees every trace acknowledged before it began, once, and does
// not wait for the work of other datasets.
package indexer

import (
	"context"
	"log/slog"
	"maps"
	"os"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lookout-dev/lookout/internal/search"
	"github.com/lookout-dev/lookout/internal/store"
	"github.com/lookout-dev/lookout/internal/trace"
)

// Entry is one row of the queue: a trace written (inserted, changed or
// deleted) at seq.
type Entry struct {
	Seq     int64
	TraceID string
}

// Doc is the new index document of a trace; a nil Doc removes the
// trace's document (the trace is gone).
type Doc struct {
	TraceID string
	Doc     *search.Doc
}

// Backend is a store's side of the indexer.
type Backend interface {
	// Begin starts a step that holds the index's write lock, so that
	// indexers (of several processes on one database) take turns, and
	// each reads traces at least as new as the one before it wrote.
	Begin(ctx context.Context) (Step, error)
	// Bounds reads the queue, or the rows of one dataset (datasetID not
	// ""): the seq of the oldest and newest rows (0 when none) and, when
	// count is set, their number and the time the oldest was queued.
	Bounds(ctx context.Context, datasetID string, count bool) (Bounds, error)
}

// Step is one batch of the indexer, in the index's write transaction.
type Step interface {
	// Queued returns up to n of the oldest queue rows, of one dataset
	// when datasetID is not "".
	Queued(ctx context.Context, n int, datasetID string) ([]Entry, error)
	// Traces calls fn with each stored trace of ids (those gone are not
	// given); an error of one trace's content goes to fn as bad.
	Traces(ctx context.Context, ids []string, fn func(id string, t *trace.Trace, bad error)) error
	// Write replaces the documents of the traces.
	Write(ctx context.Context, docs []Doc) error
	// Commit commits the documents, then removes the queue rows done.
	Commit(ctx context.Context, done []Entry) error
	// Rollback ends a step that failed.
	Rollback()
}

// Prefetcher is a Backend whose queue and traces may be read outside a
// step (the index's lock), and whose steps say the index's Version: the
// background loop then reads and computes the next batch while the one
// before is written, on the other core, instead of after it.
type Prefetcher interface {
	Backend
	reader
}

// Versioned is a Step that reads a number that changes whenever another
// connection (another process) committed to the index since the last read
// of this connection's (SQLite's data_version).
type Versioned interface {
	Version(ctx context.Context) (int64, error)
}

// Bounds describes the queue.
type Bounds struct {
	First, Last int64
	Queued      int64
	Oldest      time.Time
}

// BatchSize is how many queue rows a step takes at most. A larger batch
// writes each repeated text once for more traces and flushes the full-text
// index less often; a search that waits sees progress at this grain.
const BatchSize = 256

// Indexer runs a Backend's steps in the background.
type Indexer struct {
	b      Backend
	name   string
	kick   chan struct{}
	cancel context.CancelFunc
	done   chan struct{}

	mu      sync.Mutex
	rate    float64 // traces a second, while busy (moving average)
	lastErr error

	doneRows *doneRows
	others   others // traces other steps of this process indexed since the loop's step began

	// The loop's own: traces it indexed lately, the batch it read while
	// the step before was written, and how many such batches it wrote.
	held       *recentTraces
	next       *batch
	prefetched atomic.Int64

	// Searches waiting for the loop (WaitFor): their datasets, first come
	// first served ("" for all), and a channel closed after each of the
	// loop's steps.
	waitMu  sync.Mutex
	waiting []string
	turn    int // the waiting dataset served next
	stepped chan struct{}
	called  chan struct{} // a search came to wait (unlike kick, which writes send)
	running atomic.Bool   // the loop runs
}

// doneRows are the queue rows whose documents a step of this process has
// written (or is about to commit) but whose removal from the queue is not
// yet done. In SQLite the two are commits to two files: a step that takes
// the index's lock between them would read those rows still queued and
// index them again (a search's WaitFor beside the loop did so for half of
// all batches). Another process may still do that; it costs time, not
// exactness.
type doneRows struct {
	mu   sync.Mutex
	seqs map[int64]struct{}
}

func (d *doneRows) len() int {
	if d == nil {
		return 0
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	return len(d.seqs)
}

// without returns entries less the done ones, at most n.
func (d *doneRows) without(entries []Entry, n int) []Entry {
	if d != nil {
		d.mu.Lock()
		entries = slices.DeleteFunc(entries, func(e Entry) bool { _, ok := d.seqs[e.Seq]; return ok })
		d.mu.Unlock()
	}
	return entries[:min(len(entries), n)]
}

func (d *doneRows) add(entries []Entry, done bool) {
	if d == nil {
		return
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, e := range entries {
		if done {
			d.seqs[e.Seq] = struct{}{}
		} else {
			delete(d.seqs, e.Seq)
		}
	}
}

// OffEnv names the environment variable that, set to "off", keeps this
// process's background indexer from running: what it writes stays queued
// for another process or a later start (a bulk load indexed afterwards,
// the bench's baseline without an index). Its searches still index their
// own dataset's queued traces first. "elsewhere" does the same without a
// warning: another server on the database runs the loop (lookout serve
// --no-background).
const OffEnv = "LOOKOUT_INDEXER"

// Start starts the indexer's loop; Stop ends it.
func Start(b Backend, name string) *Indexer {
	ctx, cancel := context.WithCancel(context.Background())
	ix := &Indexer{b: b, name: name, kick: make(chan struct{}, 1), cancel: cancel, done: make(chan struct{}),
		doneRows: &doneRows{seqs: map[int64]struct{}{}}, held: &recentTraces{at: map[string]time.Time{}}}
	if v := os.Getenv(OffEnv); v == "off" || v == "elsewhere" {
		if v == "off" {
			slog.Warn(name + ": the search indexer is off (" + OffEnv + "=off): traces stay queued, and searches index their own dataset first")
		}
		close(ix.done)
		return ix
	}
	ix.stepped, ix.called = make(chan struct{}), make(chan struct{}, 1)
	ix.running.Store(true)
	go ix.loop(ctx)
	return ix
}

// Stop stops the loop at the end of its current step and waits for it.
// What is still queued stays queued for the next start.
func (ix *Indexer) Stop() {
	ix.cancel()
	<-ix.done
}

// Kick tells the indexer that the queue has grown.
func (ix *Indexer) Kick() {
	select {
	case ix.kick <- struct{}{}:
	default:
	}
}

// poll is how often an idle indexer looks at the queue without being
// kicked: another process (a CLI beside `lookout serve`) may write.
const poll = time.Second

// settle is the least time from a step that found work to the next: a
// trace written again and again (a gateway conversation, a call every
// millisecond) is then indexed once for the writes of that time, not once
// for each, while a write after a quiet spell is indexed at once. Searches
// do not wait for it: they index their dataset's queue themselves.
const settle = 100 * time.Millisecond

func (ix *Indexer) loop(ctx context.Context) {
	defer close(ix.done)
	defer func() {
		ix.running.Store(false)
		ix.broadcast()
	}()
	backoff := time.Duration(0)
	for ctx.Err() == nil {
		start := time.Now()
		n, wake, err := ix.loopStep(ctx)
		ix.broadcast()
		ix.mu.Lock()
		// The rate is that of full batches only: a partial one means the
		// indexer keeps up, and its fixed cost a step would make the rate
		// look low (and the catch-up time long) when there is no backlog.
		if n == BatchSize {
			r := float64(n) / max(time.Since(start).Seconds(), 1e-6)
			if ix.rate == 0 {
				ix.rate = r
			} else {
				ix.rate = 0.8*ix.rate + 0.2*r
			}
		}
		if err != nil && ctx.Err() == nil {
			if ix.lastErr == nil || ix.lastErr.Error() != err.Error() {
				slog.Error(ix.name+": search indexer", "err", err)
			}
		}
		ix.lastErr = err
		ix.mu.Unlock()
		var wait time.Duration
		switch {
		case err != nil:
			backoff = min(max(2*backoff, 100*time.Millisecond), 5*time.Second)
			wait = backoff
		case n == BatchSize || n > 0 && ix.searchWaits():
			backoff = 0
			continue
		case n == 0 && !wake.IsZero():
			// Only traces indexed lately are queued: nothing to do before
			// the first of them may be indexed again, whatever is written,
			// unless a search comes to wait.
			if !ix.pause(ctx, time.Until(wake)) && ctx.Err() != nil {
				return
			}
			continue
		default:
			backoff = 0
			wait = poll
		}
		if n > 0 && !ix.pause(ctx, settle-time.Since(start)) {
			continue
		}
		if err == nil && ix.searchWaits() {
			if n == 0 { // its rows are being written elsewhere: not a spin
				ix.pause(ctx, 10*time.Millisecond)
			}
			continue
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
		case <-ix.kick:
		case <-ix.called:
		case <-t.C:
		}
		t.Stop()
	}
}

// pause waits d, or until ctx ends or a search comes to wait: then it
// returns false. Writes do not cut it short (they kick the loop's idle
// wait only): the pauses are what make a trace written again and again
// indexed once for many writes.
func (ix *Indexer) pause(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return true
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-ix.called:
		return false
	case <-t.C:
		return true
	}
}

// broadcast tells the searches waiting that the loop took a step.
func (ix *Indexer) broadcast() {
	ix.waitMu.Lock()
	defer ix.waitMu.Unlock()
	if ix.stepped != nil {
		close(ix.stepped)
		ix.stepped = make(chan struct{})
	}
}

// searchWaits reports whether a search waits for the loop.
func (ix *Indexer) searchWaits() bool {
	ix.waitMu.Lock()
	defer ix.waitMu.Unlock()
	return len(ix.waiting) > 0
}

// urgent is the dataset the loop is to index now ("" for all), and
// whether a search waits for it: the waiting datasets take turns, a step
// each, so that a search of a small dataset does not wait for a large one.
func (ix *Indexer) urgent() (string, bool) {
	ix.waitMu.Lock()
	defer ix.waitMu.Unlock()
	if len(ix.waiting) == 0 {
		return "", false
	}
	ix.turn++
	return ix.waiting[ix.turn%len(ix.waiting)], true
}

// LoopStep runs one step of the background loop, which must be off
// (OffEnv): for tests.
func (ix *Indexer) LoopStep(ctx context.Context) (int, error) {
	n, _, err := ix.loopStep(ctx)
	return n, err
}

// Prefetched is how many batches the loop wrote as it had read them while
// the step before was written.
func (ix *Indexer) Prefetched() int64 { return ix.prefetched.Load() }

// loopStep is the background loop's step. With a Prefetcher it writes the
// batch ix.next holds, if that still holds, and leaves in ix.next the
// batch after it, read while this one was written.
func (ix *Indexer) loopStep(ctx context.Context) (int, time.Time, error) {
	pf, _ := ix.b.(Prefetcher)
	held := ix.held
	ahead := ix.next
	ix.next = nil
	st, err := ix.b.Begin(ctx)
	if err != nil {
		return 0, time.Time{}, err
	}
	var version int64
	vs, versioned := st.(Versioned)
	if versioned {
		if version, err = vs.Version(ctx); err != nil {
			st.Rollback()
			return 0, time.Time{}, err
		}
	}
	// What other steps of this process indexed since the step before
	// began: nothing else writes while this step holds the lock.
	otherIDs, over := ix.others.take()
	b := ahead
	if b != nil && (!versioned || b.version != version || over) {
		b = nil // another process wrote the index meanwhile: read again
	}
	if b != nil {
		b.without(otherIDs)
		ix.prefetched.Add(1)
	}
	dataset, urgent := ix.urgent()
	if urgent {
		held = nil // a search waits: traces indexed lately are indexed again now
	}
	if b == nil {
		if b, err = prepare(ctx, st, dataset, ix.doneRows, held, nil); err != nil || len(b.entries) == 0 {
			st.Rollback()
			return 0, b.wake, err
		}
	}
	var prefetched chan *batch
	if pf != nil && versioned && len(b.entries) == BatchSize {
		prefetched = make(chan *batch, 1)
		go func() {
			nb, err := prepare(ctx, pf, dataset, ix.doneRows, held, b)
			if err != nil || len(nb.entries) == 0 {
				nb = nil
			} else {
				nb.version = version
			}
			prefetched <- nb
		}()
	}
	n, err := b.apply(ctx, st, ix.doneRows, ix.held, nil)
	if err != nil {
		st.Rollback()
	}
	if prefetched != nil {
		if nb := <-prefetched; err == nil {
			ix.next = nb
		}
	}
	return n, b.wake, err
}

// runStep runs a step; with held, it leaves the rows of the traces held
// indexed lately in the queue, and when they are all there is, wake is
// when the first may be indexed again.
func runStep(ctx context.Context, b Backend, datasetID string, done *doneRows, held *recentTraces, o *others) (n int, wake time.Time, err error) {
	st, err := b.Begin(ctx)
	if err != nil {
		return 0, wake, err
	}
	n, wake, err = stepIn(ctx, st, datasetID, done, held, o)
	if err != nil {
		st.Rollback()
		return 0, wake, err
	}
	return n, wake, nil
}

// recentTraces are the traces the background loop indexed in the last
// reindexAfter, with when. A trace written again within that time (a
// gateway conversation's calls, spans of one trace in several batches)
// waits in the queue for the rest of it: indexing a long trace costs what
// the whole trace holds, so a conversation of a call every millisecond
// would otherwise take a core. Searches do not wait: WaitFor indexes
// their dataset's queue, held traces included.
type recentTraces struct {
	mu sync.Mutex // the loop's step and its prefetch use it at once
	at map[string]time.Time
}

const reindexAfter = time.Second

// hold drops from entries those of traces indexed lately, and says when
// the first of them may be indexed again (zero when none is held).
func (r *recentTraces) hold(entries []Entry, now time.Time) ([]Entry, time.Time) {
	if r == nil {
		return entries, time.Time{}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	maps.DeleteFunc(r.at, func(_ string, t time.Time) bool { return now.Sub(t) >= reindexAfter })
	var wake time.Time
	kept := entries[:0:0]
	for _, e := range entries {
		if t, ok := r.at[e.TraceID]; ok {
			if w := t.Add(reindexAfter); wake.IsZero() || w.Before(wake) {
				wake = w
			}
			continue
		}
		kept = append(kept, e)
	}
	return kept, wake
}

func (r *recentTraces) indexed(ids []string, now time.Time) {
	if r == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, id := range ids {
		r.at[id] = now
	}
}

func stepIn(ctx context.Context, st Step, datasetID string, done *doneRows, held *recentTraces, o *others) (int, time.Time, error) {
	b, err := prepare(ctx, st, datasetID, done, held, nil)
	if err != nil || len(b.entries) == 0 {
		if err == nil {
			st.Rollback()
		}
		return 0, b.wake, err
	}
	n, err := b.apply(ctx, st, done, held, o)
	return n, b.wake, err
}

// reader reads the queue and the traces: a Step, or a Prefetcher.
type reader interface {
	Queued(ctx context.Context, n int, datasetID string) ([]Entry, error)
	Traces(ctx context.Context, ids []string, fn func(id string, t *trace.Trace, bad error)) error
}

// batch is a step's queue rows and the documents of their traces, read
// and computed, to write.
type batch struct {
	entries   []Entry
	docs      []Doc
	ids       []string
	indexedAt time.Time
	wake      time.Time // with no entries: when the first held trace may be indexed again
	// A batch prefetched while the one before was written holds only if
	// no other connection wrote the index since that one began (its
	// Version); of the traces other steps of this process indexed since,
	// it drops its documents (theirs are as new or newer).
	version int64
}

// others are the traces that steps other than the loop's (searches'
// WaitFor, CatchUp) indexed, noted under the index's lock before they
// commit; the loop takes them as its step begins.
type others struct {
	mu   sync.Mutex
	ids  map[string]struct{}
	over bool // too many to keep: a prefetched batch does not hold
}

// maxOthers bounds others.
const maxOthers = 1 << 16

func (o *others) note(ids []string) {
	if o == nil {
		return
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.over || len(o.ids)+len(ids) > maxOthers {
		o.over, o.ids = true, nil
		return
	}
	if o.ids == nil {
		o.ids = map[string]struct{}{}
	}
	for _, id := range ids {
		o.ids[id] = struct{}{}
	}
}

// take returns what was noted since the last take, and forgets it.
func (o *others) take() (map[string]struct{}, bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	ids, over := o.ids, o.over
	o.ids, o.over = nil, false
	return ids, over
}

// without drops from the batch the documents of traces in ids. Their
// queue rows still go: the other step read those traces after this batch
// read its queue rows, so what they index covers them.
func (b *batch) without(ids map[string]struct{}) {
	if len(ids) == 0 {
		return
	}
	b.docs = slices.DeleteFunc(b.docs, func(d Doc) bool { _, ok := ids[d.TraceID]; return ok })
	b.ids = slices.DeleteFunc(b.ids, func(id string) bool { _, ok := ids[id]; return ok })
}

// prepare reads up to a batch of the queue (less the rows of skip, being
// written) and computes the documents of its traces.
func prepare(ctx context.Context, r reader, datasetID string, done *doneRows, held *recentTraces, skip *batch) (*batch, error) {
	b := &batch{}
	extra := done.len()
	if skip != nil {
		extra += len(skip.entries)
	}
	entries, err := r.Queued(ctx, BatchSize+extra, datasetID)
	if err != nil {
		return b, err
	}
	if skip != nil {
		// The rows being written, and their traces' later rows: those
		// wait as held traces do.
		seqs := make(map[int64]bool, len(skip.entries))
		for _, e := range skip.entries {
			seqs[e.Seq] = true
		}
		traces := make(map[string]bool, len(skip.ids))
		for _, id := range skip.ids {
			traces[id] = true
		}
		entries = slices.DeleteFunc(entries, func(e Entry) bool { return seqs[e.Seq] || traces[e.TraceID] })
	}
	entries = done.without(entries, BatchSize)
	entries, b.wake = held.hold(entries, time.Now())
	if len(entries) == 0 {
		return b, nil
	}
	// A trace queued several times (appended to, rebuilt from more spans)
	// is indexed once, from what is stored now.
	seen := make(map[string]int, len(entries))
	ids := make([]string, 0, len(entries))
	for _, e := range entries {
		if _, ok := seen[e.TraceID]; !ok {
			seen[e.TraceID] = len(ids)
			ids = append(ids, e.TraceID)
		}
	}
	docs := make([]Doc, len(ids))
	for i, id := range ids {
		docs[i].TraceID = id
	}
	// Traces are read and decoded in this goroutine while workers compute
	// their documents, a few traces in flight at a time (a trace may be
	// large): on every core when the writers leave one idle.
	type job struct {
		at int
		t  *trace.Trace
	}
	workers := runtime.GOMAXPROCS(0)
	jobs := make(chan job, workers)
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			// Sized for the batch's texts (an agent trace holds dozens):
			// growing it rehashed every text once more.
			texts := make(search.TextCache, min(32*len(ids)/workers, 1<<14))
			for j := range jobs {
				d := search.IndexHashed(j.t, texts)
				docs[j.at].Doc = &d
			}
		})
	}
	b.indexedAt = time.Now()
	err = r.Traces(ctx, ids, func(id string, t *trace.Trace, bad error) {
		if bad != nil {
			slog.Warn("search index: trace skipped", "trace", id, "err", bad)
			return
		}
		jobs <- job{seen[id], t}
	})
	close(jobs)
	wg.Wait()
	if err != nil {
		return b, err
	}
	b.entries, b.docs, b.ids = entries, docs, ids
	return b, nil
}

// apply writes the batch's documents in st and commits them, noting its
// traces in o (nil for none) while the step still holds the index's lock,
// so that the loop's next step sees them.
func (b *batch) apply(ctx context.Context, st Step, done *doneRows, held *recentTraces, o *others) (int, error) {
	if err := st.Write(ctx, b.docs); err != nil {
		return 0, err
	}
	o.note(b.ids)
	// Noted before the commit, which lets the next step in.
	done.add(b.entries, true)
	defer done.add(b.entries, false)
	if err := st.Commit(ctx, b.entries); err != nil {
		return 0, err
	}
	held.indexed(b.ids, b.indexedAt)
	return len(b.entries), nil
}

// CatchUp indexes the whole queue in this goroutine, calling progress
// after each step (for `lookout reindex`).
func (ix *Indexer) CatchUp(ctx context.Context, progress func(done int64)) (int64, error) {
	var done int64
	for {
		n, _, err := runStep(ctx, ix.b, "", ix.doneRows, nil, &ix.others)
		if err != nil {
			return done, err
		}
		if n == 0 {
			return done, nil
		}
		done += int64(n)
		if progress != nil {
			progress(done)
		}
	}
}

// WaitFor returns once every trace of a dataset (of all, for "") queued
// before the call is indexed, or with ctx's error. While the background
// loop runs it asks the loop to index that dataset first, held traces
// included, and waits: the loop reads a batch while it writes the one
// before, where a search's own steps took the lock from it and read and
// wrote in turn. Without the loop (off, stopped, failing) it indexes the
// traces itself, a batch at a time.
func (ix *Indexer) WaitFor(ctx context.Context, datasetID string) error {
	bs, err := ix.b.Bounds(ctx, datasetID, false)
	if err != nil || bs.Last == 0 {
		return err
	}
	last := bs.Last
	if ix.running.Load() {
		done, err := ix.waitLoop(ctx, datasetID, last)
		if done || err != nil {
			return err
		}
	}
	for {
		// A step of none: another indexer took the rows meanwhile.
		if _, _, err := runStep(ctx, ix.b, datasetID, ix.doneRows, nil, &ix.others); err != nil {
			return err
		}
		bs, err = ix.b.Bounds(ctx, datasetID, false)
		if err != nil {
			return err
		}
		if bs.First == 0 || bs.First > last {
			return nil
		}
	}
}

// waitLoop waits for the loop to index a dataset's rows up to last, and
// reports whether it did; not (and no error) when the loop stopped or its
// step failed, for the caller to index them itself.
func (ix *Indexer) waitLoop(ctx context.Context, datasetID string, last int64) (bool, error) {
	ix.waitMu.Lock()
	ix.waiting = append(ix.waiting, datasetID)
	ix.waitMu.Unlock()
	defer func() {
		ix.waitMu.Lock()
		if i := slices.Index(ix.waiting, datasetID); i >= 0 {
			ix.waiting = slices.Delete(ix.waiting, i, i+1)
		}
		ix.waitMu.Unlock()
	}()
	for {
		ix.waitMu.Lock()
		stepped := ix.stepped
		ix.waitMu.Unlock()
		select {
		case ix.called <- struct{}{}:
		default:
		}
		bs, err := ix.b.Bounds(ctx, datasetID, false)
		if err != nil {
			return false, err
		}
		if bs.First == 0 || bs.First > last {
			return true, nil
		}
		select {
		case <-ctx.Done():
			return false, ctx.Err()
		case <-stepped:
		}
		ix.mu.Lock()
		failed := ix.lastErr != nil
		ix.mu.Unlock()
		if failed || !ix.running.Load() {
			return false, nil
		}
	}
}

// Backlog reads the queue and the measured rate.
func (ix *Indexer) Backlog(ctx context.Context) (store.IndexBacklog, error) {
	bs, err := ix.b.Bounds(ctx, "", true)
	if err != nil {
		return store.IndexBacklog{}, err
	}
	ix.mu.Lock()
	defer ix.mu.Unlock()
	bl := store.IndexBacklog{Queued: bs.Queued, Err: ix.lastErr}
	if bs.Queued > 0 {
		bl.Lag = max(time.Since(bs.Oldest), 0)
		// Up to a batch is no backlog: the next step takes it all.
		if ix.rate > 0 && bs.Queued > BatchSize {
			bl.CatchUp = time.Duration(float64(bs.Queued) / ix.rate * float64(time.Second))
		}
	}
	return bl, nil
}
