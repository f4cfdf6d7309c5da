// Package spanstore is store.SpanTraces written once for both backends:
// what is read and built before the writing transaction, what is read
// again and rebuilt inside it when it changed meanwhile, and in what order
// rows are written and locked. A backend supplies its SQL through Backend,
// Reader and Tx.
package spanstore

import (
	"context"
	"errors"
	"slices"
	"strings"
	"time"

	"github.com/lookout-dev/lookout/internal/store"
	"github.com/lookout-dev/lookout/internal/store/internal/storeutil"
	"github.com/lookout-dev/lookout/internal/trace"
)

// Backend is what the span ingest needs of a store backend.
type Backend interface {
	// Reader reads outside any transaction (the pool).
	Reader() Reader
	// Write runs fn in a writing transaction, committed when fn succeeds.
	Write(ctx context.Context, fn func(Tx) error) error
	// NotFound is the backend's error for an id that names nothing.
	NotFound(format string, args ...any) error
	// Fail wraps err with what was being done, mapping it to the store's
	// errors.
	Fail(ctx context.Context, err error, what string) error
}

// Reader reads spans and pending marks, on the pool or in a transaction.
type Reader interface {
	// TraceOf returns the trace stored for an OpenTelemetry trace in a
	// dataset, "" for none.
	TraceOf(ctx context.Context, datasetID, otelTraceID string) (string, error)
	// Spans returns the spans stored for a trace by span id (empty, not
	// nil, for none).
	Spans(ctx context.Context, traceID string) (map[string][]byte, error)
	// Pending returns the pending traces f selects, those pending longest
	// first, without their spans.
	Pending(ctx context.Context, f store.PendingFilter) ([]PendingTrace, error)
}

// Tx is a backend's writing transaction.
type Tx interface {
	Reader
	// LockIndex is taken first by a transaction that writes the search
	// index, before any row lock, so that such writers never wait for each
	// other in a cycle (a no-op where the writer is one connection).
	LockIndex(ctx context.Context) error
	// NextIndex returns a dataset's next trace index, locking the dataset
	// so that requests into it take turns (the first spans of a trace sent
	// twice at once make one trace); NotFound when there is no dataset.
	NextIndex(ctx context.Context, datasetID string) (int64, error)
	// InsertTrace stores the row of an OpenTelemetry trace seen for the
	// first time, with index idx, and links the two.
	InsertTrace(ctx context.Context, ownerID, datasetID, otelTraceID string, r *storeutil.Row, idx int64, now time.Time) error
	// UpdateTrace replaces a stored trace's name, metadata, events and
	// content with those of r.
	UpdateTrace(ctx context.Context, traceID string, r *storeutil.Row) error
	// UpsertSpans writes a trace's spans, replacing those with the same
	// span ids.
	UpsertSpans(ctx context.Context, traceID string, spans []store.StoredSpan) error
	// Mark marks a trace pending, or moves its mark on (touched, seq + 1).
	Mark(ctx context.Context, traceID, datasetID, otelTraceID string, now time.Time, fresh bool) error
	// Unmark clears a trace's pending mark.
	Unmark(ctx context.Context, traceID string) error
	// LockMarks returns the sequence numbers of the marks of those of ids
	// that are pending, locking them in trace id order (as Accept takes
	// them).
	LockMarks(ctx context.Context, ids []string) (map[string]int64, error)
	// WriteIndex writes the index documents of the traces, those that had
	// rows replacing them, in one go.
	WriteIndex(ctx context.Context, docs []Doc) error
	// Pushed records spans pushed into a dataset: its next index, created
	// traces more, and the time.
	Pushed(ctx context.Context, datasetID string, next int64, created int, now time.Time) error
}

// Doc is the new index document of a trace.
type Doc struct {
	TraceID string
	storeutil.IndexDoc
	Fresh bool // the trace has no index rows yet
}

