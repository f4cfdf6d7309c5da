package sqlstore

import (
	"cmp"
	"context"
	"fmt"

	"github.com/lookout-dev/lookout/internal/search"
	"github.com/lookout-dev/lookout/internal/store"
	"github.com/lookout-dev/lookout/internal/store/internal/indexer"
	"github.com/lookout-dev/lookout/internal/store/internal/storeutil"
	"github.com/lookout-dev/lookout/internal/trace"
)

// SearchIndex is a backend's search index: how it looks texts up (a
// trigram index in Go, trigram GIN) and reads the index. The statements it is given, those of
// search.Dialect and of searchStatements, have "?" placeholders.
type SearchIndex interface {
	search.Dialect
	// Indexer is the backend's search indexer.
	Indexer() *indexer.Indexer
	// TextsHolding returns the ids of the texts that hold word, or nil
	// when there are more than the backend lists: the word is common,
	// tested trace by trace.
	TextsHolding(ctx context.Context, word string) ([]int64, error)
	// TextsSet is a statement of the traces that hold any of the texts (a
	// search.Leaf's Set, with its Args).
	TextsSet(texts []int64) (set string, args []any)
	// ReadIndex runs fn with a Querier of the search statements.
	ReadIndex(ctx context.Context, fn func(q Querier) error) error
	// CountParts is how many parts, counted side by side, a count that
	// scans a dataset's first traces is split into.
	CountParts() int
	// StoredTraces calls fn with each stored trace of ids, decoded (those
	// gone are not given; a trace that does not decode comes with its
	// error).
	StoredTraces(ctx context.Context, ids []string, fn func(id string, t *trace.Trace, bad error)) error
}

// SearchTraces answers a query from the index.
func (s *Store) SearchTraces(ctx context.Context, datasetID string, q *search.Query, opts store.SearchOptions) (store.SearchResult, error) {
	var res store.SearchResult
	after, ok, err := storeutil.DecodeCursor(opts.Page.Cursor)
	if err != nil {
		return res, s.errorf("search: %w", err)
	}
	if !ok {
		after = -1
	}
	ds, err := s.Dataset(ctx, datasetID)
	if err != nil {
		return res, err
	}
	// Exact: every trace acknowledged before the search is in the index.
	if err := s.Search.Indexer().WaitFor(ctx, datasetID); err != nil {
		return res, s.Fail(ctx, err, "search dataset %s: index its queued traces", datasetID)
	}
	plan, err := s.searchPlan(ctx, datasetID, ds.Name, q, commonBound(opts))
	if err != nil {
		return res, err
	}
	c, err := q.Compile(s.Search, plan)
	if err != nil {
		return res, err
	}
	pageSQL, countSQL := searchStatements(c, ListCols)
	// The count runs beside the page, on connections of its own.
	countCap := opts.CountCap
	if countCap <= 0 {
		countCap = store.DefaultCountCap
	}
	countDone := countMatches(c, countCap, s.Search.CountParts(), func(skip, n int) (int64, error) {
		var m int64
		err := s.Search.ReadIndex(ctx, func(q Querier) error {
			return q.QueryRow(ctx, countSQL, countArgs(c, datasetID, skip, n)...).Scan(&m)
		})
		return m, err
	})
	limit := storeutil.Limit(opts.Page.Limit)
	more := false
	var lr ListRow
	var missing []int // rows with no digest stored
	err = s.Search.ReadIndex(ctx, func(q Querier) error {
		missing = missing[:0]
		rows, err := q.Query(ctx, pageSQL, pageArgs(c, datasetID, after, limit+1)...)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			if len(res.Traces) == limit {
				more = true
				break
			}
			var t store.SearchHit
			var created Time
			if err := rows.Scan(lr.Dest(&t.TraceSummary, &created)...); err != nil {
				return err
			}
			if ok, err := lr.Finish(&t.TraceSummary); err != nil {
				return err
			} else if !ok {
				missing = append(missing, len(res.Traces))
			}
			t.CreatedAt = created.T
			res.Traces = append(res.Traces, t)
		}
		rows.Close()
		return rows.Err()
	})
	if err != nil {
		return res, s.Fail(ctx, err, "search dataset %s", datasetID)
	}
	if more {
		res.Next = storeutil.EncodeCursor(res.Traces[len(res.Traces)-1].Index)
	}
	if len(missing) > 0 {
		ts := make([]*store.TraceSummary, len(missing))
		for k, i := range missing {
			ts[k] = &res.Traces[i].TraceSummary
		}
		if err := s.FillDigests(ctx, ts); err != nil {
			return res, err
		}
	}
	// The hits too are read while the count goes on.
	if words := q.Words(); len(words) > 0 && len(res.Traces) > 0 {
		if err := s.hits(ctx, res.Traces, words); err != nil {
			return res, s.Fail(ctx, err, "search dataset %s: hits", datasetID)
		}
	}
	total := <-countDone
	if total.Err != nil {
		return res, s.Fail(ctx, total.Err, "count matches in dataset %s", datasetID)
	}
	res.Total, res.Estimate = searchTotal(c, total.N, ds.TraceCount, countCap)
	return res, nil
}

