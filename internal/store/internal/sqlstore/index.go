package sqlstore

import (
	"context"
	"time"

	"github.com/lookout-dev/lookout/internal/store/internal/indexer"
)

// Enqueue queues stored traces for the search indexer, in the transaction
// that writes them (or, before it deletes them, deletes them): the queue
// row commits with the trace.
func (s *Store) Enqueue(ctx context.Context, tx Querier, ids []string) error {
	if len(ids) == 0 {
		return nil
	}
	list, err := s.D.List(ids)
	if err != nil {
		return err
	}
	_, err = tx.Exec(ctx, `INSERT INTO search_queue (trace_id, dataset_id, queued_at)
		SELECT t.id, t.dataset_id, $2 FROM traces t WHERE t.id IN (SELECT value FROM `+s.D.Elems+`)`, list, s.D.Time(time.Now()))
	return err
}

// enqueueDataset queues the traces of a dataset about to be deleted.
func (s *Store) enqueueDataset(ctx context.Context, tx Querier, datasetID string) error {
	_, err := tx.Exec(ctx, `INSERT INTO search_queue (trace_id, dataset_id, queued_at) SELECT id, dataset_id, $2 FROM traces WHERE dataset_id = $1`,
		datasetID, s.D.Time(time.Now()))
	return err
}

// QueueBounds reads the search queue for indexer.Backend.Bounds: of one
// dataset's rows, or all ("").
func (s *Store) QueueBounds(ctx context.Context, datasetID string, count bool) (indexer.Bounds, error) {
	var b indexer.Bounds
	where, args := "", []any{}
	if datasetID != "" {
		where, args = " WHERE dataset_id = $1", []any{datasetID}
	}
	// Each end its own subquery: an index lookup each.
	err := s.R.QueryRow(ctx, `SELECT coalesce((SELECT min(seq) FROM search_queue`+where+`), 0),
		coalesce((SELECT max(seq) FROM search_queue`+where+`), 0)`, args...).Scan(&b.First, &b.Last)
	if err != nil || !count || b.Last == 0 {
		return b, err
	}
	var oldest Time
	err = s.R.QueryRow(ctx, `SELECT count(*), (SELECT queued_at FROM search_queue`+where+` ORDER BY seq LIMIT 1) FROM search_queue`+where, args...).Scan(&b.Queued, &oldest)
	b.Oldest = oldest.T
	return b, err
}
