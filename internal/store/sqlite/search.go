package sqlite

import (
	"cmp"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"math/bits"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/lookout-dev/lookout/internal/search"
	"github.com/lookout-dev/lookout/internal/store"
	"github.com/lookout-dev/lookout/internal/store/internal/indexer"
	"github.com/lookout-dev/lookout/internal/store/internal/sqlstore"
	"github.com/lookout-dev/lookout/internal/store/internal/storeutil"
	"github.com/lookout-dev/lookout/internal/trace"
)

// dialect is SQLite's side of search.Dialect. A word's texts are looked up
// in the trigram index in Go (searchIndex.TextsHolding), which a search's
// plan does for every word before it compiles.
type dialect struct{}

// IndexedTraces is what a word's leaf is without a plan: a scan of every
// trace's texts (no search compiles without one; the trigram index is read
// in Go, not by SQL).
func (dialect) IndexedTraces(word string) (string, any) {
	return `SELECT d.trace_id FROM search_traces d WHERE EXISTS (SELECT 1 FROM json_each(d.texts) j, search_texts x WHERE x.id = j.value AND instr(x.text, ?) > 0)`, word
}
func (dialect) ScanTrace() string {
	return "EXISTS (SELECT 1 FROM search_traces d, json_each(d.texts) j, search_texts x WHERE d.trace_id = t.id AND x.id = j.value AND instr(x.text, ?) > 0)"
}
func (dialect) Contains(column string) string { return "instr(" + column + ", ?) > 0" }

// TraceMeta is search.Dialect.TraceMeta; the key is kept from its index
// (+): the planner, without statistics, would scan the key's rows for
// each trace rather than look the trace up.
func (dialect) TraceMeta() string {
	return "search_traces d, json_each(d.metas) j, search_meta m WHERE d.trace_id = t.id AND m.id = j.value AND +m.key = ?"
}

// JSONNumber is search.Dialect.JSONNumber: a number beyond float64's
// range reads as an infinity, which is left out as PostgreSQL leaves it.
func (dialect) JSONNumber(column string) string {
	// Nested, as neither dialect promises the order an AND is tested in.
	return "(CASE WHEN json_valid(" + column + ") THEN CASE WHEN json_type(" + column + ") IN ('integer', 'real') THEN CASE WHEN abs(CAST(" + column +
		" AS REAL)) <= 1.7976931348623157e308 THEN CAST(" + column + " AS REAL) END END END)"
}
func (dialect) ExtraMember(column, key string) string {
	return "json_extract(" + column + ", '$." + key + "')"
}