// Add is store.SpanTraces.AddSpans.
func Add(ctx context.Context, b Backend, ownerID, datasetID string, groups []store.SpanGroup,
	build func(otelTraceID string, spans [][]byte) (*trace.Trace, error)) ([]string, []error, error) {
	if !storeutil.ValidID(ownerID) {
		return nil, nil, b.NotFound("add spans: owner %q", ownerID)
	}
	if !storeutil.ValidID(datasetID) {
		return nil, nil, b.NotFound("add spans: dataset %q", datasetID)
	}
	ids := make([]string, len(groups))
	errs := make([]error, len(groups))
	// Rebuild the traces from what is stored before taking the writer (the
	// dataset's lock), so that other requests write meanwhile; in the
	// transaction, a group whose stored spans changed since is rebuilt
	// again.
	tids, stored, err := readSpanGroups(ctx, b.Reader(), datasetID, groups)
	if err != nil {
		return nil, nil, b.Fail(ctx, err, "add spans")
	}
	now := storeutil.Now()
	built := buildSpanGroups(groups, stored, build, now)
	err = b.Write(ctx, func(tx Tx) error {
		if err := tx.LockIndex(ctx); err != nil {
			return err
		}
		next, err := tx.NextIndex(ctx, datasetID)
		if err != nil {
			return err
		}
		nowTids, nowStored, err := readSpanGroups(ctx, tx, datasetID, groups)
		if err != nil {
			return err
		}
		rebuildChanged(groups, built, tids, stored, nowTids, nowStored, build, now)
		tids = nowTids
		created := 0
		var docs []Doc
		for i, g := range groups {
			bt := &built[i]
			ids[i], errs[i] = "", bt.Err
			if bt.Err != nil {
				continue
			}
			r, tid := &bt.Row, tids[i]
			fresh := tid == ""
			if fresh {
				tid = r.ID
				if next, err = insertTrace(ctx, tx, ownerID, datasetID, g.OTelTraceID, r, next, now); err != nil {
					return err
				}
				created++
			} else if err := tx.UpdateTrace(ctx, tid, r); err != nil {
				return err
			}
			docs = append(docs, Doc{TraceID: tid, IndexDoc: storeutil.IndexDoc{Doc: &r.Doc, Hashes: r.Hashes}, Fresh: fresh})
			if err := tx.UpsertSpans(ctx, tid, bt.Write); err != nil {
				return err
			}
			// Built from all its spans: a mark Accept left is met.
			if err := tx.Unmark(ctx, tid); err != nil {
				return err
			}
			ids[i] = tid
		}
		// One index write for the request's traces.
		if err := tx.WriteIndex(ctx, docs); err != nil {
			return err
		}
		return tx.Pushed(ctx, datasetID, next, created, now)
	})
	if err != nil {
		if errors.Is(err, store.ErrNotFound) {
			return nil, nil, err
		}
		return nil, nil, b.Fail(ctx, err, "add spans")
	}
	return ids, errs, nil
}

// insertTrace stores the row of an OpenTelemetry trace seen for the first
// time, with the dataset's next index, and returns the index after.
func insertTrace(ctx context.Context, tx Tx, ownerID, datasetID, otelTraceID string, r *storeutil.Row, next int64, now time.Time) (int64, error) {
	idx, next := storeutil.AssignIndexes(next, []*int64{r.Given})
	return next, tx.InsertTrace(ctx, ownerID, datasetID, otelTraceID, r, idx[0], now)
}

// readSpanGroups reads, for each group, its stored trace ("" for none) and
// the spans stored for it (nil for none).
func readSpanGroups(ctx context.Context, q Reader, datasetID string, groups []store.SpanGroup) ([]string, []map[string][]byte, error) {
	tids := make([]string, len(groups))
	stored := make([]map[string][]byte, len(groups))
	for i, g := range groups {
		var err error
		if tids[i], err = q.TraceOf(ctx, datasetID, g.OTelTraceID); err != nil {
			return nil, nil, err
		}
		if tids[i] == "" {
			continue
		}
		if stored[i], err = q.Spans(ctx, tids[i]); err != nil {
			return nil, nil, err
		}
	}
	return tids, stored, nil
}

