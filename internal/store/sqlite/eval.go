package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/lookout-dev/lookout/internal/store"
	"github.com/lookout-dev/lookout/internal/store/internal/storeutil"
)

const scoreCols = `s.id, s.trace_id, s.address, s.criterion, s.value, s.comment, s.source, s.author, s.run_id, s.extra, s.version, s.current, s.created_at`

func scanScore(row interface{ Scan(...any) error }) (store.Score, error) {
	var sc store.Score
	var value string
	var extra sql.NullString
	var created int64
	err := row.Scan(&sc.ID, &sc.TraceID, &sc.Address, &sc.Criterion, &value, &sc.Comment, &sc.Source, &sc.Author, &sc.RunID, &extra, &sc.Version, &sc.Current, &created)
	sc.Value = json.RawMessage(value)
	if extra.Valid {
		sc.Extra = json.RawMessage(extra.String)
	}
	sc.CreatedAt = storeutil.FromMicros(created)
	return sc, err
}

// addScores inserts scores in tx, each superseding its target's current one.
func addScores(ctx context.Context, tx *sql.Tx, scores []store.Score) ([]store.Score, error) {
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
	out := make([]store.Score, len(scores))
	for i, sc := range scores {
		v, err := storeutil.CheckScore(sc, fmt.Sprintf("score %d", i))
		if err != nil {
			return nil, err
		}
		sc.Value = v
		if _, err := prev.ExecContext(ctx, sc.TraceID, sc.Criterion, sc.Address); err != nil {
			return nil, err
		}
		sc.ID, sc.Current, sc.CreatedAt = storeutil.NewID(), true, now
		if err := ins.QueryRowContext(ctx, sc.ID, sc.TraceID, sc.Address, sc.Criterion, string(sc.Value), sc.Comment, sc.Source, sc.Author, sc.RunID, optText(sc.Extra), micros(now)).Scan(&sc.Version); err != nil {
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
	out := make([]store.Score, len(scores))
	for i, sc := range scores {
		v, err := storeutil.CheckScore(sc, fmt.Sprintf("score %d", i))
		if err != nil {
			return nil, err
		}
		sc.Value, sc.ID, sc.Current, sc.CreatedAt = v, storeutil.NewID(), true, now
		out[i] = sc
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
			args = append(args, sc.ID, sc.TraceID, sc.Address, sc.Criterion, string(sc.Value), sc.Comment, sc.Source, sc.Author, sc.RunID, optText(sc.Extra), micros(now))
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

// AddScores stores scores atomically, each superseding the current score of
// its target and criterion.
func (s *Store) AddScores(ctx context.Context, scores []store.Score) ([]store.Score, error) {
	var out []store.Score
	err := s.write(ctx, func(tx *sql.Tx) error {
		var err error
		out, err = addScores(ctx, tx, scores)
		return err
	})
	if err != nil {
		return nil, fail(ctx, err, "add scores")
	}
	return out, nil
}

// Score finds a score by id.
func (s *Store) Score(ctx context.Context, id string) (store.Score, error) {
	if !storeutil.ValidID(id) {
		return store.Score{}, notFound("score %q", id)
	}
	sc, err := scanScore(s.r.QueryRowContext(ctx, `SELECT `+scoreCols+` FROM scores s WHERE s.id = ?`, id))
	if err != nil {
		return store.Score{}, fail(ctx, err, "score %s", id)
	}
	return sc, nil
}

// ListScores lists scores by trace index, address, criterion and version.
func (s *Store) ListScores(ctx context.Context, f store.ScoreFilter) ([]store.Score, error) {
	q := `SELECT ` + scoreCols + ` FROM scores s `
	var args []any
	switch {
	case f.TraceID != "":
		if !storeutil.ValidID(f.TraceID) {
			return nil, notFound("trace %q", f.TraceID)
		}
		q += `WHERE s.trace_id = ?`
		args = append(args, f.TraceID)
	case f.DatasetID != "":
		if !storeutil.ValidID(f.DatasetID) {
			return nil, notFound("dataset %q", f.DatasetID)
		}
		q += `JOIN traces t ON t.id = s.trace_id WHERE t.dataset_id = ?`
		args = append(args, f.DatasetID)
	case f.RunID != "":
		q += `WHERE s.run_id = ?`
		args = append(args, f.RunID)
	default:
		return nil, fmt.Errorf("sqlite: list scores: give a trace, a dataset or a run: %w", store.ErrInvalid)
	}
	if f.Criterion != "" {
		q += ` AND s.criterion = ?`
		args = append(args, f.Criterion)
	}
	if !f.History {
		q += ` AND s.current`
	}
	q += ` ORDER BY (SELECT idx FROM traces WHERE id = s.trace_id), s.trace_id, s.criterion, s.address, s.version`
	rows, err := s.r.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, fail(ctx, err, "list scores")
	}
	defer rows.Close()
	out := []store.Score{}
	for rows.Next() {
		sc, err := scanScore(rows)
		if err != nil {
			return nil, fail(ctx, err, "list scores")
		}
		out = append(out, sc)
	}
	if err := rows.Err(); err != nil {
		return nil, fail(ctx, err, "list scores")
	}
	return out, nil
}

// DeleteScore removes a score; the version before a deleted current one
// becomes current.
func (s *Store) DeleteScore(ctx context.Context, id string) error {
	if !storeutil.ValidID(id) {
		return notFound("score %q", id)
	}
	err := s.write(ctx, func(tx *sql.Tx) error {
		var trace, crit, addr string
		var cur bool
		if err := tx.QueryRowContext(ctx, `DELETE FROM scores WHERE id = ? RETURNING trace_id, criterion, address, current`, id).Scan(&trace, &crit, &addr, &cur); err != nil {
			return err
		}
		if !cur {
			return nil
		}
		_, err := tx.ExecContext(ctx, `UPDATE scores SET current = 1 WHERE id = (SELECT id FROM scores
			WHERE trace_id = ? AND criterion = ? AND address = ? ORDER BY version DESC LIMIT 1)`, trace, crit, addr)
		return err
	})
	if err != nil {
		return fail(ctx, err, "delete score %s", id)
	}
	return nil
}

const criterionCols = `id, dataset_id, name, definition, created_at, updated_at`

func scanCriterion(row interface{ Scan(...any) error }) (store.Criterion, error) {
	var c store.Criterion
	var def string
	var created, updated int64
	err := row.Scan(&c.ID, &c.DatasetID, &c.Name, &def, &created, &updated)
	c.Definition = json.RawMessage(def)
	c.CreatedAt, c.UpdatedAt = storeutil.FromMicros(created), storeutil.FromMicros(updated)
	return c, err
}

// SaveCriterion creates a criterion or updates it by (dataset, name).
func (s *Store) SaveCriterion(ctx context.Context, c store.Criterion) (store.Criterion, error) {
	if err := storeutil.CheckName("criterion", c.Name); err != nil {
		return store.Criterion{}, fmt.Errorf("sqlite: save criterion: %w", err)
	}
	def, err := storeutil.CompactObject(c.Definition, "criterion definition")
	if err != nil {
		return store.Criterion{}, fmt.Errorf("sqlite: save criterion: %w", err)
	}
	if !storeutil.ValidID(c.DatasetID) {
		return store.Criterion{}, notFound("save criterion: dataset %q", c.DatasetID)
	}
	now := micros(storeutil.Now())
	out, err := scanCriterion(s.w.QueryRowContext(ctx, `INSERT INTO criteria (id, dataset_id, name, definition, created_at, updated_at)
		VALUES (?, ?, ?, ?, ?, ?)
		ON CONFLICT (dataset_id, name) DO UPDATE SET definition = excluded.definition, updated_at = excluded.updated_at
		RETURNING `+criterionCols, storeutil.NewID(), c.DatasetID, c.Name, string(def), now, now))
	if err != nil {
		return store.Criterion{}, fail(ctx, err, "save criterion %q of dataset %s", c.Name, c.DatasetID)
	}
	return out, nil
}

// ListCriteria lists a dataset's criteria by name.
func (s *Store) ListCriteria(ctx context.Context, datasetID string) ([]store.Criterion, error) {
	if _, err := s.Dataset(ctx, datasetID); err != nil {
		return nil, err
	}
	rows, err := s.r.QueryContext(ctx, `SELECT `+criterionCols+` FROM criteria WHERE dataset_id = ? ORDER BY name`, datasetID)
	if err != nil {
		return nil, fail(ctx, err, "list criteria of dataset %s", datasetID)
	}
	defer rows.Close()
	out := []store.Criterion{}
	for rows.Next() {
		c, err := scanCriterion(rows)
		if err != nil {
			return nil, fail(ctx, err, "list criteria")
		}
		out = append(out, c)
	}
	return out, fail0(ctx, rows.Err(), "list criteria")
}

// fail0 is fail for an error that may be nil.
func fail0(ctx context.Context, err error, what string) error {
	if err == nil {
		return nil
	}
	return fail(ctx, err, "%s", what)
}

// DeleteCriterion removes a criterion (its scores stay).
func (s *Store) DeleteCriterion(ctx context.Context, id string) error {
	if !storeutil.ValidID(id) {
		return notFound("criterion %q", id)
	}
	res, err := s.w.ExecContext(ctx, `DELETE FROM criteria WHERE id = ?`, id)
	if err != nil {
		return fail(ctx, err, "delete criterion %s", id)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return notFound("criterion %s", id)
	}
	return nil
}

const runCols = `id, dataset_id, name, criteria, state, total, error, created_at, updated_at`

func scanRun(row interface{ Scan(...any) error }) (store.EvalRun, error) {
	var r store.EvalRun
	var crit string
	var created, updated int64
	err := row.Scan(&r.ID, &r.DatasetID, &r.Name, &crit, &r.State, &r.Total, &r.Error, &created, &updated)
	r.Criteria = json.RawMessage(crit)
	r.CreatedAt, r.UpdatedAt = storeutil.FromMicros(created), storeutil.FromMicros(updated)
	return r, err
}

// CreateRun records a new run (state running unless given).
func (s *Store) CreateRun(ctx context.Context, r store.EvalRun) (store.EvalRun, error) {
	if !storeutil.ValidID(r.DatasetID) {
		return store.EvalRun{}, notFound("create run: dataset %q", r.DatasetID)
	}
	if r.State == "" {
		r.State = store.RunRunning
	}
	if err := storeutil.CheckRunState(r.State); err != nil {
		return store.EvalRun{}, fmt.Errorf("sqlite: create run: %w", err)
	}
	if err := storeutil.CheckTexts("run", "name", r.Name, "criteria", string(r.Criteria), "error", r.Error); err != nil {
		return store.EvalRun{}, fmt.Errorf("sqlite: create run: %w", err)
	}
	now := micros(storeutil.Now())
	out, err := scanRun(s.w.QueryRowContext(ctx, `INSERT INTO eval_runs (id, dataset_id, name, criteria, state, total, error, created_at, updated_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING `+runCols, storeutil.NewID(), r.DatasetID, r.Name, string(r.Criteria), r.State, r.Total, r.Error, now, now))
	if err != nil {
		return store.EvalRun{}, fail(ctx, err, "create run of dataset %s", r.DatasetID)
	}
	return out, nil
}

// Run finds a run by id.
func (s *Store) Run(ctx context.Context, id string) (store.EvalRun, error) {
	if !storeutil.ValidID(id) {
		return store.EvalRun{}, notFound("run %q", id)
	}
	r, err := scanRun(s.r.QueryRowContext(ctx, `SELECT `+runCols+` FROM eval_runs WHERE id = ?`, id))
	if err != nil {
		return store.EvalRun{}, fail(ctx, err, "run %s", id)
	}
	return r, nil
}

func (s *Store) listRuns(ctx context.Context, where string, arg any) ([]store.EvalRun, error) {
	rows, err := s.r.QueryContext(ctx, `SELECT `+runCols+` FROM eval_runs WHERE `+where+` ORDER BY created_at DESC, id`, arg)
	if err != nil {
		return nil, fail(ctx, err, "list runs")
	}
	defer rows.Close()
	out := []store.EvalRun{}
	for rows.Next() {
		r, err := scanRun(rows)
		if err != nil {
			return nil, fail(ctx, err, "list runs")
		}
		out = append(out, r)
	}
	return out, fail0(ctx, rows.Err(), "list runs")
}

// ListRuns lists a dataset's runs, newest first.
func (s *Store) ListRuns(ctx context.Context, datasetID string) ([]store.EvalRun, error) {
	if _, err := s.Dataset(ctx, datasetID); err != nil {
		return nil, err
	}
	return s.listRuns(ctx, `dataset_id = ?`, datasetID)
}

// RunsIn lists the runs in a state.
func (s *Store) RunsIn(ctx context.Context, state string) ([]store.EvalRun, error) {
	return s.listRuns(ctx, `state = ?`, state)
}

// SetRunState changes a run's state and error.
func (s *Store) SetRunState(ctx context.Context, id, state, errMsg string) error {
	if !storeutil.ValidID(id) {
		return notFound("run %q", id)
	}
	if err := storeutil.CheckRunState(state); err != nil {
		return fmt.Errorf("sqlite: set run state: %w", err)
	}
	if err := storeutil.CheckText("run error", errMsg); err != nil {
		return fmt.Errorf("sqlite: set run state: %w", err)
	}
	res, err := s.w.ExecContext(ctx, `UPDATE eval_runs SET state = ?, error = ?, updated_at = ? WHERE id = ?`, state, errMsg, micros(storeutil.Now()), id)
	if err != nil {
		return fail(ctx, err, "set state of run %s", id)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return notFound("run %s", id)
	}
	return nil
}

// FinishTraces records the statuses and scores of traces of a run in one
// transaction.
func (s *Store) FinishTraces(ctx context.Context, runID string, results []store.TraceResult) error {
	if !storeutil.ValidID(runID) {
		return notFound("run %q", runID)
	}
	var scores []store.Score
	for _, r := range results {
		for _, st := range r.Statuses {
			if err := storeutil.CheckStatus(st); err != nil {
				return fmt.Errorf("sqlite: finish traces of run %s: %w", runID, err)
			}
		}
		scores = append(scores, r.Scores...)
	}
	now := micros(storeutil.Now())
	err := s.write(ctx, func(tx *sql.Tx) error {
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
				args = append(args, runID, st.TraceID, st.Criterion, st.Status, st.Error, now)
			}
			b.WriteString(` ON CONFLICT (run_id, trace_id, criterion) DO UPDATE SET status = excluded.status, error = excluded.error, updated_at = excluded.updated_at`)
			if _, err := tx.ExecContext(ctx, b.String(), args...); err != nil {
				return err
			}
		}
		_, err := addScores(ctx, tx, scores)
		return err
	})
	if err != nil {
		return fail(ctx, err, "finish traces of run %s", runID)
	}
	return nil
}

func scanStatuses(ctx context.Context, rows *sql.Rows, err error) ([]store.TraceStatus, error) {
	if err != nil {
		return nil, fail(ctx, err, "list statuses")
	}
	defer rows.Close()
	out := []store.TraceStatus{}
	for rows.Next() {
		var st store.TraceStatus
		if err := rows.Scan(&st.TraceID, &st.Criterion, &st.Status, &st.Error); err != nil {
			return nil, fail(ctx, err, "list statuses")
		}
		out = append(out, st)
	}
	return out, fail0(ctx, rows.Err(), "list statuses")
}

// RunStatuses lists a run's statuses by trace index and criterion.
func (s *Store) RunStatuses(ctx context.Context, runID string) ([]store.TraceStatus, error) {
	if _, err := s.Run(ctx, runID); err != nil {
		return nil, err
	}
	rows, err := s.r.QueryContext(ctx, `SELECT e.trace_id, e.criterion, e.status, e.error FROM eval_status e
		JOIN traces t ON t.id = e.trace_id WHERE e.run_id = ? ORDER BY t.idx, e.criterion`, runID)
	return scanStatuses(ctx, rows, err)
}

// LatestStatuses lists each (trace, criterion)'s status in the newest run of
// the dataset that has one.
func (s *Store) LatestStatuses(ctx context.Context, datasetID string) ([]store.TraceStatus, error) {
	if _, err := s.Dataset(ctx, datasetID); err != nil {
		return nil, err
	}
	rows, err := s.r.QueryContext(ctx, `SELECT trace_id, criterion, status, error FROM (
		SELECT e.trace_id, e.criterion, e.status, e.error, t.idx,
			row_number() OVER (PARTITION BY e.trace_id, e.criterion ORDER BY r.created_at DESC, r.id DESC) AS n
		FROM eval_status e JOIN eval_runs r ON r.id = e.run_id JOIN traces t ON t.id = e.trace_id
		WHERE r.dataset_id = ?) WHERE n = 1 ORDER BY idx, criterion`, datasetID)
	return scanStatuses(ctx, rows, err)
}
