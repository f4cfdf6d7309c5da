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

func (r spanReader) Spans(ctx context.Context, traceIDs []string) (spanstore.Rows, error) {
	return r.query(ctx, `SELECT trace_id::text, span_id, data FROM otel_span_parts WHERE trace_id = ANY($1::uuid[]) ORDER BY trace_id, id`, traceIDs)
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

// TracesOf looks each id up on its own (a lateral subquery) and has the
// statement planned for each call (QueryExecModeExec): otel_traces grows
// from empty under a load, and a plan cached while it was small, or made
// without statistics, read all the dataset's rows and tested each against
// every id of the request (9.5 ms a request at 7,000 traces under
// bench/peers, growing with the table) instead of descending the key once
// an id.
func (t spanTx) TracesOf(ctx context.Context, datasetID string, otelTraceIDs []string) (spanstore.Rows, error) {
	return t.query(ctx, `SELECT u.id, o.trace_id FROM unnest($2::text[]) AS u (id)
		CROSS JOIN LATERAL (SELECT trace_id::text FROM otel_traces WHERE dataset_id = $1 AND otel_trace_id = u.id LIMIT 1) o`,
		pgx.QueryExecModeExec, datasetID, otelTraceIDs)
}

// InsertTraces inserts the traces and their links in a statement each:
// columns as arrays unnested into rows.
func (t spanTx) InsertTraces(ctx context.Context, ownerID, datasetID string, ts []spanstore.NewTrace, now time.Time) error {
	n := len(ts)
	ids, otelIDs, names := make([]string, n), make([]string, n), make([]string, n)
	meta, hier := make([]*string, n), make([]*string, n)
	idx := make([]int64, n)
	events, enc := make([]int32, n), make([]int16, n)
	content := make([][]byte, n)
	for i, nt := range ts {
		r := nt.Row
		ids[i], otelIDs[i], names[i], idx[i] = r.ID, nt.OTelTraceID, r.Name, nt.Index
		meta[i], hier[i] = optString(r.Metadata), optString(r.Hierarchy)
		events[i], enc[i], content[i] = int32(r.EventCount), int16(r.Encoding), r.Content
	}
	if _, err := t.tx.Exec(ctx, `INSERT INTO traces (id, dataset_id, owner_id, idx, name, metadata, hierarchy, event_count, created_at, encoding, content)
		SELECT id, $1, $2, idx, name, metadata, hierarchy, events, $3, enc, content
		FROM unnest($4::uuid[], $5::bigint[], $6::text[], $7::text[], $8::text[], $9::int[], $10::smallint[], $11::bytea[])
			AS t (id, idx, name, metadata, hierarchy, events, enc, content)`,
		datasetID, ownerID, now, ids, idx, names, meta, hier, events, enc, content); err != nil {
		return fmt.Errorf("traces of OpenTelemetry traces: %w", err)
	}
	var sumIDs, sums []string
	var sumIdx, tokens []int64
	var dur, cost []float64
	for i, nt := range ts {
		if nt.Pending {
			continue
		}
		sumIDs, sumIdx, sums = append(sumIDs, ids[i]), append(sumIdx, idx[i]), append(sums, string(nt.Row.Summary))
		dur, tokens, cost = append(dur, nt.Row.Keys.DurationMs), append(tokens, nt.Row.Keys.Tokens), append(cost, nt.Row.Keys.Cost)
	}
	if len(sums) > 0 {
		if _, err := t.tx.Exec(ctx, `INSERT INTO trace_summaries (`+sqlstore.SummaryCols+`)
			SELECT id, s, $3::uuid, idx, dur, tok, cost FROM unnest($1::uuid[], $2::text[], $4::bigint[], $5::float8[], $6::bigint[], $7::float8[]) AS t (id, s, idx, dur, tok, cost)`,
			sumIDs, sums, datasetID, sumIdx, dur, tokens, cost); err != nil {
			return fmt.Errorf("summaries of OpenTelemetry traces: %w", err)
		}
	}
	_, err := t.tx.Exec(ctx, `INSERT INTO otel_traces (dataset_id, otel_trace_id, trace_id) SELECT $1, o, id FROM unnest($2::text[], $3::uuid[]) AS t (o, id)`,
		datasetID, otelIDs, ids)
	return err
}

// optString is nil for nil, else b as a string.
func optString(b []byte) *string {
	if b == nil {
		return nil
	}
	s := string(b)
	return &s
}

func (t spanTx) UpdateTrace(ctx context.Context, traceID string, r *storeutil.Row) error {
	if _, err := t.tx.Exec(ctx, `UPDATE traces SET name = $1, metadata = $2, hierarchy = $3, event_count = $4, encoding = $5, content = $6 WHERE id = $7`,
		r.Name, sqlstore.OptText(r.Metadata), sqlstore.OptText(r.Hierarchy), r.EventCount, r.Encoding, r.Content, traceID); err != nil {
		return err
	}
	return t.PutSummary(ctx, traceID, r)
}

func (t spanTx) PutSummary(ctx context.Context, traceID string, r *storeutil.Row) error {
	return sqlstore.PutDigestKeys(ctx, sqlstore.Pgx(t.tx), traceID, r.Summary, r.Keys)
}

// InsertSpanParts writes the parts in one statement: arrays of trace
// ids, span ids and data; ids follow the arrays' order.
func (t spanTx) InsertSpanParts(ctx context.Context, parts []spanstore.SpanPart) error {
	if len(parts) == 0 {
		return nil
	}
	tids, ids, data := make([]string, len(parts)), make([]string, len(parts)), make([][]byte, len(parts))
	for i, p := range parts {
		tids[i], ids[i], data[i] = p.TraceID, p.SpanID, p.Data
	}
	_, err := t.tx.Exec(ctx, `INSERT INTO otel_span_parts (trace_id, span_id, data)
		SELECT tr, s, d FROM unnest($1::uuid[], $2::text[], $3::bytea[]) WITH ORDINALITY AS t (tr, s, d, n) ORDER BY n`, tids, ids, data)
	return err
}

// Mark takes the marks' rows in the order given (WITH ORDINALITY): the
// order spanstore locks them in. Each gets a number never given before
// (a build clears a mark only if its number is the one it read).
func (t spanTx) Mark(ctx context.Context, datasetID string, marks []spanstore.Mark, now time.Time) error {
	if len(marks) == 0 {
		return nil
	}
	tids, otelIDs, fresh := make([]string, len(marks)), make([]string, len(marks)), make([]bool, len(marks))
	for i, m := range marks {
		tids[i], otelIDs[i], fresh[i] = m.TraceID, m.OTelTraceID, m.Fresh
	}
	_, err := t.tx.Exec(ctx, `INSERT INTO otel_pending (trace_id, dataset_id, otel_trace_id, since, touched, seq, fresh)
		SELECT tr, $1, o, $2, $2, nextval('otel_pending_seq'), f FROM unnest($3::uuid[], $4::text[], $5::bool[]) WITH ORDINALITY AS t (tr, o, f, n) ORDER BY n
		ON CONFLICT (trace_id) DO UPDATE SET touched = excluded.touched, seq = excluded.seq`,
		datasetID, now, tids, otelIDs, fresh)
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

func (t spanTx) Version(ctx context.Context) (string, error) {
	return txVersion(ctx, sqlstore.Pgx(t.tx))
}

func (t spanTx) Enqueue(ctx context.Context, traceIDs []string) error {
	return t.s.Enqueue(ctx, sqlstore.Pgx(t.tx), traceIDs)
}

func (t spanTx) Pushed(ctx context.Context, datasetID string, next int64, created int, now time.Time) error {
	_, err := t.tx.Exec(ctx, `UPDATE datasets SET next_index = $1, trace_count = trace_count + $2, last_pushed = $3 WHERE id = $4`,
		next, created, now, datasetID)
	return err
}
