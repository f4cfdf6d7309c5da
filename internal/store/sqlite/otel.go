package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/lookout-dev/lookout/internal/store"
	"github.com/lookout-dev/lookout/internal/store/internal/spanstore"
	"github.com/lookout-dev/lookout/internal/store/internal/sqlstore"
	"github.com/lookout-dev/lookout/internal/store/internal/storeutil"
)

// The orchestration of the span writes is spanstore's (Store embeds its
// Traces); this file holds SQLite's statements for it. SQLite has one
// writer connection, so the writes need no row locks.

// writeSpans runs fn in a writing transaction for spanstore.
func (s *Store) writeSpans(ctx context.Context, fn func(spanstore.Tx) error) error {
	return s.write(ctx, func(tx *sql.Tx) error { return fn(spanTx{spanReader{tx}, tx, s}) })
}

// spanReader runs spanstore's queries on the pool or in a transaction.
type spanReader struct {
	q interface {
		QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	}
}

// query runs a query for spanstore, which reads the rows.
func (r spanReader) query(ctx context.Context, query string, args ...any) (spanstore.Rows, error) {
	rows, err := r.q.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	return rows, nil
}

func (r spanReader) TraceOf(ctx context.Context, datasetID, otelTraceID string) (spanstore.Rows, error) {
	return r.query(ctx, `SELECT trace_id FROM otel_traces WHERE dataset_id = ? AND otel_trace_id = ?`, datasetID, otelTraceID)
}

func (r spanReader) Spans(ctx context.Context, traceIDs []string) (spanstore.Rows, error) {
	if len(traceIDs) == 1 {
		return r.query(ctx, `SELECT trace_id, span_id, data FROM otel_span_parts WHERE trace_id = ? ORDER BY id`, traceIDs[0])
	}
	list, err := json.Marshal(traceIDs)
	if err != nil {
		return nil, err
	}
	return r.query(ctx, `SELECT trace_id, span_id, data FROM otel_span_parts
		WHERE trace_id IN (SELECT value FROM json_each(?)) ORDER BY trace_id, id`, string(list))
}

func (r spanReader) CountPending(ctx context.Context) (spanstore.Rows, error) {
	return r.query(ctx, `SELECT count(*) FROM otel_pending`)
}

func (r spanReader) Pending(ctx context.Context, f store.PendingFilter) (spanstore.Rows, error) {
	query := `SELECT trace_id, otel_trace_id, seq, fresh FROM otel_pending WHERE `
	var args []any
	switch {
	case f.TraceIDs != nil:
		var in string
		in, args = inList(f.TraceIDs)
		query += `trace_id IN ` + in
	case f.DatasetID != "":
		query += `dataset_id = ?`
		args = append(args, f.DatasetID)
	default:
		stale := `since < ?`
		args = append(args, micros(f.Quiet), micros(f.Stale))
		if len(f.Later) > 0 {
			in, later := inList(f.Later)
			stale += ` AND trace_id NOT IN ` + in
			args = append(args, later...)
		}
		query += `(touched < ? OR ` + stale + `)`
	}
	query += ` ORDER BY since, trace_id`
	if f.Limit > 0 {
		query += fmt.Sprintf(` LIMIT %d`, f.Limit)
	}
	return r.query(ctx, query, args...)
}

// inList is a list of ids as an IN list, "(?, ?)", and its arguments.
func inList(ids []string) (string, []any) {
	args := make([]any, len(ids))
	for i, id := range ids {
		args[i] = id
	}
	return `(?` + strings.Repeat(", ?", len(ids)-1) + `)`, args
}

// spanTx writes spans and traces for spanstore.
type spanTx struct {
	spanReader
	tx *sql.Tx
	s  *Store
}

func (t spanTx) NextIndex(ctx context.Context, datasetID string) (spanstore.Rows, error) {
	return t.query(ctx, `SELECT next_index FROM datasets WHERE id = ?`, datasetID)
}

func (t spanTx) TracesOf(ctx context.Context, datasetID string, otelTraceIDs []string) (spanstore.Rows, error) {
	list, err := json.Marshal(otelTraceIDs)
	if err != nil {
		return nil, err
	}
	return t.query(ctx, `SELECT otel_trace_id, trace_id FROM otel_traces WHERE dataset_id = ? AND otel_trace_id IN (SELECT value FROM json_each(?))`, datasetID, string(list))
}

