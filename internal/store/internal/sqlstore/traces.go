package sqlstore

import (
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"time"

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
		b.ID, b.TraceID, b.Address, b.Content, b.Source, b.Author, OptText(b.Extra), s.D.Time(b.CreatedAt), s.D.Time(b.UpdatedAt))
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
	res, err := s.AddTracesWith(ctx, ownerID, datasetID, traces, store.AddOptions{})
	return res.IDs, err
}

// AddTracesWith stores a batch of traces in one transaction, with what
// becomes of a trace whose given index is taken.
func (s *Store) AddTracesWith(ctx context.Context, ownerID, datasetID string, traces []store.NewTrace, opt store.AddOptions) (store.AddResult, error) {
	if !storeutil.ValidID(ownerID) {
		return store.AddResult{}, s.notFound("add traces: owner %q", ownerID)
	}
	if datasetID != "" && !storeutil.ValidID(datasetID) {
		return store.AddResult{}, s.notFound("add traces: dataset %q", datasetID)
	}
	now := storeutil.Now()
	rows, err := storeutil.PrepareTraces(traces, now)
	if err != nil {
		return store.AddResult{}, s.errorf("add traces: %w", err)
	}
	if len(rows) == 0 {
		if datasetID != "" {
			if _, err := s.Dataset(ctx, datasetID); err != nil {
				return store.AddResult{}, err
			}
		}
		return store.AddResult{IDs: []string{}}, nil
	}
	gives := false
	for i := range rows {
		gives = gives || rows[i].Given != nil
	}
	var res store.AddResult
	var version string
	err = s.Write(ctx, func(tx Querier) error {
		ins := rows
		res.Conflicts = nil
		if datasetID != "" && gives {
			var err error
			if ins, res.Conflicts, err = s.resolveIndexes(ctx, tx, datasetID, traces, rows, opt.OnConflict); err != nil {
				return err
			}
		}
		if len(ins) == 0 {
			return nil
		}
		if err := s.insertTraces(ctx, tx, ownerID, datasetID, ins, now); err != nil {
			return err
		}
		if opt.HandOver && s.Hooks.TxVersion != nil {
			var err error
			if version, err = s.Hooks.TxVersion(ctx, tx); err != nil {
				return err
			}
		}
		return s.Enqueue(ctx, tx, rowIDs(ins))
	})
	if err != nil {
		var taken *store.IndexTakenError
		if errors.Is(err, store.ErrNotFound) || errors.As(err, &taken) {
			return store.AddResult{}, err
		}
		return store.AddResult{}, s.Fail(ctx, err, "add traces")
	}
	res.IDs = rowIDs(rows)
	moved := map[int]bool{}
	for _, c := range res.Conflicts {
		moved[c.Trace] = true
		if c.NewIndex < 0 {
			res.IDs[c.Trace] = ""
		}
	}
	if opt.HandOver {
		for i := range rows {
			if !moved[i] {
				s.Handover.Put(rows[i].ID, version, rows[i].Content, rows[i].Metadata, traces[i].Trace)
			}
		}
	}
	return res, nil
}

