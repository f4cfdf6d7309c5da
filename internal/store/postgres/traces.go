package postgres

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/lookout-dev/lookout/internal/store"
	"github.com/lookout-dev/lookout/internal/store/internal/sqlstore"
	"github.com/lookout-dev/lookout/internal/store/internal/storeutil"
	"github.com/lookout-dev/lookout/internal/trace"
)

// uuidOf is a checked id as COPY's binary format wants it.
func uuidOf(id string) pgtype.UUID {
	var u pgtype.UUID
	if err := u.Scan(id); err != nil {
		panic(fmt.Sprintf("postgres: bad id %q reached COPY: %v", id, err))
	}
	return u
}

// ---- traces ----

var traceCopyCols = []string{"id", "dataset_id", "owner_id", "idx", "name", "metadata", "hierarchy", "event_count", "created_at", "encoding", "content"}
var summaryCopyCols = []string{"trace_id", "summary", "dataset_id", "idx", "duration_ms", "tokens", "cost"}
var annotationCopyCols = []string{"id", "trace_id", "address", "content", "source", "author", "extra", "created_at", "updated_at"}

// insertTraces writes prepared traces, their indexes set, with their
// annotations in tx (sqlstore.Hooks.InsertTraces).
func insertTraces(ctx context.Context, q sqlstore.Querier, ownerID, datasetID string, rows []storeutil.Row, now time.Time) error {
	tx := sqlstore.PgxTx(q)
	ds := pgtype.UUID{} // NULL outside a dataset
	if datasetID != "" {
		ds = uuidOf(datasetID)
	}
	owner := uuidOf(ownerID)
	nAnn := 0
	_, err := tx.CopyFrom(ctx, pgx.Identifier{"traces"}, traceCopyCols, pgx.CopyFromSlice(len(rows), func(i int) ([]any, error) {
		r := &rows[i]
		nAnn += len(r.Anns)
		return []any{uuidOf(r.ID), ds, owner, r.Index, r.Name, sqlstore.OptText(r.Metadata), sqlstore.OptText(r.Hierarchy), r.EventCount, now, int16(r.Encoding), r.Content}, nil
	}))
	if err != nil {
		return err
	}
	_, err = tx.CopyFrom(ctx, pgx.Identifier{"trace_summaries"}, summaryCopyCols, pgx.CopyFromSlice(len(rows), func(i int) ([]any, error) {
		r := &rows[i]
		return []any{uuidOf(r.ID), string(r.Summary), ds, r.Index, r.Keys.DurationMs, r.Keys.Tokens, r.Keys.Cost}, nil
	}))
	if err != nil {
		return err
	}
	if nAnn == 0 {
		return nil
	}
	return copyAnnotations(ctx, tx, func(yield func(store.Annotation)) {
		for i := range rows {
			for _, a := range rows[i].Anns {
				yield(a)
			}
		}
	})
}

// insertAnnotations writes prepared annotations with COPY
// (sqlstore.Hooks.InsertAnnotations).
func insertAnnotations(ctx context.Context, q sqlstore.Querier, as []store.Annotation) error {
	return copyAnnotations(ctx, sqlstore.PgxTx(q), func(yield func(store.Annotation)) {
		for _, a := range as {
			yield(a)
		}
	})
}

// copyAnnotations writes annotations with COPY.
func copyAnnotations(ctx context.Context, tx pgx.Tx, each func(yield func(store.Annotation))) error {
	var vals [][]any
	each(func(a store.Annotation) {
		vals = append(vals, []any{uuidOf(a.ID), uuidOf(a.TraceID), a.Address, a.Content, a.Source, a.Author, sqlstore.OptText(a.Extra), a.CreatedAt, a.UpdatedAt})
	})
	_, err := tx.CopyFrom(ctx, pgx.Identifier{"annotations"}, annotationCopyCols, pgx.CopyFromRows(vals))
	return err
}

