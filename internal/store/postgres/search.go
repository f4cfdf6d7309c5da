package postgres

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/lookout-dev/lookout/internal/search"
	"github.com/lookout-dev/lookout/internal/store"
	"github.com/lookout-dev/lookout/internal/store/internal/indexer"
	"github.com/lookout-dev/lookout/internal/store/internal/sqlstore"
	"github.com/lookout-dev/lookout/internal/store/internal/storeutil"
	"github.com/lookout-dev/lookout/internal/trace"
)

// dialect is PostgreSQL's side of search.Dialect: pg_trgm answers LIKE
// '%text%' from its GIN index (the text is lower-cased, so LIKE is the
// substring test).
type dialect struct{}

func (dialect) IndexedTraces(word string) (string, any) {
	return "SELECT d.trace_id FROM search_traces d WHERE d.texts && ARRAY(SELECT x.id FROM search_texts x WHERE x.text LIKE ?)", search.LikePattern(word)
}
func (dialect) ScanTrace() string {
	return "EXISTS (SELECT 1 FROM search_traces d JOIN search_texts x ON x.id = ANY(d.texts) WHERE d.trace_id = t.id AND strpos(x.text, ?) > 0)"
}
func (dialect) Contains(column string) string { return "strpos(" + column + ", ?) > 0" }
func (dialect) TraceMeta() string {
	return "search_traces d JOIN search_meta m ON m.id = ANY(d.metas) WHERE d.trace_id = t.id AND m.key = ?"
}

// JSONNumber is search.Dialect.JSONNumber: numeric first, since a number
// beyond float8's range would make the cast fail.
func (dialect) JSONNumber(column string) string {
	// Nested, as PostgreSQL does not promise the order an AND is tested in.
	return "(CASE WHEN jsonb_typeof(" + column + "::jsonb) = 'number' THEN CASE WHEN abs((" + column + "::jsonb)::numeric) <= 1.7976931348623157e308 THEN (" +
		column + "::jsonb)::numeric::float8 END END)"
}
func (dialect) ExtraMember(column, key string) string {
	return "(" + column + "::jsonb ->> '" + key + "')"
}

var (
	searchTraceCols = []string{"trace_id", "texts", "facets", "metas"}
	metaCopyCols    = []string{"id", "trace_id", "key", "text", "num"}
	facetCopyCols   = []string{"trace_id", "facet"}
)

// insertDocs writes the index rows of traces that have none with COPY,
// in the indexer's transaction, and
// returns the ids of the texts they hold and their number of pieces; a
// text the index already holds is referred to, not written again.
func insertDocs(ctx context.Context, tx pgx.Tx, ids []string, docs []storeutil.IndexDoc) ([]int64, int64, error) {
	texts := storeutil.DistinctTexts(docs)
	textIDs, err := textIDsOf(ctx, tx, texts)
	if err != nil {
		return nil, 0, err
	}
	used := make([]int64, 0, len(textIDs))
	for _, t := range textIDs {
		used = append(used, t)
	}
	var traces, meta, facetRows [][]any
	var pieces int64
	seen := map[int64]bool{}
	metaIDs, err := metaIDs(ctx, tx, docs)
	if err != nil {
		return nil, 0, err
	}
	for i, dh := range docs {
		id, d := uuidOf(ids[i]), dh.Doc
		// Each text of the trace once, in order of first occurrence.
		clear(seen)
		held := []int64{} // not NULL: a trace may hold no text
		for k := range d.Pieces {
			if t := textIDs[d.Hashes[k]]; !seen[t] {
				seen[t] = true
				held = append(held, t)
			}
		}
		pieces += int64(len(held))
		facets := d.Facets
		if facets == nil {
			facets = []string{}
		}
		ms := append([]int64{}, metaIDs[:len(d.Meta)]...) // not NULL
		metaIDs = metaIDs[len(d.Meta):]
		traces = append(traces, []any{id, held, facets, ms})
		for k, m := range d.Meta {
			var num any
			if m.IsNum {
				num = m.Num
			}
			meta = append(meta, []any{ms[k], id, m.Key, m.Text, num})
		}
		for _, f := range d.Facets {
			facetRows = append(facetRows, []any{id, f})
		}
	}
	if len(traces) > 0 {
		if _, err := tx.CopyFrom(ctx, pgx.Identifier{"search_traces"}, searchTraceCols, pgx.CopyFromRows(traces)); err != nil {
			return nil, 0, err
		}
	}
	if len(meta) > 0 {
		if _, err := tx.CopyFrom(ctx, pgx.Identifier{"search_meta"}, metaCopyCols, pgx.CopyFromRows(meta)); err != nil {
			return nil, 0, err
		}
	}
	if len(facetRows) > 0 {
		// A document lists a facet once, and the batch's traces had their
		// rows deleted: COPY, not INSERT ... ON CONFLICT, whose speculative
		// insertion touched 2.7 times the buffers and wrote 1.5 times the
		// WAL.
		if _, err := tx.CopyFrom(ctx, pgx.Identifier{"search_facets"}, facetCopyCols, pgx.CopyFromRows(facetRows)); err != nil {
			return nil, 0, err
		}
	}
	return used, pieces, nil
}

