package sqlstore

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/lookout-dev/lookout/internal/store"
	"github.com/lookout-dev/lookout/internal/store/internal/storeutil"
	"github.com/lookout-dev/lookout/internal/trace"
)

// Trace reads one trace.
func (s *Store) Trace(ctx context.Context, id string) (store.StoredTrace, error) {
	if !storeutil.ValidID(id) {
		return store.StoredTrace{}, s.notFound("trace %q", id)
	}
	var st store.StoredTrace
	var ds NullString
	var meta, hier, content []byte
	var created Time
	var enc int
	err := s.R.QueryRow(ctx, `SELECT dataset_id, owner_id, idx, metadata, hierarchy, created_at, encoding, content FROM traces WHERE id = $1`, id).
		Scan(&ds, &st.OwnerID, &st.Index, &meta, &hier, &created, &enc, &content)
	if err != nil {
		return store.StoredTrace{}, s.Fail(ctx, err, "trace %s", id)
	}
	st.ID, st.DatasetID, st.CreatedAt = id, ds.S, created.T
	if st.Hierarchy, err = storeutil.ParseHierarchy(hier); err != nil {
		return store.StoredTrace{}, s.errorf("trace %s: %w", id, err)
	}
	if st.Trace, err = storeutil.DecodeContent(content, enc, meta); err != nil {
		return store.StoredTrace{}, s.errorf("trace %s: %w", id, err)
	}
	return st, nil
}

// DeleteTrace removes a trace and its annotations.
func (s *Store) DeleteTrace(ctx context.Context, id string) error {
	if !storeutil.ValidID(id) {
		return s.notFound("trace %q", id)
	}
	err := s.Write(ctx, func(tx Querier) error {
		if err := s.Enqueue(ctx, tx, []string{id}); err != nil {
			return err
		}
		var ds NullString
		if err := tx.QueryRow(ctx, `DELETE FROM traces WHERE id = $1 RETURNING dataset_id`, id).Scan(&ds); err != nil {
			return err
		}
		if ds.Valid {
			_, err := tx.Exec(ctx, `UPDATE datasets SET trace_count = trace_count - 1 WHERE id = $1`, ds.S)
			return err
		}
		return nil
	})
	if err != nil {
		return s.Fail(ctx, err, "delete trace %s", id)
	}
	return nil
}

// DeleteDataset removes a dataset with its traces, annotations and policies.
func (s *Store) DeleteDataset(ctx context.Context, id string) error {
	if !storeutil.ValidID(id) {
		return s.notFound("dataset %q", id)
	}
	err := s.Write(ctx, func(tx Querier) error {
		if err := s.enqueueDataset(ctx, tx, id); err != nil {
			return err
		}
		n, err := tx.Exec(ctx, `DELETE FROM datasets WHERE id = $1`, id)
		if err != nil {
			return err
		}
		if n == 0 {
			return s.notFound("dataset %s", id)
		}
		return nil
	})
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		return s.Fail(ctx, err, "delete dataset %s", id)
	}
	return err
}

// AnnotationCols are the columns ScanAnnotation scans.
const AnnotationCols = `id, trace_id, address, content, source, author, extra, created_at, updated_at`

// ScanAnnotation scans the columns AnnotationCols names.
func ScanAnnotation(row Row) (store.Annotation, error) {
	var a store.Annotation
	var extra []byte
	var created, updated Time
	err := row.Scan(&a.ID, &a.TraceID, &a.Address, &a.Content, &a.Source, &a.Author, &extra, &created, &updated)
	if extra != nil {
		a.Extra = json.RawMessage(extra)
	}
	a.CreatedAt, a.UpdatedAt = created.T, updated.T
	return a, err
}

// CreateAnnotation adds an annotation to a trace.
func (s *Store) CreateAnnotation(ctx context.Context, a store.Annotation) (store.Annotation, error) {
	if !storeutil.ValidID(a.TraceID) {
		return store.Annotation{}, s.notFound("create annotation: trace %q", a.TraceID)
	}
	as, err := storeutil.PrepareAnnotations([]store.Annotation{a}, a.TraceID, storeutil.Now())
	if err != nil {
		return store.Annotation{}, s.errorf("create annotation: %w", err)
	}
	b := as[0]
	_, err = s.W.Exec(ctx, `INSERT INTO annotations (`+AnnotationCols+`) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`,
		b.ID, b.TraceID, b.Address, b.Content, b.Source, b.Author, optText(b.Extra), s.D.Time(b.CreatedAt), s.D.Time(b.UpdatedAt))
	if err != nil {
		return store.Annotation{}, s.Fail(ctx, err, "create annotation on trace %s", a.TraceID)
	}
	return b, nil
}

