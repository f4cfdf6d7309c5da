package sqlstore

import (
	"context"
	"math"
	"sync"

	"github.com/lookout-dev/lookout/internal/store"
	"github.com/lookout-dev/lookout/internal/store/internal/storeutil"
)

// sortCols are the columns of trace_summaries that the sort keys are kept
// in (migration 00020), each with an index (dataset_id, column, idx).
var sortCols = map[string]string{
	store.SortDuration:   "duration_ms",
	store.SortTokens:     "tokens",
	store.SortCost:       "cost",
	store.SortViolations: "violations",
}

// Sorted reports whether page asks for another order than the index's
// ascending one, or an offset (ListSorted lists it).
func Sorted(page store.Page) bool {
	return (page.Sort != "" && page.Sort != store.SortTime) || page.Desc || page.Offset > 0
}

// ListSorted lists a dataset's traces in the order page asks for (a sort
// key and direction, ties by index in the same direction), a page at a
// time. Each page is a range of an index: after the cursor's (value,
// index) in the (dataset, key, index) order. For a score, the traces
// with a score on the criterion come first (score_keys), then those with
// none, by index.
func (s *Store) ListSorted(ctx context.Context, datasetID string, page store.Page) ([]store.TraceSummary, string, error) {
	key, criterion, err := store.ParseSort(page.Sort)
	if err != nil {
		return nil, "", s.errorf("list traces: %w", err)
	}
	dir, cmp := "ASC", ">"
	if page.Desc {
		dir, cmp = "DESC", "<"
	}
	sortName := page.Sort + " " + dir
	cur, ok, err := storeutil.DecodeSortCursor(page.Cursor, sortName)
	if err != nil {
		return nil, "", s.errorf("list traces: %w", err)
	}
	if !storeutil.ValidID(datasetID) {
		return nil, "", s.notFound("dataset %q", datasetID)
	}
	var one int
	if err := s.R.QueryRow(ctx, `SELECT 1 FROM datasets WHERE id = $1`, datasetID).Scan(&one); err != nil {
		return nil, "", s.Fail(ctx, err, "dataset %s", datasetID)
	}
	if key != store.SortTime {
		if err := s.fillDataset(ctx, datasetID); err != nil {
			return nil, "", err
		}
	}
	if !ok && page.Offset > 0 {
		if cur, ok, err = s.offsetCursor(ctx, datasetID, key, criterion, dir, page.Offset); err != nil {
			return nil, "", err
		}
		if !ok {
			return []store.TraceSummary{}, "", nil // past the end
		}
		cur.Sort = sortName
	}
	limit := storeutil.Limit(page.Limit)
	var items []store.TraceSummary
	var missing []int // rows with no digest stored
	var vals []float64
	var unscored []bool
	read := func(q string, args ...any) error {
		rows, err := s.R.Query(ctx, q, args...)
		if err != nil {
			return s.Fail(ctx, err, "list traces of dataset %s", datasetID)
		}
		defer rows.Close()
		var lr ListRow
		for rows.Next() {
			var t store.TraceSummary
			var created Time
			var v float64
			if err := rows.Scan(append(lr.Dest(&t, &created), &v)...); err != nil {
				return s.Fail(ctx, err, "list traces of dataset %s", datasetID)
			}
			has, err := lr.Finish(&t)
			if err != nil {
				return s.errorf("list traces of dataset %s: %w", datasetID, err)
			}
			if !has {
				missing = append(missing, len(items))
			}
			t.CreatedAt = created.T
			items = append(items, t)
			vals = append(vals, v)
			unscored = append(unscored, cur.Unscored)
		}
		if err := rows.Err(); err != nil {
			return s.Fail(ctx, err, "list traces of dataset %s", datasetID)
		}
		return nil
	}
	// byIndex reads the traces after the cursor's index, in the
	// direction asked; for a score, those with no score on it.
	byIndex := func(n int, fromStart bool) error {
		after := cur.Index
		if fromStart {
			after = -1
			if page.Desc {
				after = math.MaxInt64
			}
		}
		cond, args := "", []any{datasetID, after, n}
		if key == store.SortScore {
			cond, args = ` AND NOT EXISTS (SELECT 1 FROM score_keys k WHERE k.trace_id = t.id AND k.criterion = $4)`, append(args, criterion)
		}
		return read(`SELECT `+ListCols+`, CAST(t.idx AS double precision) FROM traces t
			WHERE t.dataset_id = $1 AND t.idx `+cmp+` $2`+cond+` ORDER BY t.idx `+dir+` LIMIT $3`, args...)
	}
	switch key {
	case store.SortTime:
		err = byIndex(limit+1, !ok)
	case store.SortScore:
		if !cur.Unscored {
			where, args := "", []any{datasetID, criterion, limit + 1}
			if ok {
				where, args = ` AND (k.value, k.idx) `+cmp+` ($4, $5)`, append(args, cur.Value, cur.Index)
			}
			err = read(`SELECT `+ListCols+`, k.value FROM score_keys k JOIN traces t ON t.id = k.trace_id
				WHERE k.dataset_id = $1 AND k.criterion = $2`+where+`
				ORDER BY k.value `+dir+`, k.idx `+dir+` LIMIT $3`, args...)
			if err == nil && len(items) <= limit {
				cur.Unscored = true
				err = byIndex(limit+1-len(items), true)
			}
		} else {
			err = byIndex(limit+1, false)
		}
	default:
		col := sortCols[key]
		where, args := "", []any{datasetID, limit + 1}
		if ok {
			var v any = cur.Value
			if key == store.SortTokens || key == store.SortViolations {
				v = int64(cur.Value) // integer columns: PostgreSQL takes no float for them
			}
			where, args = ` AND (k.`+col+`, k.idx) `+cmp+` ($3, $4)`, append(args, v, cur.Index)
		}
		err = read(`SELECT `+ListCols+`, CAST(k.`+col+` AS double precision) FROM trace_summaries k JOIN traces t ON t.id = k.trace_id
			WHERE k.dataset_id = $1`+where+`
			ORDER BY k.`+col+` `+dir+`, k.idx `+dir+` LIMIT $2`, args...)
	}
	if err != nil {
		return nil, "", err
	}
	next := ""
	if len(items) > limit {
		items = items[:limit]
		last := limit - 1
		next = storeutil.EncodeSortCursor(storeutil.SortCursor{Sort: sortName, Value: vals[last], Index: items[last].Index, Unscored: unscored[last]})
	}
	for len(missing) > 0 && missing[len(missing)-1] >= len(items) {
		missing = missing[:len(missing)-1]
	}
	if err := s.FillDigests(ctx, MissingDigests(items, missing)); err != nil {
		return nil, "", err
	}
	return items, next, nil
}

