package sqlite

import (
	"context"
	"database/sql"
	"strings"
	"time"

	"github.com/lookout-dev/lookout/internal/store"
	"github.com/lookout-dev/lookout/internal/store/internal/sqlstore"
	"github.com/lookout-dev/lookout/internal/store/internal/storeutil"
)

// addScores is sqlstore.Hooks.AddScores: scores of distinct targets with
// multi-row statements, else two prepared statements a score.
func addScores(ctx context.Context, q sqlstore.Querier, scores []store.Score) ([]store.Score, error) {
	tx := sqlstore.SQLTx(q)
	if len(scores) == 0 {
		return nil, nil
	}
	if distinctTargets(scores) {
		return addScoresBulk(ctx, tx, scores)
	}
	prev, err := tx.PrepareContext(ctx, `UPDATE scores SET current = 0 WHERE trace_id = ? AND criterion = ? AND address = ? AND current`)
	if err != nil {
		return nil, err
	}
	defer prev.Close()
	// The version is one more than the highest so far (which a deleted
	// current score may have left without a current one).
	ins, err := tx.PrepareContext(ctx, `INSERT INTO scores (id, trace_id, address, criterion, value, comment, source, author, run_id, extra, version, current, created_at)
		VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10,
			(SELECT coalesce(max(version), 0) + 1 FROM scores WHERE trace_id = ?2 AND criterion = ?4 AND address = ?3), 1, ?11)
		RETURNING version`)
	if err != nil {
		return nil, err
	}
	defer ins.Close()
	now := storeutil.Now()
	out, err := storeutil.PrepareScores(scores, now)
	if err != nil {
		return nil, err
	}
	for i, sc := range out {
		if _, err := prev.ExecContext(ctx, sc.TraceID, sc.Criterion, sc.Address); err != nil {
			return nil, err
		}
		if err := ins.QueryRowContext(ctx, sc.ID, sc.TraceID, sc.Address, sc.Criterion, string(sc.Value), sc.Comment, sc.Source, sc.Author, sc.RunID, sqlstore.OptText(sc.Extra), micros(now)).Scan(&sc.Version); err != nil {
			return nil, err
		}
		out[i] = sc
	}
	return out, nil
}

// distinctTargets reports whether no two scores share a target and
// criterion, which lets addScoresBulk number them in one statement.
func distinctTargets(scores []store.Score) bool {
	seen := make(map[[3]string]bool, len(scores))
	for _, sc := range scores {
		k := [3]string{sc.TraceID, sc.Criterion, sc.Address}
		if seen[k] {
			return false
		}
		seen[k] = true
	}
	return true
}

// bulkRows is how many rows one multi-row statement carries (SQLite allows
// 32,766 parameters).
const bulkRows = 400

// addScoresBulk is addScores for distinct targets with multi-row
// statements: an evaluation run stores thousands of scores a second, and
// statements one row at a time cost more than the rows.
func addScoresBulk(ctx context.Context, tx *sql.Tx, scores []store.Score) ([]store.Score, error) {
	now := storeutil.Now()
	out, err := storeutil.PrepareScores(scores, now)
	if err != nil {
		return nil, err
	}
	byID := make(map[string]int, len(out))
	for i := range out {
		byID[out[i].ID] = i
	}
	for start := 0; start < len(out); start += bulkRows {
		chunk := out[start:min(start+bulkRows, len(out))]
		var b strings.Builder
		args := make([]any, 0, len(chunk)*11)
		b.WriteString(`UPDATE scores SET current = 0 WHERE current AND (trace_id, criterion, address) IN (VALUES `)
		for i, sc := range chunk {
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteString("(?,?,?)")
			args = append(args, sc.TraceID, sc.Criterion, sc.Address)
		}
		b.WriteByte(')')
		if _, err := tx.ExecContext(ctx, b.String(), args...); err != nil {
			return nil, err
		}
		b.Reset()
		args = args[:0]
		b.WriteString(`INSERT INTO scores (id, trace_id, address, criterion, value, comment, source, author, run_id, extra, version, current, created_at)
			SELECT column1, column2, column3, column4, column5, column6, column7, column8, column9, column10,
				(SELECT coalesce(max(s.version), 0) + 1 FROM scores s WHERE s.trace_id = v.column2 AND s.criterion = v.column4 AND s.address = v.column3),
				1, column11 FROM (VALUES `)
		for i, sc := range chunk {
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteString("(?,?,?,?,?,?,?,?,?,?,?)")
			args = append(args, sc.ID, sc.TraceID, sc.Address, sc.Criterion, string(sc.Value), sc.Comment, sc.Source, sc.Author, sc.RunID, sqlstore.OptText(sc.Extra), micros(now))
		}
		b.WriteString(`) AS v WHERE true RETURNING id, version`)
		rows, err := tx.QueryContext(ctx, b.String(), args...)
		if err != nil {
			return nil, err
		}
		for rows.Next() {
			var id string
			var v int
			if err := rows.Scan(&id, &v); err != nil {
				rows.Close()
				return nil, err
			}
			out[byID[id]].Version = v
		}
		if err := rows.Close(); err != nil {
			return nil, err
		}
		if err := rows.Err(); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// putStatuses records the statuses of a run's results with multi-row
// statements.
func putStatuses(ctx context.Context, q sqlstore.Querier, runID string, results []store.TraceResult, now time.Time) error {
	tx := sqlstore.SQLTx(q)
	var all []store.TraceStatus
	for _, r := range results {
		all = append(all, r.Statuses...)
	}
	for start := 0; start < len(all); start += bulkRows {
		chunk := all[start:min(start+bulkRows, len(all))]
		var b strings.Builder
		args := make([]any, 0, len(chunk)*6)
		b.WriteString(`INSERT INTO eval_status (run_id, trace_id, criterion, status, error, updated_at) VALUES `)
		for i, st := range chunk {
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteString("(?,?,?,?,?,?)")
			args = append(args, runID, st.TraceID, st.Criterion, st.Status, st.Error, micros(now))
		}
		b.WriteString(` ON CONFLICT (run_id, trace_id, criterion) DO UPDATE SET status = excluded.status, error = excluded.error, updated_at = excluded.updated_at`)
		if _, err := tx.ExecContext(ctx, b.String(), args...); err != nil {
			return err
		}
	}
	return nil
}
