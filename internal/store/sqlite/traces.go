package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/lookout-dev/lookout/internal/search"
	"github.com/lookout-dev/lookout/internal/store"
	"github.com/lookout-dev/lookout/internal/store/internal/storeutil"
	"github.com/lookout-dev/lookout/internal/trace"
)

// ---- traces ----

// AddTraces stores a batch of traces in one transaction: all or none.
func (s *Store) AddTraces(ctx context.Context, ownerID, datasetID string, traces []store.NewTrace) ([]string, error) {
	if !storeutil.ValidID(ownerID) {
		return nil, notFound("add traces: owner %q", ownerID)
	}
	if datasetID != "" && !storeutil.ValidID(datasetID) {
		return nil, notFound("add traces: dataset %q", datasetID)
	}
	now := storeutil.Now()
	rows, err := storeutil.PrepareTraces(traces, now)
	if err != nil {
		return nil, fmt.Errorf("sqlite: add traces: %w", err)
	}
	if len(rows) == 0 {
		if datasetID != "" {
			if _, err := s.Dataset(ctx, datasetID); err != nil {
				return nil, err
			}
		}
		return []string{}, nil
	}
	at := -1 // the trace being inserted, for errors
	err = s.write(ctx, func(tx *sql.Tx) error {
		return insertTraces(ctx, tx, ownerID, datasetID, rows, now, &at)
	})
	if err != nil {
		if errors.Is(err, store.ErrNotFound) {
			return nil, err
		}
		if at >= 0 {
			return nil, fail(ctx, err, "add traces: trace %d (index %d)", at, rows[at].Index)
		}
		return nil, fail(ctx, err, "add traces")
	}
	ids := make([]string, len(rows))
	for i := range rows {
		ids[i] = rows[i].ID
	}
	return ids, nil
}

// insertTraces writes prepared traces with their annotations and search
// index in tx: in a dataset each gets its index, and the dataset its new
// trace count and last push. *at is the trace being written, for errors.
func insertTraces(ctx context.Context, tx *sql.Tx, ownerID, datasetID string, rows []storeutil.Row, now time.Time, at *int) error {
	var ds any // NULL outside a dataset
	if datasetID != "" {
		ds = datasetID
		var next int64
		if err := tx.QueryRowContext(ctx, `SELECT next_index FROM datasets WHERE id = ?`, datasetID).Scan(&next); err != nil {
			if errors.Is(err, sql.ErrNoRows) {
				return notFound("dataset %s", datasetID)
			}
			return err
		}
		given := make([]*int64, len(rows))
		for i := range rows {
			given[i] = rows[i].Given
		}
		idx, newNext := storeutil.AssignIndexes(next, given)
		for i := range rows {
			rows[i].Index = idx[i]
		}
		if _, err := tx.ExecContext(ctx, `UPDATE datasets SET next_index = ?, trace_count = trace_count + ?, last_pushed = ? WHERE id = ?`,
			newNext, len(rows), micros(now), datasetID); err != nil {
			return err
		}
	} else {
		for i := range rows {
			if rows[i].Given != nil {
				rows[i].Index = *rows[i].Given
			}
		}
	}
	ins, err := tx.PrepareContext(ctx, `INSERT INTO traces (id, dataset_id, owner_id, idx, name, metadata, hierarchy, event_count, created_at, encoding, content)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`)
	if err != nil {
		return err
	}
	defer ins.Close()
	var insAnn *sql.Stmt
	for i := range rows {
		*at = i
		r := &rows[i]
		if _, err := ins.ExecContext(ctx, r.ID, ds, ownerID, r.Index, r.Name, optText(r.Metadata), optText(r.Hierarchy),
			r.EventCount, micros(now), r.Encoding, r.Content); err != nil {
			return err
		}
		if len(r.Anns) > 0 && insAnn == nil {
			if insAnn, err = tx.PrepareContext(ctx, insertAnnotation); err != nil {
				return err
			}
			defer insAnn.Close()
		}
		for _, a := range r.Anns {
			if err := execAnnotation(ctx, insAnn, a); err != nil {
				return err
			}
		}
	}
	*at = -1
	ids := make([]string, len(rows))
	docs := make([]storeutil.IndexDoc, len(rows))
	for i := range rows {
		ids[i], docs[i] = rows[i].ID, storeutil.IndexDoc{Doc: &rows[i].Doc, Hashes: rows[i].Hashes}
	}
	return insertDocs(ctx, tx, ids, docs)
}