// searchPlan looks up what the query's plan needs: the dataset's policies,
// and which of the query's leaves are common (bound or more traces).
func (s *Store) searchPlan(ctx context.Context, datasetID, dataset string, q *search.Query, bound int) (search.Plan, error) {
	plan := search.Plan{Dataset: dataset, Common: map[string]bool{}, Sets: map[string]search.Leaf{}}
	if names := q.Policies(); len(names) > 0 {
		ps, err := s.ListPolicies(ctx, datasetID)
		if err != nil {
			return plan, err
		}
		plan.PolicyIDs = storeutil.PolicyIDs(ps)
	}
	for _, l := range q.Leaves(s.Search) {
		// A word's trigram lookup is most of a rare word's time: the texts
		// that hold it are looked up once, and the query then finds their
		// traces by those texts' ids. A word in more texts than the backend
		// lists is common: its traces are tested one by one in index order.
		if l.Word != "" {
			texts, err := s.Search.TextsHolding(ctx, l.Word)
			if err != nil {
				return plan, s.Fail(ctx, err, "search dataset %s", datasetID)
			}
			if texts == nil {
				plan.Common[l.Key] = true
				continue
			}
			l.Set, l.Args = s.Search.TextsSet(texts)
			plan.Sets[l.Key] = l
		}
		var n int64
		err := s.Search.ReadIndex(ctx, func(q Querier) error {
			return q.QueryRow(ctx, `SELECT count(*) FROM (`+l.Set+` LIMIT ?) c`, append(l.Args, bound)...).Scan(&n)
		})
		if err != nil {
			return plan, s.Fail(ctx, err, "search dataset %s", datasetID)
		}
		plan.Common[l.Key] = n >= int64(bound)
	}
	return plan, nil
}

// hits finds the words in the page's traces, read from what is stored:
// the index keeps which texts a trace holds, not where; and the snippet
// around each trace's first hit.
func (s *Store) hits(ctx context.Context, ts []store.SearchHit, words []string) error {
	at := make(map[string]int, len(ts))
	ids := make([]string, len(ts))
	for i := range ts {
		at[ts[i].ID], ids[i] = i, ts[i].ID
	}
	var bad error
	err := s.Search.StoredTraces(ctx, ids, func(id string, t *trace.Trace, err error) {
		if err != nil {
			bad = cmp.Or(bad, fmt.Errorf("trace %s: %w", id, err))
			return
		}
		h := &ts[at[id]]
		h.Hits = search.Hits(search.Index(t).Pieces, words)
		// The list shows the first hit in its context: from the trace
		// read here, so that the list need not fetch it.
		if len(h.Hits) > 0 {
			if b, m, a, ok := search.Snippet(t, h.Hits[0], store.SnippetBefore, store.SnippetAfter); ok {
				h.Snippet = &store.Snippet{Before: b, Match: m, After: a}
			}
		}
	})
	return cmp.Or(err, bad)
}

// IndexBacklog is store.Search.IndexBacklog.
func (s *Store) IndexBacklog(ctx context.Context) (store.IndexBacklog, error) {
	bl, err := s.Search.Indexer().Backlog(ctx)
	if err != nil {
		return bl, s.Fail(ctx, err, "search index backlog")
	}
	return bl, nil
}

// Reindexed waits for the indexer to index the queue after every trace
// (total of them) was queued again, with progress (nil for none), and
// returns how many traces it indexed.
func Reindexed(ctx context.Context, ix *indexer.Indexer, total int64, progress func(done, total int64)) (int64, error) {
	done, err := ix.CatchUp(ctx, func(done int64) {
		if progress != nil {
			progress(min(done, total), total)
		}
	})
	if err != nil {
		return min(done, total), err
	}
	return total, nil
}

// SplitDocs splits an index step's documents into the ids of all their
// traces and the live ones (not deleted), with their documents.
func SplitDocs(docs []indexer.Doc) (ids, live []string, ld []storeutil.IndexDoc) {
	ids = make([]string, len(docs))
	for i, d := range docs {
		ids[i] = d.TraceID
		if d.Doc != nil {
			live, ld = append(live, d.TraceID), append(ld, storeutil.IndexDoc{Doc: d.Doc})
		}
	}
	return ids, live, ld
}

