package postgres

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/lookout-dev/lookout/internal/store"
	"github.com/lookout-dev/lookout/internal/store/internal/storeutil"
	"github.com/lookout-dev/lookout/internal/trace"
)

// AddSpans stores OpenTelemetry spans and rebuilds their traces.
func (s *Store) AddSpans(ctx context.Context, ownerID, datasetID string, groups []store.SpanGroup,
	build func(otelTraceID string, spans [][]byte) (*trace.Trace, error)) ([]string, []error, error) {
	if !storeutil.ValidID(ownerID) {
		return nil, nil, notFound("add spans: owner %q", ownerID)
	}
	if !storeutil.ValidID(datasetID) {
		return nil, nil, notFound("add spans: dataset %q", datasetID)
	}
	ids := make([]string, len(groups))
	errs := make([]error, len(groups))
	// Rebuild the traces from what is stored before taking the dataset's
	// lock, so that other requests write meanwhile; in the transaction, a
	// group whose stored spans changed since is rebuilt again.
	tids, stored, err := readSpanGroups(ctx, s.pool, datasetID, groups)
	if err != nil {
		return nil, nil, fail(ctx, err, "add spans")
	}
	now := storeutil.Now()
	built := storeutil.BuildSpanGroups(groups, stored, build, now)
	err = s.write(ctx, func(tx pgx.Tx) error {
		if err := lockTexts(ctx, tx, true); err != nil {
			return err
		}
		var next int64
		// FOR UPDATE: requests into one dataset take turns, so that the
		// first spans of a trace sent twice at once make one trace.
		if err := tx.QueryRow(ctx, `SELECT next_index FROM datasets WHERE id = $1 FOR UPDATE`, datasetID).Scan(&next); err != nil {
			if errors.Is(err, pgx.ErrNoRows) {
				return notFound("dataset %s", datasetID)
			}
			return err
		}
		nowTids, nowStored, err := readSpanGroups(ctx, tx, datasetID, groups)
		if err != nil {
			return err
		}
		storeutil.RebuildChanged(groups, built, tids, stored, nowTids, nowStored, build, now)
		tids = nowTids
		created := 0
		var docIDs []string
		var docs []storeutil.IndexDoc
		var used []int64 // texts of the rebuilt traces' old index rows
		for i, g := range groups {
			b := &built[i]
			ids[i], errs[i] = "", b.Err
			if b.Err != nil {
				continue
			}
			r, tid := &b.Row, tids[i]
			if tid == "" {
				tid = r.ID
				if next, err = insertSpanTrace(ctx, tx, ownerID, datasetID, g.OTelTraceID, r, next, now); err != nil {
					return err
				}
				created++
			} else {
				if _, err := tx.Exec(ctx, `UPDATE traces SET name = $1, metadata = $2, hierarchy = $3, event_count = $4, encoding = $5, content = $6 WHERE id = $7`,
					r.Name, optText(r.Metadata), optText(r.Hierarchy), r.EventCount, r.Encoding, r.Content, tid); err != nil {
					return err
				}
				u, err := deleteDocRows(ctx, tx, tid)
				if err != nil {
					return err
				}
				used = append(used, u...)
			}
			docIDs = append(docIDs, tid)
			docs = append(docs, storeutil.IndexDoc{Doc: &r.Doc, Hashes: r.Hashes})
			if err := upsertSpans(ctx, tx, tid, b.Write); err != nil {
				return err
			}
			// Built from all its spans: a mark AcceptSpans left is met.
			if _, err := tx.Exec(ctx, `DELETE FROM otel_pending WHERE trace_id = $1`, tid); err != nil {
				return err
			}
			ids[i] = tid
		}
		// One index write for the request's traces, then one sweep: a text a
		// rebuilt trace still holds stays, rather than being deleted and
		// written again (its old rows went first).
		if err := insertDocs(ctx, tx, docIDs, docs); err != nil {
			return err
		}
		if err := sweepTexts(ctx, tx, used); err != nil {
			return err
		}
		_, err = tx.Exec(ctx, `UPDATE datasets SET next_index = $1, trace_count = trace_count + $2, last_pushed = $3 WHERE id = $4`,
			next, created, now, datasetID)
		return err
	})
	if err != nil {
		if errors.Is(err, store.ErrNotFound) {
			return nil, nil, err
		}
		return nil, nil, fail(ctx, err, "add spans")
	}
	return ids, errs, nil
}

