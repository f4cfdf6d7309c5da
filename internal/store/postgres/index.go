package postgres

import (
	"context"
	"errors"
	"log/slog"

	"github.com/jackc/pgx/v5"

	"github.com/lookout-dev/lookout/internal/search"
	"github.com/lookout-dev/lookout/internal/store/internal/indexer"
	"github.com/lookout-dev/lookout/internal/store/internal/sqlstore"
	"github.com/lookout-dev/lookout/internal/store/internal/storeutil"
	"github.com/lookout-dev/lookout/internal/trace"
)

// indexLock is the advisory lock an indexer's transaction holds, so that
// the indexers of several servers on one database take turns: each reads
// the queue and the traces after the one before it committed.
const indexLock = 0x6c6f6f6b6f7574

// ensureIndex makes the index one of this version: one of another version
// (or none) is emptied and every trace queued, in one transaction, and the
// indexer fills it.
func (s *Store) ensureIndex(ctx context.Context) error {
	var v int
	err := s.pool.QueryRow(ctx, `SELECT version FROM search_state`).Scan(&v)
	if err == nil && v == search.IndexVersion {
		return nil
	}
	if err != nil && !errors.Is(err, pgx.ErrNoRows) {
		return err
	}
	n, err := s.resetIndex(ctx)
	if n > 0 {
		slog.Info("postgres: building the search index", "traces", n)
	}
	return err
}

// resetIndex empties the index and queues every trace.
func (s *Store) resetIndex(ctx context.Context) (int64, error) {
	var n int64
	err := s.write(ctx, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, int64(indexLock)); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `TRUNCATE search_traces, search_facets, search_meta, search_texts, search_state`); err != nil {
			return err
		}
		// The queue is replaced: every trace is in it once.
		if _, err := tx.Exec(ctx, `DELETE FROM search_queue`); err != nil {
			return err
		}
		tag, err := tx.Exec(ctx, `INSERT INTO search_queue (trace_id, dataset_id, queued_at) SELECT id, dataset_id, now() FROM traces ORDER BY created_at`)
		if err != nil {
			return err
		}
		n = tag.RowsAffected()
		_, err = tx.Exec(ctx, `INSERT INTO search_state (version) VALUES ($1)`, search.IndexVersion)
		return err
	})
	return n, err
}

// Reindex rebuilds the search index from the stored traces: it empties the
// index, queues every trace and indexes the queue, a batch per
// transaction (searches meanwhile wait for it).
func (s *Store) Reindex(ctx context.Context, progress func(done, total int64)) (int64, error) {
	total, err := s.resetIndex(ctx)
	if err != nil {
		return 0, fail(ctx, err, "reindex: clear")
	}
	n, err := sqlstore.Reindexed(ctx, s.ix, total, progress)
	if err != nil {
		return n, fail(ctx, err, "reindex")
	}
	return n, nil
}

// indexBackend is the Store as the indexer's backend.
type indexBackend struct{ s *Store }

func (b indexBackend) Bounds(ctx context.Context, datasetID string, count bool) (indexer.Bounds, error) {
	return b.s.QueueBounds(ctx, datasetID, count)
}

func (b indexBackend) Begin(ctx context.Context) (indexer.Step, error) {
	tx, err := b.s.pool.Begin(ctx)
	if err != nil {
		return nil, err
	}
	if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, int64(indexLock)); err != nil {
		tx.Rollback(context.WithoutCancel(ctx))
		return nil, err
	}
	return &indexStep{s: b.s, tx: tx}, nil
}

// indexStep reads the queue and the traces and writes the index in one
// transaction.
type indexStep struct {
	s      *Store
	tx     pgx.Tx
	pieces int64
}

func (st *indexStep) Queued(ctx context.Context, n int, datasetID string) ([]indexer.Entry, error) {
	q, args := `SELECT seq, trace_id::text FROM search_queue ORDER BY seq LIMIT $1`, []any{n}
	if datasetID != "" {
		q, args = `SELECT seq, trace_id::text FROM search_queue WHERE dataset_id = $2 ORDER BY seq LIMIT $1`, []any{n, datasetID}
	}
	rows, err := st.tx.Query(ctx, q, args...)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (indexer.Entry, error) {
		var e indexer.Entry
		err := r.Scan(&e.Seq, &e.TraceID)
		return e, err
	})
}

func (st *indexStep) Traces(ctx context.Context, ids []string, fn func(id string, t *trace.Trace, bad error)) error {
	return storedTraces(ctx, st.tx, ids, st.s.handover, fn)
}

