package sqlstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"sync"
	"time"

	"github.com/lookout-dev/lookout/internal/store"
	"github.com/lookout-dev/lookout/internal/store/internal/storeutil"
)

// A dashboard is a few aggregates over the rows of trace_stats (migration
// 00019: what a dashboard adds up of each trace, in columns, kept by
// triggers from the digests) of the dataset's traces in range; no trace
// content nor digest is read. Each statement starts from dashRange.

// dashJSON spells, in a dialect, how the JSON objects of trace_stats are
// read.
type dashJSON struct {
	// each(col) is the rows (key, value) of the object in column col;
	// elem(v, i) element i of the array v, a number (NULL when v is a
	// number); first(v) the number v, or the first of the array v.
	each  func(col string) string
	elem  func(v string, i int) string
	first func(v string) string
	// policy is an annotation a's extra.policy_id.
	policy string
}

func (d *Dialect) dashJSON() dashJSON {
	if d.MicrosTime { // SQLite
		return dashJSON{
			each: func(col string) string { return "json_each(" + col + ")" },
			elem: func(v string, i int) string { return "json_extract(" + v + ", '$[" + strconv.Itoa(i) + "]')" },
			first: func(v string) string {
				return "CASE WHEN json_type(" + v + ") = 'array' THEN json_extract(" + v + ", '$[0]') ELSE " + v + " END"
			},
			policy: "json_extract(a.extra, '$.policy_id')"}
	}
	return dashJSON{
		each: func(col string) string { return "jsonb_each(" + col + ")" },
		elem: func(v string, i int) string { return "(" + v + " ->> " + strconv.Itoa(i) + ")::float8" },
		first: func(v string) string {
			return "CASE WHEN jsonb_typeof(" + v + ") = 'array' THEN (" + v + " ->> 0)::float8 ELSE (" + v + ")::text::float8 END"
		},
		policy: "(a.extra::jsonb ->> 'policy_id')"}
}

// dashRange is the WITH clause of table r: the trace_stats rows of
// dataset $1's traces with a time (st, microseconds) in [$2, $3).
func (x dashJSON) dashRange() string {
	return `WITH r AS (SELECT trace_id AS id, at AS st, dur, input, output, cost, unpriced, by_model, models, tools, tool_errors, llm_lat
		FROM trace_stats WHERE dataset_id = $1 AND at >= $2 AND at < $3) `
}

// Dashboard computes dataset datasetID's dashboard (store.Dashboards).
func (s *Store) Dashboard(ctx context.Context, datasetID string, dq store.DashboardQuery) (store.Dashboard, error) {
	if err := s.exists(ctx, s.R, "dataset", datasetID); err != nil {
		return store.Dashboard{}, err
	}
	out, err := s.dashboard(ctx, s.R, datasetID, dq)
	if err != nil {
		return store.Dashboard{}, s.Fail(ctx, err, "dashboard of dataset %s", datasetID)
	}
	return out, nil
}

