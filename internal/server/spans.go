package server

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lookout-dev/lookout/internal/store"
	"github.com/lookout-dev/lookout/internal/trace"
)

// Building traces from spans (this file). A request of spans (OTLP over
// HTTP or gRPC) stores them and marks their traces pending; spanBuilder
// builds a pending trace once no spans came for it for SpanQuiet, or once it
// has waited SpanMaxDelay while spans keep coming, so that an agent's trace
// whose spans come in many batches is built a few times rather than on
// every batch, and a request is answered without waiting for the build.
// Reads see every span accepted before them: a trace read, and a dataset's
// list, search, export, checks and evaluations, first build what of theirs
// is pending. Marks outlive a restart: the builder takes them up.
//
// A large trace whose spans keep coming waits longer than SpanMaxDelay
// between builds: staleRebuilds times what its last build took, so that
// rebuilding it from all its spans takes a bounded share of the builder's
// time however long it grows (a trace rebuilt every SpanMaxDelay costs time
// quadratic in its size). Once quiet it is built as any other.

// spanBuildBatch is how many pending traces one build writes at most: the
// write holds the store's writer (SQLite's one connection), which requests
// of spans wait for. Each commit writes again the pages it touches in the
// tables kept in trace or sort order (a trace's row, summary, sort keys and
// dashboard row), so fewer, larger builds write less. Under bench/peers'
// load (SQLite, six alternations, 2026-11-28) 64 against 32 gave 109-113
// against 114-124 µs of CPU a span and 13.0-13.7k against 11.3-12.3k spans
// a second end to end, but 18.8-19.3k against 19.7-22.4k accepted (three
// times Jaeger's still) and the same p99; 128 accepted 15-16k, p99 375-400
// ms, and no less CPU. PostgreSQL's end to end was within the noise.
const spanBuildBatch = 64

// staleRebuilds is how many times what a trace's last build took a trace
// whose spans keep coming waits before it is built again (when that is more
// than SpanMaxDelay): the builder spends at most a fifth of its time on it.
const staleRebuilds = 4

// pendingSpans is what building traces from spans needs of the store.
type pendingSpans interface {
	BuildPendingSpans(ctx context.Context, f store.PendingFilter,
		build func(otelTraceID string, spans [][]byte) (*trace.Trace, error)) ([]store.PendingBuild, error)
	PendingSpanTraces(ctx context.Context) (int64, error)
}

// spanBuilder builds pending traces: in a background loop once started,
// and at once for a read (settle).
type spanBuilder struct {
	st              pendingSpans
	quiet, maxDelay time.Duration
	log             *slog.Logger
	changed         func(ids ...string) // told the traces built

	once    sync.Once
	stop    context.CancelFunc
	done    chan struct{}
	backlog atomic.Int64 // pending traces when last counted

	mu    sync.Mutex
	later map[string]time.Time // large traces left until then unless quiet (PendingFilter.Later)
}

// newSpanBuilder returns a builder over st, not started; quiet and
// maxDelay are Config.SpanQuiet and Config.SpanMaxDelay (0: their
// defaults).
func newSpanBuilder(st pendingSpans, quiet, maxDelay time.Duration, log *slog.Logger, changed func(ids ...string)) *spanBuilder {
	if quiet <= 0 {
		quiet = 250 * time.Millisecond
	}
	if maxDelay <= 0 {
		maxDelay = 2 * time.Second
	}
	return &spanBuilder{st: st, quiet: quiet, maxDelay: maxDelay, log: log, changed: changed, later: map[string]time.Time{}}
}

// StartSpanBuilder starts building pending traces in the background,
// those an earlier server left included; a request of spans starts it too.
// Once only.
func (s *Server) StartSpanBuilder() {
	if !s.noBackground { // other servers on the database build
		s.builder.start()
	}
}

// stopSpanBuilder stops building pending traces; those left stay marked
// in the store for the next server. No loop starts after it.
func (s *Server) stopSpanBuilder() { s.builder.close() }

func (b *spanBuilder) start() {
	b.once.Do(func() {
		ctx, cancel := context.WithCancel(context.Background())
		b.stop = cancel
		b.done = make(chan struct{})
		go b.loop(ctx)
	})
}

func (b *spanBuilder) close() {
	b.once.Do(func() {}) // no loop may start after this
	if b.stop != nil {
		b.stop()
		<-b.done
	}
}

