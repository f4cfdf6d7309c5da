// Package spanstore is store.SpanTraces written once for both backends:
// what is read and built before the writing transaction, what is read
// again and rebuilt inside it when it changed meanwhile, and in what order
// rows are written and locked. A backend supplies its statements and locks
// through Backend, Reader and Tx, and embeds Traces in its store.
package spanstore

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/lookout-dev/lookout/internal/store"
	"github.com/lookout-dev/lookout/internal/store/internal/indexer"
	"github.com/lookout-dev/lookout/internal/store/internal/storeutil"
	"github.com/lookout-dev/lookout/internal/trace"
)

// Backend is what the span ingest needs of a store backend.
type Backend struct {
	// Reader reads outside any transaction (the pool).
	Reader Reader
	// Write runs fn in a writing transaction, committed when fn succeeds.
	Write func(ctx context.Context, fn func(Tx) error) error
	// NotFound is the backend's error for an id that names nothing.
	NotFound func(format string, args ...any) error
	// Fail wraps err with what was being done, mapping it to the store's
	// errors.
	Fail func(ctx context.Context, err error, format string, args ...any) error
	// Handover takes the traces built to the search indexer; nil for none.
	Handover *indexer.Handover
}

// Rows are the rows of a query, as *sql.Rows gives them (pgx.Rows with
// a Close that returns Err).
type Rows interface {
	Next() bool
	Scan(dest ...any) error
	Err() error
	Close() error
}

// Reader runs the queries of spans and pending marks, on the pool or in a
// transaction; spanstore reads and closes the rows.
type Reader interface {
	// TraceOf selects the trace_id stored for an OpenTelemetry trace in a
	// dataset (no row for none).
	TraceOf(ctx context.Context, datasetID, otelTraceID string) (Rows, error)
	// Spans selects the trace_id, span_id and data of the span parts
	// (SpanPart) of traces, each trace's in the order they were written.
	Spans(ctx context.Context, traceIDs []string) (Rows, error)
	// Pending selects the trace_id, otel_trace_id, seq and fresh of the
	// pending traces f selects, those pending longest first; nil Rows when
	// f can select none.
	Pending(ctx context.Context, f store.PendingFilter) (Rows, error)
	// CountPending selects the number of pending traces.
	CountPending(ctx context.Context) (Rows, error)
}

// Tx is a backend's writing transaction.
type Tx interface {
	Reader
	// NextIndex selects a dataset's next_index, locking the dataset so
	// that requests into it take turns (the first spans of a trace sent
	// twice at once make one trace).
	NextIndex(ctx context.Context, datasetID string) (Rows, error)
	// TracesOf selects the otel_trace_id and trace_id of those of the
	// OpenTelemetry traces stored in a dataset.
	TracesOf(ctx context.Context, datasetID string, otelTraceIDs []string) (Rows, error)
	// InsertTraces stores the rows of OpenTelemetry traces seen for the
	// first time, with their indexes, and links each to its trace; with
	// their summaries (sqlstore.PutDigestKeys) unless Pending.
	InsertTraces(ctx context.Context, ownerID, datasetID string, ts []NewTrace, now time.Time) error
	// PutSummary stores the summary of r for a trace (sqlstore.PutDigestKeys)
	// without touching its row.
	PutSummary(ctx context.Context, traceID string, r *storeutil.Row) error
	// UpdateTrace replaces a stored trace's name, metadata, events and
	// content with those of r.
	UpdateTrace(ctx context.Context, traceID string, r *storeutil.Row) error
	// InsertSpanParts writes rows of traces' spans, after those written
	// before.
	InsertSpanParts(ctx context.Context, parts []SpanPart) error
	// Mark marks traces pending, or moves their marks on (touched, seq +
	// 1), in the order given (a trace once).
	Mark(ctx context.Context, datasetID string, marks []Mark, now time.Time) error
	// Unmark clears a trace's pending mark.
	Unmark(ctx context.Context, traceID string) error
	// LockMarks selects the trace_id and seq of the marks of those of ids
	// that are pending, locking them in trace id order (as AcceptSpans takes
	// them).
	LockMarks(ctx context.Context, ids []string) (Rows, error)
	// Enqueue queues traces written for the search indexer.
	Enqueue(ctx context.Context, traceIDs []string) error
	// Version names the row versions this transaction writes, for the
	// search indexer's Handover ("" where the backend names none).
	Version(ctx context.Context) (string, error)
	// Pushed records spans pushed into a dataset: its next index, created
	// traces more, and the time.
	Pushed(ctx context.Context, datasetID string, next int64, created int, now time.Time) error
}

