package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/lookout-dev/lookout/internal/store"
	"github.com/lookout-dev/lookout/internal/store/internal/storeutil"
)

const scoreCols = `s.id, s.trace_id, s.address, s.criterion, s.value, s.comment, s.source, s.author, s.run_id, s.extra, s.version, s.current, s.created_at`

func scanScore(row pgx.Row) (store.Score, error) {
	var sc store.Score
	var value string
	var extra *string
	err := row.Scan(&sc.ID, &sc.TraceID, &sc.Address, &sc.Criterion, &value, &sc.Comment, &sc.Source, &sc.Author, &sc.RunID, &extra, &sc.Version, &sc.Current, &sc.CreatedAt)
	sc.Value = json.RawMessage(value)
	if extra != nil {
		sc.Extra = json.RawMessage(*extra)
	}
	sc.CreatedAt = sc.CreatedAt.UTC()
	return sc, err
}

// addScores inserts scores in tx, each superseding its target's current one.
func addScores(ctx context.Context, tx pgx.Tx, scores []store.Score) ([]store.Score, error) {
	now := storeutil.Now()
	out := make([]store.Score, len(scores))
	for i, sc := range scores {
		v, err := storeutil.CheckScore(sc, fmt.Sprintf("score %d", i))
		if err != nil {
			return nil, err
		}
		sc.Value = v
		var last int
		err = tx.QueryRow(ctx, `UPDATE scores SET current = false WHERE trace_id = $1 AND criterion = $2 AND address = $3 AND current RETURNING version`,
			sc.TraceID, sc.Criterion, sc.Address).Scan(&last)
		if errors.Is(err, pgx.ErrNoRows) {
			err = tx.QueryRow(ctx, `SELECT coalesce(max(version), 0) FROM scores WHERE trace_id = $1 AND criterion = $2 AND address = $3`,
				sc.TraceID, sc.Criterion, sc.Address).Scan(&last)
		}
		if err != nil {
			return nil, err
		}
		sc.ID, sc.Version, sc.Current, sc.CreatedAt = storeutil.NewID(), last+1, true, now
		if _, err := tx.Exec(ctx, `INSERT INTO scores (id, trace_id, address, criterion, value, comment, source, author, run_id, extra, version, current, created_at)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, true, $12)`,
			sc.ID, sc.TraceID, sc.Address, sc.Criterion, string(sc.Value), sc.Comment, sc.Source, sc.Author, sc.RunID, optText(sc.Extra), sc.Version, now); err != nil {
			return nil, err
		}
		out[i] = sc
	}
	return out, nil
}