func (t spanTx) InsertTraces(ctx context.Context, ownerID, datasetID string, ts []spanstore.NewTrace, now time.Time) error {
	traces := batcher{tx: t.tx, head: `INSERT INTO traces (id, dataset_id, owner_id, idx, name, metadata, hierarchy, event_count, created_at, encoding, content) VALUES `, cols: 11}
	links := batcher{tx: t.tx, head: `INSERT INTO otel_traces (dataset_id, otel_trace_id, trace_id) VALUES `, cols: 3}
	sums := batcher{tx: t.tx, head: `INSERT INTO trace_summaries (` + sqlstore.SummaryCols + `) VALUES `, cols: 7}
	for _, nt := range ts {
		r := nt.Row
		if err := traces.add(ctx, r.ID, datasetID, ownerID, nt.Index, r.Name, sqlstore.OptText(r.Metadata), sqlstore.OptText(r.Hierarchy),
			r.EventCount, micros(now), r.Encoding, r.Content); err != nil {
			return fmt.Errorf("traces of OpenTelemetry traces: %w", err)
		}
		if err := links.add(ctx, datasetID, nt.OTelTraceID, r.ID); err != nil {
			return err
		}
	}
	if err := traces.flush(ctx); err != nil {
		return fmt.Errorf("traces of OpenTelemetry traces: %w", err)
	}
	// The summaries after their traces, which they reference.
	for _, nt := range ts {
		if nt.Pending {
			continue
		}
		k := &nt.Row.Keys
		if err := sums.add(ctx, nt.Row.ID, string(nt.Row.Summary), datasetID, nt.Index, k.DurationMs, k.Tokens, k.Cost); err != nil {
			return fmt.Errorf("summaries of OpenTelemetry traces: %w", err)
		}
	}
	if err := sums.flush(ctx); err != nil {
		return fmt.Errorf("summaries of OpenTelemetry traces: %w", err)
	}
	return links.flush(ctx)
}

func (t spanTx) UpdateTrace(ctx context.Context, traceID string, r *storeutil.Row) error {
	if _, err := t.tx.ExecContext(ctx, `UPDATE traces SET name = ?, metadata = ?, hierarchy = ?, event_count = ?, encoding = ?, content = ? WHERE id = ?`,
		r.Name, sqlstore.OptText(r.Metadata), sqlstore.OptText(r.Hierarchy), r.EventCount, r.Encoding, r.Content, traceID); err != nil {
		return err
	}
	return t.PutSummary(ctx, traceID, r)
}

func (t spanTx) PutSummary(ctx context.Context, traceID string, r *storeutil.Row) error {
	return sqlstore.PutDigestKeys(ctx, sqlstore.SQL(t.tx), traceID, r.Summary, r.Keys)
}

func (t spanTx) InsertSpanParts(ctx context.Context, parts []spanstore.SpanPart) error {
	b := batcher{tx: t.tx, head: `INSERT INTO otel_span_parts (trace_id, span_id, data) VALUES `, cols: 3}
	for _, p := range parts {
		if err := b.add(ctx, p.TraceID, p.SpanID, p.Data); err != nil {
			return err
		}
	}
	return b.flush(ctx)
}

// Mark gives each mark a number never given before (a build clears a mark
// only if its number is the one it read), from the counter.
func (t spanTx) Mark(ctx context.Context, datasetID string, marks []spanstore.Mark, now time.Time) error {
	if len(marks) == 0 {
		return nil
	}
	var last int64
	if err := t.tx.QueryRowContext(ctx, `UPDATE otel_pending_seq SET n = n + ? RETURNING n`, len(marks)).Scan(&last); err != nil {
		return err
	}
	b := batcher{tx: t.tx, head: `INSERT INTO otel_pending (trace_id, dataset_id, otel_trace_id, since, touched, seq, fresh) VALUES `,
		tail: ` ON CONFLICT (trace_id) DO UPDATE SET touched = excluded.touched, seq = excluded.seq`, cols: 7}
	for i, m := range marks {
		if err := b.add(ctx, m.TraceID, datasetID, m.OTelTraceID, micros(now), micros(now), last-int64(len(marks)-1-i), m.Fresh); err != nil {
			return err
		}
	}
	return b.flush(ctx)
}

func (t spanTx) Unmark(ctx context.Context, traceID string) error {
	_, err := t.tx.ExecContext(ctx, `DELETE FROM otel_pending WHERE trace_id = ?`, traceID)
	return err
}

func (t spanTx) LockMarks(ctx context.Context, ids []string) (spanstore.Rows, error) {
	in, args := inList(ids)
	return t.query(ctx, `SELECT trace_id, seq FROM otel_pending WHERE trace_id IN `+in, args...)
}

// Version is "": the indexer compares a handed-over trace's content with
// the row's, a read of the local file.
func (spanTx) Version(context.Context) (string, error) { return "", nil }

func (t spanTx) Enqueue(ctx context.Context, traceIDs []string) error {
	return t.s.Enqueue(ctx, sqlstore.SQL(t.tx), traceIDs)
}

func (t spanTx) Pushed(ctx context.Context, datasetID string, next int64, created int, now time.Time) error {
	_, err := t.tx.ExecContext(ctx, `UPDATE datasets SET next_index = ?, trace_count = trace_count + ?, last_pushed = ? WHERE id = ?`,
		next, created, micros(now), datasetID)
	return err
}