// filled holds the datasets whose every trace but those pending is known
// to have a row in trace_summaries (every write since migration 00018
// writes one, an OpenTelemetry trace's once it is built): a sorted list
// reads the keys there, and a trace without one would be missing.
var filled sync.Map

// fillDataset computes and stores the digests of the dataset's traces
// that have none: those written before 00018, once a process and dataset,
// and those whose spans wait to be built, each time (a handful; the build
// replaces the row).
func (s *Store) fillDataset(ctx context.Context, datasetID string) error {
	rows, err := s.R.Query(ctx, `SELECT CAST(p.trace_id AS text) FROM otel_pending p WHERE p.dataset_id = $1
		AND NOT EXISTS (SELECT 1 FROM trace_summaries d WHERE d.trace_id = p.trace_id)`, datasetID)
	pending, err := collect(rows, err, func(r Row) (*store.TraceSummary, error) {
		var t store.TraceSummary
		return &t, r.Scan(&t.ID)
	})
	if err != nil {
		return s.Fail(ctx, err, "list traces of dataset %s: pending traces without a summary", datasetID)
	}
	if err := s.FillDigests(ctx, pending); err != nil {
		return err
	}
	if _, ok := filled.Load(datasetID); ok {
		return nil
	}
	// By index, so that a trace whose content does not decode (it keeps
	// no row) is passed over, not found again.
	type missing struct {
		id  string
		idx int64
	}
	after := int64(-1)
	for {
		rows, err := s.R.Query(ctx, `SELECT t.id, t.idx FROM traces t WHERE t.dataset_id = $1 AND t.idx > $2
			AND NOT EXISTS (SELECT 1 FROM trace_summaries d WHERE d.trace_id = t.id) ORDER BY t.idx LIMIT 500`, datasetID, after)
		ids, err := collect(rows, err, func(r Row) (missing, error) {
			var m missing
			return m, r.Scan(&m.id, &m.idx)
		})
		if err != nil {
			return s.Fail(ctx, err, "list traces of dataset %s: traces without a summary", datasetID)
		}
		if len(ids) == 0 {
			break
		}
		ts := make([]*store.TraceSummary, len(ids))
		for i, m := range ids {
			ts[i] = &store.TraceSummary{ID: m.id}
		}
		after = ids[len(ids)-1].idx
		if err := s.FillDigests(ctx, ts); err != nil {
			return err
		}
	}
	filled.Store(datasetID, true)
	return nil
}

