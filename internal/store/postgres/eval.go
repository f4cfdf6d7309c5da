package postgres

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/lookout-dev/lookout/internal/store"
	"github.com/lookout-dev/lookout/internal/store/internal/sqlstore"
	"github.com/lookout-dev/lookout/internal/store/internal/storeutil"
)

// addScores is sqlstore.Hooks.AddScores: a statement or two a score, the
// version read from the one it supersedes.
func addScores(ctx context.Context, q sqlstore.Querier, scores []store.Score) ([]store.Score, error) {
	tx := sqlstore.PgxTx(q)
	now := storeutil.Now()
	out, err := storeutil.PrepareScores(scores, now)
	if err != nil {
		return nil, err
	}
	for i := range out {
		sc := &out[i]
		var last int
		err := tx.QueryRow(ctx, `UPDATE scores SET current = false WHERE trace_id = $1 AND criterion = $2 AND address = $3 AND current RETURNING version`,
			sc.TraceID, sc.Criterion, sc.Address).Scan(&last)
		if errors.Is(err, pgx.ErrNoRows) {
			err = tx.QueryRow(ctx, `SELECT coalesce(max(version), 0) FROM scores WHERE trace_id = $1 AND criterion = $2 AND address = $3`,
				sc.TraceID, sc.Criterion, sc.Address).Scan(&last)
		}
		if err != nil {
			return nil, err
		}
		sc.Version = last + 1
		if _, err := tx.Exec(ctx, `INSERT INTO scores (id, trace_id, address, criterion, value, comment, source, author, run_id, extra, version, current, created_at)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, true, $12)`,
			sc.ID, sc.TraceID, sc.Address, sc.Criterion, string(sc.Value), sc.Comment, sc.Source, sc.Author, sc.RunID, sqlstore.OptText(sc.Extra), sc.Version, now); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// putStatuses records the statuses of a run's results in one pipelined
// batch.
func putStatuses(ctx context.Context, q sqlstore.Querier, runID string, results []store.TraceResult, now time.Time) error {
	tx := sqlstore.PgxTx(q)
	b := &pgx.Batch{}
	for _, r := range results {
		for _, st := range r.Statuses {
			b.Queue(`INSERT INTO eval_status (run_id, trace_id, criterion, status, error, updated_at) VALUES ($1, $2, $3, $4, $5, $6)
				ON CONFLICT (run_id, trace_id, criterion) DO UPDATE SET status = excluded.status, error = excluded.error, updated_at = excluded.updated_at`,
				runID, st.TraceID, st.Criterion, st.Status, st.Error, now)
		}
	}
	if b.Len() == 0 {
		return nil
	}
	return tx.SendBatch(ctx, b).Close()
}