// Trace reads one trace.
func (s *Store) Trace(ctx context.Context, id string) (store.StoredTrace, error) {
	if !storeutil.ValidID(id) {
		return store.StoredTrace{}, notFound("trace %q", id)
	}
	var st store.StoredTrace
	var ds sql.NullString
	var meta, hier, content []byte
	var created int64
	var enc int
	err := s.r.QueryRowContext(ctx, `SELECT dataset_id, owner_id, idx, metadata, hierarchy, created_at, encoding, content FROM traces WHERE id = ?`, id).
		Scan(&ds, &st.OwnerID, &st.Index, &meta, &hier, &created, &enc, &content)
	if err != nil {
		return store.StoredTrace{}, fail(ctx, err, "trace %s", id)
	}
	st.ID, st.DatasetID, st.CreatedAt = id, ds.String, storeutil.FromMicros(created)
	if st.Hierarchy, err = storeutil.ParseHierarchy(hier); err != nil {
		return store.StoredTrace{}, fmt.Errorf("sqlite: trace %s: %w", id, err)
	}
	if st.Trace, err = storeutil.DecodeContent(content, enc, meta); err != nil {
		return store.StoredTrace{}, fmt.Errorf("sqlite: trace %s: %w", id, err)
	}
	return st, nil
}

// ListTraces lists a dataset's traces by index, a page at a time.
func (s *Store) ListTraces(ctx context.Context, datasetID string, page store.Page) ([]store.TraceSummary, string, error) {
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
	rows, err := s.r.QueryContext(ctx, `SELECT t.id, t.idx, t.name, t.metadata, t.event_count, t.created_at,
			(SELECT count(*) FROM annotations a WHERE a.trace_id = t.id)
		FROM traces t WHERE t.dataset_id = ? AND t.idx > ? ORDER BY t.idx LIMIT ?`, datasetID, after, limit+1)
	if err != nil {
		return nil, "", fail(ctx, err, "list traces of dataset %s", datasetID)
	}
	defer rows.Close()
	items := make([]store.TraceSummary, 0, limit)
	more := false
	for rows.Next() {
		if len(items) == limit {
			more = true
			break
		}
		var t store.TraceSummary
		var meta []byte
		var created int64
		if err := rows.Scan(&t.ID, &t.Index, &t.Name, &meta, &t.EventCount, &created, &t.AnnotationCount); err != nil {
			return nil, "", fail(ctx, err, "list traces of dataset %s", datasetID)
		}
		if meta != nil {
			t.Metadata = json.RawMessage(meta)
		}
		t.CreatedAt = storeutil.FromMicros(created)
		items = append(items, t)
	}
	if err := rows.Err(); err != nil {
		return nil, "", fail(ctx, err, "list traces of dataset %s", datasetID)
	}
	next := ""
	if more {
		next = storeutil.EncodeCursor(items[len(items)-1].Index)
	}
	return items, next, nil
}

// AppendEvents adds events to the end of a stored trace.
func (s *Store) AppendEvents(ctx context.Context, id string, events []trace.Event) error {
	if !storeutil.ValidID(id) {
		return notFound("trace %q", id)
	}
	err := s.write(ctx, func(tx *sql.Tx) error {
		_, err := appendToTrace(ctx, tx, id, events, nil, nil)
		return err
	})
	if err != nil {
		return fail(ctx, err, "append events to trace %s", id)
	}
	return nil
}