// AddScores stores scores atomically, each superseding the current score of
// its target and criterion.
func (s *Store) AddScores(ctx context.Context, scores []store.Score) ([]store.Score, error) {
	var out []store.Score
	err := s.write(ctx, func(tx pgx.Tx) error {
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
	sc, err := scanScore(s.pool.QueryRow(ctx, `SELECT `+scoreCols+` FROM scores s WHERE s.id = $1`, id))
	if err != nil {
		return store.Score{}, fail(ctx, err, "score %s", id)
	}
	return sc, nil
}

// ListScores lists scores by trace index, criterion, address and version.
func (s *Store) ListScores(ctx context.Context, f store.ScoreFilter) ([]store.Score, error) {
	q := `SELECT ` + scoreCols + ` FROM scores s JOIN traces t ON t.id = s.trace_id `
	var args []any
	switch {
	case f.TraceID != "":
		if !storeutil.ValidID(f.TraceID) {
			return nil, notFound("trace %q", f.TraceID)
		}
		q += `WHERE s.trace_id = $1`
		args = append(args, f.TraceID)
	case f.DatasetID != "":
		if !storeutil.ValidID(f.DatasetID) {
			return nil, notFound("dataset %q", f.DatasetID)
		}
		q += `WHERE t.dataset_id = $1`
		args = append(args, f.DatasetID)
	case f.RunID != "":
		q += `WHERE s.run_id = $1`
		args = append(args, f.RunID)
	default:
		return nil, fmt.Errorf("postgres: list scores: give a trace, a dataset or a run: %w", store.ErrInvalid)
	}
	if f.Criterion != "" {
		q += ` AND s.criterion = $2`
		args = append(args, f.Criterion)
	}
	if !f.History {
		q += ` AND s.current`
	}
	q += ` ORDER BY t.idx, s.trace_id, s.criterion COLLATE "C", s.address COLLATE "C", s.version`
	rows, err := s.pool.Query(ctx, q, args...)
	if err != nil {
		return nil, fail(ctx, err, "list scores")
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (store.Score, error) { return scanScore(r) })
	if err != nil {
		return nil, fail(ctx, err, "list scores")
	}
	return nonNil(out), nil
}

// DeleteScore removes a score; the version before a deleted current one
// becomes current.
func (s *Store) DeleteScore(ctx context.Context, id string) error {
	if !storeutil.ValidID(id) {
		return notFound("score %q", id)
	}
	err := s.write(ctx, func(tx pgx.Tx) error {
		var trace, crit, addr string
		var cur bool
		if err := tx.QueryRow(ctx, `DELETE FROM scores WHERE id = $1 RETURNING trace_id, criterion, address, current`, id).Scan(&trace, &crit, &addr, &cur); err != nil {
			return err
		}
		if !cur {
			return nil
		}
		_, err := tx.Exec(ctx, `UPDATE scores SET current = true WHERE id = (SELECT id FROM scores
			WHERE trace_id = $1 AND criterion = $2 AND address = $3 ORDER BY version DESC LIMIT 1)`, trace, crit, addr)
		return err
	})
	if err != nil {
		return fail(ctx, err, "delete score %s", id)
	}
	return nil
}

const criterionCols = `id, dataset_id, name, definition, created_at, updated_at`

func scanCriterion(row pgx.Row) (store.Criterion, error) {
	var c store.Criterion
	var def string
	err := row.Scan(&c.ID, &c.DatasetID, &c.Name, &def, &c.CreatedAt, &c.UpdatedAt)
	c.Definition = json.RawMessage(def)
	c.CreatedAt, c.UpdatedAt = c.CreatedAt.UTC(), c.UpdatedAt.UTC()
	return c, err
}

// SaveCriterion creates a criterion or updates it by (dataset, name).
func (s *Store) SaveCriterion(ctx context.Context, c store.Criterion) (store.Criterion, error) {
	if err := storeutil.CheckName("criterion", c.Name); err != nil {
		return store.Criterion{}, fmt.Errorf("postgres: save criterion: %w", err)
	}
	def, err := storeutil.CompactObject(c.Definition, "criterion definition")
	if err != nil {
		return store.Criterion{}, fmt.Errorf("postgres: save criterion: %w", err)
	}
	if !storeutil.ValidID(c.DatasetID) {
		return store.Criterion{}, notFound("save criterion: dataset %q", c.DatasetID)
	}
	now := storeutil.Now()
	out, err := scanCriterion(s.pool.QueryRow(ctx, `INSERT INTO criteria (id, dataset_id, name, definition, created_at, updated_at)
		VALUES ($1, $2, $3, $4, $5, $5)
		ON CONFLICT (dataset_id, name) DO UPDATE SET definition = excluded.definition, updated_at = excluded.updated_at
		RETURNING `+criterionCols, storeutil.NewID(), c.DatasetID, c.Name, string(def), now))
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
	rows, err := s.pool.Query(ctx, `SELECT `+criterionCols+` FROM criteria WHERE dataset_id = $1 ORDER BY name COLLATE "C"`, datasetID)
	if err != nil {
		return nil, fail(ctx, err, "list criteria of dataset %s", datasetID)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (store.Criterion, error) { return scanCriterion(r) })
	if err != nil {
		return nil, fail(ctx, err, "list criteria of dataset %s", datasetID)
	}
	return nonNil(out), nil
}

// DeleteCriterion removes a criterion (its scores stay).
func (s *Store) DeleteCriterion(ctx context.Context, id string) error {
	if !storeutil.ValidID(id) {
		return notFound("criterion %q", id)
	}
	tag, err := s.pool.Exec(ctx, `DELETE FROM criteria WHERE id = $1`, id)
	if err != nil {
		return fail(ctx, err, "delete criterion %s", id)
	}
	if tag.RowsAffected() == 0 {
		return notFound("criterion %s", id)
	}
	return nil
}

const runCols = `id, dataset_id, name, criteria, state, total, error, created_at, updated_at`

func scanRun(row pgx.Row) (store.EvalRun, error) {
	var r store.EvalRun
	var crit string
	err := row.Scan(&r.ID, &r.DatasetID, &r.Name, &crit, &r.State, &r.Total, &r.Error, &r.CreatedAt, &r.UpdatedAt)
	r.Criteria = json.RawMessage(crit)
	r.CreatedAt, r.UpdatedAt = r.CreatedAt.UTC(), r.UpdatedAt.UTC()
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
		return store.EvalRun{}, fmt.Errorf("postgres: create run: %w", err)
	}
	if err := storeutil.CheckTexts("run", "name", r.Name, "criteria", string(r.Criteria), "error", r.Error); err != nil {
		return store.EvalRun{}, fmt.Errorf("postgres: create run: %w", err)
	}
	now := storeutil.Now()
	out, err := scanRun(s.pool.QueryRow(ctx, `INSERT INTO eval_runs (id, dataset_id, name, criteria, state, total, error, created_at, updated_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $8) RETURNING `+runCols, storeutil.NewID(), r.DatasetID, r.Name, string(r.Criteria), r.State, r.Total, r.Error, now))
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
	r, err := scanRun(s.pool.QueryRow(ctx, `SELECT `+runCols+` FROM eval_runs WHERE id = $1`, id))
	if err != nil {
		return store.EvalRun{}, fail(ctx, err, "run %s", id)
	}
	return r, nil
}

func (s *Store) listRuns(ctx context.Context, where string, arg any) ([]store.EvalRun, error) {
	rows, err := s.pool.Query(ctx, `SELECT `+runCols+` FROM eval_runs WHERE `+where+` ORDER BY created_at DESC, id`, arg)
	if err != nil {
		return nil, fail(ctx, err, "list runs")
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (store.EvalRun, error) { return scanRun(r) })
	if err != nil {
		return nil, fail(ctx, err, "list runs")
	}
	return nonNil(out), nil
}

// ListRuns lists a dataset's runs, newest first.
func (s *Store) ListRuns(ctx context.Context, datasetID string) ([]store.EvalRun, error) {
	if _, err := s.Dataset(ctx, datasetID); err != nil {
		return nil, err
	}
	return s.listRuns(ctx, `dataset_id = $1`, datasetID)
}

// RunsIn lists the runs in a state.
func (s *Store) RunsIn(ctx context.Context, state string) ([]store.EvalRun, error) {
	return s.listRuns(ctx, `state = $1`, state)
}

// SetRunState changes a run's state and error.
func (s *Store) SetRunState(ctx context.Context, id, state, errMsg string) error {
	if !storeutil.ValidID(id) {
		return notFound("run %q", id)
	}
	if err := storeutil.CheckRunState(state); err != nil {
		return fmt.Errorf("postgres: set run state: %w", err)
	}
	if err := storeutil.CheckText("run error", errMsg); err != nil {
		return fmt.Errorf("postgres: set run state: %w", err)
	}
	tag, err := s.pool.Exec(ctx, `UPDATE eval_runs SET state = $1, error = $2, updated_at = $3 WHERE id = $4`, state, errMsg, storeutil.Now(), id)
	if err != nil {
		return fail(ctx, err, "set state of run %s", id)
	}
	if tag.RowsAffected() == 0 {
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
				return fmt.Errorf("postgres: finish traces of run %s: %w", runID, err)
			}
		}
		scores = append(scores, r.Scores...)
	}
	now := storeutil.Now()
	err := s.write(ctx, func(tx pgx.Tx) error {
		b := &pgx.Batch{}
		for _, r := range results {
			for _, st := range r.Statuses {
				b.Queue(`INSERT INTO eval_status (run_id, trace_id, criterion, status, error, updated_at) VALUES ($1, $2, $3, $4, $5, $6)
					ON CONFLICT (run_id, trace_id, criterion) DO UPDATE SET status = excluded.status, error = excluded.error, updated_at = excluded.updated_at`,
					runID, st.TraceID, st.Criterion, st.Status, st.Error, now)
			}
		}
		if b.Len() > 0 {
			if err := tx.SendBatch(ctx, b).Close(); err != nil {
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

func collectStatuses(ctx context.Context, rows pgx.Rows, err error) ([]store.TraceStatus, error) {
	if err != nil {
		return nil, fail(ctx, err, "list statuses")
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (store.TraceStatus, error) {
		var st store.TraceStatus
		err := r.Scan(&st.TraceID, &st.Criterion, &st.Status, &st.Error)
		return st, err
	})
	if err != nil {
		return nil, fail(ctx, err, "list statuses")
	}
	return nonNil(out), nil
}

// RunStatuses lists a run's statuses by trace index and criterion.
func (s *Store) RunStatuses(ctx context.Context, runID string) ([]store.TraceStatus, error) {
	if _, err := s.Run(ctx, runID); err != nil {
		return nil, err
	}
	rows, err := s.pool.Query(ctx, `SELECT e.trace_id, e.criterion, e.status, e.error FROM eval_status e
		JOIN traces t ON t.id = e.trace_id WHERE e.run_id = $1 ORDER BY t.idx, e.criterion COLLATE "C"`, runID)
	return collectStatuses(ctx, rows, err)
}

// LatestStatuses lists each (trace, criterion)'s status in the newest run of
// the dataset that has one.
func (s *Store) LatestStatuses(ctx context.Context, datasetID string) ([]store.TraceStatus, error) {
	if _, err := s.Dataset(ctx, datasetID); err != nil {
		return nil, err
	}
	rows, err := s.pool.Query(ctx, `SELECT DISTINCT ON (t.idx, e.criterion COLLATE "C") e.trace_id, e.criterion, e.status, e.error
		FROM eval_status e JOIN eval_runs r ON r.id = e.run_id JOIN traces t ON t.id = e.trace_id
		WHERE r.dataset_id = $1 ORDER BY t.idx, e.criterion COLLATE "C", r.created_at DESC, r.id DESC`, datasetID)
	return collectStatuses(ctx, rows, err)
}