// unreachableRetry is how often the builder tries again while the
// database is unreachable (instead of at every tick, each logged).
const unreachableRetry = time.Second

func (b *spanBuilder) loop(ctx context.Context) {
	defer close(b.done)
	tick := time.NewTicker(max(b.quiet/4, 10*time.Millisecond))
	defer tick.Stop()
	down := false // the database was unreachable at the last try
	var retryAt time.Time
	for {
		if !down || !time.Now().Before(retryAt) {
			err := b.build(ctx)
			switch {
			case ctx.Err() != nil:
			case errors.Is(err, store.ErrUnavailable):
				// Logged once per outage; the builder waits it out.
				if !down {
					b.log.Warn("building traces from their spans: the database is unreachable; retrying", slog.Any("err", err))
				}
				down, retryAt = true, time.Now().Add(unreachableRetry)
			case err != nil:
				down = false
				b.log.Error("building traces from their spans", slog.Any("err", err))
			case down:
				down = false
				b.log.Info("building traces from their spans: the database is reachable again")
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// buildQuiet builds every pending trace that is quiet or has waited long
// enough, in batches, then counts those left.
func (s *Server) buildQuiet(ctx context.Context) {
	if err := s.builder.build(ctx); err != nil && ctx.Err() == nil {
		s.log.Error("building traces from their spans", slog.Any("err", err))
	}
}

// build builds every pending trace that is quiet or has waited long
// enough, in batches, then counts those left. It stops at the first error.
func (b *spanBuilder) build(ctx context.Context) error {
	for ctx.Err() == nil {
		now := time.Now()
		f := store.PendingFilter{Quiet: now.Add(-b.quiet), Stale: now.Add(-b.maxDelay), Later: b.leftLater(now), Limit: spanBuildBatch}
		out, err := b.st.BuildPendingSpans(ctx, f, buildSpanTrace)
		if err != nil {
			return err
		}
		b.leaveLater(out, time.Since(now))
		b.built(ctx, out)
		if len(out) < spanBuildBatch {
			break
		}
	}
	n, err := b.st.PendingSpanTraces(ctx)
	if err != nil {
		return err
	}
	b.backlog.Store(n)
	return nil
}

// built tells the listeners of the traces built, and logs the builds that
// failed (the trace stays as it was built before).
func (b *spanBuilder) built(ctx context.Context, out []store.PendingBuild) {
	ids := make([]string, 0, len(out))
	for _, p := range out {
		if p.Err != nil {
			b.log.WarnContext(ctx, "a trace could not be built from its spans", slog.String("trace", p.TraceID), slog.Any("err", p.Err))
			continue
		}
		ids = append(ids, p.TraceID)
	}
	b.changed(ids...)
}

// settleTrace builds a trace now if it is pending.
func (s *Server) settleTrace(ctx context.Context, id string) error {
	return s.builder.settle(ctx, store.PendingFilter{TraceIDs: []string{id}})
}

// settleDataset builds a dataset's pending traces now.
func (s *Server) settleDataset(ctx context.Context, id string) error {
	return s.builder.settle(ctx, store.PendingFilter{DatasetID: id})
}

func (b *spanBuilder) settle(ctx context.Context, f store.PendingFilter) error {
	t0 := time.Now()
	out, err := b.st.BuildPendingSpans(ctx, f, buildSpanTrace)
	if err != nil {
		return err
	}
	b.leaveLater(out, time.Since(t0))
	b.built(ctx, out)
	return nil
}

// leaveLater notes, of traces just built in took, those whose next build
// while their spans keep coming is to wait more than maxDelay: each is
// charged its share of took by its spans.
func (b *spanBuilder) leaveLater(out []store.PendingBuild, took time.Duration) {
	total := 0
	for _, p := range out {
		total += p.Spans
	}
	if total == 0 {
		return
	}
	now := time.Now()
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, p := range out {
		wait := staleRebuilds * time.Duration(float64(took)*float64(p.Spans)/float64(total))
		if wait > b.maxDelay {
			b.later[p.TraceID] = now.Add(wait)
		} else {
			delete(b.later, p.TraceID)
		}
	}
}

// leftLater is the traces left for later at now (nil for none), forgetting
// those whose time has come.
func (b *spanBuilder) leftLater(now time.Time) []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	var ids []string
	for id, until := range b.later {
		if now.Before(until) {
			ids = append(ids, id)
		} else {
			delete(b.later, id)
		}
	}
	return ids
}