// appendToTrace adds events and spans to the end of stored trace id, with
// their search index, and returns its event count after. check, when not
// nil, sees the trace's dataset and event count before anything is
// written.
func appendToTrace(ctx context.Context, tx *sql.Tx, id string, events []trace.Event, spans []trace.Span, check func(datasetID string, events int) error) (int, error) {
	var ds sql.NullString
	var count, enc int
	var meta, content []byte
	if err := tx.QueryRowContext(ctx, `SELECT dataset_id, event_count, metadata, encoding, content FROM traces WHERE id = ?`, id).
		Scan(&ds, &count, &meta, &enc, &content); err != nil {
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
	t, err := storeutil.DecodeContent(content, enc, meta)
	if err != nil {
		return 0, err
	}
	first := len(t.Events)
	t.Events = append(t.Events, events...)
	t.Spans = append(t.Spans, spans...)
	content, enc = storeutil.EncodeContent(t)
	if _, err = tx.ExecContext(ctx, `UPDATE traces SET content = ?, encoding = ?, event_count = ? WHERE id = ?`, content, enc, len(t.Events), id); err != nil {
		return 0, err
	}
	d := search.IndexAppended(events, first, spans)
	if err := insertDocs(ctx, tx, []string{id}, []storeutil.IndexDoc{{Doc: &d}}); err != nil {
		return 0, err
	}
	// A trace of spans not yet built has index rows now: its build must
	// replace them, not take it for one without any.
	_, err = tx.ExecContext(ctx, `UPDATE otel_pending SET fresh = 0 WHERE trace_id = ? AND fresh`, id)
	return len(t.Events), err
}

// DeleteTrace removes a trace and its annotations.
func (s *Store) DeleteTrace(ctx context.Context, id string) error {
	if !storeutil.ValidID(id) {
		return notFound("trace %q", id)
	}
	err := s.write(ctx, func(tx *sql.Tx) error {
		if err := deleteDoc(ctx, tx, id); err != nil {
			return err
		}
		var ds sql.NullString
		if err := tx.QueryRowContext(ctx, `DELETE FROM traces WHERE id = ? RETURNING dataset_id`, id).Scan(&ds); err != nil {
			return err
		}
		if ds.Valid {
			_, err := tx.ExecContext(ctx, `UPDATE datasets SET trace_count = trace_count - 1 WHERE id = ?`, ds.String)
			return err
		}
		return nil
	})
	if err != nil {
		return fail(ctx, err, "delete trace %s", id)
	}
	return nil
}

// ---- annotations ----

const insertAnnotation = `INSERT INTO annotations (id, trace_id, address, content, source, author, extra, created_at, updated_at)
	VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`

type execer interface {
	ExecContext(ctx context.Context, args ...any) (sql.Result, error)
}

func execAnnotation(ctx context.Context, st execer, a store.Annotation) error {
	_, err := st.ExecContext(ctx, a.ID, a.TraceID, a.Address, a.Content, a.Source, a.Author, optText(a.Extra), micros(a.CreatedAt), micros(a.UpdatedAt))
	return err
}

// insertAnnotations writes prepared annotations.
func insertAnnotations(ctx context.Context, tx *sql.Tx, as []store.Annotation) error {
	if len(as) == 0 {
		return nil
	}
	st, err := tx.PrepareContext(ctx, insertAnnotation)
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

const annotationCols = `id, trace_id, address, content, source, author, extra, created_at, updated_at`

func scanAnnotation(row interface{ Scan(...any) error }) (store.Annotation, error) {
	var a store.Annotation
	var extra []byte
	var created, updated int64
	err := row.Scan(&a.ID, &a.TraceID, &a.Address, &a.Content, &a.Source, &a.Author, &extra, &created, &updated)
	if extra != nil {
		a.Extra = json.RawMessage(extra)
	}
	a.CreatedAt, a.UpdatedAt = storeutil.FromMicros(created), storeutil.FromMicros(updated)
	return a, err
}

// CreateAnnotation adds an annotation to a trace.
func (s *Store) CreateAnnotation(ctx context.Context, a store.Annotation) (store.Annotation, error) {
	if !storeutil.ValidID(a.TraceID) {
		return store.Annotation{}, notFound("create annotation: trace %q", a.TraceID)
	}
	as, err := storeutil.PrepareAnnotations([]store.Annotation{a}, a.TraceID, storeutil.Now())
	if err != nil {
		return store.Annotation{}, fmt.Errorf("sqlite: create annotation: %w", err)
	}
	st, err := s.w.PrepareContext(ctx, insertAnnotation)
	if err == nil {
		err = execAnnotation(ctx, st, as[0])
		st.Close()
	}
	if err != nil {
		return store.Annotation{}, fail(ctx, err, "create annotation on trace %s", a.TraceID)
	}
	return as[0], nil
}

// ListAnnotations lists a trace's annotations in the order they were made.
func (s *Store) ListAnnotations(ctx context.Context, traceID string) ([]store.Annotation, error) {
	if !storeutil.ValidID(traceID) {
		return nil, notFound("trace %q", traceID)
	}
	var one int
	if err := s.r.QueryRowContext(ctx, `SELECT 1 FROM traces WHERE id = ?`, traceID).Scan(&one); err != nil {
		return nil, fail(ctx, err, "trace %s", traceID)
	}
	rows, err := s.r.QueryContext(ctx, `SELECT `+annotationCols+` FROM annotations WHERE trace_id = ? ORDER BY rowid`, traceID)
	if err != nil {
		return nil, fail(ctx, err, "list annotations of trace %s", traceID)
	}
	defer rows.Close()
	as := []store.Annotation{}
	for rows.Next() {
		a, err := scanAnnotation(rows)
		if err != nil {
			return nil, fail(ctx, err, "list annotations of trace %s", traceID)
		}
		as = append(as, a)
	}
	if err := rows.Err(); err != nil {
		return nil, fail(ctx, err, "list annotations of trace %s", traceID)
	}
	return as, nil
}

// UpdateAnnotation changes an annotation's content and extra.
func (s *Store) UpdateAnnotation(ctx context.Context, a store.Annotation) (store.Annotation, error) {
	if !storeutil.ValidID(a.ID) {
		return store.Annotation{}, notFound("annotation %q", a.ID)
	}
	if err := storeutil.CheckObject(a.Extra, "annotation extra", true); err != nil {
		return store.Annotation{}, fmt.Errorf("sqlite: update annotation %s: %w", a.ID, err)
	}
	out, err := scanAnnotation(s.w.QueryRowContext(ctx, `UPDATE annotations SET content = ?, extra = ?, updated_at = ?
		WHERE id = ? AND (? = '' OR trace_id = ?) RETURNING `+annotationCols,
		a.Content, optText(a.Extra), micros(storeutil.Now()), a.ID, a.TraceID, a.TraceID))
	if err != nil {
		return store.Annotation{}, fail(ctx, err, "update annotation %s", a.ID)
	}
	return out, nil
}

// DeleteAnnotation removes an annotation.
func (s *Store) DeleteAnnotation(ctx context.Context, id string) error {
	if !storeutil.ValidID(id) {
		return notFound("annotation %q", id)
	}
	res, err := s.w.ExecContext(ctx, `DELETE FROM annotations WHERE id = ?`, id)
	if err != nil {
		return fail(ctx, err, "delete annotation %s", id)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return notFound("annotation %s", id)
	}
	return nil
}

// ReplaceAnnotations replaces every annotation of one source on a trace.
func (s *Store) ReplaceAnnotations(ctx context.Context, traceID, source string, as []store.Annotation) error {
	return s.replaceAnnotations(ctx, traceID, source, "", "", as)
}

// ReplaceAnnotationsOf replaces the annotations of one source on a trace
// whose extra has member key equal to value.
func (s *Store) ReplaceAnnotationsOf(ctx context.Context, traceID, source, key, value string, as []store.Annotation) error {
	if !storeutil.ValidKey(key) {
		return fmt.Errorf("sqlite: replace annotations: extra member %q: %w", key, store.ErrInvalid)
	}
	return s.replaceAnnotations(ctx, traceID, source, key, value, as)
}

// replaceAnnotations replaces the annotations of source on a trace, only
// those whose extra member key equals value when key is not empty.
func (s *Store) replaceAnnotations(ctx context.Context, traceID, source, key, value string, as []store.Annotation) error {
	if source == "" {
		return fmt.Errorf("sqlite: replace annotations: no source: %w", store.ErrInvalid)
	}
	if !storeutil.ValidID(traceID) {
		return notFound("trace %q", traceID)
	}
	in := make([]store.Annotation, len(as))
	for i, a := range as {
		a.Source = source
		in[i] = a
	}
	prepared, err := storeutil.PrepareAnnotations(in, traceID, storeutil.Now())
	if err != nil {
		return fmt.Errorf("sqlite: replace annotations: %w", err)
	}
	err = s.write(ctx, func(tx *sql.Tx) error {
		var one int
		if err := tx.QueryRowContext(ctx, `SELECT 1 FROM traces WHERE id = ?`, traceID).Scan(&one); err != nil {
			return err
		}
		del, args := `DELETE FROM annotations WHERE trace_id = ? AND source = ?`, []any{traceID, source}
		if key != "" {
			del += ` AND json_extract(extra, ?) = ?`
			args = append(args, `$."`+key+`"`, value)
		}
		if _, err := tx.ExecContext(ctx, del, args...); err != nil {
			return err
		}
		return insertAnnotations(ctx, tx, prepared)
	})
	if err != nil {
		return fail(ctx, err, "replace %s annotations of trace %s", source, traceID)
	}
	return nil
}

// ---- policies ----

const policyCols = `id, dataset_id, name, source, mode, created_at, updated_at`

func scanPolicy(row interface{ Scan(...any) error }) (store.Policy, error) {
	var p store.Policy
	var created, updated int64
	err := row.Scan(&p.ID, &p.DatasetID, &p.Name, &p.Source, &p.Mode, &created, &updated)
	p.CreatedAt, p.UpdatedAt = storeutil.FromMicros(created), storeutil.FromMicros(updated)
	return p, err
}

// SavePolicy creates a policy or, by (dataset, name), updates its source
// and mode ("" is log). A policy with an ID is updated by ID (which may
// rename it).
func (s *Store) SavePolicy(ctx context.Context, p store.Policy) (store.Policy, error) {
	if err := storeutil.CheckName("policy", p.Name); err != nil {
		return store.Policy{}, fmt.Errorf("sqlite: save policy: %w", err)
	}
	if err := storeutil.CheckText("policy source", p.Source); err != nil {
		return store.Policy{}, fmt.Errorf("sqlite: save policy: %w", err)
	}
	mode, err := storeutil.PolicyMode(p.Mode)
	if err != nil {
		return store.Policy{}, fmt.Errorf("sqlite: save policy: %w", err)
	}
	if !storeutil.ValidID(p.DatasetID) {
		return store.Policy{}, notFound("save policy: dataset %q", p.DatasetID)
	}
	now := micros(storeutil.Now())
	var out store.Policy
	if p.ID != "" {
		if !storeutil.ValidID(p.ID) {
			return store.Policy{}, notFound("policy %q", p.ID)
		}
		out, err = scanPolicy(s.w.QueryRowContext(ctx, `UPDATE policies SET name = ?, source = ?, mode = ?, updated_at = ?
			WHERE id = ? AND dataset_id = ? RETURNING `+policyCols, p.Name, p.Source, mode, now, p.ID, p.DatasetID))
	} else {
		out, err = scanPolicy(s.w.QueryRowContext(ctx, `INSERT INTO policies (id, dataset_id, name, source, mode, created_at, updated_at)
			VALUES (?, ?, ?, ?, ?, ?, ?)
			ON CONFLICT (dataset_id, name) DO UPDATE SET source = excluded.source, mode = excluded.mode, updated_at = excluded.updated_at
			RETURNING `+policyCols, storeutil.NewID(), p.DatasetID, p.Name, p.Source, mode, now, now))
	}
	if err != nil {
		return store.Policy{}, fail(ctx, err, "save policy %q of dataset %s", p.Name, p.DatasetID)
	}
	return out, nil
}

// ListPolicies lists a dataset's policies by name.
func (s *Store) ListPolicies(ctx context.Context, datasetID string) ([]store.Policy, error) {
	if !storeutil.ValidID(datasetID) {
		return nil, notFound("dataset %q", datasetID)
	}
	var one int
	if err := s.r.QueryRowContext(ctx, `SELECT 1 FROM datasets WHERE id = ?`, datasetID).Scan(&one); err != nil {
		return nil, fail(ctx, err, "dataset %s", datasetID)
	}
	rows, err := s.r.QueryContext(ctx, `SELECT `+policyCols+` FROM policies WHERE dataset_id = ? ORDER BY name`, datasetID)
	if err != nil {
		return nil, fail(ctx, err, "list policies of dataset %s", datasetID)
	}
	defer rows.Close()
	ps := []store.Policy{}
	for rows.Next() {
		p, err := scanPolicy(rows)
		if err != nil {
			return nil, fail(ctx, err, "list policies of dataset %s", datasetID)
		}
		ps = append(ps, p)
	}
	if err := rows.Err(); err != nil {
		return nil, fail(ctx, err, "list policies of dataset %s", datasetID)
	}
	return ps, nil
}

// Policy finds a policy by id.
func (s *Store) Policy(ctx context.Context, id string) (store.Policy, error) {
	if !storeutil.ValidID(id) {
		return store.Policy{}, notFound("policy %q", id)
	}
	p, err := scanPolicy(s.r.QueryRowContext(ctx, `SELECT `+policyCols+` FROM policies WHERE id = ?`, id))
	if err != nil {
		return store.Policy{}, fail(ctx, err, "policy %s", id)
	}
	return p, nil
}

// DeletePolicy removes a policy.
func (s *Store) DeletePolicy(ctx context.Context, id string) error {
	if !storeutil.ValidID(id) {
		return notFound("policy %q", id)
	}
	res, err := s.w.ExecContext(ctx, `DELETE FROM policies WHERE id = ?`, id)
	if err != nil {
		return fail(ctx, err, "delete policy %s", id)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return notFound("policy %s", id)
	}
	return nil
}
