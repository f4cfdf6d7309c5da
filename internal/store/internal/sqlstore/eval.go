package sqlstore

import (
	"context"
	"encoding/json"
	"time"

	"github.com/lookout-dev/lookout/internal/store"
	"github.com/lookout-dev/lookout/internal/store/internal/storeutil"
)

// Scores and statuses are written by the backends' Hooks: SQLite with
// multi-row statements, PostgreSQL with a pipelined batch.

const scoreCols = `s.id, s.trace_id, s.address, s.criterion, s.value, s.comment, s.source, s.author, s.run_id, s.extra, s.version, s.current, s.created_at`

func scanScore(row Row) (store.Score, error) {
	var sc store.Score
	var value string
	var extra *string
	var created Time
	err := row.Scan(&sc.ID, &sc.TraceID, &sc.Address, &sc.Criterion, &value, &sc.Comment, &sc.Source, &sc.Author, &sc.RunID, &extra, &sc.Version, &sc.Current, &created)
	sc.Value = json.RawMessage(value)
	if extra != nil {
		sc.Extra = json.RawMessage(*extra)
	}
	sc.CreatedAt = created.T
	return sc, err
}

// Score finds a score by id.
func (s *Store) Score(ctx context.Context, id string) (store.Score, error) {
	if !storeutil.ValidID(id) {
		return store.Score{}, s.notFound("score %q", id)
	}
	sc, err := scanScore(s.R.QueryRow(ctx, `SELECT `+scoreCols+` FROM scores s WHERE s.id = $1`, id))
	if err != nil {
		return store.Score{}, s.Fail(ctx, err, "score %s", id)
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
			return nil, s.notFound("trace %q", f.TraceID)
		}
		q += `WHERE s.trace_id = $1`
		args = append(args, f.TraceID)
	case f.DatasetID != "":
		if !storeutil.ValidID(f.DatasetID) {
			return nil, s.notFound("dataset %q", f.DatasetID)
		}
		q += `WHERE t.dataset_id = $1`
		args = append(args, f.DatasetID)
	case f.RunID != "":
		q += `WHERE s.run_id = $1`
		args = append(args, f.RunID)
	default:
		return nil, s.errorf("list scores: give a trace, a dataset or a run: %w", store.ErrInvalid)
	}
	if f.Criterion != "" {
		q += ` AND s.criterion = $2`
		args = append(args, f.Criterion)
	}
	if !f.History {
		q += ` AND s.current`
	}
	q += ` ORDER BY t.idx, s.trace_id, s.criterion` + s.D.C + `, s.address` + s.D.C + `, s.version`
	rows, err := s.R.Query(ctx, q, args...)
	out, err := collect(rows, err, scanScore)
	if err != nil {
		return nil, s.Fail(ctx, err, "list scores")
	}
	return out, nil
}

// DeleteScore removes a score; the version before a deleted current one
// becomes current.
func (s *Store) DeleteScore(ctx context.Context, id string) error {
	if !storeutil.ValidID(id) {
		return s.notFound("score %q", id)
	}
	err := s.Write(ctx, func(tx Querier) error {
		var trace, crit, addr string
		var cur bool
		if err := tx.QueryRow(ctx, `DELETE FROM scores WHERE id = $1 RETURNING trace_id, criterion, address, current`, id).Scan(&trace, &crit, &addr, &cur); err != nil {
			return err
		}
		if !cur {
			return nil
		}
		if _, err := tx.Exec(ctx, `UPDATE scores SET current = true WHERE id = (SELECT id FROM scores
			WHERE trace_id = $1 AND criterion = $2 AND address = $3 ORDER BY version DESC LIMIT 1)`, trace, crit, addr); err != nil {
			return err
		}
		return s.refreshScoreKeys(ctx, tx, []store.Score{{TraceID: trace, Criterion: crit}})
	})
	if err != nil {
		return s.Fail(ctx, err, "delete score %s", id)
	}
	return nil
}

const criterionCols = `id, dataset_id, name, definition, created_at, updated_at`

func scanCriterion(row Row) (store.Criterion, error) {
	var c store.Criterion
	var def string
	var created, updated Time
	err := row.Scan(&c.ID, &c.DatasetID, &c.Name, &def, &created, &updated)
	c.Definition = json.RawMessage(def)
	c.CreatedAt, c.UpdatedAt = created.T, updated.T
	return c, err
}

