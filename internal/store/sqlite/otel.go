package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

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
	// Rebuild the traces from what is stored before taking the writer, so
	// that other requests write meanwhile; in the transaction, a group whose
	// stored spans changed since is rebuilt again.
	tids, stored, err := readSpanGroups(ctx, s.r, datasetID, groups)
	if err != nil {
		return nil, nil, fail(ctx, err, "add spans")
	}
	now := storeutil.Now()
	built := storeutil.BuildSpanGroups(groups, stored, build, now)
	err = s.write(ctx, func(tx *sql.Tx) error {
		var next int64
		if err := tx.QueryRowContext(ctx, `SELECT next_index FROM datasets WHERE id = ?`, datasetID).Scan(&next); err != nil {
			if errors.Is(err, sql.ErrNoRows) {
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
		var rebuiltIDs []string // traces stored before, and their new index docs
		var rebuilt []storeutil.IndexDoc
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
				docIDs = append(docIDs, tid)
				docs = append(docs, storeutil.IndexDoc{Doc: &r.Doc, Hashes: r.Hashes})
			} else {
				if _, err := tx.ExecContext(ctx, `UPDATE traces SET name = ?, metadata = ?, hierarchy = ?, event_count = ?, encoding = ?, content = ? WHERE id = ?`,
					r.Name, optText(r.Metadata), optText(r.Hierarchy), r.EventCount, r.Encoding, r.Content, tid); err != nil {
					return err
				}
				rebuiltIDs = append(rebuiltIDs, tid)
				rebuilt = append(rebuilt, storeutil.IndexDoc{Doc: &r.Doc, Hashes: r.Hashes})
			}
			if err := upsertSpans(ctx, tx, tid, b.Write); err != nil {
				return err
			}
			// Built from all its spans: a mark AcceptSpans left is met.
			if _, err := tx.ExecContext(ctx, `DELETE FROM otel_pending WHERE trace_id = ?`, tid); err != nil {
				return err
			}
			ids[i] = tid
		}
		// One index write for the new traces; the rebuilt ones change only
		// the rows that differ, then the texts they no longer use go (a text
		// they still hold never leaves the full-text index).
		if err := writeDocs(ctx, tx, append(docIDs, rebuiltIDs...), append(docs, rebuilt...), len(docs)); err != nil {
			return err
		}
		if len(rebuilt) > 0 {
			if err := sweepMarkedTexts(ctx, tx); err != nil {
				return err
			}
		}
		_, err = tx.ExecContext(ctx, `UPDATE datasets SET next_index = ?, trace_count = trace_count + ?, last_pushed = ? WHERE id = ?`,
			next, created, micros(now), datasetID)
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
func insertSpanTrace(ctx context.Context, tx *sql.Tx, ownerID, datasetID, otelTraceID string, r *storeutil.Row, next int64, now time.Time) (int64, error) {
	idx, next := storeutil.AssignIndexes(next, []*int64{r.Given})
	if _, err := tx.ExecContext(ctx, `INSERT INTO traces (id, dataset_id, owner_id, idx, name, metadata, hierarchy, event_count, created_at, encoding, content)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`, r.ID, datasetID, ownerID, idx[0], r.Name, optText(r.Metadata), optText(r.Hierarchy),
		r.EventCount, micros(now), r.Encoding, r.Content); err != nil {
		return 0, fmt.Errorf("trace of OpenTelemetry trace %s: %w", otelTraceID, err)
	}
	_, err := tx.ExecContext(ctx, `INSERT INTO otel_traces (dataset_id, otel_trace_id, trace_id) VALUES (?, ?, ?)`, datasetID, otelTraceID, r.ID)
	return next, err
}

// spanRows is how many spans go in one INSERT: one statement instead of a
// round through the driver per span (3 parameters each, far below SQLite's
// limit of 32,766).
const spanRows = 256

func upsertSpans(ctx context.Context, tx *sql.Tx, traceID string, spans []store.StoredSpan) error {
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
		if _, err := tx.ExecContext(ctx, q.String(), args...); err != nil {
			return err
		}
		spans = spans[n:]
	}
	return nil
}

// querier is what readSpanGroups needs of a connection pool or transaction.
type querier interface {
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}

// readSpanGroups reads, for each group, its stored trace ("" for none) and
// the spans stored for it (nil for none).
func readSpanGroups(ctx context.Context, q querier, datasetID string, groups []store.SpanGroup) ([]string, []map[string][]byte, error) {
	tids := make([]string, len(groups))
	stored := make([]map[string][]byte, len(groups))
	for i, g := range groups {
		err := q.QueryRowContext(ctx, `SELECT trace_id FROM otel_traces WHERE dataset_id = ? AND otel_trace_id = ?`, datasetID, g.OTelTraceID).Scan(&tids[i])
		if err != nil && !errors.Is(err, sql.ErrNoRows) {
			return nil, nil, err
		}
		if tids[i] == "" {
			continue
		}
		stored[i] = map[string][]byte{}
		rows, err := q.QueryContext(ctx, `SELECT span_id, data FROM otel_spans WHERE trace_id = ?`, tids[i])
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
		if err := rows.Close(); err != nil {
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
	err := s.write(ctx, func(tx *sql.Tx) error {
		var next int64
		if err := tx.QueryRowContext(ctx, `SELECT next_index FROM datasets WHERE id = ?`, datasetID).Scan(&next); err != nil {
			if errors.Is(err, sql.ErrNoRows) {
				return notFound("dataset %s", datasetID)
			}
			return err
		}
		created := 0
		for i, g := range groups {
			tid := ""
			err := tx.QueryRowContext(ctx, `SELECT trace_id FROM otel_traces WHERE dataset_id = ? AND otel_trace_id = ?`, datasetID, g.OTelTraceID).Scan(&tid)
			if err != nil && !errors.Is(err, sql.ErrNoRows) {
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
			if _, err := tx.ExecContext(ctx, `INSERT INTO otel_pending (trace_id, dataset_id, otel_trace_id, since, touched, seq, fresh) VALUES (?, ?, ?, ?, ?, 1, ?)
				ON CONFLICT (trace_id) DO UPDATE SET touched = excluded.touched, seq = otel_pending.seq + 1`,
				tid, datasetID, g.OTelTraceID, micros(now), micros(now), fresh); err != nil {
				return err
			}
			ids[i] = tid
		}
		_, err := tx.ExecContext(ctx, `UPDATE datasets SET next_index = ?, trace_count = trace_count + ?, last_pushed = ? WHERE id = ?`,
			next, created, micros(now), datasetID)
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
	// Read and build before taking the writer, so that requests keep
	// writing meanwhile; in the transaction, a trace whose mark moved on
	// since is read and built again.
	ps, err := readPending(ctx, s.r, f, true)
	if err != nil {
		return nil, fail(ctx, err, "build pending spans")
	}
	if len(ps) == 0 {
		return nil, nil
	}
	now := storeutil.Now()
	built := storeutil.BuildPending(ps, build, now)
	var out []store.PendingBuild
	err = s.write(ctx, func(tx *sql.Tx) error {
		out = out[:0]
		ids := make([]string, len(ps))
		for i, p := range ps {
			ids[i] = p.TraceID
		}
		cur, err := readPending(ctx, tx, store.PendingFilter{TraceIDs: ids}, false)
		if err != nil {
			return err
		}
		seqs := make(map[string]int64, len(cur))
		for _, p := range cur {
			seqs[p.TraceID] = p.Seq
		}
		read := func(id string) (map[string][]byte, error) { return readSpans(ctx, tx, id) }
		if err := storeutil.RebuildMoved(ps, built, seqs, read, build, now); err != nil {
			return err
		}
		// Fresh traces first: writeDocs diffs only the others.
		var freshIDs, oldIDs []string
		var freshDocs, oldDocs []storeutil.IndexDoc
		for i, p := range ps {
			if _, ok := seqs[p.TraceID]; !ok {
				continue // built meanwhile, or deleted
			}
			if _, err := tx.ExecContext(ctx, `DELETE FROM otel_pending WHERE trace_id = ?`, p.TraceID); err != nil {
				return err
			}
			b := &built[i]
			out = append(out, store.PendingBuild{TraceID: p.TraceID, Err: b.Err})
			if b.Err != nil {
				continue
			}
			r := &b.Row
			if _, err := tx.ExecContext(ctx, `UPDATE traces SET name = ?, metadata = ?, hierarchy = ?, event_count = ?, encoding = ?, content = ? WHERE id = ?`,
				r.Name, optText(r.Metadata), optText(r.Hierarchy), r.EventCount, r.Encoding, r.Content, p.TraceID); err != nil {
				return err
			}
			doc := storeutil.IndexDoc{Doc: &r.Doc, Hashes: r.Hashes}
			if p.Fresh {
				freshIDs, freshDocs = append(freshIDs, p.TraceID), append(freshDocs, doc)
			} else {
				oldIDs, oldDocs = append(oldIDs, p.TraceID), append(oldDocs, doc)
			}
		}
		if err := writeDocs(ctx, tx, append(freshIDs, oldIDs...), append(freshDocs, oldDocs...), len(freshDocs)); err != nil {
			return err
		}
		if len(oldDocs) > 0 {
			return sweepMarkedTexts(ctx, tx)
		}
		return nil
	})
	if err != nil {
		return nil, fail(ctx, err, "build pending spans")
	}
	return out, nil
}

// PendingSpanTraces counts the traces waiting to be built.
func (s *Store) PendingSpanTraces(ctx context.Context) (int64, error) {
	var n int64
	if err := s.r.QueryRowContext(ctx, `SELECT count(*) FROM otel_pending`).Scan(&n); err != nil {
		return 0, fail(ctx, err, "pending spans")
	}
	return n, nil
}

// readPending reads the pending traces f selects, with their spans if
// withSpans.
func readPending(ctx context.Context, q querier, f store.PendingFilter, withSpans bool) ([]storeutil.PendingTrace, error) {
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
	rows, err := q.QueryContext(ctx, query, args...)
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
	if err := rows.Close(); err != nil || !withSpans {
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
	spans := map[string][]byte{}
	rows, err := q.QueryContext(ctx, `SELECT span_id, data FROM otel_spans WHERE trace_id = ?`, traceID)
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
