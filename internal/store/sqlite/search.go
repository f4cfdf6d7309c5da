package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"strings"

	"github.com/lookout-dev/lookout/internal/search"
	"github.com/lookout-dev/lookout/internal/store"
	"github.com/lookout-dev/lookout/internal/store/internal/storeutil"
)

// dialect is SQLite's side of search.Dialect: FTS5 trigram lookups by GLOB
// (the text is lower-cased, so the case-sensitive GLOB is the substring
// test and can use the index).
type dialect struct{}

func (dialect) IndexedTraces(word string) (string, any) {
	return "SELECT p.trace_id FROM search_fts f JOIN search_pieces p ON p.text_id = f.rowid WHERE f.text GLOB ?", globPattern(word)
}
func (dialect) ScanTrace() string {
	return "EXISTS (SELECT 1 FROM search_pieces p JOIN search_texts x ON x.id = p.text_id WHERE p.trace_id = t.id AND instr(x.text, ?) > 0)"
}
func (dialect) Contains(column string) string  { return "instr(" + column + ", ?) > 0" }
func (dialect) Unindexed(column string) string { return "+" + column }
func (dialect) ExtraMember(column, key string) string {
	return "json_extract(" + column + ", '$." + key + "')"
}

// globPattern matches s anywhere, with GLOB's special characters escaped.
func globPattern(s string) string {
	r := strings.NewReplacer(`*`, `[*]`, `?`, `[?]`, `[`, `[[]`)
	return "*" + r.Replace(s) + "*"
}

// insertDocs writes the index rows of traces, many rows per statement; a
// text the index already holds is referred to, not written again.
func insertDocs(ctx context.Context, tx *sql.Tx, ids []string, docs []storeutil.IndexDoc) error {
	return writeDocs(ctx, tx, ids, docs, len(docs))
}

// docDiff holds the statements writeDocs uses to change the rows of a
// trace that has some.
type docDiff struct {
	update, del, delFacet *sql.Stmt
}

func (d *docDiff) close() {
	for _, st := range []*sql.Stmt{d.update, d.del, d.delFacet} {
		if st != nil {
			st.Close()
		}
	}
}

func (d *docDiff) prepare(ctx context.Context, tx *sql.Tx) error {
	// The caller sweeps the marked texts, whether or not a row was dropped.
	if _, err := tx.ExecContext(ctx, `CREATE TEMP TABLE IF NOT EXISTS marked_texts (id INTEGER PRIMARY KEY)`); err != nil {
		return err
	}
	var err error
	if d.update, err = tx.PrepareContext(ctx, `UPDATE search_pieces SET address = ? WHERE rowid = ?`); err != nil {
		return err
	}
	if d.del, err = tx.PrepareContext(ctx, `DELETE FROM search_pieces WHERE rowid = ?`); err != nil {
		return err
	}
	d.delFacet, err = tx.PrepareContext(ctx, `DELETE FROM search_facets WHERE trace_id = ? AND facet = ?`)
	return err
}

// oldRow is a search_pieces row already stored.
type oldRow struct {
	rowid     int64
	addresses string
}

// pieces brings trace id's piece rows to rows, adding new ones to ins.
func (d *docDiff) pieces(ctx context.Context, tx *sql.Tx, id string, rows []pieceRow, ins *batcher) error {
	q, err := tx.QueryContext(ctx, `SELECT rowid, text_id, address FROM search_pieces WHERE trace_id = ?`, id)
	if err != nil {
		return err
	}
	old := map[int64][]oldRow{}
	for q.Next() {
		var o oldRow
		var t int64
		if err := q.Scan(&o.rowid, &t, &o.addresses); err != nil {
			q.Close()
			return err
		}
		old[t] = append(old[t], o)
	}
	q.Close()
	if err := q.Err(); err != nil {
		return err
	}
	// drop deletes rows of text t and marks t for the sweep.
	drop := func(t int64, os []oldRow) error {
		if len(os) == 0 {
			return nil
		}
		for _, o := range os {
			if _, err := d.del.ExecContext(ctx, o.rowid); err != nil {
				return err
			}
		}
		return markTexts(ctx, tx, `SELECT ?`, t)
	}
	for _, r := range rows {
		os := old[r.textID]
		delete(old, r.textID)
		switch {
		case len(os) == 1 && os[0].addresses == r.addresses:
		case len(os) == 1:
			if _, err := d.update.ExecContext(ctx, r.addresses, os[0].rowid); err != nil {
				return err
			}
		default: // none, or several (events appended later have rows of their own)
			if err := drop(r.textID, os); err != nil {
				return err
			}
			if err := ins.add(ctx, id, r.addresses, r.textID); err != nil {
				return err
			}
		}
	}
	for t, os := range old {
		if err := drop(t, os); err != nil {
			return err
		}
	}
	return nil
}