// dashboard runs the dashboard's statements, those after the range's on
// connections of their own at once (q is a pool): each scans the range
// apart, so that the figures take the time of the slowest rather than the
// sum. They may see writes made meanwhile differently.
func (s *Store) dashboard(ctx context.Context, q Querier, datasetID string, dq store.DashboardQuery) (store.Dashboard, error) {
	from, to := dq.From, dq.To
	x := s.D.dashJSON()
	with := x.dashRange()
	lo, hi := int64(math.MinInt64), int64(math.MaxInt64)
	if !from.IsZero() {
		lo = from.UnixMicro()
	}
	if !to.IsZero() {
		hi = to.UnixMicro()
	}
	out := store.Dashboard{From: from, To: to, Models: map[string]store.DashboardModel{}, LLMLatency: map[int]int{},
		Violations: map[string]int{}, Criteria: map[string]store.PassFail{}, Tools: map[string]store.ToolStats{}}
	if from.IsZero() || to.IsZero() {
		var n int64
		var first, last *int64
		if err := q.QueryRow(ctx, with+`SELECT count(*), min(st), max(st) FROM r`, datasetID, lo, hi).Scan(&n, &first, &last); err != nil {
			return out, fmt.Errorf("range: %w", err)
		}
		if n == 0 {
			return out, nil
		}
		if from.IsZero() {
			out.From = storeutil.FromMicros(*first)
		}
		if to.IsZero() {
			out.To = storeutil.FromMicros(*last + 1)
		}
	}
	start, width, nb := store.DashboardBuckets(out.From, out.To)
	out.Start, out.Bucket, out.Buckets = start, width, make([]store.DashboardBucket, nb)
	origin, w := start.UnixMicro(), width.Microseconds()
	bucket := func(b int64) (*store.DashboardBucket, error) {
		if b < 0 || b >= int64(nb) {
			return nil, fmt.Errorf("bucket %d of %d", b, nb)
		}
		return &out.Buckets[b], nil
	}
	n := func(col string) string { return "COALESCE(sum(" + col + "), 0)" }

	unpriced := map[string]store.ModelTokens{} // by model, from the buckets'
	var durations int
	parts := []func(ctx context.Context) error{
		// Traces, tokens and recorded cost by bucket.
		func(ctx context.Context) error {
			rows, err := q.Query(ctx, with+`SELECT (st - $4) / $5 AS k, count(*), `+n("input")+`, `+n("output")+`, `+n("cost")+`, `+n("unpriced")+`
				FROM r GROUP BY k`, datasetID, lo, hi, origin, w)
			return each(rows, err, func(row Row) error {
				var k, traces int64
				var in, outT, cost, unp float64
				if err := row.Scan(&k, &traces, &in, &outT, &cost, &unp); err != nil {
					return err
				}
				b, err := bucket(k)
				if err != nil {
					return err
				}
				b.Traces, b.Input, b.Output, b.Cost, b.Unpriced = int(traces), int64(in), int64(outT), cost, int(unp)
				return nil
			})
		},
		// Unpriced tokens by bucket and model, to price when read.
		func(ctx context.Context) error {
			sums, err := s.sumObjects(ctx, q, with, "(st - $4) / $5", "by_model", datasetID, lo, hi, origin, w)
			if err != nil {
				return err
			}
			for k, byModel := range sums {
				b, err := bucket(k)
				if err != nil {
					return err
				}
				for model, v := range byModel {
					if b.ByModel == nil {
						b.ByModel = map[string]store.ModelTokens{}
					}
					t := store.ModelTokens{Input: int64(v[0]), Output: int64(v[1]), Spans: int(v[2])}
					b.ByModel[model] = t
					u := unpriced[model]
					u.Input, u.Output, u.Spans = u.Input+t.Input, u.Output+t.Output, u.Spans+t.Spans
					unpriced[model] = u
				}
			}
			return nil
		},
	}
	if !dq.TotalsOnly {
		parts = append(parts,
			// Usage by model.
			func(ctx context.Context) error {
				sums, err := s.sumObjects(ctx, q, with, "0", "models", datasetID, lo, hi)
				for model, v := range sums[0] {
					out.Models[model] = store.DashboardModel{ModelUsage: store.ModelUsage{Input: int64(v[0]), Output: int64(v[1]), Cost: v[2], Spans: int(v[3])}}
				}
				return err
			},
			// Duration percentiles, by nearest rank: ceil(p n) by integer
			// division.
			func(ctx context.Context) error {
				rows, err := q.Query(ctx, with+`SELECT n, rn, CAST(dur AS double precision) FROM (SELECT dur, row_number() OVER (ORDER BY dur) AS rn, count(*) OVER () AS n FROM r WHERE dur >= 0) p
					WHERE rn IN ((n * 50 + 99) / 100, (n * 90 + 99) / 100, (n * 99 + 99) / 100)`, datasetID, lo, hi)
				return each(rows, err, func(row Row) error {
					var cnt, rn int64
					var dur float64
					if err := row.Scan(&cnt, &rn, &dur); err != nil {
						return err
					}
					durations = int(cnt)
					for i, pct := range [3]int64{50, 90, 99} { // store.DurationPercentiles
						if (cnt*pct+99)/100 == rn {
							out.DurationPcts[i] = time.Duration(dur) * time.Microsecond
						}
					}
					return nil
				})
			},
			// Model-call latencies.
			func(ctx context.Context) error {
				sums, err := s.sumObjects(ctx, q, with, "0", "llm_lat", datasetID, lo, hi)
				if err != nil {
					return err
				}
				for key, v := range sums[0] {
					k, err := strconv.Atoi(key)
					if err != nil {
						return fmt.Errorf("latency bucket %q", key)
					}
					out.LLMLatency[k] = int(v[0])
				}
				return nil
			},
			// Tools: calls, then errors.
			func(ctx context.Context) error {
				calls, err := s.sumObjects(ctx, q, with, "0", "tools", datasetID, lo, hi)
				if err != nil {
					return err
				}
				errs, err := s.sumObjects(ctx, q, with, "0", "tool_errors", datasetID, lo, hi)
				if err != nil {
					return err
				}
				for name, v := range calls[0] {
					out.Tools[name] = store.ToolStats{Calls: int(v[0])}
				}
				for name, v := range errs[0] {
					t := out.Tools[name]
					t.Errors = int(v[0])
					out.Tools[name] = t
				}
				return nil
			},
			// Violations by policy: traces with one.
			func(ctx context.Context) error {
				rows, err := q.Query(ctx, with+`SELECT COALESCE(`+x.policy+`, ''), count(DISTINCT a.trace_id) FROM r JOIN annotations a ON a.trace_id = r.id
					WHERE a.source = 'analyzer' GROUP BY 1`, datasetID, lo, hi)
				return each(rows, err, func(row Row) error {
					var policy string
					var c int64
					if err := row.Scan(&policy, &c); err != nil {
						return err
					}
					out.Violations[policy] = int(c)
					return nil
				})
			},
			// Criteria: as the evaluation summary counts a boolean
			// criterion, a trace passes when each of its current scores
			// of it passes.
			func(ctx context.Context) error {
				rows, err := q.Query(ctx, with+`SELECT criterion, sum(CASE WHEN f = 0 THEN 1 ELSE 0 END), sum(CASE WHEN f > 0 THEN 1 ELSE 0 END)
					FROM (SELECT s.criterion AS criterion, sum(CASE WHEN s.value = 'false' THEN 1 ELSE 0 END) AS f
						FROM r JOIN scores s ON s.trace_id = r.id WHERE s.current AND s.value IN ('true', 'false') GROUP BY s.criterion, s.trace_id) c
					GROUP BY criterion`, datasetID, lo, hi)
				return each(rows, err, func(row Row) error {
					var name string
					var pass, fail int64
					if err := row.Scan(&name, &pass, &fail); err != nil {
						return err
					}
					out.Criteria[name] = store.PassFail{Passed: int(pass), Failed: int(fail)}
					return nil
				})
			})
	}
	if err := parallel(ctx, parts); err != nil {
		return out, err
	}
	out.Durations = durations
	for m, u := range unpriced {
		x := out.Models[m]
		x.Unpriced = u
		out.Models[m] = x
	}
	addTotals(&out)
	return out, nil
}