// SaveCriterion creates a criterion or updates it by (dataset, name).
func (s *Store) SaveCriterion(ctx context.Context, c store.Criterion) (store.Criterion, error) {
	if err := storeutil.CheckName("criterion", c.Name); err != nil {
		return store.Criterion{}, s.errorf("save criterion: %w", err)
	}
	def, err := storeutil.CompactObject(c.Definition, "criterion definition")
	if err != nil {
		return store.Criterion{}, s.errorf("save criterion: %w", err)
	}
	if !storeutil.ValidID(c.DatasetID) {
		return store.Criterion{}, s.notFound("save criterion: dataset %q", c.DatasetID)
	}
	out, err := scanCriterion(s.W.QueryRow(ctx, `INSERT INTO criteria (id, dataset_id, name, definition, created_at, updated_at)
		VALUES ($1, $2, $3, $4, $5, $5)
		ON CONFLICT (dataset_id, name) DO UPDATE SET definition = excluded.definition, updated_at = excluded.updated_at
		RETURNING `+criterionCols, storeutil.NewID(), c.DatasetID, c.Name, string(def), s.D.Time(storeutil.Now())))
	if err != nil {
		return store.Criterion{}, s.Fail(ctx, err, "save criterion %q of dataset %s", c.Name, c.DatasetID)
	}
	return out, nil
}

// ListCriteria lists a dataset's criteria by name.
func (s *Store) ListCriteria(ctx context.Context, datasetID string) ([]store.Criterion, error) {
	if _, err := s.Dataset(ctx, datasetID); err != nil {
		return nil, err
	}
	rows, err := s.R.Query(ctx, `SELECT `+criterionCols+` FROM criteria WHERE dataset_id = $1 ORDER BY name`+s.D.C, datasetID)
	out, err := collect(rows, err, scanCriterion)
	if err != nil {
		return nil, s.Fail(ctx, err, "list criteria of dataset %s", datasetID)
	}
	return out, nil
}

// DeleteCriterion removes a criterion (its scores stay).
func (s *Store) DeleteCriterion(ctx context.Context, id string) error {
	if !storeutil.ValidID(id) {
		return s.notFound("criterion %q", id)
	}
	n, err := s.W.Exec(ctx, `DELETE FROM criteria WHERE id = $1`, id)
	if err != nil {
		return s.Fail(ctx, err, "delete criterion %s", id)
	}
	if n == 0 {
		return s.notFound("criterion %s", id)
	}
	return nil
}

const runCols = `id, dataset_id, name, criteria, state, total, error, created_at, updated_at`

func scanRun(row Row) (store.EvalRun, error) {
	var r store.EvalRun
	var crit string
	var created, updated Time
	err := row.Scan(&r.ID, &r.DatasetID, &r.Name, &crit, &r.State, &r.Total, &r.Error, &created, &updated)
	r.Criteria = json.RawMessage(crit)
	r.CreatedAt, r.UpdatedAt = created.T, updated.T
	return r, err
}

// CreateRun records a new run (state running unless given).
func (s *Store) CreateRun(ctx context.Context, r store.EvalRun) (store.EvalRun, error) {
	if !storeutil.ValidID(r.DatasetID) {
		return store.EvalRun{}, s.notFound("create run: dataset %q", r.DatasetID)
	}
	if r.State == "" {
		r.State = store.RunRunning
	}
	if err := storeutil.CheckRunState(r.State); err != nil {
		return store.EvalRun{}, s.errorf("create run: %w", err)
	}
	if err := storeutil.CheckTexts("run", "name", r.Name, "criteria", string(r.Criteria), "error", r.Error); err != nil {
		return store.EvalRun{}, s.errorf("create run: %w", err)
	}
	out, err := scanRun(s.W.QueryRow(ctx, `INSERT INTO eval_runs (id, dataset_id, name, criteria, state, total, error, created_at, updated_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $8) RETURNING `+runCols,
		storeutil.NewID(), r.DatasetID, r.Name, string(r.Criteria), r.State, r.Total, r.Error, s.D.Time(storeutil.Now())))
	if err != nil {
		return store.EvalRun{}, s.Fail(ctx, err, "create run of dataset %s", r.DatasetID)
	}
	return out, nil
}