// textIDsOf returns the ids of texts in search_texts, writing those it
// does not hold yet. Most texts of a batch are held already (a trace's
// system prompt, its tools, its repeated answers), so their ids are looked
// up by hash first and only the new ones are sent: inserting every text
// with ON CONFLICT DO NOTHING sent each text's bytes and tested its
// conflict at every batch (a tenth of PostgreSQL's index time in
// bench/ingest).
func textIDsOf(ctx context.Context, tx pgx.Tx, texts map[storeutil.TextHash]string) (map[storeutil.TextHash]int64, error) {
	ids := make(map[storeutil.TextHash]int64, len(texts))
	if len(texts) == 0 {
		return ids, nil
	}
	hs := make([][]byte, 0, len(texts))
	for h := range texts {
		hs = append(hs, h[:])
	}
	if err := readTextIDs(ctx, tx, `SELECT hash, id FROM search_texts WHERE hash = ANY($1::bytea[])`, ids, hs); err != nil {
		return nil, err
	}
	var nh [][]byte
	var nt []string
	for h, t := range texts {
		if _, ok := ids[h]; !ok {
			nh, nt = append(nh, h[:]), append(nt, t)
		}
	}
	if len(nh) == 0 {
		return ids, nil
	}
	// The indexers take turns (indexLock), so no other one inserts these;
	// should one have, its rows are read below.
	if err := readTextIDs(ctx, tx, `INSERT INTO search_texts (hash, text) SELECT * FROM unnest($1::bytea[], $2::text[]) ON CONFLICT (hash) DO NOTHING RETURNING hash, id`, ids, nh, nt); err != nil {
		return nil, err
	}
	// The new texts' trigrams wait in the index's pending list (migration
	// 00013): merged now, in bulk.
	if _, err := tx.Exec(ctx, `SELECT gin_clean_pending_list('search_texts_text'::regclass)`); err != nil {
		return nil, err
	}
	if len(ids) < len(texts) {
		if err := readTextIDs(ctx, tx, `SELECT hash, id FROM search_texts WHERE hash = ANY($1::bytea[])`, ids, nh); err != nil {
			return nil, err
		}
	}
	if len(ids) < len(texts) {
		return nil, fmt.Errorf("search index: %d of %d texts have no id", len(texts)-len(ids), len(texts))
	}
	return ids, nil
}

// readTextIDs adds the (hash, id) rows query returns to ids.
func readTextIDs(ctx context.Context, tx pgx.Tx, query string, ids map[storeutil.TextHash]int64, args ...any) error {
	rows, err := tx.Query(ctx, query, args...)
	if err != nil {
		return err
	}
	var b []byte
	var id int64
	_, err = pgx.ForEachRow(rows, []any{&b, &id}, func() error {
		ids[storeutil.TextHash(b)] = id
		return nil
	})
	return err
}

// metaIDs takes the ids of the docs' search_meta rows from their sequence.
func metaIDs(ctx context.Context, tx pgx.Tx, docs []storeutil.IndexDoc) ([]int64, error) {
	n := 0
	for _, d := range docs {
		n += len(d.Doc.Meta)
	}
	if n == 0 {
		return nil, nil
	}
	rows, err := tx.Query(ctx, `SELECT nextval('search_meta_id_seq') FROM generate_series(1, $1)`, n)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, pgx.RowTo[int64])
}

// sweepTexts deletes those of the texts that no piece uses any more (the
// indexer's transaction, which alone writes the index).
func sweepTexts(ctx context.Context, tx pgx.Tx, ids []int64) error {
	if len(ids) == 0 {
		return nil
	}
	_, err := tx.Exec(ctx, `DELETE FROM search_texts x WHERE x.id = ANY($1::bigint[])
		AND NOT EXISTS (SELECT 1 FROM search_traces d WHERE d.texts @> ARRAY[x.id])`, ids)
	return err
}

