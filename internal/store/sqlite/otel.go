package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/lookout-dev/lookout/internal/store"
	"github.com/lookout-dev/lookout/internal/store/internal/spanstore"
	"github.com/lookout-dev/lookout/internal/store/internal/storeutil"
	"github.com/lookout-dev/lookout/internal/trace"
)

// The orchestration of the span writes is spanstore's; this file holds
// SQLite's statements for it. SQLite has one writer connection, so the
// writes need no row locks.

// AddSpans stores OpenTelemetry spans and rebuilds their traces.
func (s *Store) AddSpans(ctx context.Context, ownerID, datasetID string, groups []store.SpanGroup,
	build func(otelTraceID string, spans [][]byte) (*trace.Trace, error)) ([]string, []error, error) {
	return spanstore.Add(ctx, spanBackend{s}, ownerID, datasetID, groups, build)
}

// AcceptSpans stores OpenTelemetry spans and marks their traces pending.
func (s *Store) AcceptSpans(ctx context.Context, ownerID, datasetID string, groups []store.SpanGroup) ([]string, error) {
	return spanstore.Accept(ctx, spanBackend{s}, ownerID, datasetID, groups)
}

// BuildPendingSpans builds pending traces from their stored spans.
func (s *Store) BuildPendingSpans(ctx context.Context, f store.PendingFilter,
	build func(otelTraceID string, spans [][]byte) (*trace.Trace, error)) ([]store.PendingBuild, error) {
	return spanstore.BuildPending(ctx, spanBackend{s}, f, build)
}

// PendingSpanTraces counts the traces waiting to be built.
func (s *Store) PendingSpanTraces(ctx context.Context) (int64, error) {
	var n int64
	if err := s.r.QueryRowContext(ctx, `SELECT count(*) FROM otel_pending`).Scan(&n); err != nil {
		return 0, fail(ctx, err, "pending spans")
	}
	return n, nil
}

// spanBackend is the store as spanstore uses it.
type spanBackend struct{ s *Store }

func (b spanBackend) Reader() spanstore.Reader { return spanReader{b.s.r} }

func (b spanBackend) Write(ctx context.Context, fn func(spanstore.Tx) error) error {
	return b.s.write(ctx, func(tx *sql.Tx) error { return fn(spanTx{spanReader{tx}, tx}) })
}

func (spanBackend) NotFound(format string, args ...any) error { return notFound(format, args...) }

func (spanBackend) Fail(ctx context.Context, err error, what string) error {
	return fail(ctx, err, "%s", what)
}

// querier is what spanReader needs of a connection pool or transaction.
type querier interface {
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}

// spanReader reads spans and pending marks for spanstore.
type spanReader struct{ q querier }

func (r spanReader) TraceOf(ctx context.Context, datasetID, otelTraceID string) (string, error) {
	var tid string
	err := r.q.QueryRowContext(ctx, `SELECT trace_id FROM otel_traces WHERE dataset_id = ? AND otel_trace_id = ?`, datasetID, otelTraceID).Scan(&tid)
	if errors.Is(err, sql.ErrNoRows) {
		return "", nil
	}
	return tid, err
}

func (r spanReader) Spans(ctx context.Context, traceID string) (map[string][]byte, error) {
	spans := map[string][]byte{}
	rows, err := r.q.QueryContext(ctx, `SELECT span_id, data FROM otel_spans WHERE trace_id = ?`, traceID)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	for rows.Next() {
		var id string
		var data []byte
		if err := rows.Scan(&id, &data); err != nil {
			return nil, err
		}
		spans[id] = data
	}
	return spans, rows.Err()
}

func (r spanReader) Pending(ctx context.Context, f store.PendingFilter) ([]spanstore.PendingTrace, error) {
	query := `SELECT trace_id, otel_trace_id, seq, fresh FROM otel_pending WHERE `
	var args []any
	switch {
	case f.TraceIDs != nil:
		if len(f.TraceIDs) == 0 {
			return nil, nil
		}
		query += `trace_id IN (?` + strings.Repeat(", ?", len(f.TraceIDs)-1) + `)`
		for _, id := range f.TraceIDs {
			args = append(args, id)
		}
	case f.DatasetID != "":
		query += `dataset_id = ?`
		args = append(args, f.DatasetID)
	default:
		query += `(touched < ? OR since < ?)`
		args = append(args, micros(f.Quiet), micros(f.Stale))
	}
	query += ` ORDER BY since, trace_id`
	if f.Limit > 0 {
		query += fmt.Sprintf(` LIMIT %d`, f.Limit)
	}
	rows, err := r.q.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var ps []spanstore.PendingTrace
	for rows.Next() {
		var p spanstore.PendingTrace
		if err := rows.Scan(&p.TraceID, &p.OTelTraceID, &p.Seq, &p.Fresh); err != nil {
			return nil, err
		}
		ps = append(ps, p)
	}
	return ps, rows.Err()
}

// spanTx writes spans and traces for spanstore.
type spanTx struct {
	spanReader
	tx *sql.Tx
}

// LockIndex: the writer connection is the lock.
func (spanTx) LockIndex(context.Context) error { return nil }

