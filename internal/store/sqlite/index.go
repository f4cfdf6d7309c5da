package sqlite

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"slices"

	"modernc.org/sqlite"

	"github.com/lookout-dev/lookout/internal/search"
	"github.com/lookout-dev/lookout/internal/store/internal/indexer"
	"github.com/lookout-dev/lookout/internal/store/internal/sqlstore"
	"github.com/lookout-dev/lookout/internal/store/internal/storeutil"
	"github.com/lookout-dev/lookout/internal/trace"
)

// The search index lives in a database file of its own beside the main
// one (IndexPath), written only by the indexer (internal/indexer) through
// its own connection, so that its writer lock is not the traces' one. The
// read connections attach it as "idx": the search statements name its
// tables unqualified, which SQLite resolves across attached files. It holds
// no foreign keys (they cannot cross files): a deleted trace's rows stay
// until the indexer removes them, and every search joins traces, so they
// are never seen.

// IndexPath is the file of the search index of the database at path.
func IndexPath(path string) string { return path + "-search" }

// indexSchema is the version of the statements below; with
// search.IndexVersion it is kept in search_state, and an index of another
// version is dropped and rebuilt.
const indexSchema = 8

var indexTables = []string{
	// The texts the traces hold: the substring index (grams.go) covers
	// these rows only. Agents repeat their system prompts, tool names and
	// outputs across traces: a text the indexer met recently (textCache)
	// is referred to by its id, not written again. A text met long ago, or
	// by another process, may be written again: a second row matches a
	// search as the first does, and each row goes once no trace holds it.
	// There is no index by content: one keyed by a hash (random) touched a
	// page a new text, and looking texts up in it was a third of the
	// index's writes. The text is lower-cased (code point offsets stay
	// those of the original). AUTOINCREMENT: an id is never given twice,
	// which the trigram index's merges rely on (a deleted text's id is
	// dropped from its postings).
	`CREATE TABLE search_texts (
		id   INTEGER PRIMARY KEY AUTOINCREMENT,
		text TEXT NOT NULL
	)`,
	// One row per trace: the ids of its texts (a JSON array, in order of
	// first occurrence), which a scan of the trace tests. Where in the
	// trace a text occurs is not kept: a search finds it in the trace's
	// content, for the traces of the page it shows. Its facets and the ids
	// of its search_meta rows (JSON arrays) find its rows of those tables
	// when it goes: an index of them by trace, entered at a random place
	// for each row, had been a third of the cost of their rows.
	`CREATE TABLE search_traces (
		docid    INTEGER PRIMARY KEY,
		trace_id TEXT NOT NULL UNIQUE,
		texts    TEXT NOT NULL,
		facets   TEXT NOT NULL,
		metas    TEXT NOT NULL
	)`,
	// The postings from texts to traces: one document per trace (rowid:
	// docid) whose tokens are its text ids ("t<id>"). Contentless: it holds
	// the postings only. One document a trace instead of a row per text and
	// trace: FTS5 writes postings in bulk segments, not a B-tree entry each.
	`CREATE VIRTUAL TABLE search_docs USING fts5 (
		texts, content = '', contentless_delete = 1, detail = 'none', tokenize = 'ascii'
	)`,
	`CREATE TABLE search_facets (
		facet    TEXT NOT NULL,
		trace_id TEXT NOT NULL,
		PRIMARY KEY (facet, trace_id)
	) WITHOUT ROWID`,
	`CREATE TABLE search_meta (
		id       INTEGER PRIMARY KEY,
		trace_id TEXT NOT NULL,
		key      TEXT NOT NULL,
		text     TEXT NOT NULL,
		num      REAL
	)`,
	// A prefix of the text: a B-tree entry must stay small, whatever the value.
	`CREATE INDEX search_meta_text ON search_meta (key, substr(text, 1, 200))`,
	`CREATE INDEX search_meta_num ON search_meta (key, num) WHERE num IS NOT NULL`,
	// gen: random at creation, moved on by each step that deletes texts
	// (textCache).
	`CREATE TABLE search_state (version INTEGER NOT NULL, schema INTEGER NOT NULL, gen INTEGER NOT NULL)`,
}