// addTotals sets d's totals, the sum of its buckets.
func addTotals(d *store.Dashboard) {
	for i := range d.Buckets {
		b, t := &d.Buckets[i], &d.Totals
		t.Traces, t.Input, t.Output, t.Cost, t.Unpriced = t.Traces+b.Traces, t.Input+b.Input, t.Output+b.Output, t.Cost+b.Cost, t.Unpriced+b.Unpriced
		for m, mt := range b.ByModel {
			if t.ByModel == nil {
				t.ByModel = map[string]store.ModelTokens{}
			}
			x := t.ByModel[m]
			x.Input, x.Output, x.Spans = x.Input+mt.Input, x.Output+mt.Output, x.Spans+mt.Spans
			t.ByModel[m] = x
		}
	}
}

// sumObjects sums the JSON objects of column col of r (dashRange) by
// group (an SQL expression of r's columns; "0" for one group): for each
// group, each key's sums of its number, or of its array's numbers in
// order (up to 4). args are the statement's.
func (s *Store) sumObjects(ctx context.Context, q Querier, with, group, col string, args ...any) (map[int64]map[string][4]float64, error) {
	out := map[int64]map[string][4]float64{}
	if s.D.SumObject != "" {
		rows, err := q.Query(ctx, with+`SELECT `+group+` AS k, `+s.D.SumObject+`(r.`+col+`) FROM r GROUP BY k`, args...)
		err = each(rows, err, func(row Row) error {
			var k int64
			var sums NullString
			if err := row.Scan(&k, &sums); err != nil {
				return err
			}
			m := map[string][4]float64{}
			if sums.Valid {
				if err := json.Unmarshal([]byte(sums.S), &m); err != nil {
					return fmt.Errorf("%s: %w", col, err)
				}
			}
			out[k] = m
			return nil
		})
		return out, err
	}
	x := s.D.dashJSON()
	v := make([]string, 4)
	for i := range v {
		v[i] = "COALESCE(sum(" + x.elem("u.value", i) + "), 0)"
	}
	v[0] = "sum(" + x.first("u.value") + ")"
	rows, err := q.Query(ctx, with+`SELECT `+group+` AS k, u.key, `+v[0]+`, `+v[1]+`, `+v[2]+`, `+v[3]+` FROM r, `+x.each("r."+col)+` u GROUP BY k, u.key`, args...)
	err = each(rows, err, func(row Row) error {
		var k int64
		var key string
		var sums [4]float64
		if err := row.Scan(&k, &key, &sums[0], &sums[1], &sums[2], &sums[3]); err != nil {
			return err
		}
		if out[k] == nil {
			out[k] = map[string][4]float64{}
		}
		out[k][key] = sums
		return nil
	})
	return out, err
}

// parallel runs fns at once and returns the first error, the others
// cancelled.
func parallel(ctx context.Context, fns []func(ctx context.Context) error) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	errs := make([]error, len(fns))
	var wg sync.WaitGroup
	for i, fn := range fns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if errs[i] = fn(ctx); errs[i] != nil {
				cancel()
			}
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil && !errors.Is(err, context.Canceled) {
			return err
		}
	}
	return errors.Join(errs...)
}

// each calls fn with every row.
func each(rows Rows, err error, fn func(Row) error) error {
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		if err := fn(rows); err != nil {
			return err
		}
	}
	return rows.Err()
}
