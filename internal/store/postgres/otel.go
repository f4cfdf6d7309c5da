package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/lookout-dev/lookout/internal/store"
	"github.com/lookout-dev/lookout/internal/store/internal/spanstore"
	"github.com/lookout-dev/lookout/internal/store/internal/storeutil"
	"github.com/lookout-dev/lookout/internal/trace"
)

// The orchestration of the span writes is spanstore's; this file holds
// PostgreSQL's statements for it, and its locks: the texts' advisory lock
// for a transaction that writes the index, the dataset's row for one that
// adds traces, the pending marks' rows in trace id order.

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
	if err := s.pool.QueryRow(ctx, `SELECT count(*) FROM otel_pending`).Scan(&n); err != nil {
		return 0, fail(ctx, err, "pending spans")
	}
	return n, nil
}

// spanBackend is the store as spanstore uses it.
type spanBackend struct{ s *Store }

func (b spanBackend) Reader() spanstore.Reader { return spanReader{b.s.pool} }

func (b spanBackend) Write(ctx context.Context, fn func(spanstore.Tx) error) error {
	return b.s.write(ctx, func(tx pgx.Tx) error { return fn(spanTx{spanReader{tx}, tx}) })
}

func (spanBackend) NotFound(format string, args ...any) error { return notFound(format, args...) }

func (spanBackend) Fail(ctx context.Context, err error, what string) error {
	return fail(ctx, err, "%s", what)
}

// querier is what spanReader needs of a pool or a transaction.
type querier interface {
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
}

// spanReader reads spans and pending marks for spanstore.
type spanReader struct{ q querier }

func (r spanReader) TraceOf(ctx context.Context, datasetID, otelTraceID string) (string, error) {
	var tid string
	err := r.q.QueryRow(ctx, `SELECT trace_id::text FROM otel_traces WHERE dataset_id = $1 AND otel_trace_id = $2`, datasetID, otelTraceID).Scan(&tid)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", nil
	}
	return tid, err
}

func (r spanReader) Spans(ctx context.Context, traceID string) (map[string][]byte, error) {
	rows, err := r.q.Query(ctx, `SELECT span_id, data FROM otel_spans WHERE trace_id = $1`, traceID)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	spans := map[string][]byte{}
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
	query := `SELECT trace_id::text, otel_trace_id, seq, fresh FROM otel_pending WHERE `
	var args []any
	switch {
	case f.TraceIDs != nil:
		if len(f.TraceIDs) == 0 {
			return nil, nil
		}
		valid := make([]string, 0, len(f.TraceIDs))
		for _, id := range f.TraceIDs {
			if storeutil.ValidID(id) {
				valid = append(valid, id)
			}
		}
		query += `trace_id = ANY($1::uuid[])`
		args = append(args, valid)
	case f.DatasetID != "":
		if !storeutil.ValidID(f.DatasetID) {
			return nil, nil
		}
		query += `dataset_id = $1`
		args = append(args, f.DatasetID)
	default:
		query += `(touched < $1 OR since < $2)`
		args = append(args, f.Quiet, f.Stale)
	}
	query += ` ORDER BY since, trace_id`
	if f.Limit > 0 {
		query += fmt.Sprintf(` LIMIT %d`, f.Limit)
	}
	rows, err := r.q.Query(ctx, query, args...)
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
	tx pgx.Tx
}

func (t spanTx) LockIndex(ctx context.Context) error { return lockTexts(ctx, t.tx, true) }

// NextIndex takes the dataset's row FOR UPDATE: requests into one dataset
// take turns, so that the first spans of a trace sent twice at once make
// one trace.
func (t spanTx) NextIndex(ctx context.Context, datasetID string) (int64, error) {
	var next int64
	err := t.tx.QueryRow(ctx, `SELECT next_index FROM datasets WHERE id = $1 FOR UPDATE`, datasetID).Scan(&next)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, notFound("dataset %s", datasetID)
	}
	return next, err
}