// facets brings trace id's facets to want, adding new ones to ins.
func (d *docDiff) facets(ctx context.Context, tx *sql.Tx, id string, want []string, ins *batcher) error {
	have, err := queryStrings(ctx, tx, `SELECT facet FROM search_facets WHERE trace_id = ?`, id)
	if err != nil {
		return err
	}
	for _, f := range want {
		if !slices.Contains(have, f) {
			if err := ins.add(ctx, id, f); err != nil {
				return err
			}
		}
	}
	for _, f := range have {
		if !slices.Contains(want, f) {
			if _, err := d.delFacet.ExecContext(ctx, id, f); err != nil {
				return err
			}
		}
	}
	return nil
}

func queryStrings(ctx context.Context, tx *sql.Tx, query string, args ...any) ([]string, error) {
	rows, err := tx.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var v string
		if err := rows.Scan(&v); err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, rows.Err()
}

// writeDocs writes the index rows of traces: the first fresh of them have
// none yet; the others have some, which it brings to their new docs writing
// only what changed (a trace rebuilt from more of its spans keeps most of
// its texts), marking the texts of rows it drops for sweepMarkedTexts.
func writeDocs(ctx context.Context, tx *sql.Tx, ids []string, docs []storeutil.IndexDoc, fresh int) error {
	var diff *docDiff
	if fresh < len(docs) {
		diff = &docDiff{}
		defer diff.close()
		if err := diff.prepare(ctx, tx); err != nil {
			return err
		}
	}
	texts := storeutil.DistinctTexts(docs)
	textIDs, err := textIDs(ctx, tx, texts)
	if err != nil {
		return err
	}
	pieces := batcher{tx: tx, head: "INSERT INTO search_pieces (trace_id, address, text_id) VALUES ", cols: 3}
	facets := batcher{tx: tx, head: "INSERT OR IGNORE INTO search_facets (trace_id, facet) VALUES ", cols: 2}
	meta := batcher{tx: tx, head: "INSERT INTO search_meta (trace_id, key, text, num) VALUES ", cols: 4}
	defer pieces.close()
	defer facets.close()
	defer meta.close()
	var rows []pieceRow
	at := map[int64]int{}
	for i, dh := range docs {
		id, d := ids[i], dh.Doc
		rows = groupPieces(rows[:0], at, d.Pieces, func(k int) int64 { return textIDs[dh.Hashes[k]] })
		if i >= fresh {
			if err := diff.pieces(ctx, tx, id, rows, &pieces); err != nil {
				return err
			}
			if err := diff.facets(ctx, tx, id, d.Facets, &facets); err != nil {
				return err
			}
			// A few values a trace: written again whole.
			if _, err := tx.ExecContext(ctx, `DELETE FROM search_meta WHERE trace_id = ?`, id); err != nil {
				return err
			}
		} else {
			for _, r := range rows {
				if err := pieces.add(ctx, id, r.addresses, r.textID); err != nil {
					return err
				}
			}
			for _, f := range d.Facets {
				if err := facets.add(ctx, id, f); err != nil {
					return err
				}
			}
		}
		for _, m := range d.Meta {
			var num any
			if m.IsNum {
				num = m.Num
			}
			if err := meta.add(ctx, id, m.Key, m.Text, num); err != nil {
				return err
			}
		}
	}
	return errors.Join(pieces.flush(ctx), facets.flush(ctx), meta.flush(ctx))
}

// pieceRow is one row of search_pieces: a text of a trace and every
// address where it occurs, in order, separated by newlines (an address in
// its canonical form never holds one: steps that would are quoted). A trace
// repeats many texts (OpenTelemetry spans name the same operation, model
// and tool again and again: 40-50% of a corpus span trace's pieces): a row
// per text instead of a row per piece is that many fewer B-tree inserts.
// Rows written before this grouping hold one address each, and read the
// same way.
type pieceRow struct {
	textID    int64
	addresses string
}

