package sqlstore

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/lookout-dev/lookout/internal/store"
	"github.com/lookout-dev/lookout/internal/store/internal/storeutil"
)

const benchmarkCols = `b.id, b.owner_id, u.name, b.name, b.version, b.description, b.public,
	COALESCE(CAST(b.source_dataset_id AS text), ''), b.task_key, b.criteria, b.item_count, b.created_at`
const benchmarkFrom = ` FROM benchmarks b JOIN users u ON u.id = b.owner_id `

func scanBenchmark(row Row, items *string) (store.Benchmark, error) {
	var b store.Benchmark
	var criteria string
	var created Time
	dest := []any{&b.ID, &b.OwnerID, &b.OwnerName, &b.Name, &b.Version, &b.Description, &b.Public,
		&b.SourceDatasetID, &b.Key, &criteria, &b.ItemCount, &created}
	if items != nil {
		dest = append(dest, items)
	}
	err := row.Scan(dest...)
	b.Criteria = json.RawMessage(criteria)
	b.CreatedAt = created.T
	if items != nil {
		b.Items = json.RawMessage(*items)
	}
	return b, err
}

func scanBenchmarkRow(row Row) (store.Benchmark, error) { return scanBenchmark(row, nil) }

// CreateBenchmark stores the next version of (owner, name). Two creations
// of one name at once may pick the same number (not in SQLite, which has
// one writer): the loser tries again.
func (s *Store) CreateBenchmark(ctx context.Context, b store.Benchmark) (store.Benchmark, error) {
	criteria, items, err := storeutil.CheckBenchmark(b)
	if err != nil {
		return store.Benchmark{}, s.errorf("create benchmark: %w", err)
	}
	var src any
	if b.SourceDatasetID != "" {
		src = b.SourceDatasetID
	}
	id := storeutil.NewID()
	for attempt := 0; ; attempt++ {
		_, err = s.W.Exec(ctx, `INSERT INTO benchmarks (id, owner_id, name, version, description, public,
			source_dataset_id, task_key, criteria, items, item_count, created_at)
			SELECT $1, $2, $3, COALESCE(MAX(version), 0) + 1, $4, $5, $6, $7, $8, $9, $10, $11
			FROM benchmarks WHERE owner_id = $2 AND name = $3`,
			id, b.OwnerID, b.Name, b.Description, b.Public, src, b.Key, string(criteria), string(items), b.ItemCount,
			s.D.Time(storeutil.Now()))
		if err == nil {
			break
		}
		err = s.Fail(ctx, err, "create benchmark %q", b.Name)
		if !errors.Is(err, store.ErrConflict) || attempt == 4 {
			break
		}
	}
	if err != nil {
		return store.Benchmark{}, err
	}
	return s.Benchmark(ctx, id)
}

// Benchmark returns one version with its items.
func (s *Store) Benchmark(ctx context.Context, id string) (store.Benchmark, error) {
	if !storeutil.ValidID(id) {
		return store.Benchmark{}, s.notFound("benchmark %q", id)
	}
	var items string
	b, err := scanBenchmark(s.R.QueryRow(ctx, `SELECT `+benchmarkCols+`, b.items`+benchmarkFrom+`WHERE b.id = $1`, id), &items)
	if err != nil {
		return store.Benchmark{}, s.Fail(ctx, err, "benchmark %s", id)
	}
	return b, nil
}

// ListBenchmarks lists the user's benchmark versions and every public one
// (without items), newest first.
func (s *Store) ListBenchmarks(ctx context.Context, userID string) ([]store.Benchmark, error) {
	if !storeutil.ValidID(userID) {
		userID = nobody // public ones only
	}
	rows, err := s.R.Query(ctx, `SELECT `+benchmarkCols+benchmarkFrom+
		`WHERE b.owner_id = $1 OR b.public ORDER BY b.created_at DESC, b.name`+s.D.C+`, b.version DESC`, userID)
	out, err := collect(rows, err, scanBenchmarkRow)
	if err != nil {
		return nil, s.Fail(ctx, err, "list benchmarks")
	}
	return out, nil
}

// DeleteBenchmark removes one version with its results.
func (s *Store) DeleteBenchmark(ctx context.Context, id string) error {
	if !storeutil.ValidID(id) {
		return s.notFound("benchmark %q", id)
	}
	n, err := s.W.Exec(ctx, `DELETE FROM benchmarks WHERE id = $1`, id)
	if err != nil {
		return s.Fail(ctx, err, "delete benchmark %s", id)
	}
	if n == 0 {
		return s.notFound("benchmark %s", id)
	}
	return nil
}

const resultCols = `r.id, r.benchmark_id, r.dataset_id, d.name, u.name, r.accuracy, r.summary, r.items, r.created_at`
const resultFrom = ` FROM benchmark_results r JOIN datasets d ON d.id = r.dataset_id JOIN users u ON u.id = d.owner_id `

func scanResult(row Row) (store.BenchmarkResult, error) {
	var r store.BenchmarkResult
	var summary, items string
	var created Time
	err := row.Scan(&r.ID, &r.BenchmarkID, &r.DatasetID, &r.DatasetName, &r.OwnerName, &r.Accuracy, &summary, &items, &created)
	r.Summary, r.Items = json.RawMessage(summary), json.RawMessage(items)
	r.CreatedAt = created.T
	return r, err
}

// AddBenchmarkResult stores a result, replacing the dataset's earlier one
// for the same benchmark version.
func (s *Store) AddBenchmarkResult(ctx context.Context, r store.BenchmarkResult) (store.BenchmarkResult, error) {
	summary, items, err := storeutil.CheckBenchmarkResult(r)
	if err != nil {
		return store.BenchmarkResult{}, s.errorf("add benchmark result: %w", err)
	}
	var out store.BenchmarkResult
	err = s.Write(ctx, func(tx Querier) error {
		var id string
		err := tx.QueryRow(ctx, `INSERT INTO benchmark_results (id, benchmark_id, dataset_id, accuracy, summary, items, created_at)
			VALUES ($1, $2, $3, $4, $5, $6, $7)
			ON CONFLICT (benchmark_id, dataset_id) DO UPDATE SET id = excluded.id, accuracy = excluded.accuracy,
				summary = excluded.summary, items = excluded.items, created_at = excluded.created_at
			RETURNING id`, storeutil.NewID(), r.BenchmarkID, r.DatasetID, r.Accuracy, string(summary), string(items),
			s.D.Time(storeutil.Now())).Scan(&id)
		if err != nil {
			return err
		}
		out, err = scanResult(tx.QueryRow(ctx, `SELECT `+resultCols+resultFrom+`WHERE r.id = $1`, id))
		return err
	})
	if err != nil {
		return store.BenchmarkResult{}, s.Fail(ctx, err, "add result of dataset %s to benchmark %s", r.DatasetID, r.BenchmarkID)
	}
	return out, nil
}

// BenchmarkResults lists a version's results, best first.
func (s *Store) BenchmarkResults(ctx context.Context, benchmarkID string) ([]store.BenchmarkResult, error) {
	if err := s.exists(ctx, s.R, "benchmark", benchmarkID); err != nil {
		return nil, err
	}
	rows, err := s.R.Query(ctx, `SELECT `+resultCols+resultFrom+
		`WHERE r.benchmark_id = $1 ORDER BY r.accuracy DESC, r.created_at DESC, r.id`, benchmarkID)
	out, err := collect(rows, err, scanResult)
	if err != nil {
		return nil, s.Fail(ctx, err, "results of benchmark %s", benchmarkID)
	}
	return out, nil
}
