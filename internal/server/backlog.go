package server

import (
	"context"
	"fmt"
	"log/slog"
	"math"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lookout-dev/lookout/internal/store"
)

// What the server has accepted and not finished: traces queued for the
// search index, traces waiting to be built from their spans. A monitor
// reads the index's backlog every second (a count of its queue), so that
// write requests can be refused cheaply when it is too deep, and logs a
// line a minute while there is any.

// indexBacklog is what the monitor needs of the store.
type indexBacklog interface {
	IndexBacklog(ctx context.Context) (store.IndexBacklog, error)
}

// DefaultIndexCatchUp is how much indexing work may wait before writes are
// refused: the time the indexer would take, at the rate it measured, to
// index what is queued (Config.IndexCatchUp).
const DefaultIndexCatchUp = 30 * time.Second

const (
	backlogEvery = time.Second
	backlogLog   = time.Minute
)

// monitor keeps the last backlog read.
type monitor struct {
	st      indexBacklog
	log     *slog.Logger
	spans   *spanBuilder
	limit   time.Duration
	last    atomic.Pointer[store.IndexBacklog]
	once    sync.Once
	stop    context.CancelFunc
	done    chan struct{}
	stopped atomic.Bool
}

// start starts the monitor's loop, once.
func (m *monitor) start() {
	m.once.Do(func() {
		ctx, cancel := context.WithCancel(context.Background())
		m.stop, m.done = cancel, make(chan struct{})
		go m.loop(ctx)
	})
}

// close stops the loop and waits for it.
func (m *monitor) close() {
	if m.stopped.Swap(true) {
		return
	}
	m.once.Do(func() {}) // no start after close
	if m.stop != nil {
		m.stop()
		<-m.done
	}
}

func (m *monitor) loop(ctx context.Context) {
	defer close(m.done)
	tick := time.NewTicker(backlogEvery)
	defer tick.Stop()
	var logged time.Time
	failing := false // logged once per outage, not once a second
	for {
		bl, err := m.st.IndexBacklog(ctx)
		if err == nil && failing {
			failing = false
			m.log.Info("the search index's backlog can be read again")
		}
		if err == nil {
			m.last.Store(&bl)
			pending := m.spans.backlog.Load()
			if (bl.Queued > 0 || pending > 0) && time.Since(logged) >= backlogLog {
				logged = time.Now()
				attrs := []any{slog.Int64("index_queued", bl.Queued), slog.Float64("index_lag_seconds", seconds(bl.Lag)),
					slog.Float64("index_catch_up_seconds", seconds(bl.CatchUp)), slog.Int64("spans_pending_traces", pending)}
				if bl.Err != nil {
					attrs = append(attrs, slog.String("index_error", bl.Err.Error()))
				}
				m.log.Info("backlog", attrs...)
			}
		} else if ctx.Err() == nil && !failing {
			failing = true
			m.log.Warn("reading the search index's backlog", slog.Any("err", err))
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

func seconds(d time.Duration) float64 { return math.Round(d.Seconds()*10) / 10 }

// admit refuses a write (503 with Retry-After) while the search index has
// more than the limit's worth of work queued: the writes would only make
// every search wait longer.
func (m *monitor) admit() error {
	bl := m.last.Load()
	if bl == nil || bl.CatchUp <= m.limit {
		return nil
	}
	retry := int(min(max(bl.CatchUp-m.limit, time.Second), 30*time.Second) / time.Second)
	return &apiError{Status: http.StatusServiceUnavailable, Code: codeUnavailable, RetryAfter: retry,
		Message: fmt.Sprintf("the search index is %d traces (about %.0f s of work) behind; send again later", bl.Queued, bl.CatchUp.Seconds())}
}

// backlog answers GET /api/v1/backlog: what is accepted and not finished.
func (s *Server) backlog(w http.ResponseWriter, r *http.Request, p *principal) error {
	if err := s.requireUser(r, p); err != nil {
		return err
	}
	bl, err := s.st.IndexBacklog(r.Context())
	if err != nil {
		return err
	}
	pending, err := s.st.PendingSpanTraces(r.Context())
	if err != nil {
		return err
	}
	idx := map[string]any{"queued": bl.Queued, "lag_seconds": seconds(bl.Lag), "catch_up_seconds": seconds(bl.CatchUp)}
	if bl.Err != nil {
		idx["error"] = bl.Err.Error()
	}
	writeJSON(w, http.StatusOK, map[string]any{
		"search_index": idx,
		"spans":        map[string]any{"pending_traces": pending},
		// This server and the others heard of on the database lately.
		"servers": 1 + s.live.others(),
	})
	return nil
}

// backlogStore is what the backlog handler asks of the store.
type backlogStore interface {
	indexBacklog
	PendingSpanTraces(ctx context.Context) (int64, error)
}
