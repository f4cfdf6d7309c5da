package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"

	"github.com/lookout-dev/lookout/internal/store"
	"github.com/lookout-dev/lookout/internal/store/internal/storeutil"
)

const benchmarkCols = `b.id, b.owner_id, u.name, b.name, b.version, b.description, b.public,
	COALESCE(b.source_dataset_id, ''), b.task_key, b.criteria, b.item_count, b.created_at`
const benchmarkFrom = ` FROM benchmarks b JOIN users u ON u.id = b.owner_id `

func scanBenchmark(row interface{ Scan(...any) error }, items *string) (store.Benchmark, error) {
	var b store.Benchmark
	var criteria string
	var created int64
	dest := []any{&b.ID, &b.OwnerID, &b.OwnerName, &b.Name, &b.Version, &b.Description, &b.Public,
		&b.SourceDatasetID, &b.Key, &criteria, &b.ItemCount, &created}
	if items != nil {
		dest = append(dest, items)
	}
	err := row.Scan(dest...)
	b.Criteria = json.RawMessage(criteria)
	b.CreatedAt = storeutil.FromMicros(created)
	if items != nil {
		b.Items = json.RawMessage(*items)
	}
	return b, err
}

// CreateBenchmark stores the next version of (owner, name); the writer's
// transaction makes the version number race-free.
func (s *Store) CreateBenchmark(ctx context.Context, b store.Benchmark) (store.Benchmark, error) {
	criteria, items, err := storeutil.CheckBenchmark(b)
	if err != nil {
		return store.Benchmark{}, fmt.Errorf("sqlite: create benchmark: %w", err)
	}
	id := storeutil.NewID()
	var src any
	if b.SourceDatasetID != "" {
		src = b.SourceDatasetID
	}
	err = s.write(ctx, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO benchmarks (id, owner_id, name, version, description, public,
			source_dataset_id, task_key, criteria, items, item_count, created_at)
			SELECT ?, ?, ?, COALESCE(MAX(version), 0) + 1, ?, ?, ?, ?, ?, ?, ?, ?
			FROM benchmarks WHERE owner_id = ? AND name = ?`,
			id, b.OwnerID, b.Name, b.Description, b.Public, src, b.Key, string(criteria), string(items), b.ItemCount,
			micros(storeutil.Now()), b.OwnerID, b.Name)
		return err
	})
	if err != nil {
		return store.Benchmark{}, fail(ctx, err, "create benchmark %q", b.Name)
	}
	return s.Benchmark(ctx, id)
}

// Benchmark returns one version with its items.
func (s *Store) Benchmark(ctx context.Context, id string) (store.Benchmark, error) {
	if !storeutil.ValidID(id) {
		return store.Benchmark{}, notFound("benchmark %q", id)
	}
	var items string
	b, err := scanBenchmark(s.r.QueryRowContext(ctx, `SELECT `+benchmarkCols+`, b.items`+benchmarkFrom+`WHERE b.id = ?`, id), &items)
	if err != nil {
		return store.Benchmark{}, fail(ctx, err, "benchmark %s", id)
	}
	return b, nil
}

// ListBenchmarks lists the user's benchmarks and the public ones, newest
// first.
func (s *Store) ListBenchmarks(ctx context.Context, userID string) ([]store.Benchmark, error) {
	rows, err := s.r.QueryContext(ctx, `SELECT `+benchmarkCols+benchmarkFrom+
		`WHERE b.owner_id = ? OR b.public ORDER BY b.created_at DESC, b.name, b.version DESC`, userID)
	if err != nil {
		return nil, fail(ctx, err, "list benchmarks")
	}
	defer rows.Close()
	out := []store.Benchmark{}
	for rows.Next() {
		b, err := scanBenchmark(rows, nil)
		if err != nil {
			return nil, fail(ctx, err, "list benchmarks")
		}
		out = append(out, b)
	}
	return out, fail0(ctx, rows.Err(), "list benchmarks")
}

// DeleteBenchmark removes one version and (by cascade) its results.
func (s *Store) DeleteBenchmark(ctx context.Context, id string) error {
	if !storeutil.ValidID(id) {
		return notFound("benchmark %q", id)
	}
	res, err := s.w.ExecContext(ctx, `DELETE FROM benchmarks WHERE id = ?`, id)
	if err != nil {
		return fail(ctx, err, "delete benchmark %s", id)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return notFound("benchmark %s", id)
	}
	return nil
}

const resultCols = `r.id, r.benchmark_id, r.dataset_id, d.name, u.name, r.accuracy, r.summary, r.items, r.created_at`
const resultFrom = ` FROM benchmark_results r JOIN datasets d ON d.id = r.dataset_id JOIN users u ON u.id = d.owner_id `

func scanResult(row interface{ Scan(...any) error }) (store.BenchmarkResult, error) {
	var r store.BenchmarkResult
	var summary, items string
	var created int64
	err := row.Scan(&r.ID, &r.BenchmarkID, &r.DatasetID, &r.DatasetName, &r.OwnerName, &r.Accuracy, &summary, &items, &created)
	r.Summary, r.Items = json.RawMessage(summary), json.RawMessage(items)
	r.CreatedAt = storeutil.FromMicros(created)
	return r, err
}

// AddBenchmarkResult stores a result, replacing the dataset's earlier one
// for the same benchmark version.
func (s *Store) AddBenchmarkResult(ctx context.Context, r store.BenchmarkResult) (store.BenchmarkResult, error) {
	summary, items, err := storeutil.CheckBenchmarkResult(r)
	if err != nil {
		return store.BenchmarkResult{}, fmt.Errorf("sqlite: add benchmark result: %w", err)
	}
	var id string
	err = s.w.QueryRowContext(ctx, `INSERT INTO benchmark_results (id, benchmark_id, dataset_id, accuracy, summary, items, created_at)
		VALUES (?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (benchmark_id, dataset_id) DO UPDATE SET id = excluded.id, accuracy = excluded.accuracy,
			summary = excluded.summary, items = excluded.items, created_at = excluded.created_at
		RETURNING id`, storeutil.NewID(), r.BenchmarkID, r.DatasetID, r.Accuracy, string(summary), string(items),
		micros(storeutil.Now())).Scan(&id)
	if err != nil {
		return store.BenchmarkResult{}, fail(ctx, err, "add result of dataset %s to benchmark %s", r.DatasetID, r.BenchmarkID)
	}
	out, err := scanResult(s.w.QueryRowContext(ctx, `SELECT `+resultCols+resultFrom+`WHERE r.id = ?`, id))
	if err != nil {
		return store.BenchmarkResult{}, fail(ctx, err, "benchmark result %s", id)
	}
	return out, nil
}

// BenchmarkResults lists a version's results, best first.
func (s *Store) BenchmarkResults(ctx context.Context, benchmarkID string) ([]store.BenchmarkResult, error) {
	if err := s.benchmarkExists(ctx, benchmarkID); err != nil {
		return nil, err
	}
	rows, err := s.r.QueryContext(ctx, `SELECT `+resultCols+resultFrom+
		`WHERE r.benchmark_id = ? ORDER BY r.accuracy DESC, r.created_at DESC, r.id`, benchmarkID)
	if err != nil {
		return nil, fail(ctx, err, "results of benchmark %s", benchmarkID)
	}
	defer rows.Close()
	out := []store.BenchmarkResult{}
	for rows.Next() {
		r, err := scanResult(rows)
		if err != nil {
			return nil, fail(ctx, err, "results of benchmark %s", benchmarkID)
		}
		out = append(out, r)
	}
	return out, fail0(ctx, rows.Err(), "results of benchmark "+benchmarkID)
}

func (s *Store) benchmarkExists(ctx context.Context, id string) error {
	if !storeutil.ValidID(id) {
		return notFound("benchmark %q", id)
	}
	var one int
	if err := s.r.QueryRowContext(ctx, `SELECT 1 FROM benchmarks WHERE id = ?`, id).Scan(&one); err != nil {
		return fail(ctx, err, "benchmark %s", id)
	}
	return nil
}
