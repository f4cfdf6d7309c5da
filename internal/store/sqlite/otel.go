package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"

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
				idx, newNext := storeutil.AssignIndexes(next, []*int64{r.Given})
				next = newNext
				tid = r.ID
				if _, err := tx.ExecContext(ctx, `INSERT INTO traces (id, dataset_id, owner_id, idx, name, metadata, hierarchy, event_count, created_at, encoding, content)
					VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`, tid, datasetID, ownerID, idx[0], r.Name, optText(r.Metadata), optText(r.Hierarchy),
					r.EventCount, micros(now), r.Encoding, r.Content); err != nil {
					return fmt.Errorf("trace of OpenTelemetry trace %s: %w", g.OTelTraceID, err)
				}
				if _, err := tx.ExecContext(ctx, `INSERT INTO otel_traces (dataset_id, otel_trace_id, trace_id) VALUES (?, ?, ?)`, datasetID, g.OTelTraceID, tid); err != nil {
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
