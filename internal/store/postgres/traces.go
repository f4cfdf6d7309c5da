package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/lookout-dev/lookout/internal/search"
	"github.com/lookout-dev/lookout/internal/store"
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
var annotationCopyCols = []string{"id", "trace_id", "address", "content", "source", "author", "extra", "created_at", "updated_at"}

// AddTraces stores a batch of traces with COPY in one transaction: all or
// none.
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
		return nil, fmt.Errorf("postgres: add traces: %w", err)
	}
	if len(rows) == 0 {
		if datasetID != "" {
			if _, err := s.Dataset(ctx, datasetID); err != nil {
				return nil, err
			}
		}
		return []string{}, nil
	}
	err = s.write(ctx, func(tx pgx.Tx) error {
		return insertTraces(ctx, tx, ownerID, datasetID, rows, now)
	})
	if err != nil {
		if errors.Is(err, store.ErrNotFound) {
			return nil, err
		}
		return nil, fail(ctx, err, "add traces")
	}
	ids := make([]string, len(rows))
	var pieces int64
	for i := range rows {
		ids[i] = rows[i].ID
		pieces += int64(len(rows[i].Doc.Pieces))
	}
	s.noteIndexed(pieces)
	return ids, nil
}

// insertTraces writes prepared traces with their annotations and search
// index in tx, taking textsLock first: in a dataset each gets its index,
// and the dataset its new trace count and last push.
func insertTraces(ctx context.Context, tx pgx.Tx, ownerID, datasetID string, rows []storeutil.Row, now time.Time) error {
	if err := lockTexts(ctx, tx, false); err != nil {
		return err
	}
	ds := pgtype.UUID{} // NULL outside a dataset
	if datasetID != "" {
		ds = uuidOf(datasetID)
		var next int64
		// FOR UPDATE: batches into one dataset take their indexes in turn.
		if err := tx.QueryRow(ctx, `SELECT next_index FROM datasets WHERE id = $1 FOR UPDATE`, datasetID).Scan(&next); err != nil {
			if errors.Is(err, pgx.ErrNoRows) {
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
		if _, err := tx.Exec(ctx, `UPDATE datasets SET next_index = $1, trace_count = trace_count + $2, last_pushed = $3 WHERE id = $4`,
			newNext, len(rows), now, datasetID); err != nil {
			return err
		}
	} else {
		for i := range rows {
			if rows[i].Given != nil {
				rows[i].Index = *rows[i].Given
			}
		}
	}
	owner := uuidOf(ownerID)
	nAnn := 0
	_, err := tx.CopyFrom(ctx, pgx.Identifier{"traces"}, traceCopyCols, pgx.CopyFromSlice(len(rows), func(i int) ([]any, error) {
		r := &rows[i]
		nAnn += len(r.Anns)
		return []any{uuidOf(r.ID), ds, owner, r.Index, r.Name, optText(r.Metadata), optText(r.Hierarchy), r.EventCount, now, int16(r.Encoding), r.Content}, nil
	}))
	if err != nil {
		return err
	}
	ids := make([]string, len(rows))
	docs := make([]storeutil.IndexDoc, len(rows))
	for i := range rows {
		ids[i], docs[i] = rows[i].ID, storeutil.IndexDoc{Doc: &rows[i].Doc, Hashes: rows[i].Hashes}
	}
	if err := insertDocs(ctx, tx, ids, docs); err != nil {
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

// copyAnnotations writes annotations with COPY.
func copyAnnotations(ctx context.Context, tx pgx.Tx, each func(yield func(store.Annotation))) error {
	var vals [][]any
	each(func(a store.Annotation) {
		vals = append(vals, []any{uuidOf(a.ID), uuidOf(a.TraceID), a.Address, a.Content, a.Source, a.Author, optText(a.Extra), a.CreatedAt, a.UpdatedAt})
	})
	_, err := tx.CopyFrom(ctx, pgx.Identifier{"annotations"}, annotationCopyCols, pgx.CopyFromRows(vals))
	return err
}

// Trace reads one trace.
func (s *Store) Trace(ctx context.Context, id string) (store.StoredTrace, error) {
	if !storeutil.ValidID(id) {
		return store.StoredTrace{}, notFound("trace %q", id)
	}
	var st store.StoredTrace
	var ds *string
	var meta, hier, content []byte
	var enc int16
	err := s.pool.QueryRow(ctx, `SELECT dataset_id, owner_id, idx, metadata, hierarchy, created_at, encoding, content FROM traces WHERE id = $1`, id).
		Scan(&ds, &st.OwnerID, &st.Index, &meta, &hier, &st.CreatedAt, &enc, &content)
	if err != nil {
		return store.StoredTrace{}, fail(ctx, err, "trace %s", id)
	}
	st.ID, st.CreatedAt = id, st.CreatedAt.UTC()
	if ds != nil {
		st.DatasetID = *ds
	}
	if st.Hierarchy, err = storeutil.ParseHierarchy(hier); err != nil {
		return store.StoredTrace{}, fmt.Errorf("postgres: trace %s: %w", id, err)
	}
	if st.Trace, err = storeutil.DecodeContent(content, int(enc), meta); err != nil {
		return store.StoredTrace{}, fmt.Errorf("postgres: trace %s: %w", id, err)
	}
	return st, nil
}

// ListTraces lists a dataset's traces by index, a page at a time.
func (s *Store) ListTraces(ctx context.Context, datasetID string, page store.Page) ([]store.TraceSummary, string, error) {
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
	rows, err := s.pool.Query(ctx, `SELECT t.id, t.idx, t.name, t.metadata, t.event_count, t.created_at,
			(SELECT count(*) FROM annotations a WHERE a.trace_id = t.id)
		FROM datasets d LEFT JOIN LATERAL (
			SELECT * FROM traces t WHERE t.dataset_id = d.id AND t.idx > $2 ORDER BY t.idx LIMIT $3
		) t ON true
		WHERE d.id = $1 ORDER BY t.idx`, datasetID, after, limit+1)
	if err != nil {
		return nil, "", fail(ctx, err, "list traces of dataset %s", datasetID)
	}
	defer rows.Close()
	items := make([]store.TraceSummary, 0, limit)
	found, more := false, false
	for rows.Next() {
		found = true
		var id *string
		var t store.TraceSummary
		var idx *int64
		var name *string
		var meta []byte
		var events *int32
		var created *time.Time
		if err := rows.Scan(&id, &idx, &name, &meta, &events, &created, &t.AnnotationCount); err != nil {
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
		if meta != nil {
			t.Metadata = json.RawMessage(meta)
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
	err := s.write(ctx, func(tx pgx.Tx) error {
		_, err := appendToTrace(ctx, tx, id, events, nil, nil)
		return err
	})
	if err != nil {
		return fail(ctx, err, "append events to trace %s", id)
	}
	return nil
}

// appendToTrace adds events and spans to the end of stored trace id, with
// their search index, and returns its event count after; it takes
// textsLock, then the trace's row lock. check, when not nil, sees the
// trace's dataset and event count before anything is written.
func appendToTrace(ctx context.Context, tx pgx.Tx, id string, events []trace.Event, spans []trace.Span, check func(datasetID string, events int) error) (int, error) {
	if err := lockTexts(ctx, tx, false); err != nil {
		return 0, err
	}
	var ds *string
	var count int
	var meta, content []byte
	var enc int16
	if err := tx.QueryRow(ctx, `SELECT dataset_id, event_count, metadata, encoding, content FROM traces WHERE id = $1 FOR UPDATE`, id).
		Scan(&ds, &count, &meta, &enc, &content); err != nil {
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
	t, err := storeutil.DecodeContent(content, int(enc), meta)
	if err != nil {
		return 0, err
	}
	first := len(t.Events)
	t.Events = append(t.Events, events...)
	t.Spans = append(t.Spans, spans...)
	content, newEnc := storeutil.EncodeContent(t)
	if _, err = tx.Exec(ctx, `UPDATE traces SET content = $1, encoding = $2, event_count = $3 WHERE id = $4`, content, int16(newEnc), len(t.Events), id); err != nil {
		return 0, err
	}
	d := search.IndexAppended(events, first, spans)
	var seq int
	if err := tx.QueryRow(ctx, `SELECT coalesce(max(seq) + 1, 0) FROM search_pieces WHERE trace_id = $1`, id).Scan(&seq); err != nil {
		return 0, err
	}
	if err := insertDocs(ctx, tx, []string{id}, []storeutil.IndexDoc{{Doc: &d, Seq: seq}}); err != nil {
		return 0, err
	}
	// A trace of spans not yet built has index rows now: its build must
	// replace them, not take it for one without any.
	_, err = tx.Exec(ctx, `UPDATE otel_pending SET fresh = false WHERE trace_id = $1 AND fresh`, id)
	return len(t.Events), err
}

// DeleteTrace removes a trace and its annotations.
func (s *Store) DeleteTrace(ctx context.Context, id string) error {
	if !storeutil.ValidID(id) {
		return notFound("trace %q", id)
	}
	err := s.write(ctx, func(tx pgx.Tx) error {
		if err := lockTexts(ctx, tx, true); err != nil {
			return err
		}
		if err := deleteDoc(ctx, tx, id); err != nil {
			return err
		}
		var ds *string
		if err := tx.QueryRow(ctx, `DELETE FROM traces WHERE id = $1 RETURNING dataset_id`, id).Scan(&ds); err != nil {
			return err
		}
		if ds != nil {
			_, err := tx.Exec(ctx, `UPDATE datasets SET trace_count = trace_count - 1 WHERE id = $1`, *ds)
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

const annotationCols = `id, trace_id, address, content, source, author, extra, created_at, updated_at`

func scanAnnotation(row pgx.Row) (store.Annotation, error) {
	var a store.Annotation
	var extra []byte
	err := row.Scan(&a.ID, &a.TraceID, &a.Address, &a.Content, &a.Source, &a.Author, &extra, &a.CreatedAt, &a.UpdatedAt)
	if extra != nil {
		a.Extra = json.RawMessage(extra)
	}
	a.CreatedAt, a.UpdatedAt = a.CreatedAt.UTC(), a.UpdatedAt.UTC()
	return a, err
}

// CreateAnnotation adds an annotation to a trace.
func (s *Store) CreateAnnotation(ctx context.Context, a store.Annotation) (store.Annotation, error) {
	if !storeutil.ValidID(a.TraceID) {
		return store.Annotation{}, notFound("create annotation: trace %q", a.TraceID)
	}
	as, err := storeutil.PrepareAnnotations([]store.Annotation{a}, a.TraceID, storeutil.Now())
	if err != nil {
		return store.Annotation{}, fmt.Errorf("postgres: create annotation: %w", err)
	}
	b := as[0]
	_, err = s.pool.Exec(ctx, `INSERT INTO annotations (`+annotationCols+`) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`,
		b.ID, b.TraceID, b.Address, b.Content, b.Source, b.Author, optText(b.Extra), b.CreatedAt, b.UpdatedAt)
	if err != nil {
		return store.Annotation{}, fail(ctx, err, "create annotation on trace %s", a.TraceID)
	}
	return b, nil
}

// ListAnnotations lists a trace's annotations in the order they were made.
func (s *Store) ListAnnotations(ctx context.Context, traceID string) ([]store.Annotation, error) {
	if !storeutil.ValidID(traceID) {
		return nil, notFound("trace %q", traceID)
	}
	var as []store.Annotation
	err := s.read(ctx, func(tx pgx.Tx) error {
		var one int
		if err := tx.QueryRow(ctx, `SELECT 1 FROM traces WHERE id = $1`, traceID).Scan(&one); err != nil {
			return err
		}
		rows, err := tx.Query(ctx, `SELECT `+annotationCols+` FROM annotations WHERE trace_id = $1 ORDER BY seq`, traceID)
		if err != nil {
			return err
		}
		as, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (store.Annotation, error) { return scanAnnotation(r) })
		return err
	})
	if err != nil {
		return nil, fail(ctx, err, "list annotations of trace %s", traceID)
	}
	return nonNil(as), nil
}

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
	out, err := scanAnnotation(s.pool.QueryRow(ctx, `UPDATE annotations SET content = $1, extra = $2, updated_at = $3
		WHERE id = $4 AND ($5::uuid IS NULL OR trace_id = $5) RETURNING `+annotationCols,
		a.Content, optText(storeutil.FixUTF8(a.Extra)), storeutil.Now(), a.ID, trace))
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
	tag, err := s.pool.Exec(ctx, `DELETE FROM annotations WHERE id = $1`, id)
	if err != nil {
		return fail(ctx, err, "delete annotation %s", id)
	}
	if tag.RowsAffected() == 0 {
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
		return fmt.Errorf("postgres: replace annotations: extra member %q: %w", key, store.ErrInvalid)
	}
	return s.replaceAnnotations(ctx, traceID, source, key, value, as)
}

// replaceAnnotations replaces the annotations of source on a trace, only
// those whose extra member key equals value when key is not empty.
func (s *Store) replaceAnnotations(ctx context.Context, traceID, source, key, value string, as []store.Annotation) error {
	if source == "" {
		return fmt.Errorf("postgres: replace annotations: no source: %w", store.ErrInvalid)
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
		return fmt.Errorf("postgres: replace annotations: %w", err)
	}
	err = s.write(ctx, func(tx pgx.Tx) error {
		var one int
		// FOR SHARE: the trace cannot go away before the new rows are in.
		if err := tx.QueryRow(ctx, `SELECT 1 FROM traces WHERE id = $1 FOR SHARE`, traceID).Scan(&one); err != nil {
			return err
		}
		del, args := `DELETE FROM annotations WHERE trace_id = $1 AND source = $2`, []any{traceID, source}
		if key != "" {
			del += ` AND extra IS NOT NULL AND extra::jsonb ->> $3 = $4`
			args = append(args, key, value)
		}
		if _, err := tx.Exec(ctx, del, args...); err != nil {
			return err
		}
		if len(prepared) == 0 {
			return nil
		}
		return copyAnnotations(ctx, tx, func(yield func(store.Annotation)) {
			for _, a := range prepared {
				yield(a)
			}
		})
	})
	if err != nil {
		return fail(ctx, err, "replace %s annotations of trace %s", source, traceID)
	}
	return nil
}

// ---- policies ----

const policyCols = `id, dataset_id, name, source, mode, created_at, updated_at`

func scanPolicy(row pgx.Row) (store.Policy, error) {
	var p store.Policy
	err := row.Scan(&p.ID, &p.DatasetID, &p.Name, &p.Source, &p.Mode, &p.CreatedAt, &p.UpdatedAt)
	p.CreatedAt, p.UpdatedAt = p.CreatedAt.UTC(), p.UpdatedAt.UTC()
	return p, err
}

// SavePolicy creates a policy or, by (dataset, name), updates its source
// and mode ("" is log). A policy with an ID is updated by ID (which may
// rename it).
func (s *Store) SavePolicy(ctx context.Context, p store.Policy) (store.Policy, error) {
	if err := storeutil.CheckName("policy", p.Name); err != nil {
		return store.Policy{}, fmt.Errorf("postgres: save policy: %w", err)
	}
	if err := storeutil.CheckText("policy source", p.Source); err != nil {
		return store.Policy{}, fmt.Errorf("postgres: save policy: %w", err)
	}
	mode, err := storeutil.PolicyMode(p.Mode)
	if err != nil {
		return store.Policy{}, fmt.Errorf("postgres: save policy: %w", err)
	}
	if !storeutil.ValidID(p.DatasetID) {
		return store.Policy{}, notFound("save policy: dataset %q", p.DatasetID)
	}
	now := storeutil.Now()
	var out store.Policy
	if p.ID != "" {
		if !storeutil.ValidID(p.ID) {
			return store.Policy{}, notFound("policy %q", p.ID)
		}
		out, err = scanPolicy(s.pool.QueryRow(ctx, `UPDATE policies SET name = $1, source = $2, mode = $3, updated_at = $4
			WHERE id = $5 AND dataset_id = $6 RETURNING `+policyCols, p.Name, p.Source, mode, now, p.ID, p.DatasetID))
	} else {
		out, err = scanPolicy(s.pool.QueryRow(ctx, `INSERT INTO policies (id, dataset_id, name, source, mode, created_at, updated_at)
			VALUES ($1, $2, $3, $4, $5, $6, $6)
			ON CONFLICT (dataset_id, name) DO UPDATE SET source = excluded.source, mode = excluded.mode, updated_at = excluded.updated_at
			RETURNING `+policyCols, storeutil.NewID(), p.DatasetID, p.Name, p.Source, mode, now))
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
	var ps []store.Policy
	err := s.read(ctx, func(tx pgx.Tx) error {
		var one int
		if err := tx.QueryRow(ctx, `SELECT 1 FROM datasets WHERE id = $1`, datasetID).Scan(&one); err != nil {
			return err
		}
		rows, err := tx.Query(ctx, `SELECT `+policyCols+` FROM policies WHERE dataset_id = $1 ORDER BY name`, datasetID)
		if err != nil {
			return err
		}
		ps, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (store.Policy, error) { return scanPolicy(r) })
		return err
	})
	if err != nil {
		return nil, fail(ctx, err, "list policies of dataset %s", datasetID)
	}
	return nonNil(ps), nil
}

// Policy finds a policy by id.
func (s *Store) Policy(ctx context.Context, id string) (store.Policy, error) {
	if !storeutil.ValidID(id) {
		return store.Policy{}, notFound("policy %q", id)
	}
	p, err := scanPolicy(s.pool.QueryRow(ctx, `SELECT `+policyCols+` FROM policies WHERE id = $1`, id))
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
	tag, err := s.pool.Exec(ctx, `DELETE FROM policies WHERE id = $1`, id)
	if err != nil {
		return fail(ctx, err, "delete policy %s", id)
	}
	if tag.RowsAffected() == 0 {
		return notFound("policy %s", id)
	}
	return nil
}