// ListTraces lists a dataset's traces by index, a page at a time, or
// in another order (sqlstore.ListSorted).
func (s *Store) ListTraces(ctx context.Context, datasetID string, page store.Page) ([]store.TraceSummary, string, error) {
	if sqlstore.Sorted(page) {
		return s.ListSorted(ctx, datasetID, page)
	}
	after, ok, err := storeutil.DecodeCursor(page.Cursor)
	if err != nil {
		return nil, "", fmt.Errorf("postgres: list traces: %w", err)
	}
	if !ok {
		after = -1
	}
	if !storeutil.ValidID(datasetID) {
		return nil, "", notFound("dataset %q", datasetID)
	}
	limit := storeutil.Limit(page.Limit)
	// One statement: the dataset's existence (the LEFT JOIN keeps a row when
	// it has no traces past the cursor) and the page.
	rows, err := s.pool.Query(ctx, `SELECT `+sqlstore.ListCols+`
		FROM datasets d LEFT JOIN LATERAL (
			SELECT * FROM traces t WHERE t.dataset_id = d.id AND t.idx > $2 ORDER BY t.idx LIMIT $3
		) t ON true
		WHERE d.id = $1 ORDER BY t.idx`, datasetID, after, limit+1)
	if err != nil {
		return nil, "", fail(ctx, err, "list traces of dataset %s", datasetID)
	}
	defer rows.Close()
	items := make([]store.TraceSummary, 0, limit)
	var missing []int // rows with no digest stored
	found, more := false, false
	for rows.Next() {
		found = true
		var id *string
		var t store.TraceSummary
		var idx *int64
		var name *string
		var meta, summary []byte
		var events *int32
		var created *time.Time
		if err := rows.Scan(&id, &idx, &name, &meta, &events, &created, &t.AnnotationCount, &t.ViolationCount, &summary); err != nil {
			return nil, "", fail(ctx, err, "list traces of dataset %s", datasetID)
		}
		if id == nil {
			break // the dataset, without traces past the cursor
		}
		if len(items) == limit {
			more = true
			break
		}
		t.ID, t.Index, t.Name, t.EventCount, t.CreatedAt = *id, *idx, *name, int(*events), created.UTC()
		lr := sqlstore.ListRow{Meta: meta, Summary: summary}
		ok, err := lr.Finish(&t)
		if err != nil {
			return nil, "", fmt.Errorf("postgres: list traces of dataset %s: %w", datasetID, err)
		}
		if !ok {
			missing = append(missing, len(items))
		}
		items = append(items, t)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, "", fail(ctx, err, "list traces of dataset %s", datasetID)
	}
	if !found {
		return nil, "", notFound("dataset %s", datasetID)
	}
	if err := s.FillDigests(ctx, sqlstore.MissingDigests(items, missing)); err != nil {
		return nil, "", err
	}
	next := ""
	if more {
		next = storeutil.EncodeCursor(items[len(items)-1].Index)
	}
	return items, next, nil
}

// appendToTrace adds events and spans to the end of stored trace id and
// returns its event count after. check, when not nil, sees the trace's
// dataset and event count before anything is written.
func appendToTrace(ctx context.Context, q sqlstore.Querier, id string, events []trace.Event, spans []trace.Span, check func(datasetID string, events int) error) (int, error) {
	tx := sqlstore.PgxTx(q)
	var ds *string
	var count int
	var content []byte
	var enc int16
	if err := tx.QueryRow(ctx, `SELECT dataset_id, event_count, encoding, content FROM traces WHERE id = $1 FOR UPDATE`, id).
		Scan(&ds, &count, &enc, &content); err != nil {
		return 0, err
	}
	if check != nil {
		in := ""
		if ds != nil {
			in = *ds
		}
		if err := check(in, count); err != nil {
			return 0, err
		}
	}
	if len(events) == 0 && len(spans) == 0 {
		return count, nil
	}
	// The new events are added as a part of their own (storeutil.AppendContent),
	// not by decoding and encoding the whole trace again.
	content, newEnc, err := storeutil.AppendContent(content, int(enc), events, spans)
	if err != nil {
		return 0, err
	}
	count += len(events)
	if _, err = tx.Exec(ctx, `UPDATE traces SET content = $1, encoding = $2, event_count = $3 WHERE id = $4`, content, int16(newEnc), count, id); err != nil {
		return 0, err
	}
	return count, sqlstore.AppendedDigest(ctx, q, id, events, spans, content, newEnc)
}

// ---- annotations ----

// UpdateAnnotation changes an annotation's content and extra.
func (s *Store) UpdateAnnotation(ctx context.Context, a store.Annotation) (store.Annotation, error) {
	if !storeutil.ValidID(a.ID) {
		return store.Annotation{}, notFound("annotation %q", a.ID)
	}
	if err := storeutil.CheckObject(a.Extra, "annotation extra", true); err != nil {
		return store.Annotation{}, fmt.Errorf("postgres: update annotation %s: %w", a.ID, err)
	}
	if err := storeutil.CheckText("annotation content", a.Content); err != nil {
		return store.Annotation{}, fmt.Errorf("postgres: update annotation %s: %w", a.ID, err)
	}
	var trace any // any trace
	if a.TraceID != "" {
		if !storeutil.ValidID(a.TraceID) {
			return store.Annotation{}, notFound("annotation %s of trace %q", a.ID, a.TraceID)
		}
		trace = a.TraceID
	}
	out, err := sqlstore.ScanAnnotation(s.pool.QueryRow(ctx, `UPDATE annotations SET content = $1, extra = $2, updated_at = $3
		WHERE id = $4 AND ($5::uuid IS NULL OR trace_id = $5) RETURNING `+sqlstore.AnnotationCols,
		a.Content, sqlstore.OptText(storeutil.FixUTF8(a.Extra)), storeutil.Now(), a.ID, trace))
	if err != nil {
		return store.Annotation{}, fail(ctx, err, "update annotation %s", a.ID)
	}
	return out, nil
}