// storedTraces calls fn with each stored trace of ids, decoded (those gone
// are not given; a trace that does not decode comes with its error), read
// on the pool or in a transaction. A trace handed over in the row version
// still stored is not read: its content is the largest part of the row.
func storedTraces(ctx context.Context, q sqlstore.PgxConn, ids []string, h *indexer.Handover, fn func(id string, t *trace.Trace, bad error)) error {
	rows, err := q.Query(ctx, `SELECT t.id::text, t.xmin::text, t.xmin::text = x.v,
		CASE WHEN t.xmin::text = x.v THEN NULL ELSE t.metadata END, t.encoding, CASE WHEN t.xmin::text = x.v THEN NULL ELSE t.content END
		FROM unnest($1::uuid[], $2::text[]) x (id, v) JOIN traces t ON t.id = x.id`, ids, h.Versions(ids))
	if err != nil {
		return err
	}
	var again []string
	var id, version string
	var handed bool
	var meta, content []byte
	var enc int
	if _, err := pgx.ForEachRow(rows, []any{&id, &version, &handed, &meta, &enc, &content}, func() error {
		if t := h.Take(id, version, content, meta); t != nil {
			fn(id, t, nil)
		} else if handed {
			again = append(again, id) // handed over again meanwhile
		} else {
			t, err := storeutil.DecodeContent(content, enc, meta)
			fn(id, t, err)
		}
		return nil
	}); err != nil {
		return err
	}
	if len(again) == 0 {
		return nil
	}
	return sqlstore.StoredTraces(ctx, sqlstore.Pgx(q), `SELECT id::text, metadata, encoding, content FROM traces WHERE id = ANY($1::uuid[])`, again, nil, fn)
}

// txVersion names the row versions a transaction writes: its id, which
// the xmin of each row it writes holds. Ids wrap after 2^32 transactions;
// a handover keeps a trace a minute at most.
func txVersion(ctx context.Context, q sqlstore.Querier) (string, error) {
	var v string
	err := q.QueryRow(ctx, `SELECT (txid_current() % 4294967296)::text`).Scan(&v)
	return v, err
}

func (st *indexStep) Write(ctx context.Context, docs []indexer.Doc) error {
	ids, live, ld := sqlstore.SplitDocs(docs)
	// Every trace's rows go, the live ones are written whole, then the
	// texts the batch's traces held and hold no more, if nothing else
	// holds them.
	rows, err := st.tx.Query(ctx, `DELETE FROM search_traces WHERE trace_id = ANY($1::uuid[]) RETURNING trace_id::text, texts, facets, metas`, ids)
	if err != nil {
		return err
	}
	var old [][]int64
	var fTrace, fFacet []string
	var metas []int64
	var traceID string
	var texts, ms []int64
	var facets []string
	if _, err := pgx.ForEachRow(rows, []any{&traceID, &texts, &facets, &ms}, func() error {
		old = append(old, texts)
		for _, f := range facets {
			fTrace, fFacet = append(fTrace, traceID), append(fFacet, f)
		}
		metas = append(metas, ms...)
		return nil
	}); err != nil {
		return err
	}
	if len(fFacet) > 0 {
		if _, err := st.tx.Exec(ctx, `DELETE FROM search_facets f USING unnest($1::uuid[], $2::text[]) x (trace_id, facet) WHERE f.facet = x.facet AND f.trace_id = x.trace_id`, fTrace, fFacet); err != nil {
			return err
		}
	}
	if len(metas) > 0 {
		if _, err := st.tx.Exec(ctx, `DELETE FROM search_meta WHERE id = ANY($1::bigint[])`, metas); err != nil {
			return err
		}
	}
	used, pieces, err := insertDocs(ctx, st.tx, live, ld)
	if err != nil {
		return err
	}
	st.pieces += pieces
	held := make(map[int64]bool, len(used))
	for _, t := range used {
		held[t] = true
	}
	var dropped []int64
	for _, ts := range old {
		for _, t := range ts {
			if !held[t] {
				held[t] = true // once
				dropped = append(dropped, t)
			}
		}
	}
	return sweepTexts(ctx, st.tx, dropped)
}

func (st *indexStep) Commit(ctx context.Context, done []indexer.Entry) error {
	seqs := make([]int64, len(done))
	for i, e := range done {
		seqs[i] = e.Seq
	}
	if _, err := st.tx.Exec(ctx, `DELETE FROM search_queue WHERE seq = ANY($1)`, seqs); err != nil {
		return err
	}
	if err := st.tx.Commit(ctx); err != nil {
		return err
	}
	st.s.noteIndexed(st.pieces)
	return nil
}

func (st *indexStep) Rollback() { st.tx.Rollback(context.Background()) }