// resolveIndexes finds the traces of a batch into a dataset whose given
// index the dataset holds, or an earlier trace of the batch gives, and
// deals with them as mode says. It returns the rows to insert (rows is
// left as it is, so a retried transaction starts again from it) and the
// conflicts. The dataset's row is locked first, so that no other batch
// takes an index between the check and the insert.
func (s *Store) resolveIndexes(ctx context.Context, tx Querier, datasetID string, traces []store.NewTrace, rows []storeutil.Row, mode store.OnConflict) ([]storeutil.Row, []store.IndexConflict, error) {
	var next int64
	if err := tx.QueryRow(ctx, `SELECT next_index FROM datasets WHERE id = $1`+s.D.ForUpdate, datasetID).Scan(&next); err != nil {
		return nil, nil, err
	}
	var given []int64
	for i := range rows {
		if rows[i].Given != nil {
			given = append(given, *rows[i].Given)
		}
	}
	taken, err := s.takenIndexes(ctx, tx, datasetID, given)
	if err != nil {
		return nil, nil, err
	}
	var conflicts []store.IndexConflict
	var moved []int // places in ins of the traces that get a new index
	first := map[int64]int{}
	ins := make([]storeutil.Row, 0, len(rows))
	for i, r := range rows {
		if r.Given != nil {
			g := *r.Given
			prev, inBatch := first[g]
			if !taken[g] && !inBatch {
				first[g] = i
			} else {
				switch mode {
				case store.ConflictSkip:
					conflicts = append(conflicts, store.IndexConflict{Trace: i, Index: g, NewIndex: -1})
					continue
				case store.ConflictAppend:
					conflicts = append(conflicts, store.IndexConflict{Trace: i, Index: g})
					moved = append(moved, len(ins))
					r.Given = nil
				default:
					if !inBatch {
						prev = -1
					}
					return nil, nil, &store.IndexTakenError{Trace: i, Index: g, InBatch: prev}
				}
			}
		}
		ins = append(ins, r)
	}
	if len(moved) > 0 {
		// The indexes the backend will assign (the same computation on
		// the same next_index), so that each moved trace's stored content
		// carries its new index.
		g := make([]*int64, len(ins))
		for j := range ins {
			g[j] = ins[j].Given
		}
		idx, _ := storeutil.AssignIndexes(next, g)
		k := 0
		for ci := range conflicts {
			j := moved[k]
			k++
			conflicts[ci].NewIndex = idx[j]
			t := *traces[conflicts[ci].Trace].Trace
			t.Index = &conflicts[ci].NewIndex
			ins[j].Content, ins[j].Encoding = storeutil.EncodeContent(&t)
		}
	}
	return ins, conflicts, nil
}

// takenIndexes returns which of the indexes the dataset holds.
func (s *Store) takenIndexes(ctx context.Context, tx Querier, datasetID string, idx []int64) (map[int64]bool, error) {
	taken := map[int64]bool{}
	const chunk = 500
	for len(idx) > 0 {
		n := min(len(idx), chunk)
		q := make([]byte, 0, 64+8*n)
		q = append(q, `SELECT idx FROM traces WHERE dataset_id = $1 AND idx IN (`...)
		args := make([]any, 0, n+1)
		args = append(args, datasetID)
		for i, x := range idx[:n] {
			if i > 0 {
				q = append(q, ',')
			}
			q = append(q, '$')
			q = strconv.AppendInt(q, int64(i+2), 10)
			args = append(args, x)
		}
		q = append(q, ')')
		rows, err := tx.Query(ctx, string(q), args...)
		got, err := collect(rows, err, func(r Row) (int64, error) {
			var v int64
			return v, r.Scan(&v)
		})
		if err != nil {
			return nil, err
		}
		for _, v := range got {
			taken[v] = true
		}
		idx = idx[n:]
	}
	return taken, nil
}

func rowIDs(rows []storeutil.Row) []string {
	ids := make([]string, len(rows))
	for i := range rows {
		ids[i] = rows[i].ID
	}
	return ids
}

// insertTraces writes prepared traces with their annotations in tx: in a
// dataset each gets its index, and the dataset its new trace count and
// last push.
func (s *Store) insertTraces(ctx context.Context, tx Querier, ownerID, datasetID string, rows []storeutil.Row, now time.Time) error {
	if datasetID == "" {
		for i := range rows {
			if rows[i].Given != nil {
				rows[i].Index = *rows[i].Given
			}
		}
		return s.Hooks.InsertTraces(ctx, tx, ownerID, datasetID, rows, now)
	}
	var next int64
	// ForUpdate: batches into one dataset take their indexes in turn.
	if err := tx.QueryRow(ctx, `SELECT next_index FROM datasets WHERE id = $1`+s.D.ForUpdate, datasetID).Scan(&next); err != nil {
		if NoRows(err) {
			return s.notFound("dataset %s", datasetID)
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
		newNext, len(rows), s.D.Time(now), datasetID); err != nil {
		return err
	}
	return s.Hooks.InsertTraces(ctx, tx, ownerID, datasetID, rows, now)
}