// groupPieces appends to rows one pieceRow per distinct text of pieces, in
// the order of first occurrence; textID gives the text of piece k. at is
// scratch space, cleared here.
func groupPieces(rows []pieceRow, at map[int64]int, pieces []search.Piece, textID func(k int) int64) []pieceRow {
	clear(at)
	for k, p := range pieces {
		t := textID(k)
		if j, ok := at[t]; ok {
			rows[j].addresses += "\n" + p.Address
			continue
		}
		at[t] = len(rows)
		rows = append(rows, pieceRow{textID: t, addresses: p.Address})
	}
	return rows
}

// textIDs returns the row id of each distinct text (by hash), inserting
// the texts the index does not hold yet.
func textIDs(ctx context.Context, tx *sql.Tx, texts map[storeutil.TextHash]string) (map[storeutil.TextHash]int64, error) {
	ids := make(map[storeutil.TextHash]int64, len(texts))
	scanID := func(rows *sql.Rows) error {
		var b []byte
		var id int64
		if err := rows.Scan(&b, &id); err != nil {
			return err
		}
		ids[storeutil.TextHash(b)] = id
		return nil
	}
	distinct := make([]storeutil.TextHash, 0, len(texts))
	for h := range texts {
		distinct = append(distinct, h)
	}
	for hs := distinct; len(hs) > 0; {
		chunk := hs[:min(len(hs), 500)]
		hs = hs[len(chunk):]
		args := make([]any, len(chunk))
		for i, h := range chunk {
			args[i] = h[:]
		}
		rows, err := tx.QueryContext(ctx, `SELECT hash, id FROM search_texts WHERE hash IN (?`+strings.Repeat(", ?", len(chunk)-1)+`)`, args...)
		if err := eachRow(rows, err, scanID); err != nil {
			return nil, err
		}
	}
	// New texts say their ids as they go in: no second lookup.
	ins := batcher{tx: tx, head: "INSERT INTO search_texts (hash, text) VALUES ", tail: " RETURNING hash, id", cols: 2, scan: scanID}
	defer ins.close()
	for _, h := range distinct {
		if _, ok := ids[h]; !ok {
			if err := ins.add(ctx, h[:], texts[h]); err != nil {
				return nil, err
			}
		}
	}
	if err := ins.flush(ctx); err != nil {
		return nil, err
	}
	return ids, nil
}

// deleteDoc removes a trace's index rows, and the texts only it used.
func deleteDoc(ctx context.Context, tx *sql.Tx, id string) error {
	if err := markTexts(ctx, tx, `SELECT text_id FROM search_pieces WHERE trace_id = ?`, id); err != nil {
		return err
	}
	for _, table := range []string{"search_pieces", "search_facets", "search_meta"} {
		if _, err := tx.ExecContext(ctx, "DELETE FROM "+table+" WHERE trace_id = ?", id); err != nil {
			return err
		}
	}
	return sweepMarkedTexts(ctx, tx)
}

// markDatasetTexts marks the texts a dataset's traces use, before they go.
func markDatasetTexts(ctx context.Context, tx *sql.Tx, datasetID string) error {
	return markTexts(ctx, tx, `SELECT p.text_id FROM traces t JOIN search_pieces p ON p.trace_id = t.id WHERE t.dataset_id = ?`, datasetID)
}

// markTexts notes the text ids a query returns in a temporary table; after
// the pieces that use them are deleted, sweepMarkedTexts removes those of
// them no other piece uses. Deleting a text this way keeps FTS5 in step
// (the delete trigger); a sweep of the whole table would cost more than
// the delete.
func markTexts(ctx context.Context, tx *sql.Tx, query string, args ...any) error {
	if _, err := tx.ExecContext(ctx, `CREATE TEMP TABLE IF NOT EXISTS marked_texts (id INTEGER PRIMARY KEY)`); err != nil {
		return err
	}
	_, err := tx.ExecContext(ctx, `INSERT OR IGNORE INTO marked_texts `+query, args...)
	return err
}

func sweepMarkedTexts(ctx context.Context, tx *sql.Tx) error {
	_, err := tx.ExecContext(ctx, `DELETE FROM search_texts WHERE id IN (SELECT id FROM marked_texts)
		AND NOT EXISTS (SELECT 1 FROM search_pieces p WHERE p.text_id = search_texts.id)`)
	if err == nil {
		_, err = tx.ExecContext(ctx, `DELETE FROM marked_texts`)
	}
	return err
}