// insertDocs writes the index rows of traces that have none, many rows per
// statement, and returns the ids of the texts they hold; a text the index
// already holds is referred to, not written again.
//
// FTS5 writes what it holds in memory to a new segment at every statement
// savepoint of the transaction, and SQLite opens one for most statements
// that write (any multi-row insert), whatever table they write: rows given
// to FTS5 in many statements make many small segments, whose merging was
// most of the indexer's time. So search_docs gets its rows last, in one
// statement: a segment per batch. The new texts' trigrams go to the
// trigram index (writeGrams).
func insertDocs(ctx context.Context, tx *sql.Tx, ids []string, docs []storeutil.IndexDoc, known *stepTexts) ([]int64, error) {
	texts := storeutil.DistinctTexts(docs)
	// The largest id ever given (search_texts is AUTOINCREMENT).
	var lastText int64
	if err := tx.QueryRowContext(ctx, `SELECT coalesce((SELECT seq FROM sqlite_sequence WHERE name = 'search_texts'), 0)`).Scan(&lastText); err != nil {
		return nil, err
	}
	textIDs, err := textIDs(ctx, tx, texts, lastText, known)
	if err != nil {
		return nil, err
	}
	used := make([]int64, 0, len(textIDs))
	for _, t := range textIDs {
		used = append(used, t)
	}
	var docid int64
	if err := tx.QueryRowContext(ctx, `SELECT coalesce(max(docid), 0) FROM search_traces`).Scan(&docid); err != nil {
		return nil, err
	}
	var metaID int64
	if err := tx.QueryRowContext(ctx, `SELECT coalesce(max(id), 0) FROM search_meta`).Scan(&metaID); err != nil {
		return nil, err
	}
	traces := batcher{tx: tx, head: "INSERT INTO search_traces (docid, trace_id, texts, facets, metas) VALUES ", cols: 5}
	facets := batcher{tx: tx, head: "INSERT OR IGNORE INTO search_facets (trace_id, facet) VALUES ", cols: 2}
	meta := batcher{tx: tx, head: "INSERT INTO search_meta (id, trace_id, key, text, num) VALUES ", cols: 5}
	seen := map[int64]bool{}
	var facetRows []traceFacet
	var metaRows []traceMeta
	var list, tokens, metaList []byte
	// The postings of every document: a JSON array of docid and tokens pairs.
	postings := []byte{'['}
	for i, dh := range docs {
		id, d := ids[i], dh.Doc
		// Each text of the trace once, in order of first occurrence.
		clear(seen)
		list, tokens = append(list[:0], '['), tokens[:0]
		for k := range d.Pieces {
			t := textIDs[d.Hashes[k]]
			if seen[t] {
				continue
			}
			seen[t] = true
			if len(tokens) > 0 {
				list, tokens = append(list, ','), append(tokens, ' ')
			}
			list = strconv.AppendInt(list, t, 10)
			tokens = appendTextToken(tokens, t)
		}
		list = append(list, ']')
		for _, f := range d.Facets {
			facetRows = append(facetRows, traceFacet{id, f})
		}
		facetList := []byte("[]")
		if len(d.Facets) > 0 {
			var err error
			if facetList, err = json.Marshal(d.Facets); err != nil {
				return nil, err
			}
		}
		metaList = append(metaList[:0], '[')
		for k, m := range d.Meta {
			metaID++
			metaRows = append(metaRows, traceMeta{metaID, id, m})
			if k > 0 {
				metaList = append(metaList, ',')
			}
			metaList = strconv.AppendInt(metaList, metaID, 10)
		}
		metaList = append(metaList, ']')
		docid++
		if err := traces.add(ctx, docid, id, string(list), string(facetList), string(metaList)); err != nil {
			return nil, err
		}
		if len(postings) > 1 {
			postings = append(postings, ',')
		}
		postings = strconv.AppendInt(append(postings, '['), docid, 10)
		postings = append(append(append(postings, `,"`...), tokens...), `"]`...)
	}
	// In the order of the indexes they enter: each insert then descends
	// to the page the one before left warm (the batch's values of a key
	// land together), not to a page anywhere in the index.
	slices.SortFunc(facetRows, func(a, b traceFacet) int {
		return cmp.Or(strings.Compare(a.facet, b.facet), strings.Compare(a.traceID, b.traceID))
	})
	for _, f := range facetRows {
		if err := facets.add(ctx, f.traceID, f.facet); err != nil {
			return nil, err
		}
	}
	slices.SortFunc(metaRows, func(a, b traceMeta) int {
		return cmp.Or(strings.Compare(a.m.Key, b.m.Key), strings.Compare(a.m.Text, b.m.Text))
	})
	for _, r := range metaRows {
		var num any
		if r.m.IsNum {
			num = r.m.Num
		}
		if err := meta.add(ctx, r.id, r.traceID, r.m.Key, r.m.Text, num); err != nil {
			return nil, err
		}
	}
	if err := errors.Join(traces.flush(ctx), facets.flush(ctx), meta.flush(ctx)); err != nil {
		return nil, err
	}
	// New texts have ids above the largest one before.
	type newText struct {
		id   int64
		text string
	}
	var fresh []newText
	for h, id := range textIDs {
		if id > lastText {
			fresh = append(fresh, newText{id, texts[h]})
		}
	}
	slices.SortFunc(fresh, func(a, b newText) int { return cmp.Compare(a.id, b.id) })
	freshIDs, freshTexts := make([]int64, len(fresh)), make([]string, len(fresh))
	for i, t := range fresh {
		freshIDs[i], freshTexts[i] = t.id, t.text
	}
	if err := writeGrams(ctx, tx, freshIDs, freshTexts); err != nil {
		return nil, err
	}
	postings = append(postings, ']')
	_, err = tx.ExecContext(ctx, `INSERT INTO search_docs (rowid, texts) SELECT value ->> 0, value ->> 1 FROM json_each(?)`, string(postings))
	return used, err
}

type traceFacet struct{ traceID, facet string }

type traceMeta struct {
	id      int64
	traceID string
	m       search.MetaValue
}

// appendTextToken appends the token of text id t in search_docs: "t" and
// the id (the ascii tokenizer keeps letters and digits together).
func appendTextToken(b []byte, t int64) []byte {
	return strconv.AppendInt(append(b, 't'), t, 10)
}

// textsMatch is the search_docs query of the traces that hold any of the
// texts (ids).
func textsMatch(ids []int64) string {
	var b []byte
	for i, t := range ids {
		if i > 0 {
			b = append(b, " OR "...)
		}
		b = appendTextToken(b, t)
	}
	return string(b)
}

// stepTexts is what an index step knows of the texts: the process's cache
// at the index's gen when the step began, and what the step learns.
type stepTexts struct {
	cache   *textCache
	gen     int64
	learned map[storeutil.TextHash]int64
}

