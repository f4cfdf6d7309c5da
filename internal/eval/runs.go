package eval

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lookout-dev/lookout/internal/store"
)

// RunStore is what Runs reads and writes, besides what its Runner does.
type RunStore interface {
	RunnerStore
	CreateRun(ctx context.Context, r store.EvalRun) (store.EvalRun, error)
	Run(ctx context.Context, id string) (store.EvalRun, error)
	ListRuns(ctx context.Context, datasetID string) ([]store.EvalRun, error)
	RunsIn(ctx context.Context, state string) ([]store.EvalRun, error)
	SetRunState(ctx context.Context, id, state, errMsg string) error
	ClaimRun(ctx context.Context, id, owner string, lease time.Duration) (bool, error)
	ReleaseRun(ctx context.Context, id, owner string) error
	LatestStatuses(ctx context.Context, datasetID string) ([]store.TraceStatus, error)
	ListCriteria(ctx context.Context, datasetID string) ([]store.Criterion, error)
	ListScores(ctx context.Context, f store.ScoreFilter) ([]store.Score, error)
}

// Runs manages the evaluation runs a server works on in the background:
// it starts them, follows their progress, cancels them, and stops them
// (still "running" in the store, to be resumed) when the server stops.
//
// Servers on one database share the runs through leases in the store: a
// server works on a run while it holds the run's lease and renews it
// every third of the lease; after Resume it looks for running runs whose
// lease has expired (their server died) every half lease and takes them.
type Runs struct {
	store  RunStore
	runner *Runner
	log    *slog.Logger
	owner  string        // this manager's name in the runs' leases
	lease  time.Duration // how long a lease lasts unrenewed
	adopt  sync.Once     // starts the loop that takes runs left without a server

	mu     sync.Mutex
	active map[string]*activeRun
	base   context.Context // ends when the manager stops
	stop   context.CancelFunc
	wg     sync.WaitGroup
}

type activeRun struct {
	cancel context.CancelCauseFunc
	mu     sync.Mutex
	prog   Progress
	subs   map[chan Progress]struct{}
	done   chan struct{}
}

// NewRuns returns a manager of runs over st that r (its Store set to st)
// works on; log hears of runs that fail.
func NewRuns(st RunStore, r Runner, log *slog.Logger) *Runs {
	r.Store = st
	ctx, stop := context.WithCancel(context.Background())
	return &Runs{store: st, runner: &r, log: log, owner: rand.Text(), lease: DefaultLease,
		active: map[string]*activeRun{}, base: ctx, stop: stop}
}

// DefaultLease is how long a server's lease of a run lasts unrenewed: a
// run whose server died is taken by another within about one and a half
// of it.
const DefaultLease = 30 * time.Second

// SetLease sets how long the manager's leases last (before any run
// starts; tests shorten it).
func (m *Runs) SetLease(d time.Duration) {
	if d > 0 {
		m.lease = d
	}
}

// errLeaseLost ends a worker whose run another server has taken (this one
// could not renew its lease in time).
var errLeaseLost = errors.New("the run's lease was taken by another server")

// Create starts a run over dataset d with criteria, a JSON list as in a
// criteria file, or, when nil, the dataset's saved criteria. Criteria that
// do not check are ErrInvalid. The run goes on in the background.
func (m *Runs) Create(ctx context.Context, d store.Dataset, name string, criteria json.RawMessage) (store.EvalRun, error) {
	if criteria == nil {
		saved, err := m.store.ListCriteria(ctx, d.ID)
		if err != nil {
			return store.EvalRun{}, err
		}
		if len(saved) == 0 {
			return store.EvalRun{}, invalidf("dataset %s has no saved criteria; give \"criteria\"", d.Name)
		}
		list := []byte("[")
		for i, c := range saved {
			if i > 0 {
				list = append(list, ',')
			}
			list = append(list, c.Definition...)
		}
		criteria = append(list, ']')
	}
	cs, err := ParseCriteria(criteria)
	if err != nil {
		return store.EvalRun{}, criteriaError(err)
	}
	if _, err := CompileAll(cs, m.runner.LLM); err != nil {
		return store.EvalRun{}, criteriaError(err)
	}
	frozen, _ := json.Marshal(cs)
	run, err := m.store.CreateRun(ctx, store.EvalRun{DatasetID: d.ID, Name: name, Criteria: frozen, Total: d.TraceCount})
	if err != nil {
		return store.EvalRun{}, err
	}
	// Unclaimed, the run is left to the next server that looks (this one
	// included, within half a lease).
	if held, err := m.store.ClaimRun(ctx, run.ID, m.owner, m.lease); err != nil {
		m.log.Warn("evaluation run: cannot claim it; another server or a later look takes it", "run", run.ID, "err", err)
	} else if held {
		m.startHeld(ctx, run)
	}
	return run, nil
}

