package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/lookout-dev/lookout/internal/store"
	"github.com/lookout-dev/lookout/internal/store/internal/sqlstore"
	"github.com/lookout-dev/lookout/internal/store/internal/storeutil"
	"github.com/lookout-dev/lookout/internal/trace"
)

// ---- traces ----

// insertTraces writes prepared traces, their indexes set, with their
// annotations in tx (sqlstore.Hooks.InsertTraces); an error names the
// trace being written.
func insertTraces(ctx context.Context, q sqlstore.Querier, ownerID, datasetID string, rows []storeutil.Row, now time.Time) error {
	tx := sqlstore.SQLTx(q)
	var ds any // NULL outside a dataset
	if datasetID != "" {
		ds = datasetID
	}
	ins, err := tx.PrepareContext(ctx, `INSERT INTO traces (id, dataset_id, owner_id, idx, name, metadata, hierarchy, event_count, created_at, encoding, content)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`)
	if err != nil {
		return err
	}
	defer ins.Close()
	insSum, err := tx.PrepareContext(ctx, `INSERT INTO trace_summaries (`+sqlstore.SummaryCols+`) VALUES (?, ?, ?, ?, ?, ?, ?)`)
	if err != nil {
		return err
	}
	defer insSum.Close()
	var insAnn *sql.Stmt
	for i := range rows {
		r := &rows[i]
		if _, err := ins.ExecContext(ctx, r.ID, ds, ownerID, r.Index, r.Name, sqlstore.OptText(r.Metadata), sqlstore.OptText(r.Hierarchy),
			r.EventCount, micros(now), r.Encoding, r.Content); err != nil {
			return traceError(i, r, err)
		}
		if _, err := insSum.ExecContext(ctx, r.ID, string(r.Summary), ds, r.Index, r.Keys.DurationMs, r.Keys.Tokens, r.Keys.Cost); err != nil {
			return traceError(i, r, err)
		}
		if len(r.Anns) > 0 && insAnn == nil {
			if insAnn, err = tx.PrepareContext(ctx, insertAnnotation); err != nil {
				return traceError(i, r, err)
			}
			defer insAnn.Close()
		}
		for _, a := range r.Anns {
			if err := execAnnotation(ctx, insAnn, a); err != nil {
				return traceError(i, r, err)
			}
		}
	}
	return nil
}

// traceError names trace i of a batch in err.
func traceError(i int, r *storeutil.Row, err error) error {
	if errors.Is(err, store.ErrNotFound) {
		return err
	}
	return fmt.Errorf("trace %d (index %d): %w", i, r.Index, err)
}