// offsetCursor is the cursor after the first offset traces of a sorted
// list (ok false when the list is shorter): the (value, index) at that
// position, read from the sort's index alone.
func (s *Store) offsetCursor(ctx context.Context, datasetID, key, criterion, dir string, offset int) (storeutil.SortCursor, bool, error) {
	var c storeutil.SortCursor
	at := func(q string, args ...any) (bool, error) {
		err := s.R.QueryRow(ctx, q, args...).Scan(&c.Value, &c.Index)
		if NoRows(err) {
			return false, nil
		}
		if err != nil {
			return false, s.Fail(ctx, err, "list traces of dataset %s: offset %d", datasetID, offset)
		}
		return true, nil
	}
	byIndex := func(n int, cond string, args ...any) (bool, error) {
		return at(`SELECT CAST(t.idx AS double precision), t.idx FROM traces t WHERE t.dataset_id = $1`+cond+`
			ORDER BY t.idx `+dir+` LIMIT 1 OFFSET $2`, append([]any{datasetID, n - 1}, args...)...)
	}
	switch key {
	case store.SortTime:
		ok, err := byIndex(offset, "")
		return c, ok, err
	case store.SortScore:
		var scored int
		if err := s.R.QueryRow(ctx, `SELECT count(*) FROM score_keys WHERE dataset_id = $1 AND criterion = $2`, datasetID, criterion).Scan(&scored); err != nil {
			return c, false, s.Fail(ctx, err, "list traces of dataset %s: offset %d", datasetID, offset)
		}
		if offset <= scored {
			ok, err := at(`SELECT k.value, k.idx FROM score_keys k WHERE k.dataset_id = $1 AND k.criterion = $3
				ORDER BY k.value `+dir+`, k.idx `+dir+` LIMIT 1 OFFSET $2`, datasetID, offset-1, criterion)
			return c, ok, err
		}
		c.Unscored = true
		ok, err := byIndex(offset-scored, ` AND NOT EXISTS (SELECT 1 FROM score_keys k WHERE k.trace_id = t.id AND k.criterion = $3)`, criterion)
		return c, ok, err
	default:
		col := sortCols[key]
		ok, err := at(`SELECT CAST(k.`+col+` AS double precision), k.idx FROM trace_summaries k WHERE k.dataset_id = $1
			ORDER BY k.`+col+` `+dir+`, k.idx `+dir+` LIMIT 1 OFFSET $2`, datasetID, offset-1)
		return c, ok, err
	}
}
