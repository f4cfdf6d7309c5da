package postgres

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/lookout-dev/lookout/internal/store"
	"github.com/lookout-dev/lookout/internal/store/internal/spanstore"
	"github.com/lookout-dev/lookout/internal/store/internal/sqlstore"
	"github.com/lookout-dev/lookout/internal/store/internal/storeutil"
)

// The orchestration of the span writes is spanstore's (Store embeds its
// Traces); this file holds PostgreSQL's statements for it, and its locks:
// the texts' advisory lock for a transaction that writes the index, the
// dataset's row for one that adds traces, the pending marks' rows in trace
// id order.

// writeSpans runs fn in a writing transaction for spanstore.
func (s *Store) writeSpans(ctx context.Context, fn func(spanstore.Tx) error) error {
	return s.write(ctx, func(tx pgx.Tx) error { return fn(spanTx{spanReader{tx}, tx, s}) })
}

// spanReader runs spanstore's queries on the pool or in a transaction.
type spanReader struct {
	q interface {
		Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	}
}

// pgRows are pgx.Rows as spanstore reads them.
type pgRows struct{ pgx.Rows }

func (r pgRows) Close() error {
	r.Rows.Close()
	return r.Rows.Err()
}

// query runs a query for spanstore, which reads the rows.
func (r spanReader) query(ctx context.Context, sql string, args ...any) (spanstore.Rows, error) {
	rows, err := r.q.Query(ctx, sql, args...)
	if err != nil {
		return nil, err
	}
	return pgRows{rows}, nil
}

func (r spanReader) TraceOf(ctx context.Context, datasetID, otelTraceID string) (spanstore.Rows, error) {
	return r.query(ctx, `SELECT trace_id::text FROM otel_traces WHERE dataset_id = $1 AND otel_trace_id = $2`, datasetID, otelTraceID)
}

func (r spanReader) Spans(ctx context.Context, traceID string) (spanstore.Rows, error) {
	return r.query(ctx, `SELECT span_id, data FROM otel_spans WHERE trace_id = $1`, traceID)
}

func (r spanReader) CountPending(ctx context.Context) (spanstore.Rows, error) {
	return r.query(ctx, `SELECT count(*) FROM otel_pending`)
}

func (r spanReader) Pending(ctx context.Context, f store.PendingFilter) (spanstore.Rows, error) {
	query := `SELECT trace_id::text, otel_trace_id, seq, fresh FROM otel_pending WHERE `
	var args []any
	switch {
	case f.TraceIDs != nil:
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
		later := make([]string, 0, len(f.Later))
		for _, id := range f.Later {
			if storeutil.ValidID(id) {
				later = append(later, id)
			}
		}
		query += `(touched < $1 OR since < $2 AND trace_id <> ALL($3::uuid[]))`
		args = append(args, f.Quiet, f.Stale, later)
	}
	query += ` ORDER BY since, trace_id`
	if f.Limit > 0 {
		query += fmt.Sprintf(` LIMIT %d`, f.Limit)
	}
	return r.query(ctx, query, args...)
}

// spanTx writes spans and traces for spanstore.
type spanTx struct {
	spanReader
	tx pgx.Tx
	s  *Store
}

// NextIndex takes the dataset's row FOR UPDATE.
func (t spanTx) NextIndex(ctx context.Context, datasetID string) (spanstore.Rows, error) {
	return t.query(ctx, `SELECT next_index FROM datasets WHERE id = $1 FOR UPDATE`, datasetID)
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
func (t spanTx) LockMarks(ctx context.Context, ids []string) (spanstore.Rows, error) {
	return t.query(ctx, `SELECT trace_id::text, seq FROM otel_pending WHERE trace_id = ANY($1::uuid[]) ORDER BY trace_id FOR UPDATE`, ids)
}

func (t spanTx) Enqueue(ctx context.Context, traceIDs []string) error {
	return t.s.Enqueue(ctx, sqlstore.Pgx(t.tx), traceIDs)
}

func (t spanTx) Pushed(ctx context.Context, datasetID string, next int64, created int, now time.Time) error {
	_, err := t.tx.Exec(ctx, `UPDATE datasets SET next_index = $1, trace_count = trace_count + $2, last_pushed = $3 WHERE id = $4`,
		next, created, now, datasetID)
	return err
}