// cancelCheck is how often a run's worker looks whether another server
// cancelled it.
const cancelCheck = 500 * time.Millisecond

// startHeld starts run, whose lease the manager holds, or releases the
// lease when the manager has stopped.
func (m *Runs) startHeld(ctx context.Context, run store.EvalRun) {
	if m.start(run) || m.base.Err() == nil { // not started: it works on it already
		return
	}
	if err := m.store.ReleaseRun(ctx, run.ID, m.owner); err != nil {
		m.log.Warn("evaluation run: cannot release its lease", "run", run.ID, "err", err)
	}
}

// start works on run, whose lease the manager holds, in the background
// until it is done, cancelled, its lease lost, or the manager stops (then
// it stays "running", its lease released, for any server to take). It
// reports whether it started it.
func (m *Runs) start(run store.EvalRun) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.active[run.ID]; ok || m.base.Err() != nil {
		return false
	}
	ctx, cancel := context.WithCancelCause(m.base)
	ar := &activeRun{cancel: cancel, subs: map[chan Progress]struct{}{}, done: make(chan struct{}), prog: Progress{Total: run.Total}}
	m.active[run.ID] = ar
	// A run cancelled through another server on the database is marked so
	// in the store: the worker looks at most every cancelCheck, after a
	// stored batch, and stops.
	var checked atomic.Int64
	report := func(p Progress) {
		ar.report(p)
		now := time.Now().UnixNano()
		if last := checked.Load(); now-last < int64(cancelCheck) || !checked.CompareAndSwap(last, now) {
			return
		}
		if r, err := m.store.Run(ctx, run.ID); err == nil && r.State == store.RunCancelled {
			cancel(ErrCancelled)
		}
	}
	m.wg.Go(func() { m.renew(ctx, run.ID, cancel, ar.done) })
	m.wg.Go(func() {
		err := m.runner.Run(ctx, run, report)
		m.finish(ctx, run, err)
		m.mu.Lock()
		delete(m.active, run.ID)
		m.mu.Unlock()
		close(ar.done)
	})
	return true
}