// ListAnnotations lists a trace's annotations in the order they were made.
func (s *Store) ListAnnotations(ctx context.Context, traceID string) ([]store.Annotation, error) {
	if !storeutil.ValidID(traceID) {
		return nil, s.notFound("trace %q", traceID)
	}
	var as []store.Annotation
	err := s.Read(ctx, func(tx Querier) error {
		var one int
		if err := tx.QueryRow(ctx, `SELECT 1 FROM traces WHERE id = $1`, traceID).Scan(&one); err != nil {
			return err
		}
		rows, err := tx.Query(ctx, `SELECT `+AnnotationCols+` FROM annotations WHERE trace_id = $1 ORDER BY `+s.D.AnnotationSeq, traceID)
		as, err = collect(rows, err, ScanAnnotation)
		return err
	})
	if err != nil {
		return nil, s.Fail(ctx, err, "list annotations of trace %s", traceID)
	}
	return as, nil
}

// DeleteAnnotation removes an annotation.
func (s *Store) DeleteAnnotation(ctx context.Context, id string) error {
	if !storeutil.ValidID(id) {
		return s.notFound("annotation %q", id)
	}
	n, err := s.W.Exec(ctx, `DELETE FROM annotations WHERE id = $1`, id)
	if err != nil {
		return s.Fail(ctx, err, "delete annotation %s", id)
	}
	if n == 0 {
		return s.notFound("annotation %s", id)
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
		return s.errorf("replace annotations: extra member %q: %w", key, store.ErrInvalid)
	}
	return s.replaceAnnotations(ctx, traceID, source, key, value, as)
}

// replaceAnnotations replaces the annotations of source on a trace, only
// those whose extra member key equals value when key is not empty.
func (s *Store) replaceAnnotations(ctx context.Context, traceID, source, key, value string, as []store.Annotation) error {
	if source == "" {
		return s.errorf("replace annotations: no source: %w", store.ErrInvalid)
	}
	if !storeutil.ValidID(traceID) {
		return s.notFound("trace %q", traceID)
	}
	in := make([]store.Annotation, len(as))
	for i, a := range as {
		a.Source = source
		in[i] = a
	}
	prepared, err := storeutil.PrepareAnnotations(in, traceID, storeutil.Now())
	if err != nil {
		return s.errorf("replace annotations: %w", err)
	}
	err = s.Write(ctx, func(tx Querier) error {
		var one int
		// The trace cannot go away before the new rows are in.
		if err := tx.QueryRow(ctx, `SELECT 1 FROM traces WHERE id = $1`+s.D.ForShare, traceID).Scan(&one); err != nil {
			return err
		}
		del, args := `DELETE FROM annotations WHERE trace_id = $1 AND source = $2`, []any{traceID, source}
		if key != "" {
			del += ` AND ` + s.D.ExtraIs
			args = append(args, key, value)
		}
		if _, err := tx.Exec(ctx, del, args...); err != nil {
			return err
		}
		if len(prepared) == 0 {
			return nil
		}
		return s.Hooks.InsertAnnotations(ctx, tx, prepared)
	})
	if err != nil {
		return s.Fail(ctx, err, "replace %s annotations of trace %s", source, traceID)
	}
	return nil
}

// AppendEvents adds events to the end of a stored trace.
func (s *Store) AppendEvents(ctx context.Context, id string, events []trace.Event) error {
	if !storeutil.ValidID(id) {
		return s.notFound("trace %q", id)
	}
	err := s.Write(ctx, func(tx Querier) error {
		if _, err := s.Hooks.AppendToTrace(ctx, tx, id, events, nil, nil); err != nil {
			return err
		}
		return s.Enqueue(ctx, tx, []string{id})
	})
	if err != nil {
		return s.Fail(ctx, err, "append events to trace %s", id)
	}
	return nil
}

// AddTraces stores a batch of traces in one transaction: all or none.
func (s *Store) AddTraces(ctx context.Context, ownerID, datasetID string, traces []store.NewTrace) ([]string, error) {
	if !storeutil.ValidID(ownerID) {
		return nil, s.notFound("add traces: owner %q", ownerID)
	}
	if datasetID != "" && !storeutil.ValidID(datasetID) {
		return nil, s.notFound("add traces: dataset %q", datasetID)
	}
	now := storeutil.Now()
	rows, err := storeutil.PrepareTraces(traces, now)
	if err != nil {
		return nil, s.errorf("add traces: %w", err)
	}
	if len(rows) == 0 {
		if datasetID != "" {
			if _, err := s.Dataset(ctx, datasetID); err != nil {
				return nil, err
			}
		}
		return []string{}, nil
	}
	err = s.Write(ctx, func(tx Querier) error {
		if err := s.Hooks.InsertTraces(ctx, tx, ownerID, datasetID, rows, now); err != nil {
			return err
		}
		return s.Enqueue(ctx, tx, rowIDs(rows))
	})
	if err != nil {
		if errors.Is(err, store.ErrNotFound) {
			return nil, err
		}
		return nil, s.Fail(ctx, err, "add traces")
	}
	return rowIDs(rows), nil
}

func rowIDs(rows []storeutil.Row) []string {
	ids := make([]string, len(rows))
	for i := range rows {
		ids[i] = rows[i].ID
	}
	return ids
}