// batchRows is how many rows one INSERT of a batcher carries.
const batchRows = 128

// batcher collects rows and inserts them batchRows at a time with one
// prepared statement, the rest in a last statement of their own. With
// scan set, each statement ends with tail (a RETURNING clause) and scan
// reads the rows it returns.
type batcher struct {
	tx   *sql.Tx
	head string
	tail string
	scan func(*sql.Rows) error
	cols int
	args []any
	full *sql.Stmt
}

func (b *batcher) values(n int) string {
	row := "(" + strings.Repeat("?, ", b.cols-1) + "?)"
	return b.head + strings.Repeat(row+", ", n-1) + row + b.tail
}

func (b *batcher) add(ctx context.Context, args ...any) error {
	b.args = append(b.args, args...)
	if len(b.args) < batchRows*b.cols {
		return nil
	}
	if b.full == nil {
		st, err := b.tx.PrepareContext(ctx, b.values(batchRows))
		if err != nil {
			return err
		}
		b.full = st
	}
	err := b.run(ctx, b.full)
	b.args = b.args[:0]
	return err
}

func (b *batcher) flush(ctx context.Context) error {
	if len(b.args) == 0 {
		return nil
	}
	st, err := b.tx.PrepareContext(ctx, b.values(len(b.args)/b.cols))
	if err == nil {
		err = b.run(ctx, st)
		st.Close()
	}
	b.args = b.args[:0]
	return err
}

// run runs st with the rows collected.
func (b *batcher) run(ctx context.Context, st *sql.Stmt) error {
	if b.scan == nil {
		_, err := st.ExecContext(ctx, b.args...)
		return err
	}
	rows, err := st.QueryContext(ctx, b.args...)
	return eachRow(rows, err, b.scan)
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

func (b *batcher) close() {
	if b.full != nil {
		b.full.Close()
	}
}

// SearchTraces answers a query from the index.
func (s *Store) SearchTraces(ctx context.Context, datasetID string, q *search.Query, opts store.SearchOptions) (store.SearchResult, error) {
	var res store.SearchResult
	after, ok, err := storeutil.DecodeCursor(opts.Page.Cursor)
	if err != nil {
		return res, fmt.Errorf("sqlite: search: %w", err)
	}
	if !ok {
		after = -1
	}
	ds, err := s.Dataset(ctx, datasetID)
	if err != nil {
		return res, err
	}
	plan := search.Plan{Dataset: ds.Name, Common: map[string]bool{}, Sets: map[string]search.Leaf{}}
	if names := q.Policies(); len(names) > 0 {
		ps, err := s.ListPolicies(ctx, datasetID)
		if err != nil {
			return res, err
		}
		plan.PolicyIDs = storeutil.PolicyIDs(ps)
	}
	for _, l := range q.Leaves(dialect{}) {
		// A word's trigram lookup is most of a rare word's time: the texts
		// that hold it are looked up once, and the query then finds their
		// traces by text (each use of the word asked FTS5 again).
		// Only a few: a word in many texts is often common, and each text
		// FTS5 returns is read again to test the pattern.
		if l.Word != "" {
			texts, err := s.textsHolding(ctx, l.Word, fewTexts)
			if err != nil {
				return res, fail(ctx, err, "search dataset %s", datasetID)
			}
			if texts != nil {
				l.Set, l.Args = "SELECT trace_id FROM search_pieces WHERE text_id IN (SELECT value FROM json_each(?))", []any{string(texts)}
				plan.Sets[l.Key] = l
			}
		}
		var n int
		if err := s.r.QueryRowContext(ctx, `SELECT count(*) FROM (`+l.Set+` LIMIT ?)`, append(l.Args, storeutil.CommonBound(opts))...).Scan(&n); err != nil {
			return res, fail(ctx, err, "search dataset %s", datasetID)
		}
		plan.Common[l.Key] = n >= storeutil.CommonBound(opts)
	}
	c, err := q.Compile(dialect{}, plan)
	if err != nil {
		return res, err
	}
	pageSQL, countSQL := storeutil.SearchStatements(c, `t.id, t.idx, t.name, t.metadata, t.event_count, t.created_at,
			(SELECT count(*) FROM annotations a WHERE a.trace_id = t.id)`)
	// The count runs beside the page, on a connection of its own, in one
	// part: split in two as on PostgreSQL, every query of bench/search
	// measured slower or no faster (combination p50 58-61 → 82-85 ms).
	countCap := opts.CountCap
	if countCap <= 0 {
		countCap = store.DefaultCountCap
	}
	countDone := storeutil.CountMatches(c, countCap, 1, func(skip, n int) (int64, error) {
		var m int64
		err := s.r.QueryRowContext(ctx, countSQL, storeutil.CountArgs(c, datasetID, skip, n)...).Scan(&m)
		return m, err
	})
	limit := storeutil.Limit(opts.Page.Limit)
	rows, err := s.r.QueryContext(ctx, pageSQL, storeutil.PageArgs(c, datasetID, after, limit+1)...)
	if err != nil {
		return res, fail(ctx, err, "search dataset %s", datasetID)
	}
	defer rows.Close()
	more := false
	for rows.Next() {
		if len(res.Traces) == limit {
			more = true
			break
		}
		var t store.SearchHit
		var meta []byte
		var created int64
		if err := rows.Scan(&t.ID, &t.Index, &t.Name, &meta, &t.EventCount, &created, &t.AnnotationCount); err != nil {
			return res, fail(ctx, err, "search dataset %s", datasetID)
		}
		if meta != nil {
			t.Metadata = meta
		}
		t.CreatedAt = storeutil.FromMicros(created)
		res.Traces = append(res.Traces, t)
	}
	if err := rows.Err(); err != nil {
		return res, fail(ctx, err, "search dataset %s", datasetID)
	}
	rows.Close()
	if more {
		res.Next = storeutil.EncodeCursor(res.Traces[len(res.Traces)-1].Index)
	}
	// The hits too are read while the count goes on.
	if words := q.Words(); len(words) > 0 && len(res.Traces) > 0 {
		if err := s.hits(ctx, res.Traces, words); err != nil {
			return res, fail(ctx, err, "search dataset %s: hits", datasetID)
		}
	}
	total := <-countDone
	if total.Err != nil {
		return res, fail(ctx, total.Err, "count matches in dataset %s", datasetID)
	}
	res.Total, res.Estimate = storeutil.SearchTotal(c, total.N, ds.TraceCount, countCap)
	return res, nil
}

// fewTexts is the most texts holding a word that a query lists.
const fewTexts = 64

// textsHolding returns the ids of the texts that hold word, as a JSON
// array, or nil when there are more than max.
func (s *Store) textsHolding(ctx context.Context, word string, max int) ([]byte, error) {
	rows, err := s.r.QueryContext(ctx, `SELECT rowid FROM search_fts WHERE text GLOB ? LIMIT ?`, globPattern(word), max+1)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	list := []byte{'['}
	n := 0
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			return nil, err
		}
		if n++; n > max {
			return nil, rows.Close()
		}
		if n > 1 {
			list = append(list, ',')
		}
		list = strconv.AppendInt(list, id, 10)
	}
	return append(list, ']'), rows.Err()
}