// textIDs returns the row id of each distinct text (by hash): those known
// (nil for none) cached, the others written as new rows after lastText,
// the largest id before (the step holds the index's writer lock). known
// takes the ids written.
func textIDs(ctx context.Context, tx *sql.Tx, texts map[storeutil.TextHash]string, lastText int64, known *stepTexts) (map[storeutil.TextHash]int64, error) {
	ids := make(map[storeutil.TextHash]int64, len(texts))
	if known != nil {
		known.cache.known(known.gen, texts, ids)
	}
	ins := batcher{tx: tx, head: "INSERT INTO search_texts (id, text) VALUES ", cols: 2}
	next := lastText
	for h, text := range texts {
		if _, ok := ids[h]; ok {
			continue
		}
		next++
		ids[h] = next
		if known != nil {
			known.learned[h] = next
		}
		if err := ins.add(ctx, next, text); err != nil {
			return nil, err
		}
	}
	return ids, ins.flush(ctx)
}

// markTexts notes the text ids a query returns in a temporary table; after
// the pieces that use them are deleted, sweepMarkedTexts removes those of
// them no other piece uses (the delete trigger notes their ids for the
// trigram index's merges); a sweep of the whole table would cost more
// than the delete.
func markTexts(ctx context.Context, tx *sql.Tx, query string, args ...any) (int64, error) {
	if _, err := tx.ExecContext(ctx, `CREATE TEMP TABLE IF NOT EXISTS marked_texts (id INTEGER PRIMARY KEY)`); err != nil {
		return 0, err
	}
	res, err := tx.ExecContext(ctx, `INSERT OR IGNORE INTO marked_texts `+query, args...)
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}

// sweepMarkedTexts deletes the marked texts no trace holds any more, and
// reports whether it deleted any.
func sweepMarkedTexts(ctx context.Context, tx *sql.Tx) (bool, error) {
	res, err := tx.ExecContext(ctx, `DELETE FROM search_texts WHERE id IN (SELECT m.id FROM marked_texts m
		WHERE NOT EXISTS (SELECT 1 FROM search_docs WHERE search_docs MATCH 't' || m.id))`)
	if err != nil {
		return false, err
	}
	n, err := res.RowsAffected()
	if err == nil {
		_, err = tx.ExecContext(ctx, `DELETE FROM marked_texts`)
	}
	return n > 0, err
}

// batchRows is how many rows one INSERT of a batcher carries at most.
const batchRows = 128

// batcher collects rows and inserts them batchRows at a time, the rest in
// statements of a power of two rows each (the binary digits of their
// number): the writers' connections keep the statements they run by their
// text (stmtcache.go), so a batcher's statements are at most eight, each
// parsed once a connection. A statement of exactly the rest's number of
// rows was parsed anew by nearly every write: under bench/peers' load
// SQLite's parsing fell from 2.5% to 1.7% of the CPU, the batchers' inserts
// from 8.1% to 7.5%. tail ends each statement (an ON CONFLICT clause).
type batcher struct {
	tx   *sql.Tx
	head string
	tail string
	cols int
	args []any
}

// batchText is the text of an INSERT of rows rows of cols columns.
type batchText struct {
	head, tail string
	cols, rows int
}

var batchTexts sync.Map // batchText → string

func (b *batcher) values(n int) string {
	key := batchText{b.head, b.tail, b.cols, n}
	if t, ok := batchTexts.Load(key); ok {
		return t.(string)
	}
	row := "(" + strings.Repeat("?, ", b.cols-1) + "?)"
	t, _ := batchTexts.LoadOrStore(key, b.head+strings.Repeat(row+", ", n-1)+row+b.tail)
	return t.(string)
}

func (b *batcher) add(ctx context.Context, args ...any) error {
	b.args = append(b.args, args...)
	if len(b.args) < batchRows*b.cols {
		return nil
	}
	return b.flush(ctx)
}

// flush inserts the rows collected.
func (b *batcher) flush(ctx context.Context) error {
	args := b.args
	defer func() { b.args = b.args[:0] }()
	for n := len(args) / b.cols; n > 0; {
		k := min(batchRows, 1<<(bits.Len(uint(n))-1))
		if _, err := b.tx.ExecContext(ctx, b.values(k), args[:k*b.cols]...); err != nil {
			return err
		}
		args, n = args[k*b.cols:], n-k
	}
	return nil
}

// eachRow calls fn for each row of a query's result (err: the query's
// error) and closes it.
func eachRow(rows *sql.Rows, err error, fn func(*sql.Rows) error) error {
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		if err := fn(rows); err != nil {
			return err
		}
	}
	return rows.Err()
}