// insertSpanTrace stores the row of an OpenTelemetry trace seen for the
// first time, with the dataset's next index, and returns the index after.
func insertSpanTrace(ctx context.Context, tx pgx.Tx, ownerID, datasetID, otelTraceID string, r *storeutil.Row, next int64, now time.Time) (int64, error) {
	idx, next := storeutil.AssignIndexes(next, []*int64{r.Given})
	if _, err := tx.Exec(ctx, `INSERT INTO traces (id, dataset_id, owner_id, idx, name, metadata, hierarchy, event_count, created_at, encoding, content)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)`, r.ID, datasetID, ownerID, idx[0], r.Name, optText(r.Metadata), optText(r.Hierarchy),
		r.EventCount, now, r.Encoding, r.Content); err != nil {
		return 0, fmt.Errorf("trace of OpenTelemetry trace %s: %w", otelTraceID, err)
	}
	_, err := tx.Exec(ctx, `INSERT INTO otel_traces (dataset_id, otel_trace_id, trace_id) VALUES ($1, $2, $3)`, datasetID, otelTraceID, r.ID)
	return next, err
}

// upsertSpans writes a trace's spans in one statement: arrays of span ids
// and data unnested into rows.
func upsertSpans(ctx context.Context, tx pgx.Tx, traceID string, spans []store.StoredSpan) error {
	if len(spans) == 0 {
		return nil
	}
	ids := make([]string, len(spans))
	data := make([][]byte, len(spans))
	for i, sp := range spans {
		ids[i], data[i] = sp.SpanID, sp.Data
	}
	_, err := tx.Exec(ctx, `INSERT INTO otel_spans (trace_id, span_id, data)
		SELECT $1, s, d FROM unnest($2::text[], $3::bytea[]) AS t (s, d)
		ON CONFLICT (trace_id, span_id) DO UPDATE SET data = excluded.data`, traceID, ids, data)
	return err
}

// querier is what readSpanGroups needs of a pool or a transaction.
type querier interface {
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
}

// readSpanGroups reads, for each group, its stored trace ("" for none) and
// the spans stored for it (nil for none).
func readSpanGroups(ctx context.Context, q querier, datasetID string, groups []store.SpanGroup) ([]string, []map[string][]byte, error) {
	tids := make([]string, len(groups))
	stored := make([]map[string][]byte, len(groups))
	for i, g := range groups {
		err := q.QueryRow(ctx, `SELECT trace_id::text FROM otel_traces WHERE dataset_id = $1 AND otel_trace_id = $2`, datasetID, g.OTelTraceID).Scan(&tids[i])
		if err != nil && !errors.Is(err, pgx.ErrNoRows) {
			return nil, nil, err
		}
		if tids[i] == "" {
			continue
		}
		stored[i] = map[string][]byte{}
		rows, err := q.Query(ctx, `SELECT span_id, data FROM otel_spans WHERE trace_id = $1`, tids[i])
		if err != nil {
			return nil, nil, err
		}
		for rows.Next() {
			var id string
			var data []byte
			if err := rows.Scan(&id, &data); err != nil {
				rows.Close()
				return nil, nil, err
			}
			stored[i][id] = data
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return nil, nil, err
		}
	}
	return tids, stored, nil
}

