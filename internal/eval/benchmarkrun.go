package eval

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"

	"github.com/lookout-dev/lookout/internal/policy"
	"github.com/lookout-dev/lookout/internal/search"
	"github.com/lookout-dev/lookout/internal/store"
)

// BenchmarkStore is what making and scoring benchmarks reads and writes.
type BenchmarkStore interface {
	TraceLister
	Trace(ctx context.Context, id string) (store.StoredTrace, error)
	SearchTraces(ctx context.Context, datasetID string, q *search.Query, opts store.SearchOptions) (store.SearchResult, error)
	CreateBenchmark(ctx context.Context, b store.Benchmark) (store.Benchmark, error)
	AddBenchmarkResult(ctx context.Context, r store.BenchmarkResult) (store.BenchmarkResult, error)
	SetDatasetMetadata(ctx context.Context, id string, meta json.RawMessage, replace bool) (json.RawMessage, error)
}

// Benchmarks makes benchmarks from datasets and scores datasets against
// them, over a store.
type Benchmarks struct {
	Store         BenchmarkStore
	LLM           *LLM                  // the judge of llm criteria (nil: refused)
	DetectorModel *policy.DetectorModel // nil: model-backed detectors fail as unavailable
	// Settle, when set, brings a dataset's traces up to date before they
	// are listed (the server builds the traces whose spans are pending).
	Settle func(ctx context.Context, datasetID string) error
}

// CheckCriteria checks a new benchmark's criteria (filling in their
// defaults) and that they compile; the error is ErrInvalid.
func (bs *Benchmarks) CheckCriteria(cs []Criterion) error {
	if err := CheckBenchmarkCriteria(cs); err != nil {
		return criteriaError(err)
	}
	if _, err := CompileAll(cs, bs.LLM); err != nil {
		return criteriaError(err)
	}
	return nil
}

// NewBenchmark is a benchmark to make from the traces of a dataset.
type NewBenchmark struct {
	OwnerID, Name, Description string
	Public                     bool
	Dataset                    store.Dataset
	Criteria                   []Criterion // checked (CheckCriteria)
	// The traces the tasks come from: TraceIDs when ByID, else those
	// Query matches, else all of them.
	ByID     bool
	TraceIDs []string
	Query    *search.Query
	// Key names each task in the traces' metadata; RefPath names its
	// reference there ("" for none); Refs gives references by task.
	Key, RefPath string
	Refs         map[string]json.RawMessage
}

// Create selects the tasks of nb (one per distinct key, in index order)
// and stores them as the next version of the benchmark. A selection that
// makes no tasks, or a trace without a key, is ErrInvalid; so is a listed
// trace outside the dataset, and one that does not exist, alike, so that
// ids of other users' traces cannot be probed.
func (bs *Benchmarks) Create(ctx context.Context, nb NewBenchmark) (store.Benchmark, error) {
	d := nb.Dataset
	ids := nb.TraceIDs
	var err error
	switch {
	case nb.ByID:
	case nb.Query != nil:
		ids, err = bs.searchIDs(ctx, d.ID, nb.Query)
	default:
		ids, err = bs.traceIDs(ctx, d.ID)
	}
	if err != nil {
		return store.Benchmark{}, err
	}
	sel, err := NewItemSelector(nb.Key, nb.RefPath, nb.Refs)
	if err != nil {
		return store.Benchmark{}, invalidf("%s", err.Error())
	}
	notInDataset := func(id string) error {
		return invalidf("trace %s is not in dataset %s", id, d.Name)
	}
	err = loadTraces(ctx, bs.Store, ids, func(st store.StoredTrace) error {
		if st.DatasetID != d.ID {
			return notInDataset(st.ID)
		}
		if err := sel.Add(SourceTrace{ID: st.ID, Index: st.Index, Trace: st.Trace}); err != nil {
			return invalidf("%s", err.Error())
		}
		return nil
	}, notInDataset)
	if err != nil {
		return store.Benchmark{}, err
	}
	items, err := sel.Items()
	if err != nil {
		return store.Benchmark{}, invalidf("%s", err.Error())
	}
	frozenCriteria, _ := json.Marshal(nb.Criteria)
	frozenItems, _ := json.Marshal(items)
	return bs.Store.CreateBenchmark(ctx, store.Benchmark{OwnerID: nb.OwnerID, Name: nb.Name, Description: nb.Description,
		Public: nb.Public, SourceDatasetID: d.ID, Key: nb.Key, Criteria: frozenCriteria, Items: frozenItems, ItemCount: len(items)})
}