// Run finds a run by id.
func (s *Store) Run(ctx context.Context, id string) (store.EvalRun, error) {
	if !storeutil.ValidID(id) {
		return store.EvalRun{}, s.notFound("run %q", id)
	}
	r, err := scanRun(s.R.QueryRow(ctx, `SELECT `+runCols+` FROM eval_runs WHERE id = $1`, id))
	if err != nil {
		return store.EvalRun{}, s.Fail(ctx, err, "run %s", id)
	}
	return r, nil
}

func (s *Store) listRuns(ctx context.Context, where string, arg any) ([]store.EvalRun, error) {
	rows, err := s.R.Query(ctx, `SELECT `+runCols+` FROM eval_runs WHERE `+where+` ORDER BY created_at DESC, id`, arg)
	out, err := collect(rows, err, scanRun)
	if err != nil {
		return nil, s.Fail(ctx, err, "list runs")
	}
	return out, nil
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
		return s.notFound("run %q", id)
	}
	if err := storeutil.CheckRunState(state); err != nil {
		return s.errorf("set run state: %w", err)
	}
	if err := storeutil.CheckText("run error", errMsg); err != nil {
		return s.errorf("set run state: %w", err)
	}
	n, err := s.W.Exec(ctx, `UPDATE eval_runs SET state = $1, error = $2, updated_at = $3 WHERE id = $4`, state, errMsg, s.D.Time(storeutil.Now()), id)
	if err != nil {
		return s.Fail(ctx, err, "set state of run %s", id)
	}
	if n == 0 {
		return s.notFound("run %s", id)
	}
	return nil
}

// ClaimRun gives owner run id's lease (see store.Store). One UPDATE of
// the run's row: of two servers that claim it at once, PostgreSQL lets the
// second see the first's lease before it decides.
func (s *Store) ClaimRun(ctx context.Context, id, owner string, lease time.Duration) (bool, error) {
	if !storeutil.ValidID(id) {
		return false, s.notFound("run %q", id)
	}
	if owner == "" || lease <= 0 {
		return false, s.errorf("claim run %s: %w: an owner and a positive lease", id, store.ErrInvalid)
	}
	now := s.D.NowMillis
	n, err := s.W.Exec(ctx, `UPDATE eval_runs SET lease_owner = $2, lease_until = `+now+` + $3
		WHERE id = $1 AND state = 'running' AND (lease_owner = $2 OR lease_until < `+now+`)`, id, owner, lease.Milliseconds())
	if err != nil {
		return false, s.Fail(ctx, err, "claim run %s", id)
	}
	return n == 1, nil
}

// ReleaseRun ends owner's lease of run id (see store.Store).
func (s *Store) ReleaseRun(ctx context.Context, id, owner string) error {
	if !storeutil.ValidID(id) {
		return s.notFound("run %q", id)
	}
	if _, err := s.W.Exec(ctx, `UPDATE eval_runs SET lease_owner = '', lease_until = 0 WHERE id = $1 AND lease_owner = $2`, id, owner); err != nil {
		return s.Fail(ctx, err, "release run %s", id)
	}
	return nil
}

// AddScores stores scores atomically, each superseding the current score of
// its target and criterion.
func (s *Store) AddScores(ctx context.Context, scores []store.Score) ([]store.Score, error) {
	var out []store.Score
	err := s.Write(ctx, func(tx Querier) error {
		var err error
		if out, err = s.Hooks.AddScores(ctx, tx, scores); err != nil {
			return err
		}
		return s.refreshScoreKeys(ctx, tx, scores)
	})
	if err != nil {
		return nil, s.Fail(ctx, err, "add scores")
	}
	return out, nil
}

// FinishTraces records the statuses and scores of traces of a run in one
// transaction.
func (s *Store) FinishTraces(ctx context.Context, runID string, results []store.TraceResult) error {
	if !storeutil.ValidID(runID) {
		return s.notFound("run %q", runID)
	}
	var scores []store.Score
	for _, r := range results {
		for _, st := range r.Statuses {
			if err := storeutil.CheckStatus(st); err != nil {
				return s.errorf("finish traces of run %s: %w", runID, err)
			}
		}
		scores = append(scores, r.Scores...)
	}
	now := storeutil.Now()
	err := s.Write(ctx, func(tx Querier) error {
		if err := s.Hooks.PutStatuses(ctx, tx, runID, results, now); err != nil {
			return err
		}
		if _, err := s.Hooks.AddScores(ctx, tx, scores); err != nil {
			return err
		}
		return s.refreshScoreKeys(ctx, tx, scores)
	})
	if err != nil {
		return s.Fail(ctx, err, "finish traces of run %s", runID)
	}
	return nil
}