// AcceptSpans stores OpenTelemetry spans and marks their traces pending.
func (s *Store) AcceptSpans(ctx context.Context, ownerID, datasetID string, groups []store.SpanGroup) ([]string, error) {
	if !storeutil.ValidID(ownerID) {
		return nil, notFound("accept spans: owner %q", ownerID)
	}
	if !storeutil.ValidID(datasetID) {
		return nil, notFound("accept spans: dataset %q", datasetID)
	}
	ids := make([]string, len(groups))
	now := storeutil.Now()
	err := s.write(ctx, func(tx pgx.Tx) error {
		var next int64
		// FOR UPDATE: requests into one dataset take turns, so that the
		// first spans of a trace sent twice at once make one trace.
		if err := tx.QueryRow(ctx, `SELECT next_index FROM datasets WHERE id = $1 FOR UPDATE`, datasetID).Scan(&next); err != nil {
			if errors.Is(err, pgx.ErrNoRows) {
				return notFound("dataset %s", datasetID)
			}
			return err
		}
		created := 0
		type mark struct {
			tid, otelID string
			fresh       bool
		}
		var marks []mark
		for i, g := range groups {
			tid := ""
			err := tx.QueryRow(ctx, `SELECT trace_id::text FROM otel_traces WHERE dataset_id = $1 AND otel_trace_id = $2`, datasetID, g.OTelTraceID).Scan(&tid)
			if err != nil && !errors.Is(err, pgx.ErrNoRows) {
				return err
			}
			fresh := tid == ""
			if fresh {
				r, err := storeutil.PendingRow(g.OTelTraceID, now)
				if err != nil {
					return err
				}
				tid = r.ID
				if next, err = insertSpanTrace(ctx, tx, ownerID, datasetID, g.OTelTraceID, &r, next, now); err != nil {
					return err
				}
				created++
			}
			_, write := storeutil.MergeSpans(nil, g.Spans)
			if err := upsertSpans(ctx, tx, tid, write); err != nil {
				return err
			}
			marks = append(marks, mark{tid, g.OTelTraceID, fresh})
			ids[i] = tid
		}
		// Marks are taken in trace id order, as BuildPendingSpans takes
		// them, so that the two never wait for each other in a cycle.
		slices.SortFunc(marks, func(a, b mark) int { return strings.Compare(a.tid, b.tid) })
		for _, m := range marks {
			if _, err := tx.Exec(ctx, `INSERT INTO otel_pending (trace_id, dataset_id, otel_trace_id, since, touched, seq, fresh) VALUES ($1, $2, $3, $4, $4, 1, $5)
				ON CONFLICT (trace_id) DO UPDATE SET touched = excluded.touched, seq = otel_pending.seq + 1`,
				m.tid, datasetID, m.otelID, now, m.fresh); err != nil {
				return err
			}
		}
		_, err := tx.Exec(ctx, `UPDATE datasets SET next_index = $1, trace_count = trace_count + $2, last_pushed = $3 WHERE id = $4`,
			next, created, now, datasetID)
		return err
	})
	if err != nil {
		if errors.Is(err, store.ErrNotFound) {
			return nil, err
		}
		return nil, fail(ctx, err, "accept spans")
	}
	return ids, nil
}