// searchIndex is the Store's sqlstore.SearchIndex: the trigram index
// (grams.go) and FTS5's postings (search_docs) of the index file, read on
// the read pool.
type searchIndex struct {
	dialect
	s *Store
}

func (x searchIndex) Indexer() *indexer.Indexer { return x.s.ix }

// TextsSet finds the traces by the texts' tokens in search_docs.
func (searchIndex) TextsSet(texts []int64) (string, []any) {
	if len(texts) == 0 {
		return "SELECT trace_id FROM search_traces WHERE 0", nil
	}
	return "SELECT trace_id FROM search_traces WHERE docid IN (SELECT rowid FROM search_docs WHERE search_docs MATCH ?)", []any{textsMatch(texts)}
}

func (x searchIndex) ReadIndex(ctx context.Context, fn func(q sqlstore.Querier) error) error {
	return fn(sqlstore.SQL(x.s.r))
}

// CountParts is one: split in two as on PostgreSQL, every query of
// bench/search measured slower or no faster (combination p50 58-61 →
// 82-85 ms).
func (searchIndex) CountParts() int { return 1 }

func (x searchIndex) StoredTraces(ctx context.Context, ids []string, fn func(id string, t *trace.Trace, bad error)) error {
	return x.s.storedTraces(ctx, ids, nil, fn)
}

// manyTexts is the most texts holding a word that a query lists: past
// it, the word is common.
const manyTexts = 1024

// TextsHolding looks the word up in the trigram index, then tests the
// texts that hold all its trigrams for the word, a chunk at a time until
// more than manyTexts hold it (nil: the word is common).
func (x searchIndex) TextsHolding(ctx context.Context, word string) ([]int64, error) {
	tx, err := x.s.r.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return nil, err
	}
	defer tx.Rollback()
	maybe, err := textsWithGrams(ctx, tx, word)
	if err != nil {
		return nil, err
	}
	const chunk = 2048
	ids := []int64{}
	for len(maybe) > 0 {
		part := maybe[:min(chunk, len(maybe))]
		maybe = maybe[len(part):]
		list, _ := json.Marshal(part)
		rows, err := tx.QueryContext(ctx, `SELECT id FROM search_texts WHERE id IN (SELECT value FROM json_each(?)) AND instr(text, ?) > 0`, string(list), word)
		err = eachRow(rows, err, func(rows *sql.Rows) error {
			var id int64
			err := rows.Scan(&id)
			ids = append(ids, id)
			return err
		})
		if err != nil {
			return nil, err
		}
		if len(ids) > manyTexts {
			return nil, nil
		}
	}
	slices.Sort(ids)
	return ids, nil
}

// Reindex rebuilds the search index from the stored traces: it queues
// every trace, empties the index and indexes the queue, a batch per
// transaction of the index file (searches meanwhile wait for it).
func (s *Store) Reindex(ctx context.Context, progress func(done, total int64)) (int64, error) {
	// Under the index's lock, taken first: no indexer (this process's loop,
	// kicked by the queueing, or a server's) steps between the two, and
	// the clear does not wait its turn behind them. Queued before the
	// clear commits: a crash between the two leaves the old index with
	// every trace queued, rebuilt as they are indexed again.
	var total int64
	if err := s.writeIndex(ctx, func(tx *sql.Tx) error {
		var err error
		if total, err = s.queueAll(ctx); err != nil {
			return fmt.Errorf("queue the traces: %w", err)
		}
		return createIndex(ctx, tx)
	}); err != nil {
		return 0, fail(ctx, err, "reindex: clear")
	}
	n, err := sqlstore.Reindexed(ctx, s.ix, total, progress)
	if err != nil {
		return n, fail(ctx, err, "reindex")
	}
	return n, nil
}

// SearchIndexStats counts the index's texts and pieces and the bytes its
// file's pages take (its tables, their indexes and FTS5's own tables),
// once every queued trace is indexed.
func (s *Store) SearchIndexStats(ctx context.Context) (store.SearchIndexStats, error) {
	var st store.SearchIndexStats
	if err := s.ix.WaitFor(ctx, ""); err != nil {
		return st, fail(ctx, err, "search index stats")
	}
	var b sql.NullInt64
	err := s.r.QueryRowContext(ctx, `SELECT (SELECT count(*) FROM search_texts),
		(SELECT coalesce(sum(json_array_length(texts)), 0) FROM search_traces),
		(SELECT count(*) FROM search_facets), (SELECT count(*) FROM search_meta),
		(SELECT sum(pgsize) FROM dbstat('idx'))`).Scan(&st.Texts, &st.Pieces, &st.Facets, &st.Meta, &b)
	st.Bytes = b.Int64
	if err != nil {
		return st, fail(ctx, err, "search index stats")
	}
	return st, nil
}