// renew renews the lease of run id every third of a lease until done is
// closed; a lease it no longer holds ends the worker: cancelled when the
// run was cancelled through another server, lost otherwise (another server
// took it after renewals failed for a whole lease).
func (m *Runs) renew(ctx context.Context, id string, cancel context.CancelCauseFunc, done <-chan struct{}) {
	tick := time.NewTicker(m.lease / 3)
	defer tick.Stop()
	for {
		select {
		case <-done:
			return
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		held, err := m.store.ClaimRun(ctx, id, m.owner, m.lease)
		if err != nil {
			if ctx.Err() == nil {
				m.log.Warn("evaluation run: cannot renew its lease; trying again", "run", id, "err", err)
			}
			continue
		}
		if held {
			continue
		}
		if r, err := m.store.Run(ctx, id); err == nil && r.State != store.RunRunning {
			cancel(ErrCancelled)
		} else {
			cancel(errLeaseLost)
		}
		return
	}
}

// report records a run's progress and tells its watchers.
func (ar *activeRun) report(p Progress) {
	ar.mu.Lock()
	defer ar.mu.Unlock()
	ar.prog = p
	for ch := range ar.subs {
		select {
		case ch <- p:
		default: // a slow watcher misses a step, not the end
		}
	}
}

// finish records how a run ended: done, cancelled by request, or failed;
// a run stopped with the manager stays running, its lease released so
// that another server takes it at once; one whose lease was lost is the
// new holder's to record.
func (m *Runs) finish(ctx context.Context, run store.EvalRun, err error) {
	end, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	switch {
	case err == nil:
		err = m.store.SetRunState(end, run.ID, store.RunDone, "")
	case errors.Is(context.Cause(ctx), ErrCancelled):
		err = m.store.SetRunState(end, run.ID, store.RunCancelled, "")
	case errors.Is(context.Cause(ctx), errLeaseLost):
		m.log.Warn("evaluation run: another server took it", "run", run.ID)
		err = nil
	case m.base.Err() != nil:
		err = m.store.ReleaseRun(end, run.ID, m.owner)
	default:
		m.log.Error("evaluation run failed", "run", run.ID, "err", err)
		err = m.store.SetRunState(end, run.ID, store.RunError, err.Error())
	}
	if err != nil {
		m.log.Error("evaluation run: cannot record its end", "run", run.ID, "err", err)
	}
}

// Resume takes every running run without a server (left by a restart
// or a crash, or its server gone) and goes on with it; traces it finished
// are not evaluated again. From then on it looks again every half lease.
func (m *Runs) Resume(ctx context.Context) error {
	if err := m.takeOrphans(ctx); err != nil {
		return err
	}
	m.adopt.Do(func() {
		m.mu.Lock()
		defer m.mu.Unlock()
		if m.base.Err() != nil {
			return
		}
		m.wg.Go(func() {
			tick := time.NewTicker(m.lease / 2)
			defer tick.Stop()
			for {
				select {
				case <-m.base.Done():
					return
				case <-tick.C:
				}
				if err := m.takeOrphans(m.base); err != nil && m.base.Err() == nil {
					m.log.Warn("evaluation runs: cannot look for runs without a server", "err", err)
				}
			}
		})
	})
	return nil
}

// takeOrphans claims and starts the running runs whose lease is free or
// expired.
func (m *Runs) takeOrphans(ctx context.Context) error {
	runs, err := m.store.RunsIn(ctx, store.RunRunning)
	if err != nil {
		return err
	}
	for _, r := range runs {
		if m.activeRun(r.ID) != nil {
			continue
		}
		held, err := m.store.ClaimRun(ctx, r.ID, m.owner, m.lease)
		if err != nil {
			return err
		}
		if held {
			m.startHeld(ctx, r)
		}
	}
	return nil
}

// Stop stops the runs in progress and waits for them; they stay "running"
// in the store, so the next Resume goes on with them. No run starts after.
// Safe to call more than once.
func (m *Runs) Stop() {
	m.stop()
	m.wg.Wait()
}

func (m *Runs) activeRun(id string) *activeRun {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.active[id]
}

// Cancel cancels a run: one this manager works on stops (Cancel waits for
// it) and is recorded cancelled; one left running without a worker is
// marked cancelled. It returns the run as stored after.
func (m *Runs) Cancel(ctx context.Context, run store.EvalRun) (store.EvalRun, error) {
	if ar := m.activeRun(run.ID); ar != nil {
		ar.cancel(ErrCancelled)
		<-ar.done
	} else if run.State == store.RunRunning {
		if err := m.store.SetRunState(ctx, run.ID, store.RunCancelled, ""); err != nil {
			return store.EvalRun{}, err
		}
	}
	return m.store.Run(ctx, run.ID)
}

// RunWatch follows a run this manager works on.
type RunWatch struct {
	First   Progress        // the progress when the watch began
	Updates <-chan Progress // each stored batch (a slow reader misses steps)
	Done    <-chan struct{} // closed when the run has ended and its end is recorded
	stop    func()
}

// Close ends the watch.
func (w *RunWatch) Close() { w.stop() }

// Watch follows run id; ok is false when this manager is not working on
// it (it has ended, or another server works on it).
func (m *Runs) Watch(id string) (w *RunWatch, ok bool) {
	ar := m.activeRun(id)
	if ar == nil {
		return nil, false
	}
	ch := make(chan Progress, 16)
	ar.mu.Lock()
	ar.subs[ch] = struct{}{}
	first := ar.prog
	ar.mu.Unlock()
	return &RunWatch{First: first, Updates: ch, Done: ar.done, stop: func() {
		ar.mu.Lock()
		delete(ar.subs, ch)
		ar.mu.Unlock()
	}}, true
}

// progress is a run's progress: live while this manager works on it, else
// from the stored statuses.
func (m *Runs) progress(run store.EvalRun, statuses []store.TraceStatus) Progress {
	if ar := m.activeRun(run.ID); ar != nil {
		ar.mu.Lock()
		defer ar.mu.Unlock()
		return ar.prog
	}
	p := Progress{Total: run.Total}
	seen := map[string]bool{}
	for _, st := range statuses {
		if !seen[st.TraceID] {
			seen[st.TraceID] = true
			p.Done++
		}
		if st.Status == store.StatusError {
			p.Errors++
		}
	}
	return p
}

// RunReport is a run's progress and per-criterion results.
type RunReport struct {
	Progress Progress
	Summary  []Summary
}

// Report computes a run's progress and per-criterion results from its
// scores and statuses.
func (m *Runs) Report(ctx context.Context, run store.EvalRun) (RunReport, error) {
	var cs []Criterion
	if err := json.Unmarshal(run.Criteria, &cs); err != nil {
		return RunReport{}, fmt.Errorf("run %s: criteria: %w", run.ID, err)
	}
	statuses, err := m.store.RunStatuses(ctx, run.ID)
	if err != nil {
		return RunReport{}, err
	}
	scores, err := m.Scores(ctx, run)
	if err != nil {
		return RunReport{}, err
	}
	return RunReport{Progress: m.progress(run, statuses), Summary: Summarize(cs, scores, statuses)}, nil
}

// Scores are the scores a run made (superseded ones too: they are the
// run's verdicts even when a later run or a person graded again).
func (m *Runs) Scores(ctx context.Context, run store.EvalRun) ([]store.Score, error) {
	return m.store.ListScores(ctx, store.ScoreFilter{RunID: run.ID, History: true})
}

// CompareRuns lists the verdicts that changed from run a to run b, two
// runs of one dataset (ErrInvalid otherwise).
func (m *Runs) CompareRuns(ctx context.Context, a, b store.EvalRun) ([]Change, error) {
	if a.DatasetID != b.DatasetID {
		return nil, invalidf("runs %s and %s are of different datasets", a.ID, b.ID)
	}
	sa, err := m.Scores(ctx, a)
	if err != nil {
		return nil, err
	}
	sb, err := m.Scores(ctx, b)
	if err != nil {
		return nil, err
	}
	changes := Compare(sa, sb)
	if changes == nil {
		changes = []Change{}
	}
	return changes, nil
}

// DatasetStatus is each trace's status per criterion in the dataset's
// newest run that has one; the traces a running run has not finished are
// StatusInProgress on its graded criteria. Traces absent from the map are
// not evaluated. running lists the runs in progress.
func (m *Runs) DatasetStatus(ctx context.Context, datasetID string) (traces map[string]map[string]string, running []string, err error) {
	statuses, err := m.store.LatestStatuses(ctx, datasetID)
	if err != nil {
		return nil, nil, err
	}
	out := map[string]map[string]string{}
	for _, st := range statuses {
		if out[st.TraceID] == nil {
			out[st.TraceID] = map[string]string{}
		}
		out[st.TraceID][st.Criterion] = st.Status
	}
	runs, err := m.store.ListRuns(ctx, datasetID)
	if err != nil {
		return nil, nil, err
	}
	running = []string{}
	for _, run := range runs {
		if run.State != store.RunRunning {
			continue
		}
		running = append(running, run.ID)
		var cs []Criterion
		if json.Unmarshal(run.Criteria, &cs) != nil {
			continue
		}
		done, err := m.store.RunStatuses(ctx, run.ID)
		if err != nil {
			return nil, nil, err
		}
		finished := map[string]bool{}
		for _, st := range done {
			finished[st.TraceID] = true
		}
		err = eachTrace(ctx, m.store, datasetID, func(t store.TraceSummary) {
			if finished[t.ID] {
				return
			}
			if out[t.ID] == nil {
				out[t.ID] = map[string]string{}
			}
			for _, c := range cs {
				if c.Evaluator != "human" {
					out[t.ID][c.Name] = store.StatusInProgress
				}
			}
		})
		if err != nil {
			return nil, nil, err
		}
	}
	return out, running, nil
}
