package eval

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"sync"

	"github.com/lookout-dev/lookout/internal/policy"
	"github.com/lookout-dev/lookout/internal/store"
)

// Progress is what a run reports after each stored batch.
type Progress struct {
	Done   int64 `json:"done"`   // traces finished (in this and earlier attempts)
	Total  int64 `json:"total"`  // traces of the run
	Errors int64 `json:"errors"` // (trace, criterion) pairs that failed in this attempt
}

// RunnerStore is what a Runner reads and writes.
type RunnerStore interface {
	TraceLister
	Trace(ctx context.Context, id string) (store.StoredTrace, error)
	RunStatuses(ctx context.Context, runID string) ([]store.TraceStatus, error)
	FinishTraces(ctx context.Context, runID string, results []store.TraceResult) error
}

// TraceLister lists a dataset's traces, a page at a time.
type TraceLister interface {
	ListTraces(ctx context.Context, datasetID string, page store.Page) ([]store.TraceSummary, string, error)
}

// Runner runs evaluations over a store.
type Runner struct {
	Store       RunnerStore
	LLM         *LLM // nil: llm criteria are refused
	Concurrency int  // traces evaluated at once; 0: 4
	Batch       int  // traces stored per transaction; 0: 256
	// DetectorModel answers the model-backed detectors of rule criteria
	// (nil: they fail as unavailable).
	DetectorModel *policy.DetectorModel
}

// CompileAll compiles a run's criteria.
func CompileAll(cs []Criterion, llm *LLM) ([]*Evaluator, error) {
	out := make([]*Evaluator, 0, len(cs))
	for _, c := range cs {
		e, err := Compile(c, llm)
		if err != nil {
			return nil, err
		}
		out = append(out, e)
	}
	return out, nil
}

// Run evaluates the traces of run that have no status yet (so a run
// interrupted by a restart goes on where it stopped), storing each batch of
// traces atomically, and reports progress. It returns ctx's error when ctx
// ends first; the run's state is left to the caller.
func (r *Runner) Run(ctx context.Context, run store.EvalRun, progress func(Progress)) error {
	auto, err := r.compile(run)
	if err != nil {
		return err
	}
	todo, prog, err := r.workList(ctx, run)
	if err != nil {
		return err
	}
	if progress != nil {
		progress(prog)
	}
	if len(auto) == 0 || len(todo) == 0 {
		return nil
	}
	return r.evaluateAll(ctx, run.ID, auto, todo, prog, progress)
}

// compile compiles a run's criteria, keeping those a run grades (human
// criteria are graded by people).
func (r *Runner) compile(run store.EvalRun) ([]*Evaluator, error) {
	var cs []Criterion
	if err := json.Unmarshal(run.Criteria, &cs); err != nil {
		return nil, fmt.Errorf("run %s: criteria: %w", run.ID, err)
	}
	evs, err := CompileAll(cs, r.LLM)
	if err != nil {
		return nil, fmt.Errorf("run %s: %w", run.ID, err)
	}
	var auto []*Evaluator
	for _, e := range evs {
		e.SetDetectorModel(r.DetectorModel)
		if e.C.Evaluator != "human" {
			auto = append(auto, e)
		}
	}
	return auto, nil
}

// workList is the run's traces that have no status yet, in index order,
// and the progress before any of them.
func (r *Runner) workList(ctx context.Context, run store.EvalRun) ([]string, Progress, error) {
	statuses, err := r.Store.RunStatuses(ctx, run.ID)
	if err != nil {
		return nil, Progress{}, err
	}
	done := map[string]bool{}
	for _, s := range statuses {
		done[s.TraceID] = true
	}
	var todo []string
	err = eachTrace(ctx, r.Store, run.DatasetID, func(t store.TraceSummary) {
		if !done[t.ID] {
			todo = append(todo, t.ID)
		}
	})
	if err != nil {
		return nil, Progress{}, err
	}
	prog := Progress{Done: int64(len(done)), Total: run.Total}
	if prog.Total < prog.Done+int64(len(todo)) {
		prog.Total = prog.Done + int64(len(todo))
	}
	return todo, prog, nil
}