// custom has a search statement planned for its arguments each time (an
// unnamed statement). A cached statement gets PostgreSQL's generic plan
// after a few runs, and for LIKE '%...%' of an unknown pattern that plan
// reads every text instead of asking the trigram index.
func custom(args []any) []any {
	return append([]any{pgx.QueryExecModeDescribeExec}, args...)
}

// serial begins a read-only transaction in which the planner makes no
// parallel plans. With workers on offer it split a rare word's join over
// two of them, each reading every text of search_texts (TOASTed, so their
// scan looks cheap) instead of asking the trigram index: 38 ms at 100,000
// traces for no row, 1 ms without.
func (s *Store) serial(ctx context.Context) (pgx.Tx, error) {
	tx, err := s.pool.BeginTx(ctx, pgx.TxOptions{AccessMode: pgx.ReadOnly})
	if err != nil {
		return nil, err
	}
	if _, err := tx.Exec(ctx, `SET LOCAL max_parallel_workers_per_gather = 0`); err != nil {
		tx.Rollback(context.WithoutCancel(ctx))
		return nil, err
	}
	return tx, nil
}

// searchIndex is the Store's sqlstore.SearchIndex: pg_trgm's GIN index,
// read in serial transactions with custom plans.
type searchIndex struct {
	dialect
	s *Store
}

func (x searchIndex) Indexer() *indexer.Indexer { return x.s.ix }

// TextsSet is a GIN overlap with the texts' ids (TextsHolding).
func (searchIndex) TextsSet(texts []int64) (string, []any) {
	return "SELECT trace_id FROM search_traces WHERE texts && ?::bigint[]", []any{texts}
}

// ReadIndex runs fn in a serial transaction, each of its statements
// numbered and planned for its arguments.
func (x searchIndex) ReadIndex(ctx context.Context, fn func(q sqlstore.Querier) error) error {
	tx, err := x.s.serial(ctx)
	if err != nil {
		return err
	}
	defer tx.Rollback(context.WithoutCancel(ctx))
	return fn(customQuerier{sqlstore.Pgx(tx)})
}

// customQuerier runs statements with "?" placeholders, each planned for
// its arguments (custom).
type customQuerier struct{ q sqlstore.Querier }

func (c customQuerier) Exec(ctx context.Context, sql string, args ...any) (int64, error) {
	return c.q.Exec(ctx, search.Numbered(sql), custom(args)...)
}

func (c customQuerier) Query(ctx context.Context, sql string, args ...any) (sqlstore.Rows, error) {
	return c.q.Query(ctx, search.Numbered(sql), custom(args)...)
}

func (c customQuerier) QueryRow(ctx context.Context, sql string, args ...any) sqlstore.Row {
	return c.q.QueryRow(ctx, search.Numbered(sql), custom(args)...)
}

// CountParts: testing a word against every text of a trace is most of a
// common word's search (45 of 62 ms at 100,000 traces), and two backends
// do it in about half the time on two cores.
func (searchIndex) CountParts() int { return 2 }

func (x searchIndex) StoredTraces(ctx context.Context, ids []string, fn func(id string, t *trace.Trace, bad error)) error {
	return storedTraces(ctx, x.s.pool, ids, nil, fn)
}

// manyTexts is the most texts holding a word that a query lists: past it,
// the word is common.
const manyTexts = 256

