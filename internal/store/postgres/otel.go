package postgres

import (
	"context"
	"errors"
	"fmt"

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
				idx, newNext := storeutil.AssignIndexes(next, []*int64{r.Given})
				next = newNext
				tid = r.ID
				if _, err := tx.Exec(ctx, `INSERT INTO traces (id, dataset_id, owner_id, idx, name, metadata, hierarchy, event_count, created_at, encoding, content)
					VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)`, tid, datasetID, ownerID, idx[0], r.Name, optText(r.Metadata), optText(r.Hierarchy),
					r.EventCount, now, r.Encoding, r.Content); err != nil {
					return fmt.Errorf("trace of OpenTelemetry trace %s: %w", g.OTelTraceID, err)
				}
				if _, err := tx.Exec(ctx, `INSERT INTO otel_traces (dataset_id, otel_trace_id, trace_id) VALUES ($1, $2, $3)`, datasetID, g.OTelTraceID, tid); err != nil {
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