func scanStatus(row Row) (store.TraceStatus, error) {
	var st store.TraceStatus
	err := row.Scan(&st.TraceID, &st.Criterion, &st.Status, &st.Error)
	return st, err
}

// RunStatuses lists a run's statuses by trace index and criterion.
func (s *Store) RunStatuses(ctx context.Context, runID string) ([]store.TraceStatus, error) {
	if _, err := s.Run(ctx, runID); err != nil {
		return nil, err
	}
	rows, err := s.R.Query(ctx, `SELECT e.trace_id, e.criterion, e.status, e.error FROM eval_status e
		JOIN traces t ON t.id = e.trace_id WHERE e.run_id = $1 ORDER BY t.idx, e.criterion`+s.D.C, runID)
	out, err := collect(rows, err, scanStatus)
	if err != nil {
		return nil, s.Fail(ctx, err, "list statuses")
	}
	return out, nil
}

// LatestStatuses lists each (trace, criterion)'s status in the newest run of
// the dataset that has one.
func (s *Store) LatestStatuses(ctx context.Context, datasetID string) ([]store.TraceStatus, error) {
	if _, err := s.Dataset(ctx, datasetID); err != nil {
		return nil, err
	}
	rows, err := s.R.Query(ctx, `SELECT trace_id, criterion, status, error FROM (
		SELECT e.trace_id, e.criterion, e.status, e.error, t.idx,
			row_number() OVER (PARTITION BY e.trace_id, e.criterion ORDER BY r.created_at DESC, r.id DESC) AS n
		FROM eval_status e JOIN eval_runs r ON r.id = e.run_id JOIN traces t ON t.id = e.trace_id
		WHERE r.dataset_id = $1) AS latest WHERE n = 1 ORDER BY idx, criterion`+s.D.C, datasetID)
	out, err := collect(rows, err, scanStatus)
	if err != nil {
		return nil, s.Fail(ctx, err, "list statuses")
	}
	return out, nil
}

// refreshScoreKeys computes again the sort keys (score_keys, migration
// 00020) of the traces and criteria of scores, in tx after they changed:
// the mean of the trace's current scores on the criterion that are
// numbers or booleans (true 1, false 0); none when it has none.
func (s *Store) refreshScoreKeys(ctx context.Context, tx Querier, scores []store.Score) error {
	type target struct{ trace, criterion string }
	seen := make(map[target]bool, len(scores))
	for _, sc := range scores {
		k := target{sc.TraceID, sc.Criterion}
		if seen[k] {
			continue
		}
		seen[k] = true
		if _, err := tx.Exec(ctx, `DELETE FROM score_keys WHERE trace_id = $1 AND criterion = $2`, k.trace, k.criterion); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `INSERT INTO score_keys (trace_id, criterion, dataset_id, idx, value)
			SELECT t.id, $2, t.dataset_id, t.idx, v.n FROM traces t,
				(SELECT avg(`+s.D.ScoreNumber+`) AS n FROM scores s WHERE s.trace_id = $1 AND s.criterion = $2 AND s.current) v
			WHERE t.id = $1 AND t.dataset_id IS NOT NULL AND v.n IS NOT NULL`, k.trace, k.criterion); err != nil {
			return err
		}
	}
	return nil
}

// CurrentScores are the current scores of the traces, in no order.
func (s *Store) CurrentScores(ctx context.Context, traceIDs []string) ([]store.Score, error) {
	ids := make([]string, 0, len(traceIDs))
	for _, id := range traceIDs {
		if storeutil.ValidID(id) {
			ids = append(ids, id)
		}
	}
	if len(ids) == 0 {
		return nil, nil
	}
	list, err := s.D.List(ids)
	if err != nil {
		return nil, s.errorf("current scores: %w", err)
	}
	rows, err := s.R.Query(ctx, `SELECT `+scoreCols+` FROM scores s WHERE s.current AND s.trace_id IN (SELECT value FROM `+s.D.Elems+`)`, list)
	out, err := collect(rows, err, scanScore)
	if err != nil {
		return nil, s.Fail(ctx, err, "current scores")
	}
	return out, nil
}