// TextsHolding looks a word's texts up first: a GIN overlap with the ids
// of a few is quick, one with thousands reads every posting before a LIMIT
// can stop it (11 s at 100,000 traces).
func (x searchIndex) TextsHolding(ctx context.Context, word string) ([]int64, error) {
	const max = manyTexts
	tx, err := x.s.serial(ctx)
	if err != nil {
		return nil, err
	}
	defer tx.Rollback(context.WithoutCancel(ctx))
	rows, err := tx.Query(ctx, `SELECT id FROM search_texts WHERE text LIKE $1 LIMIT $2`, custom([]any{search.LikePattern(word), max + 1})...)
	if err != nil {
		return nil, err
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil || len(ids) > max {
		return nil, err
	}
	if ids == nil {
		ids = []int64{}
	}
	return ids, nil
}

// SearchIndexStats counts the index's texts and pieces and the bytes its
// tables take on disk, with their indexes and TOAST.
func (s *Store) SearchIndexStats(ctx context.Context) (store.SearchIndexStats, error) {
	var st store.SearchIndexStats
	if err := s.ix.WaitFor(ctx, ""); err != nil {
		return st, fail(ctx, err, "search index stats")
	}
	err := s.pool.QueryRow(ctx, `SELECT (SELECT count(*) FROM search_texts), (SELECT coalesce(sum(cardinality(texts)), 0) FROM search_traces),
		(SELECT count(*) FROM search_facets), (SELECT count(*) FROM search_meta),
		(SELECT coalesce(sum(pg_total_relation_size(c.oid)), 0)::bigint FROM pg_class c
		WHERE c.relkind = 'r' AND c.relname IN ('search_texts', 'search_traces', 'search_facets', 'search_meta')
		AND c.relnamespace = (SELECT oid FROM pg_namespace WHERE nspname = current_schema()))`).Scan(&st.Texts, &st.Pieces, &st.Facets, &st.Meta, &st.Bytes)
	if err != nil {
		return st, fail(ctx, err, "search index stats")
	}
	return st, nil
}

// analyzer refreshes the planner's statistics of the index tables and of
// traces after bulk writes. Autovacuum does too, but up to minutes later;
// meanwhile the planner, without statistics for the new rows, joins a rare
// text's pieces by reading them all (90 ms and more at 100,000 traces
// instead of 4), and with a dataset's traces counted as few it reads a
// facet's every trace before the page's first (bench/search's tool filter:
// 120-140 ms until autovacuum analyzed traces, 7 ms after).
//
// An ANALYZE reads up to 30,000 rows of each table, 0.4 s of the server's
// CPU at 10,000 traces, and ran 12 times during a push of 10,000 traces:
// 3 s of PostgreSQL's time, a third of what the index cost it. So it also
// waits until the time since the last one is analyzeGap times what that one
// took, which keeps it at about a tenth of one core at most.
type analyzer struct {
	mu      sync.Mutex
	running bool
	stopped bool
	added   int64       // pieces written since the last ANALYZE
	base    int64       // pieces written before it, by this process
	next    time.Time   // no ANALYZE starts before
	timer   *time.Timer // starts one that was due before next, at next
	cancel  context.CancelFunc
	wg      sync.WaitGroup
}

// analyzeIndex analyzes the columns the search's plans depend on: not a
// trace's content and metadata, nor the element statistics of the
// search_traces arrays no query tests (a sixth less time).
const analyzeIndex = `ANALYZE traces (dataset_id, idx, created_at), search_texts, search_traces (trace_id, texts), search_facets, search_meta`

// analyzeGap is the least time from an ANALYZE's start to the next one's,
// in multiples of its duration.
const analyzeGap = 10

// stop cancels a running or waiting ANALYZE, waits for it, and starts no
// other.
func (a *analyzer) stop() {
	a.mu.Lock()
	a.stopped = true
	if a.cancel != nil {
		a.cancel()
	}
	if a.timer != nil {
		a.timer.Stop()
		a.timer = nil
	}
	a.mu.Unlock()
	a.wg.Wait()
}

// noteIndexed counts pieces written and has the index tables analyzed in
// the background when they grew by a fifth (at least 5,000): at once, or
// when the gap since the last ANALYZE is over, so that the last rows of a
// push are analyzed too.
func (s *Store) noteIndexed(pieces int64) {
	a := &s.an
	a.mu.Lock()
	defer a.mu.Unlock()
	a.added += pieces
	s.analyzeIfDue()
}

// analyzeIfDue is noteIndexed's decision, with s.an.mu held.
func (s *Store) analyzeIfDue() {
	a := &s.an
	if a.stopped || a.running || a.timer != nil || a.added < max(5000, a.base/5) {
		return
	}
	if wait := time.Until(a.next); wait > 0 {
		a.timer = time.AfterFunc(wait, func() {
			a.mu.Lock()
			defer a.mu.Unlock()
			a.timer = nil
			s.analyzeIfDue()
		})
		return
	}
	a.running = true
	var ctx context.Context
	ctx, a.cancel = context.WithTimeout(context.Background(), 10*time.Minute)
	a.wg.Add(1)
	go func() {
		defer a.wg.Done()
		start := time.Now()
		if _, err := s.pool.Exec(ctx, analyzeIndex); err != nil && ctx.Err() == nil {
			slog.Warn("postgres: analyze of the search index", "err", err)
		}
		a.mu.Lock()
		defer a.mu.Unlock()
		a.cancel()
		a.next = start.Add(analyzeGap * time.Since(start))
		a.base += a.added
		a.added, a.running, a.cancel = 0, false, nil
		s.analyzeIfDue()
	}()
}