// dropIndex removes the index's tables, whatever version made them (an
// FTS5 table's own tables go with it).
func dropIndex(ctx context.Context, tx *sql.Tx) error {
	rows, err := tx.QueryContext(ctx, `SELECT type, name FROM sqlite_schema WHERE type IN ('table', 'trigger') AND name NOT LIKE 'sqlite_%' AND name NOT LIKE 'search_fts_%'`)
	if err != nil {
		return err
	}
	var drops []string
	for rows.Next() {
		var typ, name string
		if err := rows.Scan(&typ, &name); err != nil {
			rows.Close()
			return err
		}
		drops = append(drops, fmt.Sprintf("DROP %s IF EXISTS %q", typ, name))
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	for _, d := range drops {
		if _, err := tx.ExecContext(ctx, d); err != nil {
			return err
		}
	}
	return nil
}

// createIndex drops the index and creates it empty, of this version.
func createIndex(ctx context.Context, tx *sql.Tx) error {
	if err := dropIndex(ctx, tx); err != nil {
		return err
	}
	for _, q := range append(slices.Clip(indexTables), gramTables...) {
		if _, err := tx.ExecContext(ctx, q); err != nil {
			return err
		}
	}
	_, err := tx.ExecContext(ctx, `INSERT INTO search_state (version, schema, gen) VALUES (?, ?, ?)`, search.IndexVersion, indexSchema, rand.Int64())
	return err
}

// ensureIndex makes the index file hold an index of this version: one of
// another version (or none) is created empty after every trace is queued,
// and the indexer fills it.
func (s *Store) ensureIndex(ctx context.Context) error {
	var v, schema int
	err := s.iw.QueryRowContext(ctx, `SELECT version, schema FROM search_state`).Scan(&v, &schema)
	if err == nil && v == search.IndexVersion && schema == indexSchema {
		return nil
	}
	if err != nil && !errors.Is(err, sql.ErrNoRows) && !isNoTable(err) {
		return err
	}
	// Queue first: a crash between the two leaves an index of the old
	// version, which the next start replaces again.
	n, err := s.queueAll(ctx)
	if err != nil {
		return err
	}
	if n > 0 {
		slog.Info("sqlite: building the search index", "traces", n, "index", IndexPath(s.path))
	}
	return s.writeIndex(ctx, func(tx *sql.Tx) error { return createIndex(ctx, tx) })
}

// isNoTable reports a statement on a table the file does not have.
func isNoTable(err error) bool {
	var se *sqlite.Error
	return errors.As(err, &se) && se.Code() == 1 // SQLITE_ERROR: no such table
}

// queueAll queues every stored trace for the indexer.
func (s *Store) queueAll(ctx context.Context) (int64, error) {
	var n int64
	err := s.write(ctx, func(tx *sql.Tx) error {
		// The queue is replaced: every trace is in it once.
		if _, err := tx.ExecContext(ctx, `DELETE FROM search_queue`); err != nil {
			return err
		}
		res, err := tx.ExecContext(ctx, `INSERT INTO search_queue (trace_id, dataset_id, queued_at) SELECT id, dataset_id, ? FROM traces ORDER BY rowid`, micros(storeutil.Now()))
		if err == nil {
			n, err = res.RowsAffected()
		}
		return err
	})
	return n, err
}

// writeIndex runs fn in a transaction of the index file's writer.
func (s *Store) writeIndex(ctx context.Context, fn func(tx *sql.Tx) error) error {
	tx, err := s.iw.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	if err := fn(tx); err != nil {
		tx.Rollback()
		return err
	}
	return tx.Commit()
}

// attacher opens read connections with the index file attached as idx.
type attacher struct {
	d          *sqlite.Driver
	dsn, index string
}

func (a attacher) Connect(ctx context.Context) (driver.Conn, error) {
	c, err := a.d.Open(a.dsn)
	if err != nil {
		return nil, err
	}
	if _, err := c.(driver.ExecerContext).ExecContext(ctx, `ATTACH DATABASE ? AS idx`, []driver.NamedValue{{Ordinal: 1, Value: a.index}}); err != nil {
		c.Close()
		return nil, fmt.Errorf("attach the search index %s: %w", a.index, err)
	}
	return c, nil
}

func (a attacher) Driver() driver.Driver { return a.d }

// ---- indexer.Backend ----

// indexBackend is the Store as the indexer's backend.
type indexBackend struct{ s *Store }

func (b indexBackend) Bounds(ctx context.Context, datasetID string, count bool) (indexer.Bounds, error) {
	return b.s.QueueBounds(ctx, datasetID, count)
}

// Queued and Traces read the main file on the read pool, as a step does:
// the indexer reads the next batch while a step writes (indexer.Prefetcher).
func (b indexBackend) Queued(ctx context.Context, n int, datasetID string) ([]indexer.Entry, error) {
	return (&indexStep{s: b.s}).Queued(ctx, n, datasetID)
}

func (b indexBackend) Traces(ctx context.Context, ids []string, fn func(id string, t *trace.Trace, bad error)) error {
	return b.s.storedTraces(ctx, ids, b.s.handover, fn)
}

func (b indexBackend) Begin(ctx context.Context) (indexer.Step, error) {
	tx, err := b.s.iw.BeginTx(ctx, nil) // BEGIN IMMEDIATE: the index's writer lock
	if err != nil {
		return nil, err
	}
	st := &indexStep{s: b.s, tx: tx, texts: stepTexts{cache: &b.s.texts, learned: map[storeutil.TextHash]int64{}}}
	if err := tx.QueryRowContext(ctx, `SELECT gen FROM search_state`).Scan(&st.texts.gen); err != nil {
		tx.Rollback()
		return nil, err
	}
	st.genAfter = st.texts.gen
	return st, nil
}

// indexStep reads the queue and the traces on the read pool (the main
// file) and writes the index file in tx.
type indexStep struct {
	s        *Store
	tx       *sql.Tx
	texts    stepTexts
	genAfter int64 // the index's gen once the step commits
}

// Version is the index file's data_version as the step's connection sees
// it: it changes when another connection (process) commits to the file.
func (st *indexStep) Version(ctx context.Context) (int64, error) {
	var v int64
	err := st.tx.QueryRowContext(ctx, `PRAGMA data_version`).Scan(&v)
	return v, err
}

func (st *indexStep) Queued(ctx context.Context, n int, datasetID string) ([]indexer.Entry, error) {
	q, args := `SELECT seq, trace_id FROM search_queue ORDER BY seq LIMIT ?`, []any{n}
	if datasetID != "" {
		q, args = `SELECT seq, trace_id FROM search_queue WHERE dataset_id = ? ORDER BY seq LIMIT ?`, []any{datasetID, n}
	}
	rows, err := st.s.r.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, err
	}
	var out []indexer.Entry
	err = eachRow(rows, nil, func(rows *sql.Rows) error {
		var e indexer.Entry
		err := rows.Scan(&e.Seq, &e.TraceID)
		out = append(out, e)
		return err
	})
	return out, err
}