// Accept is store.SpanTraces.AcceptSpans.
func Accept(ctx context.Context, b Backend, ownerID, datasetID string, groups []store.SpanGroup) ([]string, error) {
	if !storeutil.ValidID(ownerID) {
		return nil, b.NotFound("accept spans: owner %q", ownerID)
	}
	if !storeutil.ValidID(datasetID) {
		return nil, b.NotFound("accept spans: dataset %q", datasetID)
	}
	ids := make([]string, len(groups))
	now := storeutil.Now()
	err := b.Write(ctx, func(tx Tx) error {
		next, err := tx.NextIndex(ctx, datasetID)
		if err != nil {
			return err
		}
		created := 0
		type mark struct {
			tid, otelID string
			fresh       bool
		}
		var marks []mark
		for i, g := range groups {
			tid, err := tx.TraceOf(ctx, datasetID, g.OTelTraceID)
			if err != nil {
				return err
			}
			fresh := tid == ""
			if fresh {
				r, err := pendingRow(g.OTelTraceID, now)
				if err != nil {
					return err
				}
				tid = r.ID
				if next, err = insertTrace(ctx, tx, ownerID, datasetID, g.OTelTraceID, &r, next, now); err != nil {
					return err
				}
				created++
			}
			_, write := mergeSpans(nil, g.Spans)
			if err := tx.UpsertSpans(ctx, tid, write); err != nil {
				return err
			}
			marks = append(marks, mark{tid, g.OTelTraceID, fresh})
			ids[i] = tid
		}
		// Marks are taken in trace id order, as BuildPending takes them, so
		// that the two never wait for each other in a cycle.
		slices.SortFunc(marks, func(a, b mark) int { return strings.Compare(a.tid, b.tid) })
		for _, m := range marks {
			if err := tx.Mark(ctx, m.tid, datasetID, m.otelID, now, m.fresh); err != nil {
				return err
			}
		}
		return tx.Pushed(ctx, datasetID, next, created, now)
	})
	if err != nil {
		if errors.Is(err, store.ErrNotFound) {
			return nil, err
		}
		return nil, b.Fail(ctx, err, "accept spans")
	}
	return ids, nil
}

// BuildPending is store.SpanTraces.BuildPendingSpans.
func BuildPending(ctx context.Context, b Backend, f store.PendingFilter,
	build func(otelTraceID string, spans [][]byte) (*trace.Trace, error)) ([]store.PendingBuild, error) {
	// Read and build before the writing transaction, so that requests keep
	// writing meanwhile; in it, a trace whose mark moved on since is read
	// and built again.
	ps, err := readPending(ctx, b.Reader(), f)
	if err != nil {
		return nil, b.Fail(ctx, err, "build pending spans")
	}
	if len(ps) == 0 {
		return nil, nil
	}
	now := storeutil.Now()
	built := buildPending(ps, build, now)
	var out []store.PendingBuild
	err = b.Write(ctx, func(tx Tx) error {
		out = out[:0]
		if err := tx.LockIndex(ctx); err != nil {
			return err
		}
		ids := make([]string, len(ps))
		for i, p := range ps {
			ids[i] = p.TraceID
		}
		seqs, err := tx.LockMarks(ctx, ids)
		if err != nil {
			return err
		}
		read := func(id string) (map[string][]byte, error) { return tx.Spans(ctx, id) }
		if err := rebuildMoved(ps, built, seqs, read, build, now); err != nil {
			return err
		}
		var docs []Doc
		for i, p := range ps {
			if _, ok := seqs[p.TraceID]; !ok {
				continue // built meanwhile, or deleted
			}
			if err := tx.Unmark(ctx, p.TraceID); err != nil {
				return err
			}
			bt := &built[i]
			out = append(out, store.PendingBuild{TraceID: p.TraceID, Err: bt.Err})
			if bt.Err != nil {
				continue
			}
			r := &bt.Row
			if err := tx.UpdateTrace(ctx, p.TraceID, r); err != nil {
				return err
			}
			docs = append(docs, Doc{TraceID: p.TraceID, IndexDoc: storeutil.IndexDoc{Doc: &r.Doc, Hashes: r.Hashes}, Fresh: p.Fresh})
		}
		return tx.WriteIndex(ctx, docs)
	})
	if err != nil {
		return nil, b.Fail(ctx, err, "build pending spans")
	}
	return out, nil
}

// readPending reads the pending traces f selects with their spans.
func readPending(ctx context.Context, q Reader, f store.PendingFilter) ([]PendingTrace, error) {
	ps, err := q.Pending(ctx, f)
	if err != nil {
		return nil, err
	}
	for i := range ps {
		if ps[i].Spans, err = q.Spans(ctx, ps[i].TraceID); err != nil {
			return nil, err
		}
	}
	return ps, nil
}