// Score grades every trace of d against b, stores the result (replacing
// the dataset's earlier one) and writes the accuracy into the dataset's
// metadata; progress, when not nil, hears of every trace read.
func (bs *Benchmarks) Score(ctx context.Context, b store.Benchmark, d store.Dataset, progress func(done, total int)) (store.BenchmarkResult, error) {
	var cs []Criterion
	var items []Item
	if err := json.Unmarshal(b.Criteria, &cs); err != nil {
		return store.BenchmarkResult{}, fmt.Errorf("benchmark %s: criteria: %w", b.ID, err)
	}
	if err := json.Unmarshal(b.Items, &items); err != nil {
		return store.BenchmarkResult{}, fmt.Errorf("benchmark %s: items: %w", b.ID, err)
	}
	sc, err := NewScorer(cs, items, b.Key, bs.LLM)
	if err != nil {
		return store.BenchmarkResult{}, criteriaError(err)
	}
	sc.SetDetectorModel(bs.DetectorModel)
	ids, err := bs.traceIDs(ctx, d.ID)
	if err != nil {
		return store.BenchmarkResult{}, err
	}
	done := 0
	count := func() {
		done++
		if progress != nil {
			progress(done, len(ids))
		}
	}
	err = loadTraces(ctx, bs.Store, ids, func(st store.StoredTrace) error {
		defer count()
		return sc.Add(ctx, st.ID, st.Trace)
	}, func(string) error {
		count() // deleted while the run read the others
		return nil
	})
	if err != nil {
		return store.BenchmarkResult{}, err
	}
	return bs.storeResult(ctx, b, d, sc)
}

// storeResult stores a scorer's result and the dataset's new accuracy.
func (bs *Benchmarks) storeResult(ctx context.Context, b store.Benchmark, d store.Dataset, sc *Scorer) (store.BenchmarkResult, error) {
	sum, per := sc.Result()
	summary, _ := json.Marshal(sum)
	perJSON, _ := json.Marshal(per)
	res, err := bs.Store.AddBenchmarkResult(ctx, store.BenchmarkResult{BenchmarkID: b.ID, DatasetID: d.ID,
		Accuracy: sum.Accuracy, Summary: summary, Items: perJSON})
	if err != nil {
		return store.BenchmarkResult{}, err
	}
	meta, _ := json.Marshal(map[string]any{"benchmark": b.Name, "benchmark_version": b.Version, "accuracy": sum.Accuracy})
	if _, err := bs.Store.SetDatasetMetadata(ctx, d.ID, meta, false); err != nil {
		return store.BenchmarkResult{}, fmt.Errorf("benchmark result stored, but the dataset's metadata was not updated: %w", err)
	}
	return res, nil
}

func (bs *Benchmarks) settle(ctx context.Context, datasetID string) error {
	if bs.Settle == nil {
		return nil
	}
	return bs.Settle(ctx, datasetID)
}

// traceIDs lists a dataset's trace ids in index order.
func (bs *Benchmarks) traceIDs(ctx context.Context, datasetID string) ([]string, error) {
	if err := bs.settle(ctx, datasetID); err != nil {
		return nil, err
	}
	var ids []string
	err := eachTrace(ctx, bs.Store, datasetID, func(t store.TraceSummary) { ids = append(ids, t.ID) })
	if err != nil {
		return nil, err
	}
	return ids, nil
}

// searchPage is how many matches one search reads.
const searchPage = 1000

// searchIDs lists the ids of the traces a query matches, in index order.
func (bs *Benchmarks) searchIDs(ctx context.Context, datasetID string, q *search.Query) ([]string, error) {
	if err := bs.settle(ctx, datasetID); err != nil {
		return nil, err
	}
	var ids []string
	for cursor := ""; ; {
		res, err := bs.Store.SearchTraces(ctx, datasetID, q, store.SearchOptions{Page: store.Page{Cursor: cursor, Limit: searchPage}, CountCap: 1})
		if err != nil {
			return nil, err
		}
		for _, t := range res.Traces {
			ids = append(ids, t.ID)
		}
		if res.Next == "" {
			return ids, nil
		}
		cursor = res.Next
	}
}

// traceGetter reads one trace.
type traceGetter interface {
	Trace(ctx context.Context, id string) (store.StoredTrace, error)
}

// loadTraces reads traces by id, several at once, and hands them to fn in
// the order of ids; for an id that names no trace it calls missing, and
// stops at the first error of either. It holds at most a window of traces.
func loadTraces(ctx context.Context, st traceGetter, ids []string, fn func(store.StoredTrace) error, missing func(id string) error) error {
	const window, workers = 256, 4
	got := make([]store.StoredTrace, window)
	errs := make([]error, window)
	for start := 0; start < len(ids); start += window {
		chunk := ids[start:min(start+window, len(ids))]
		var wg sync.WaitGroup
		next := make(chan int)
		for range workers {
			wg.Go(func() {
				for i := range next {
					got[i], errs[i] = st.Trace(ctx, chunk[i])
				}
			})
		}
		for i := range chunk {
			next <- i
		}
		close(next)
		wg.Wait()
		for i := range chunk {
			if errors.Is(errs[i], store.ErrNotFound) {
				if err := missing(chunk[i]); err != nil {
					return err
				}
				continue
			}
			if errs[i] != nil {
				return errs[i]
			}
			if err := fn(got[i]); err != nil {
				return err
			}
			got[i] = store.StoredTrace{} // let the collector have it
		}
	}
	return nil
}