// eachTrace calls fn with each trace of a dataset, in index order.
func eachTrace(ctx context.Context, st TraceLister, datasetID string, fn func(store.TraceSummary)) error {
	for cursor := ""; ; {
		page, next, err := st.ListTraces(ctx, datasetID, store.Page{Cursor: cursor, Limit: 1000})
		if err != nil {
			return err
		}
		for _, t := range page {
			fn(t)
		}
		if next == "" {
			return nil
		}
		cursor = next
	}
}

// evaluateAll grades todo with a pool of workers while one batch writer
// stores what they finished. A write that fails stops the workers and is
// returned; else ctx's error.
func (r *Runner) evaluateAll(ctx context.Context, runID string, evs []*Evaluator, todo []string, prog Progress, progress func(Progress)) error {
	conc := r.Concurrency
	if conc <= 0 {
		conc = 4
	}
	batch := r.Batch
	if batch <= 0 {
		batch = 256
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	writer := newBatchWriter(4*batch, 8*batch, func(b []store.TraceResult) error {
		// Stored even when ctx has just ended: these traces are finished.
		if err := r.Store.FinishTraces(context.WithoutCancel(ctx), runID, b); err != nil {
			return err
		}
		prog.Done += int64(len(b))
		for _, p := range b {
			for _, s := range p.Statuses {
				if s.Status == store.StatusError {
					prog.Errors++
				}
			}
		}
		if progress != nil {
			progress(prog)
		}
		return nil
	})
	werr := make(chan error, 1)
	go func() {
		err := writer.run()
		if err != nil {
			cancel() // the workers stop
		}
		werr <- err
	}()

	jobs := make(chan string)
	var workers sync.WaitGroup
	workers.Go(func() {
		defer close(jobs)
		for _, id := range todo {
			select {
			case jobs <- id:
			case <-ctx.Done():
				return
			}
		}
	})
	for range conc {
		workers.Go(func() {
			for id := range jobs {
				res, ok := r.evaluate(ctx, runID, id, evs)
				if !ok {
					continue
				}
				// A result finished as ctx ends is still stored.
				if writer.Add(res) != nil {
					return // the writer failed: run reports it
				}
			}
		})
	}
	workers.Wait()
	writer.Close()
	if err := <-werr; err != nil {
		return err
	}
	return ctx.Err()
}

// evaluate grades one trace on every criterion. ok is false when the trace
// is gone or ctx ended (the trace is then left for a later attempt).
func (r *Runner) evaluate(ctx context.Context, runID, id string, evs []*Evaluator) (store.TraceResult, bool) {
	st, err := r.Store.Trace(ctx, id)
	if err != nil {
		return store.TraceResult{}, false
	}
	res := store.TraceResult{TraceID: id}
	for _, e := range evs {
		out, err := e.Evaluate(ctx, st.Trace)
		if err != nil && ctx.Err() != nil {
			return store.TraceResult{}, false // cut short: left for a later attempt
		}
		s := store.TraceStatus{TraceID: id, Criterion: e.C.Name, Status: store.StatusEvaluated}
		if err != nil {
			s.Status, s.Error = store.StatusError, err.Error()
		}
		res.Statuses = append(res.Statuses, s)
		for _, o := range out {
			res.Scores = append(res.Scores, store.Score{TraceID: id, Address: o.Address, Criterion: e.C.Name, Value: o.Value,
				Comment: o.Comment, Source: e.C.Evaluator, RunID: runID, Extra: o.Extra})
		}
	}
	return res, true
}

// Summary is the result of one criterion over a set of scores.
type Summary struct {
	Criterion string         `json:"criterion"`
	Type      string         `json:"type"`
	Scores    int            `json:"scores"`
	Passed    int            `json:"passed"`
	Failed    int            `json:"failed"`
	Errors    int            `json:"errors"`
	Rate      *float64       `json:"rate"` // pass rate (bool) or mean (number); null without scores
	Mean      *float64       `json:"mean,omitempty"`
	Counts    map[string]int `json:"distribution,omitempty"` // label or value → count
	Required  bool           `json:"required"`
	Threshold *float64       `json:"threshold,omitempty"`
	OK        bool           `json:"ok"` // not required, or rate ≥ threshold
}

// Summarize computes each criterion's results from scores and statuses. A
// trace passes a criterion with targets when every target passes; it is
// counted once per trace for bool criteria.
func Summarize(cs []Criterion, scores []store.Score, statuses []store.TraceStatus) []Summary {
	out := make([]Summary, 0, len(cs))
	for _, c := range cs {
		s := Summary{Criterion: c.Name, Type: c.Type, Required: c.Required, Threshold: c.Threshold, Counts: map[string]int{}}
		traceFail := map[string]bool{}
		var sum float64
		n := 0
		for _, sc := range scores {
			if sc.Criterion != c.Name {
				continue
			}
			s.Scores++
			switch c.Type {
			case TypeBool:
				if p := Pass(sc.Value); p != nil {
					traceFail[sc.TraceID] = traceFail[sc.TraceID] || !*p
				}
			case TypeNumber:
				var f float64
				if json.Unmarshal(sc.Value, &f) == nil {
					sum += f
					n++
				}
			}
			s.Counts[string(sc.Value)]++
		}
		errored := map[string]bool{}
		for _, st := range statuses {
			if st.Criterion == c.Name && st.Status == store.StatusError {
				errored[st.TraceID] = true
			}
		}
		s.Errors = len(errored)
		for tr, f := range traceFail {
			if errored[tr] {
				continue
			}
			if f {
				s.Failed++
			} else {
				s.Passed++
			}
		}
		switch c.Type {
		case TypeBool:
			if s.Passed+s.Failed > 0 {
				r := float64(s.Passed) / float64(s.Passed+s.Failed)
				s.Rate = &r
			}
		case TypeNumber:
			if n > 0 {
				m := sum / float64(n)
				s.Rate, s.Mean = &m, &m
			}
		}
		s.OK = true
		if c.Required {
			th := 1.0
			if c.Threshold != nil {
				th = *c.Threshold
			}
			s.OK = s.Rate != nil && *s.Rate >= th
		}
		out = append(out, s)
	}
	return out
}

// Change is a (trace, criterion, address) whose value differs between two
// runs.
type Change struct {
	TraceID   string          `json:"trace_id"`
	Criterion string          `json:"criterion"`
	Address   string          `json:"address"`
	Before    json.RawMessage `json:"before"` // null: no score in the first run
	After     json.RawMessage `json:"after"`
}

// Compare lists the verdicts that changed from run a's scores to run b's.
func Compare(a, b []store.Score) []Change {
	key := func(s store.Score) string { return s.TraceID + "\x00" + s.Criterion + "\x00" + s.Address }
	am, bm := map[string]store.Score{}, map[string]store.Score{}
	for _, s := range a {
		am[key(s)] = s
	}
	for _, s := range b {
		bm[key(s)] = s
	}
	var out []Change
	for k, sb := range bm {
		sa, ok := am[k]
		if ok && string(sa.Value) == string(sb.Value) {
			continue
		}
		c := Change{TraceID: sb.TraceID, Criterion: sb.Criterion, Address: sb.Address, Before: json.RawMessage("null"), After: sb.Value}
		if ok {
			c.Before = sa.Value
		}
		out = append(out, c)
	}
	for k, sa := range am {
		if _, ok := bm[k]; !ok {
			out = append(out, Change{TraceID: sa.TraceID, Criterion: sa.Criterion, Address: sa.Address, Before: sa.Value, After: json.RawMessage("null")})
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].TraceID != out[j].TraceID {
			return out[i].TraceID < out[j].TraceID
		}
		if out[i].Criterion != out[j].Criterion {
			return out[i].Criterion < out[j].Criterion
		}
		return out[i].Address < out[j].Address
	})
	return out
}

// ErrCancelled is the cause a run is cancelled with by request.
var ErrCancelled = errors.New("run cancelled")