// NewTrace is the row of an OpenTelemetry trace seen for the first time.
type NewTrace struct {
	OTelTraceID string
	Row         *storeutil.Row
	Index       int64
	// Pending: the row is a placeholder until the trace is built, and gets
	// no summary row (its sort keys, its dashboard row) before then. The
	// build writes the summary once instead of rewriting a placeholder's,
	// which cost each trace a second write of four sort-key index entries
	// and a dashboard row. A sorted list writes the placeholder's row of a
	// trace it must show before its build (sqlstore.fillDataset).
	Pending bool
}

// TraceSpans are spans to write of one trace.
type TraceSpans struct {
	TraceID string
	Spans   []store.StoredSpan
}

// Mark is a trace to mark pending; Fresh: it was just created.
type Mark struct {
	TraceID, OTelTraceID string
	Fresh                bool
}

// Traces is store.SpanTraces over a Backend, for a backend's store to
// embed.
type Traces struct{ b *Backend }

// New returns the span traces of a backend.
func New(b Backend) Traces { return Traces{&b} }

// PendingSpanTraces is store.SpanTraces.PendingSpanTraces.
func (t Traces) PendingSpanTraces(ctx context.Context) (int64, error) {
	n, _, err := scanOne[int64](t.b.Reader.CountPending(ctx))
	if err != nil {
		return 0, t.b.Fail(ctx, err, "pending spans")
	}
	return n, nil
}