func (t spanTx) InsertTrace(ctx context.Context, ownerID, datasetID, otelTraceID string, r *storeutil.Row, idx int64, now time.Time) error {
	if _, err := t.tx.Exec(ctx, `INSERT INTO traces (id, dataset_id, owner_id, idx, name, metadata, hierarchy, event_count, created_at, encoding, content)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)`, r.ID, datasetID, ownerID, idx, r.Name, optText(r.Metadata), optText(r.Hierarchy),
		r.EventCount, now, r.Encoding, r.Content); err != nil {
		return fmt.Errorf("trace of OpenTelemetry trace %s: %w", otelTraceID, err)
	}
	_, err := t.tx.Exec(ctx, `INSERT INTO otel_traces (dataset_id, otel_trace_id, trace_id) VALUES ($1, $2, $3)`, datasetID, otelTraceID, r.ID)
	return err
}

func (t spanTx) UpdateTrace(ctx context.Context, traceID string, r *storeutil.Row) error {
	_, err := t.tx.Exec(ctx, `UPDATE traces SET name = $1, metadata = $2, hierarchy = $3, event_count = $4, encoding = $5, content = $6 WHERE id = $7`,
		r.Name, optText(r.Metadata), optText(r.Hierarchy), r.EventCount, r.Encoding, r.Content, traceID)
	return err
}

// UpsertSpans writes a trace's spans in one statement: arrays of span ids
// and data unnested into rows.
func (t spanTx) UpsertSpans(ctx context.Context, traceID string, spans []store.StoredSpan) error {
	if len(spans) == 0 {
		return nil
	}
	ids := make([]string, len(spans))
	data := make([][]byte, len(spans))
	for i, sp := range spans {
		ids[i], data[i] = sp.SpanID, sp.Data
	}
	_, err := t.tx.Exec(ctx, `INSERT INTO otel_spans (trace_id, span_id, data)
		SELECT $1, s, d FROM unnest($2::text[], $3::bytea[]) AS t (s, d)
		ON CONFLICT (trace_id, span_id) DO UPDATE SET data = excluded.data`, traceID, ids, data)
	return err
}

func (t spanTx) Mark(ctx context.Context, traceID, datasetID, otelTraceID string, now time.Time, fresh bool) error {
	_, err := t.tx.Exec(ctx, `INSERT INTO otel_pending (trace_id, dataset_id, otel_trace_id, since, touched, seq, fresh) VALUES ($1, $2, $3, $4, $4, 1, $5)
		ON CONFLICT (trace_id) DO UPDATE SET touched = excluded.touched, seq = otel_pending.seq + 1`,
		traceID, datasetID, otelTraceID, now, fresh)
	return err
}

func (t spanTx) Unmark(ctx context.Context, traceID string) error {
	_, err := t.tx.Exec(ctx, `DELETE FROM otel_pending WHERE trace_id = $1`, traceID)
	return err
}

// LockMarks locks the marks in trace id order, as AcceptSpans takes them:
// a build waits for a request marking its traces, and never in a cycle.
func (t spanTx) LockMarks(ctx context.Context, ids []string) (map[string]int64, error) {
	rows, err := t.tx.Query(ctx, `SELECT trace_id::text, seq FROM otel_pending WHERE trace_id = ANY($1::uuid[]) ORDER BY trace_id FOR UPDATE`, ids)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	seqs := map[string]int64{}
	for rows.Next() {
		var id string
		var seq int64
		if err := rows.Scan(&id, &seq); err != nil {
			return nil, err
		}
		seqs[id] = seq
	}
	return seqs, rows.Err()
}

// WriteIndex deletes the old index rows of the traces that had some, writes
// all the documents at once, then sweeps the texts no row uses any more: a
// text a rebuilt trace still holds stays, rather than being deleted and
// written again.
func (t spanTx) WriteIndex(ctx context.Context, docs []spanstore.Doc) error {
	ids := make([]string, len(docs))
	ds := make([]storeutil.IndexDoc, len(docs))
	var used []int64 // texts of the old index rows
	for i, d := range docs {
		ids[i], ds[i] = d.TraceID, d.IndexDoc
		if d.Fresh {
			continue
		}
		u, err := deleteDocRows(ctx, t.tx, d.TraceID)
		if err != nil {
			return err
		}
		used = append(used, u...)
	}
	if err := insertDocs(ctx, t.tx, ids, ds); err != nil {
		return err
	}
	return sweepTexts(ctx, t.tx, used)
}

func (t spanTx) Pushed(ctx context.Context, datasetID string, next int64, created int, now time.Time) error {
	_, err := t.tx.Exec(ctx, `UPDATE datasets SET next_index = $1, trace_count = trace_count + $2, last_pushed = $3 WHERE id = $4`,
		next, created, now, datasetID)
	return err
}