func (st *indexStep) Traces(ctx context.Context, ids []string, fn func(id string, t *trace.Trace, bad error)) error {
	return st.s.storedTraces(ctx, ids, st.s.handover, fn)
}

// storedTraces calls fn with each stored trace of ids, decoded (those gone
// are not given; a trace that does not decode comes with its error), or as
// handed over in h (nil: none).
func (s *Store) storedTraces(ctx context.Context, ids []string, h *indexer.Handover, fn func(id string, t *trace.Trace, bad error)) error {
	list, _ := json.Marshal(ids)
	return sqlstore.StoredTraces(ctx, sqlstore.SQL(s.r), `SELECT id, metadata, encoding, content FROM traces WHERE id IN (SELECT value FROM json_each(?))`, string(list), h, fn)
}

func (st *indexStep) Write(ctx context.Context, docs []indexer.Doc) error {
	ids, live, ld := sqlstore.SplitDocs(docs)
	// Every trace's rows go, then the live ones are written whole; the
	// texts of the rows dropped that nothing uses any more go last.
	list, _ := json.Marshal(ids)
	marked, err := markTexts(ctx, st.tx, `SELECT j.value FROM search_traces d, json_each(d.texts) j WHERE d.trace_id IN (SELECT value FROM json_each(?))`, string(list))
	if err != nil {
		return err
	}
	if _, err := st.tx.ExecContext(ctx, `DELETE FROM search_docs WHERE rowid IN (SELECT docid FROM search_traces WHERE trace_id IN (SELECT value FROM json_each(?)))`, string(list)); err != nil {
		return err
	}
	for _, del := range []string{
		`DELETE FROM search_facets WHERE (facet, trace_id) IN (SELECT j.value, d.trace_id FROM search_traces d, json_each(d.facets) j WHERE d.trace_id IN (SELECT value FROM json_each(?)))`,
		`DELETE FROM search_meta WHERE id IN (SELECT j.value FROM search_traces d, json_each(d.metas) j WHERE d.trace_id IN (SELECT value FROM json_each(?)))`,
		`DELETE FROM search_traces WHERE trace_id IN (SELECT value FROM json_each(?))`,
	} {
		if _, err := st.tx.ExecContext(ctx, del, string(list)); err != nil {
			return err
		}
	}
	used, err := insertDocs(ctx, st.tx, live, ld, &st.texts)
	if err != nil || marked == 0 { // new traces only: no text lost a user
		return err
	}
	// A text the new documents hold stays: only those the batch's traces
	// no longer hold are looked for in other traces.
	ul, _ := json.Marshal(used)
	if _, err := st.tx.ExecContext(ctx, `DELETE FROM marked_texts WHERE id IN (SELECT value FROM json_each(?))`, string(ul)); err != nil {
		return err
	}
	swept, err := sweepMarkedTexts(ctx, st.tx)
	if err != nil || !swept {
		return err
	}
	// Texts went: any process's cache of this index is stale.
	st.genAfter = st.texts.gen + 1
	_, err = st.tx.ExecContext(ctx, `UPDATE search_state SET gen = ?`, st.genAfter)
	return err
}

func (st *indexStep) Commit(ctx context.Context, done []indexer.Entry) error {
	if err := st.tx.Commit(); err != nil {
		return err
	}
	st.s.texts.learned(st.texts.gen, st.genAfter, st.texts.learned)
	// The queue rows go once the documents are durable; a crash between
	// the two indexes these traces again. A statement of its own, not
	// s.write: that would kick the indexer.
	seqs := make([]int64, len(done))
	for i, e := range done {
		seqs[i] = e.Seq
	}
	list, _ := json.Marshal(seqs)
	_, err := st.s.w.ExecContext(ctx, `DELETE FROM search_queue WHERE seq IN (SELECT value FROM json_each(?))`, string(list))
	return err
}

func (st *indexStep) Rollback() { st.tx.Rollback() }

var (
	_ indexer.Prefetcher = indexBackend{}
	_ indexer.Versioned  = (*indexStep)(nil)
)