// ListTraces lists a dataset's traces by index, a page at a time, or
// in another order (sqlstore.ListSorted).
func (s *Store) ListTraces(ctx context.Context, datasetID string, page store.Page) ([]store.TraceSummary, string, error) {
	if sqlstore.Sorted(page) {
		return s.ListSorted(ctx, datasetID, page)
	}
	after, ok, err := storeutil.DecodeCursor(page.Cursor)
	if err != nil {
		return nil, "", fmt.Errorf("sqlite: list traces: %w", err)
	}
	if !ok {
		after = -1
	}
	if !storeutil.ValidID(datasetID) {
		return nil, "", notFound("dataset %q", datasetID)
	}
	var one int
	if err := s.r.QueryRowContext(ctx, `SELECT 1 FROM datasets WHERE id = ?`, datasetID).Scan(&one); err != nil {
		return nil, "", fail(ctx, err, "dataset %s", datasetID)
	}
	limit := storeutil.Limit(page.Limit)
	rows, err := s.r.QueryContext(ctx, `SELECT `+sqlstore.ListCols+`
		FROM traces t WHERE t.dataset_id = ? AND t.idx > ? ORDER BY t.idx LIMIT ?`, datasetID, after, limit+1)
	if err != nil {
		return nil, "", fail(ctx, err, "list traces of dataset %s", datasetID)
	}
	defer rows.Close()
	items := make([]store.TraceSummary, 0, limit)
	var missing []int // rows with no digest stored
	more := false
	var lr sqlstore.ListRow
	for rows.Next() {
		if len(items) == limit {
			more = true
			break
		}
		var t store.TraceSummary
		var created int64
		if err := rows.Scan(lr.Dest(&t, &created)...); err != nil {
			return nil, "", fail(ctx, err, "list traces of dataset %s", datasetID)
		}
		ok, err := lr.Finish(&t)
		if err != nil {
			return nil, "", fmt.Errorf("sqlite: list traces of dataset %s: %w", datasetID, err)
		}
		if !ok {
			missing = append(missing, len(items))
		}
		t.CreatedAt = storeutil.FromMicros(created)
		items = append(items, t)
	}
	if err := rows.Err(); err != nil {
		return nil, "", fail(ctx, err, "list traces of dataset %s", datasetID)
	}
	rows.Close()
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
// returns its event count after. check, when not
// nil, sees the trace's dataset and event count before anything is
// written.
func appendToTrace(ctx context.Context, q sqlstore.Querier, id string, events []trace.Event, spans []trace.Span, check func(datasetID string, events int) error) (int, error) {
	tx := sqlstore.SQLTx(q)
	var ds sql.NullString
	var count, enc int
	var content []byte
	if err := tx.QueryRowContext(ctx, `SELECT dataset_id, event_count, encoding, content FROM traces WHERE id = ?`, id).
		Scan(&ds, &count, &enc, &content); err != nil {
		return 0, err
	}
	if check != nil {
		if err := check(ds.String, count); err != nil {
			return 0, err
		}
	}
	if len(events) == 0 && len(spans) == 0 {
		return count, nil
	}
	// The new events are added as a part of their own (storeutil.AppendContent),
	// not by decoding and encoding the whole trace again.
	content, enc, err := storeutil.AppendContent(content, enc, events, spans)
	if err != nil {
		return 0, err
	}
	count += len(events)
	if _, err = tx.ExecContext(ctx, `UPDATE traces SET content = ?, encoding = ?, event_count = ? WHERE id = ?`, content, enc, count, id); err != nil {
		return 0, err
	}
	return count, sqlstore.AppendedDigest(ctx, q, id, events, spans, content, enc)
}

// ---- annotations ----

const insertAnnotation = `INSERT INTO annotations (id, trace_id, address, content, source, author, extra, created_at, updated_at)
	VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`

type execer interface {
	ExecContext(ctx context.Context, args ...any) (sql.Result, error)
}

func execAnnotation(ctx context.Context, st execer, a store.Annotation) error {
	_, err := st.ExecContext(ctx, a.ID, a.TraceID, a.Address, a.Content, a.Source, a.Author, sqlstore.OptText(a.Extra), micros(a.CreatedAt), micros(a.UpdatedAt))
	return err
}

// insertAnnotations writes prepared annotations.
func insertAnnotations(ctx context.Context, q sqlstore.Querier, as []store.Annotation) error {
	if len(as) == 0 {
		return nil
	}
	st, err := sqlstore.SQLTx(q).PrepareContext(ctx, insertAnnotation)
	if err != nil {
		return err
	}
	defer st.Close()
	for _, a := range as {
		if err := execAnnotation(ctx, st, a); err != nil {
			return err
		}
	}
	return nil
}

// UpdateAnnotation changes an annotation's content and extra.
func (s *Store) UpdateAnnotation(ctx context.Context, a store.Annotation) (store.Annotation, error) {
	if !storeutil.ValidID(a.ID) {
		return store.Annotation{}, notFound("annotation %q", a.ID)
	}
	if err := storeutil.CheckObject(a.Extra, "annotation extra", true); err != nil {
		return store.Annotation{}, fmt.Errorf("sqlite: update annotation %s: %w", a.ID, err)
	}
	out, err := sqlstore.ScanAnnotation(s.w.QueryRowContext(ctx, `UPDATE annotations SET content = ?, extra = ?, updated_at = ?
		WHERE id = ? AND (? = '' OR trace_id = ?) RETURNING `+sqlstore.AnnotationCols,
		a.Content, sqlstore.OptText(a.Extra), micros(storeutil.Now()), a.ID, a.TraceID, a.TraceID))
	if err != nil {
		return store.Annotation{}, fail(ctx, err, "update annotation %s", a.ID)
	}
	return out, nil
}