// AddSpans is store.SpanTraces.AddSpans.
func (t Traces) AddSpans(ctx context.Context, ownerID, datasetID string, groups []store.SpanGroup,
	build func(otelTraceID string, spans [][]byte) (*trace.Trace, error)) ([]string, []error, error) {
	b := t.b
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
	tids, stored, err := readSpanGroups(ctx, b.Reader, datasetID, groups)
	if err != nil {
		return nil, nil, b.Fail(ctx, err, "add spans")
	}
	now := storeutil.Now()
	built := buildSpanGroups(groups, stored, build, now)
	var committed []builtTrace
	var version string
	err = b.Write(ctx, func(tx Tx) error {
		committed = committed[:0]
		next, err := nextIndex(ctx, tx, b, datasetID)
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
		var written []string
		for i, g := range groups {
			bt := &built[i]
			ids[i], errs[i] = "", bt.Err
			if bt.Err != nil {
				continue
			}
			r, tid := &bt.Row, tids[i]
			if tid == "" {
				tid = r.ID
				if next, err = insertTrace(ctx, tx, ownerID, datasetID, g.OTelTraceID, r, next, now); err != nil {
					return err
				}
				created++
			} else if err := tx.UpdateTrace(ctx, tid, r); err != nil {
				return err
			}
			written = append(written, tid)
			committed = append(committed, builtTrace{tid, bt})
			if err := tx.InsertSpanParts(ctx, partsOf([]TraceSpans{{tid, bt.Write}})); err != nil {
				return err
			}
			// Built from all its spans: a mark AcceptSpans left is met.
			if err := tx.Unmark(ctx, tid); err != nil {
				return err
			}
			ids[i] = tid
		}
		if version, err = b.version(ctx, tx, committed); err != nil {
			return err
		}
		if err := tx.Enqueue(ctx, written); err != nil {
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
	b.handOver(committed, version)
	return ids, errs, nil
}

// insertTrace stores the row of an OpenTelemetry trace seen for the first
// time, with the dataset's next index, and returns the index after.
func insertTrace(ctx context.Context, tx Tx, ownerID, datasetID, otelTraceID string, r *storeutil.Row, next int64, now time.Time) (int64, error) {
	idx, next := storeutil.AssignIndexes(next, []*int64{r.Given})
	return next, tx.InsertTraces(ctx, ownerID, datasetID, []NewTrace{{otelTraceID, r, idx[0], false}}, now)
}

// tracesOf reads the traces stored for OpenTelemetry traces in a dataset,
// by OpenTelemetry trace id.
func tracesOf(ctx context.Context, tx Tx, datasetID string, otelIDs []string) (map[string]string, error) {
	rows, err := tx.TracesOf(ctx, datasetID, otelIDs)
	if err != nil {
		return nil, err
	}
	known := make(map[string]string, len(otelIDs))
	for rows.Next() {
		var otelID, tid string
		if err := rows.Scan(&otelID, &tid); err != nil {
			rows.Close()
			return nil, err
		}
		known[otelID] = tid
	}
	return known, done(rows)
}

// readSpanGroups reads, for each group, its stored trace ("" for none) and
// the spans stored for it (nil for none).
func readSpanGroups(ctx context.Context, q Reader, datasetID string, groups []store.SpanGroup) ([]string, []map[string][]byte, error) {
	tids := make([]string, len(groups))
	stored := make([]map[string][]byte, len(groups))
	for i, g := range groups {
		var err error
		if tids[i], _, err = scanOne[string](q.TraceOf(ctx, datasetID, g.OTelTraceID)); err != nil {
			return nil, nil, err
		}
		if tids[i] == "" {
			continue
		}
		if stored[i], err = readSpans(ctx, q, tids[i]); err != nil {
			return nil, nil, err
		}
	}
	return tids, stored, nil
}

// AcceptSpans is store.SpanTraces.AcceptSpans.
func (t Traces) AcceptSpans(ctx context.Context, ownerID, datasetID string, groups []store.SpanGroup) ([]string, error) {
	b := t.b
	if !storeutil.ValidID(ownerID) {
		return nil, b.NotFound("accept spans: owner %q", ownerID)
	}
	if !storeutil.ValidID(datasetID) {
		return nil, b.NotFound("accept spans: dataset %q", datasetID)
	}
	ids := make([]string, len(groups))
	now := storeutil.Now()
	// Each OpenTelemetry trace's spans (its groups in the request merged)
	// are encoded into its part before the writer is taken: compressing
	// them is most of a part's cost, and needs no lock.
	parts, partAt := encodeGroups(groups)
	err := b.Write(ctx, func(tx Tx) error {
		next, err := nextIndex(ctx, tx, b, datasetID)
		if err != nil {
			return err
		}
		// A statement a kind for the whole request, not one per trace: in
		// PostgreSQL the dataset's row stays locked for the round trips.
		otelIDs := make([]string, len(groups))
		for i, g := range groups {
			otelIDs[i] = g.OTelTraceID
		}
		known, err := tracesOf(ctx, tx, datasetID, otelIDs)
		if err != nil {
			return err
		}
		var fresh []NewTrace
		writes := make([]SpanPart, 0, len(parts))
		var marks []Mark
		for i, g := range groups {
			tid, ok := known[g.OTelTraceID]
			if !ok {
				r, err := pendingRow(g.OTelTraceID, now)
				if err != nil {
					return err
				}
				var idx []int64
				idx, next = storeutil.AssignIndexes(next, []*int64{r.Given})
				fresh = append(fresh, NewTrace{g.OTelTraceID, &r, idx[0], true})
				tid = r.ID
				known[g.OTelTraceID] = tid
			}
			ids[i] = tid
			if partAt[i] < 0 { // the trace's second group in the request
				continue
			}
			if p := parts[partAt[i]]; p != nil {
				writes = append(writes, SpanPart{tid, p.SpanID, p.Data})
			}
			marks = append(marks, Mark{tid, g.OTelTraceID, !ok})
		}
		if len(fresh) > 0 {
			if err := tx.InsertTraces(ctx, ownerID, datasetID, fresh, now); err != nil {
				return err
			}
		}
		if err := tx.InsertSpanParts(ctx, writes); err != nil {
			return err
		}
		// Marks are taken in trace id order, as BuildPendingSpans takes them, so
		// that the two never wait for each other in a cycle.
		slices.SortFunc(marks, func(a, b Mark) int { return strings.Compare(a.TraceID, b.TraceID) })
		if err := tx.Mark(ctx, datasetID, marks, now); err != nil {
			return err
		}
		created := len(fresh)
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

// encodeGroups encodes the part of each OpenTelemetry trace of groups, its
// groups' spans merged (the last of an id wins), TraceID unset; partAt[i]
// is the place of group i's part in parts, -1 for a trace's later group.
// A trace without spans has a nil part.
func encodeGroups(groups []store.SpanGroup) (parts []*SpanPart, partAt []int) {
	partAt = make([]int, len(groups))
	first := make(map[string]int, len(groups)) // a trace's first group
	var spans [][]store.StoredSpan
	for i, g := range groups {
		if k, ok := first[g.OTelTraceID]; ok {
			partAt[i] = -1
			// Clipped: the first group's spans are the caller's.
			spans[partAt[k]] = append(slices.Clip(spans[partAt[k]]), g.Spans...)
			continue
		}
		first[g.OTelTraceID] = i
		partAt[i] = len(spans)
		spans = append(spans, g.Spans)
	}
	parts = make([]*SpanPart, len(spans))
	for k, sp := range spans {
		if write := dedupSpans(sp); len(write) > 0 {
			p := partOf("", write)
			parts[k] = &p
		}
	}
	return parts, partAt
}

// BuildPendingSpans is store.SpanTraces.BuildPendingSpans.
func (t Traces) BuildPendingSpans(ctx context.Context, f store.PendingFilter,
	build func(otelTraceID string, spans [][]byte) (*trace.Trace, error)) ([]store.PendingBuild, error) {
	b := t.b
	// Read and build before the writing transaction, so that requests keep
	// writing meanwhile; in it, a trace whose mark moved on since is read
	// and built again.
	ps, err := readPending(ctx, b.Reader, f)
	if err != nil {
		return nil, b.Fail(ctx, err, "build pending spans")
	}
	if len(ps) == 0 {
		return nil, nil
	}
	now := storeutil.Now()
	built := buildPending(ps, build, now)
	var out []store.PendingBuild
	var committed []builtTrace
	var version string
	err = b.Write(ctx, func(tx Tx) error {
		out, committed = out[:0], committed[:0]
		ids := make([]string, len(ps))
		for i, p := range ps {
			ids[i] = p.TraceID
		}
		seqs, err := scanSeqs(tx.LockMarks(ctx, ids))
		if err != nil {
			return err
		}
		read := func(id string) (map[string][]byte, error) { return readSpans(ctx, tx, id) }
		if err := rebuildMoved(ps, built, seqs, read, build, now); err != nil {
			return err
		}
		var written []string
		for i, p := range ps {
			if _, ok := seqs[p.TraceID]; !ok {
				continue // built meanwhile, or deleted
			}
			if err := tx.Unmark(ctx, p.TraceID); err != nil {
				return err
			}
			bt := &built[i]
			out = append(out, store.PendingBuild{TraceID: p.TraceID, Spans: len(p.Spans), Err: bt.Err})
			if bt.Err != nil {
				// A trace never built keeps its placeholder, now with the
				// summary row every trace that is not pending has.
				if p.Fresh {
					r, err := pendingRow(p.OTelTraceID, now)
					if err == nil {
						err = tx.PutSummary(ctx, p.TraceID, &r)
					}
					if err != nil {
						return err
					}
				}
				continue
			}
			r := &bt.Row
			if err := tx.UpdateTrace(ctx, p.TraceID, r); err != nil {
				return err
			}
			written = append(written, p.TraceID)
			committed = append(committed, builtTrace{p.TraceID, bt})
		}
		if version, err = b.version(ctx, tx, committed); err != nil {
			return err
		}
		return tx.Enqueue(ctx, written)
	})
	if err != nil {
		return nil, b.Fail(ctx, err, "build pending spans")
	}
	b.handOver(committed, version)
	return out, nil
}

// builtTrace is a trace written from a build, to hand over once committed.
type builtTrace struct {
	traceID string
	b       *spanBuild
}

// version names the row versions tx writes when it has traces to hand
// over.
func (b *Backend) version(ctx context.Context, tx Tx, committed []builtTrace) (string, error) {
	if len(committed) == 0 || b.Handover == nil {
		return "", nil
	}
	return tx.Version(ctx)
}

// handOver gives the search indexer the traces just committed, in row
// versions named version.
func (b *Backend) handOver(hs []builtTrace, version string) {
	for _, h := range hs {
		b.Handover.Put(h.traceID, version, h.b.Row.Content, h.b.Row.Metadata, h.b.Trace)
	}
}

// readPending reads the pending traces f selects with their spans.
func readPending(ctx context.Context, q Reader, f store.PendingFilter) ([]PendingTrace, error) {
	if f.TraceIDs != nil && len(f.TraceIDs) == 0 {
		return nil, nil
	}
	rows, err := q.Pending(ctx, f)
	if err != nil || rows == nil {
		return nil, err
	}
	var ps []PendingTrace
	for rows.Next() {
		var p PendingTrace
		if err := rows.Scan(&p.TraceID, &p.OTelTraceID, &p.Seq, &p.Fresh); err != nil {
			rows.Close()
			return nil, err
		}
		ps = append(ps, p)
	}
	if err := done(rows); err != nil {
		return nil, err
	}
	// The parts of many traces a query: a statement a trace had been a
	// fifth of the builder's reading (on SQLite's readers each is
	// prepared anew; on PostgreSQL each is a round trip).
	for lo := 0; lo < len(ps); lo += spansQueryTraces {
		chunk := ps[lo:min(lo+spansQueryTraces, len(ps))]
		ids := make([]string, len(chunk))
		for i, p := range chunk {
			ids[i] = p.TraceID
		}
		spans, damaged, err := readSpansOf(ctx, q, ids)
		if err != nil {
			return nil, err
		}
		for i := range chunk {
			p := &chunk[i]
			if p.Damaged = damaged[p.TraceID]; p.Damaged == nil {
				p.Spans = spans[p.TraceID]
			}
		}
	}
	return ps, nil
}

// spansQueryTraces is how many traces' parts readPending reads a query.
const spansQueryTraces = 256

// readSpans reads the spans stored for a trace by span id (empty, not nil,
// for none).
func readSpans(ctx context.Context, q Reader, traceID string) (map[string][]byte, error) {
	spans, damaged, err := readSpansOf(ctx, q, []string{traceID})
	if err != nil {
		return nil, err
	}
	if err := damaged[traceID]; err != nil {
		return nil, err
	}
	return spans[traceID], nil
}

// readSpansOf reads the spans stored for traces, by trace and span id
// (each of ids has a map, empty for none); a trace whose stored part does
// not unpack is in damaged instead (errDamaged), the others read all the
// same.
func readSpansOf(ctx context.Context, q Reader, ids []string) (spans map[string]map[string][]byte, damaged map[string]error, _ error) {
	rows, err := q.Spans(ctx, ids)
	if err != nil {
		return nil, nil, err
	}
	spans = make(map[string]map[string][]byte, len(ids))
	for _, id := range ids {
		spans[id] = map[string][]byte{}
	}
	for rows.Next() {
		var traceID, id string
		var data []byte
		if err := rows.Scan(&traceID, &id, &data); err != nil {
			rows.Close()
			return nil, nil, err
		}
		into, ok := spans[traceID]
		if !ok || damaged[traceID] != nil {
			continue
		}
		if err := unpackPart(id, data, func(id string, d []byte) { into[id] = d }); err != nil {
			if damaged == nil {
				damaged = map[string]error{}
			}
			damaged[traceID] = fmt.Errorf("stored spans of trace %s: %w (%w)", traceID, errDamaged, err)
			delete(spans, traceID)
		}
	}
	if err := done(rows); err != nil {
		return nil, nil, err
	}
	return spans, damaged, nil
}

// scanSeqs reads the rows of LockMarks.
func scanSeqs(rows Rows, err error) (map[string]int64, error) {
	if err != nil {
		return nil, err
	}
	seqs := map[string]int64{}
	for rows.Next() {
		var id string
		var seq int64
		if err := rows.Scan(&id, &seq); err != nil {
			rows.Close()
			return nil, err
		}
		seqs[id] = seq
	}
	return seqs, done(rows)
}

// nextIndex reads a dataset's next index in tx, locking the dataset.
func nextIndex(ctx context.Context, tx Tx, b *Backend, datasetID string) (int64, error) {
	next, ok, err := scanOne[int64](tx.NextIndex(ctx, datasetID))
	if err == nil && !ok {
		err = b.NotFound("dataset %s", datasetID)
	}
	return next, err
}

// scanOne reads the one column of the first row, if any (ok).
func scanOne[T any](rows Rows, err error) (v T, ok bool, _ error) {
	if err != nil {
		return v, false, err
	}
	if rows.Next() {
		if err := rows.Scan(&v); err != nil {
			rows.Close()
			return v, false, err
		}
		ok = true
	}
	return v, ok, done(rows)
}

// done closes rows read and returns the first error of reading them
// (pgx sets Err only once the rows are closed).
func done(rows Rows) error {
	cerr := rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	return cerr
}