// StoredTraces calls fn with each trace that query (of id, metadata,
// encoding and content, with arg for its one placeholder) reads, decoded,
// or as handed over in h (nil: none).
func StoredTraces(ctx context.Context, q Querier, query string, arg any, h *indexer.Handover, fn func(id string, t *trace.Trace, bad error)) error {
	rows, err := q.Query(ctx, query, arg)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var id string
		var meta, content []byte
		var enc int
		if err := rows.Scan(&id, &meta, &enc, &content); err != nil {
			return err
		}
		if t := h.Take(id, "", content, meta); t != nil {
			fn(id, t, nil)
			continue
		}
		t, err := storeutil.DecodeContent(content, enc, meta)
		fn(id, t, err)
	}
	return rows.Err()
}

// searchStatements builds the statements of a search page and of its
// count from a compiled query, with "?" placeholders; pageArgs and
// countArgs give their arguments. cols are the columns the page selects
// from traces t. With a driver the count is exact (it runs over the
// driver's few traces); without one it runs over the dataset's first
// traces by index, at most a bound of them, and is scaled up to the
// dataset when the dataset is larger (an estimate).
func searchStatements(c search.Compiled, cols string) (page, count string) {
	if c.Driver != "" {
		// The driver's few traces first, by primary key (CROSS JOIN keeps
		// SQLite's planner to that order).
		with := "WITH cand(id) AS MATERIALIZED (" + c.Driver + ") "
		from := "FROM cand CROSS JOIN traces t WHERE t.id = cand.id AND t.dataset_id = ? AND "
		page = with + "SELECT " + cols + " " + from + "t.idx > ? AND " + c.Cond + " ORDER BY t.idx LIMIT ?"
		count = with + "SELECT count(*) " + from + c.Cond
		return page, count
	}
	page = "SELECT " + cols + " FROM traces t WHERE t.dataset_id = ? AND t.idx > ? AND " + c.Cond + " ORDER BY t.idx LIMIT ?"
	count = "SELECT count(*) FROM (SELECT t.id, t.event_count FROM traces t WHERE t.dataset_id = ? ORDER BY t.idx LIMIT ? OFFSET ?) t WHERE " + c.Cond
	return page, count
}

// pageArgs are the arguments of searchStatements' page.
func pageArgs(c search.Compiled, datasetID string, after int64, limit int) []any {
	args := append(append([]any{}, c.DriverArgs...), datasetID, after)
	return append(append(args, c.Args...), limit)
}

// countArgs are the arguments of searchStatements' count, which looks at
// the scan traces after the first skip in index order when there is no
// driver (a store may count a long scan in parts, side by side).
func countArgs(c search.Compiled, datasetID string, skip, scan int) []any {
	if c.Driver != "" {
		args := append(append([]any{}, c.DriverArgs...), datasetID)
		return append(args, c.Args...)
	}
	return append([]any{datasetID, scan, skip}, c.Args...)
}

// counted is the result of a search's count.
type counted struct {
	N   int64
	Err error
}

// countMatches starts the count of a search with count, which counts the
// matches among n traces after the first skip (countArgs), and delivers
// the sum. Without a driver the count scans the first countCap traces,
// split into parts of consecutive traces by index counted side by side,
// each in its own read: a trace pushed or deleted between their snapshots
// can shift that window by a trace, which a count taken while the dataset
// changes allows.
func countMatches(c search.Compiled, countCap, parts int, count func(skip, n int) (int64, error)) <-chan counted {
	if c.Driver != "" || countCap < 2*parts {
		parts = 1
	}
	results := make(chan counted, parts)
	for k := range parts {
		skip := k * countCap / parts
		n := (k+1)*countCap/parts - skip
		go func() {
			m, err := count(skip, n)
			results <- counted{m, err}
		}()
	}
	done := make(chan counted, 1)
	go func() {
		var total counted
		for range parts {
			r := <-results
			total.N += r.N
			if total.Err == nil {
				total.Err = r.Err
			}
		}
		done <- total
	}()
	return done
}

// searchTotal turns the count of matches among the traces counted into the
// total: exact when every trace of the dataset was counted, else scaled to
// the dataset and marked as an estimate.
func searchTotal(c search.Compiled, matches, traces int64, scan int) (total int64, estimate bool) {
	if c.Driver != "" || traces <= int64(scan) {
		return matches, false
	}
	return (matches*traces + int64(scan)/2) / int64(scan), true
}

// commonLeaf is how many index rows make a leaf of a query common (see
// search.Plan), unless SearchOptions.commonLeaf says otherwise.
const commonLeaf = 2000

// commonBound is the bound SearchOptions asks for.
func commonBound(opts store.SearchOptions) int {
	if opts.CommonLeaf > 0 {
		return opts.CommonLeaf
	}
	return commonLeaf
}