// BuildPendingSpans builds pending traces from their stored spans.
func (s *Store) BuildPendingSpans(ctx context.Context, f store.PendingFilter,
	build func(otelTraceID string, spans [][]byte) (*trace.Trace, error)) ([]store.PendingBuild, error) {
	// Read and build before the transaction; in it, a trace whose mark
	// moved on since is read and built again.
	ps, err := readPending(ctx, s.pool, f, true)
	if err != nil {
		return nil, fail(ctx, err, "build pending spans")
	}
	if len(ps) == 0 {
		return nil, nil
	}
	now := storeutil.Now()
	built := storeutil.BuildPending(ps, build, now)
	var out []store.PendingBuild
	err = s.write(ctx, func(tx pgx.Tx) error {
		out = out[:0]
		if err := lockTexts(ctx, tx, true); err != nil {
			return err
		}
		ids := make([]string, len(ps))
		for i, p := range ps {
			ids[i] = p.TraceID
		}
		// Locked in trace id order, as AcceptSpans takes them: a build
		// waits for a request marking its traces, and never in a cycle.
		rows, err := tx.Query(ctx, `SELECT trace_id::text, seq FROM otel_pending WHERE trace_id = ANY($1::uuid[]) ORDER BY trace_id FOR UPDATE`, ids)
		if err != nil {
			return err
		}
		seqs := map[string]int64{}
		for rows.Next() {
			var id string
			var seq int64
			if err := rows.Scan(&id, &seq); err != nil {
				rows.Close()
				return err
			}
			seqs[id] = seq
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		read := func(id string) (map[string][]byte, error) { return readSpans(ctx, tx, id) }
		if err := storeutil.RebuildMoved(ps, built, seqs, read, build, now); err != nil {
			return err
		}
		var docIDs []string
		var docs []storeutil.IndexDoc
		var used []int64 // texts of the rebuilt traces' old index rows
		for i, p := range ps {
			if _, ok := seqs[p.TraceID]; !ok {
				continue // built meanwhile, or deleted
			}
			if _, err := tx.Exec(ctx, `DELETE FROM otel_pending WHERE trace_id = $1`, p.TraceID); err != nil {
				return err
			}
			b := &built[i]
			out = append(out, store.PendingBuild{TraceID: p.TraceID, Err: b.Err})
			if b.Err != nil {
				continue
			}
			r := &b.Row
			if _, err := tx.Exec(ctx, `UPDATE traces SET name = $1, metadata = $2, hierarchy = $3, event_count = $4, encoding = $5, content = $6 WHERE id = $7`,
				r.Name, optText(r.Metadata), optText(r.Hierarchy), r.EventCount, r.Encoding, r.Content, p.TraceID); err != nil {
				return err
			}
			if !p.Fresh {
				u, err := deleteDocRows(ctx, tx, p.TraceID)
				if err != nil {
					return err
				}
				used = append(used, u...)
			}
			docIDs = append(docIDs, p.TraceID)
			docs = append(docs, storeutil.IndexDoc{Doc: &r.Doc, Hashes: r.Hashes})
		}
		if err := insertDocs(ctx, tx, docIDs, docs); err != nil {
			return err
		}
		return sweepTexts(ctx, tx, used)
	})
	if err != nil {
		return nil, fail(ctx, err, "build pending spans")
	}
	return out, nil
}

// PendingSpanTraces counts the traces waiting to be built.
func (s *Store) PendingSpanTraces(ctx context.Context) (int64, error) {
	var n int64
	if err := s.pool.QueryRow(ctx, `SELECT count(*) FROM otel_pending`).Scan(&n); err != nil {
		return 0, fail(ctx, err, "pending spans")
	}
	return n, nil
}

// readPending reads the pending traces f selects, with their spans if
// withSpans.
func readPending(ctx context.Context, q querier, f store.PendingFilter, withSpans bool) ([]storeutil.PendingTrace, error) {
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
	rows, err := q.Query(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	var ps []storeutil.PendingTrace
	for rows.Next() {
		var p storeutil.PendingTrace
		if err := rows.Scan(&p.TraceID, &p.OTelTraceID, &p.Seq, &p.Fresh); err != nil {
			rows.Close()
			return nil, err
		}
		ps = append(ps, p)
	}
	rows.Close()
	if err := rows.Err(); err != nil || !withSpans {
		return ps, err
	}
	for i := range ps {
		if ps[i].Spans, err = readSpans(ctx, q, ps[i].TraceID); err != nil {
			return nil, err
		}
	}
	return ps, nil
}

// readSpans reads the spans stored for a trace.
func readSpans(ctx context.Context, q querier, traceID string) (map[string][]byte, error) {
	rows, err := q.Query(ctx, `SELECT span_id, data FROM otel_spans WHERE trace_id = $1`, traceID)
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