func (t spanTx) NextIndex(ctx context.Context, datasetID string) (int64, error) {
	var next int64
	err := t.tx.QueryRowContext(ctx, `SELECT next_index FROM datasets WHERE id = ?`, datasetID).Scan(&next)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, notFound("dataset %s", datasetID)
	}
	return next, err
}

func (t spanTx) InsertTrace(ctx context.Context, ownerID, datasetID, otelTraceID string, r *storeutil.Row, idx int64, now time.Time) error {
	if _, err := t.tx.ExecContext(ctx, `INSERT INTO traces (id, dataset_id, owner_id, idx, name, metadata, hierarchy, event_count, created_at, encoding, content)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`, r.ID, datasetID, ownerID, idx, r.Name, optText(r.Metadata), optText(r.Hierarchy),
		r.EventCount, micros(now), r.Encoding, r.Content); err != nil {
		return fmt.Errorf("trace of OpenTelemetry trace %s: %w", otelTraceID, err)
	}
	_, err := t.tx.ExecContext(ctx, `INSERT INTO otel_traces (dataset_id, otel_trace_id, trace_id) VALUES (?, ?, ?)`, datasetID, otelTraceID, r.ID)
	return err
}

func (t spanTx) UpdateTrace(ctx context.Context, traceID string, r *storeutil.Row) error {
	_, err := t.tx.ExecContext(ctx, `UPDATE traces SET name = ?, metadata = ?, hierarchy = ?, event_count = ?, encoding = ?, content = ? WHERE id = ?`,
		r.Name, optText(r.Metadata), optText(r.Hierarchy), r.EventCount, r.Encoding, r.Content, traceID)
	return err
}

// spanRows is how many spans go in one INSERT: one statement instead of a
// round through the driver per span (3 parameters each, far below SQLite's
// limit of 32,766).
const spanRows = 256

func (t spanTx) UpsertSpans(ctx context.Context, traceID string, spans []store.StoredSpan) error {
	for len(spans) > 0 {
		n := min(len(spans), spanRows)
		var q strings.Builder
		q.WriteString(`INSERT INTO otel_spans (trace_id, span_id, data) VALUES `)
		args := make([]any, 0, 3*n)
		for i, sp := range spans[:n] {
			if i > 0 {
				q.WriteByte(',')
			}
			q.WriteString("(?, ?, ?)")
			args = append(args, traceID, sp.SpanID, sp.Data)
		}
		q.WriteString(` ON CONFLICT (trace_id, span_id) DO UPDATE SET data = excluded.data`)
		if _, err := t.tx.ExecContext(ctx, q.String(), args...); err != nil {
			return err
		}
		spans = spans[n:]
	}
	return nil
}

func (t spanTx) Mark(ctx context.Context, traceID, datasetID, otelTraceID string, now time.Time, fresh bool) error {
	_, err := t.tx.ExecContext(ctx, `INSERT INTO otel_pending (trace_id, dataset_id, otel_trace_id, since, touched, seq, fresh) VALUES (?, ?, ?, ?, ?, 1, ?)
		ON CONFLICT (trace_id) DO UPDATE SET touched = excluded.touched, seq = otel_pending.seq + 1`,
		traceID, datasetID, otelTraceID, micros(now), micros(now), fresh)
	return err
}

func (t spanTx) Unmark(ctx context.Context, traceID string) error {
	_, err := t.tx.ExecContext(ctx, `DELETE FROM otel_pending WHERE trace_id = ?`, traceID)
	return err
}

func (t spanTx) LockMarks(ctx context.Context, ids []string) (map[string]int64, error) {
	ps, err := t.Pending(ctx, store.PendingFilter{TraceIDs: ids})
	if err != nil {
		return nil, err
	}
	seqs := make(map[string]int64, len(ps))
	for _, p := range ps {
		seqs[p.TraceID] = p.Seq
	}
	return seqs, nil
}

// WriteIndex writes the new traces' documents first: writeDocs diffs only
// the others' rows against what they had, then the texts they no longer
// use go (a text they still hold never leaves the full-text index).
func (t spanTx) WriteIndex(ctx context.Context, docs []spanstore.Doc) error {
	ids := make([]string, 0, len(docs))
	ds := make([]storeutil.IndexDoc, 0, len(docs))
	nFresh := 0
	for _, fresh := range []bool{true, false} {
		for _, d := range docs {
			if d.Fresh == fresh {
				ids, ds = append(ids, d.TraceID), append(ds, d.IndexDoc)
			}
		}
		if fresh {
			nFresh = len(ds)
		}
	}
	if err := writeDocs(ctx, t.tx, ids, ds, nFresh); err != nil {
		return err
	}
	if nFresh < len(docs) {
		return sweepMarkedTexts(ctx, t.tx)
	}
	return nil
}

func (t spanTx) Pushed(ctx context.Context, datasetID string, next int64, created int, now time.Time) error {
	_, err := t.tx.ExecContext(ctx, `UPDATE datasets SET next_index = ?, trace_count = trace_count + ?, last_pushed = ? WHERE id = ?`,
		next, created, micros(now), datasetID)
	return err
}