// hits reads the pieces of the page's traces and marks the words in them.
func (s *Store) hits(ctx context.Context, ts []store.SearchHit, words []string) error {
	at := make(map[string]int, len(ts))
	args := make([]any, len(ts))
	for i := range ts {
		at[ts[i].ID] = i
		args[i] = ts[i].ID
	}
	rows, err := s.r.QueryContext(ctx, `SELECT p.trace_id, p.address, x.text FROM search_pieces p JOIN search_texts x ON x.id = p.text_id
		WHERE p.trace_id IN (?`+strings.Repeat(", ?", len(ts)-1)+`) ORDER BY p.rowid`, args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	pieces := make([][]search.Piece, len(ts))
	for rows.Next() {
		var id, addresses, text string
		if err := rows.Scan(&id, &addresses, &text); err != nil {
			return err
		}
		i := at[id]
		for a := range strings.SplitSeq(addresses, "\n") {
			pieces[i] = append(pieces[i], search.Piece{Address: a, Text: text})
		}
	}
	if err := rows.Err(); err != nil {
		return err
	}
	for i := range ts {
		ts[i].Hits = search.Hits(pieces[i], words)
	}
	return nil
}

// Reindex rebuilds the search index from the stored traces, a batch of
// traces per transaction.
func (s *Store) Reindex(ctx context.Context, progress func(done, total int64)) (int64, error) {
	var total int64
	if err := s.r.QueryRowContext(ctx, `SELECT count(*) FROM traces`).Scan(&total); err != nil {
		return 0, fail(ctx, err, "reindex")
	}
	err := s.write(ctx, func(tx *sql.Tx) error {
		for _, q := range []string{`DELETE FROM search_pieces`, `DELETE FROM search_facets`, `DELETE FROM search_meta`,
			`DELETE FROM search_texts`, `DELETE FROM search_state`} {
			if _, err := tx.ExecContext(ctx, q); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return 0, fail(ctx, err, "reindex: clear")
	}
	var done int64
	after := ""
	for {
		ids, docs, err := s.readDocs(ctx, after, 500)
		if err != nil {
			return done, fail(ctx, err, "reindex")
		}
		if len(ids) == 0 {
			break
		}
		if err := s.write(ctx, func(tx *sql.Tx) error {
			// A trace written since the clear has indexed itself (start it
			// over); one deleted since the read would fail its foreign key.
			live := ids[:0:0]
			var ld []storeutil.IndexDoc
			for i, id := range ids {
				if err := deleteDoc(ctx, tx, id); err != nil {
					return err
				}
				var one int
				if err := tx.QueryRowContext(ctx, `SELECT 1 FROM traces WHERE id = ?`, id).Scan(&one); err == nil {
					live, ld = append(live, id), append(ld, storeutil.IndexDoc{Doc: docs[i]})
				} else if !errors.Is(err, sql.ErrNoRows) {
					return err
				}
			}
			return insertDocs(ctx, tx, live, ld)
		}); err != nil {
			return done, fail(ctx, err, "reindex")
		}
		done += int64(len(ids))
		after = ids[len(ids)-1]
		if progress != nil {
			progress(done, total)
		}
	}
	if _, err := s.w.ExecContext(ctx, `INSERT INTO search_state (version) VALUES (?)`, search.IndexVersion); err != nil {
		return done, fail(ctx, err, "reindex")
	}
	return done, nil
}

// readDocs decodes up to n traces with ids after after, in id order, and
// extracts their index documents.
func (s *Store) readDocs(ctx context.Context, after string, n int) ([]string, []*search.Doc, error) {
	rows, err := s.r.QueryContext(ctx, `SELECT id, metadata, encoding, content FROM traces WHERE id > ? ORDER BY id LIMIT ?`, after, n)
	if err != nil {
		return nil, nil, err
	}
	defer rows.Close()
	var ids []string
	var docs []*search.Doc
	for rows.Next() {
		var id string
		var meta, content []byte
		var enc int
		if err := rows.Scan(&id, &meta, &enc, &content); err != nil {
			return nil, nil, err
		}
		t, err := storeutil.DecodeContent(content, enc, meta)
		if err != nil {
			return nil, nil, fmt.Errorf("trace %s: %w", id, err)
		}
		d := search.Index(t)
		ids, docs = append(ids, id), append(docs, &d)
	}
	return ids, docs, rows.Err()
}

// ensureIndex rebuilds the index when it was built by another version of
// search.Index, or never (a database from before the index existed).
func (s *Store) ensureIndex(ctx context.Context) error {
	var v int
	err := s.r.QueryRowContext(ctx, `SELECT version FROM search_state`).Scan(&v)
	if err == nil && v == search.IndexVersion {
		return nil
	}
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return err
	}
	var any bool
	if err := s.r.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM traces)`).Scan(&any); err != nil {
		return err
	}
	if any {
		slog.Info("sqlite: building the search index", "was", strconv.Itoa(v), "now", search.IndexVersion)
	}
	_, err = s.Reindex(ctx, nil)
	return err
}

// SearchIndexStats counts the index's texts and pieces and the bytes its
// tables, their indexes and FTS5's own tables take in the file.
func (s *Store) SearchIndexStats(ctx context.Context) (store.SearchIndexStats, error) {
	var st store.SearchIndexStats
	var b sql.NullInt64
	err := s.r.QueryRowContext(ctx, `SELECT (SELECT count(*) FROM search_texts),
		(SELECT coalesce(sum(length(address) - length(replace(address, char(10), '')) + 1), 0) FROM search_pieces),
		(SELECT sum(pgsize) FROM dbstat WHERE name LIKE 'search%')`).Scan(&st.Texts, &st.Pieces, &b)
	st.Bytes = b.Int64
	if err != nil {
		return st, fail(ctx, err, "search index stats")
	}
	return st, nil
}
