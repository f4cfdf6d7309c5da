package server

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lookout-dev/lookout/internal/store"
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

// spanBuildBatch is how many pending traces one build writes at most: the
// write holds the store's writer (SQLite's one connection), which requests
// of spans wait for.
const spanBuildBatch = 16

// spanBuilder is the background loop that builds pending traces.
type spanBuilder struct {
	once    sync.Once
	stop    context.CancelFunc
	done    chan struct{}
	backlog atomic.Int64 // pending traces when last counted
}

// StartSpanBuilder starts building pending traces in the background,
// those an earlier server left included; a request of spans starts it too.
// Once only.
func (s *Server) StartSpanBuilder() {
	s.builder.once.Do(func() {
		ctx, cancel := context.WithCancel(context.Background())
		s.builder.stop = cancel
		s.builder.done = make(chan struct{})
		go s.buildLoop(ctx)
	})
}

// stopSpanBuilder stops building pending traces; those left stay marked
// in the store for the next server. No loop starts after it.
func (s *Server) stopSpanBuilder() {
	s.builder.once.Do(func() {}) // no loop may start after this
	if s.builder.stop != nil {
		s.builder.stop()
		<-s.builder.done
	}
}

func (s *Server) buildLoop(ctx context.Context) {
	defer close(s.builder.done)
	tick := time.NewTicker(max(s.spanQuiet/4, 10*time.Millisecond))
	defer tick.Stop()
	for {
		s.buildQuiet(ctx)
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
	for ctx.Err() == nil {
		now := time.Now()
		f := store.PendingFilter{Quiet: now.Add(-s.spanQuiet), Stale: now.Add(-s.spanMaxDelay), Limit: spanBuildBatch}
		out, err := s.st.BuildPendingSpans(ctx, f, buildSpanTrace)
		if err != nil {
			if ctx.Err() == nil {
				s.log.Error("building traces from their spans", slog.Any("err", err))
			}
			break
		}
		s.builtSpans(ctx, out)
		if len(out) < spanBuildBatch {
			break
		}
	}
	if n, err := s.st.PendingSpanTraces(ctx); err == nil {
		s.builder.backlog.Store(n)
	}
}

// builtSpans tells the listeners of the traces built, and logs the builds
// that failed (the trace stays as it was built before).
func (s *Server) builtSpans(ctx context.Context, out []store.PendingBuild) {
	ids := make([]string, 0, len(out))
	for _, b := range out {
		if b.Err != nil {
			s.log.WarnContext(ctx, "a trace could not be built from its spans", slog.String("trace", b.TraceID), slog.Any("err", b.Err))
			continue
		}
		ids = append(ids, b.TraceID)
	}
	s.traceChanged(ids...)
}

// settleTrace builds a trace now if it is pending.
func (s *Server) settleTrace(ctx context.Context, id string) error {
	return s.settle(ctx, store.PendingFilter{TraceIDs: []string{id}})
}

// settleDataset builds a dataset's pending traces now.
func (s *Server) settleDataset(ctx context.Context, id string) error {
	return s.settle(ctx, store.PendingFilter{DatasetID: id})
}

func (s *Server) settle(ctx context.Context, f store.PendingFilter) error {
	out, err := s.st.BuildPendingSpans(ctx, f, buildSpanTrace)
	if err != nil {
		return err
	}
	s.builtSpans(ctx, out)
	return nil
}
