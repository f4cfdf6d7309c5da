package eval

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lookout-dev/lookout/internal/store"
	"github.com/lookout-dev/lookout/internal/store/sqlite"
	"github.com/lookout-dev/lookout/internal/trace"
)

// runFixture is a SQLite store with a dataset of n traces, every other one
// with reward 1, and a run over it of one code criterion.
func runFixture(t *testing.T, n int) (store.Store, store.EvalRun) {
	t.Helper()
	ctx := context.Background()
	st, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "lookout.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	u, err := st.CreateUser(ctx, "alice", "x")
	if err != nil {
		t.Fatal(err)
	}
	d, err := st.CreateDataset(ctx, store.Dataset{OwnerID: u.ID, Name: "d"})
	if err != nil {
		t.Fatal(err)
	}
	nts := make([]store.NewTrace, n)
	for i := range nts {
		nts[i] = store.NewTrace{Trace: &trace.Trace{
			Events:   []trace.Event{{Role: "user", Content: trace.TextContent("task " + strconv.Itoa(i))}},
			Metadata: json.RawMessage(`{"reward": ` + strconv.Itoa((i+1)%2) + `}`)}}
	}
	if _, err := st.AddTraces(ctx, u.ID, d.ID, nts); err != nil {
		t.Fatal(err)
	}
	cs, err := ParseCriteria([]byte(`[{"name": "solved", "evaluator": "code", "expr": "metadata.reward == 1"}]`))
	if err != nil {
		t.Fatal(err)
	}
	frozen, _ := json.Marshal(cs)
	run, err := st.CreateRun(ctx, store.EvalRun{DatasetID: d.ID, Name: "r", Criteria: frozen, Total: int64(n)})
	if err != nil {
		t.Fatal(err)
	}
	return st, run
}

// progressLog keeps what a run reported.
type progressLog struct {
	mu  sync.Mutex
	all []Progress
}

func (l *progressLog) add(p Progress) { l.mu.Lock(); l.all = append(l.all, p); l.mu.Unlock() }

func (l *progressLog) last() Progress {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.all[len(l.all)-1]
}

// A run grades every trace once, and a second Run of the same run finds
// nothing left to do.
func TestRunnerGradesEveryTraceOnce(t *testing.T) {
	st, run := runFixture(t, 60)
	ctx := context.Background()
	var log progressLog
	r := &Runner{Store: st, Concurrency: 4, Batch: 8}
	if err := r.Run(ctx, run, log.add); err != nil {
		t.Fatal(err)
	}
	if p := log.last(); p.Done != 60 || p.Total != 60 || p.Errors != 0 {
		t.Fatalf("last progress %+v, want 60 of 60 done", p)
	}
	statuses, err := st.RunStatuses(ctx, run.ID)
	if err != nil {
		t.Fatal(err)
	}
	if len(statuses) != 60 {
		t.Fatalf("%d statuses, want 60", len(statuses))
	}
	scores, err := st.ListScores(ctx, store.ScoreFilter{RunID: run.ID, History: true})
	if err != nil {
		t.Fatal(err)
	}
	passed := 0
	for _, s := range scores {
		if string(s.Value) == "true" {
			passed++
		}
	}
	if len(scores) != 60 || passed != 30 {
		t.Fatalf("%d scores, %d passed; want 60, 30", len(scores), passed)
	}
	var again progressLog
	if err := r.Run(ctx, run, again.add); err != nil {
		t.Fatal(err)
	}
	if len(again.all) != 1 || again.all[0].Done != 60 {
		t.Fatalf("second Run reported %+v, want one report of 60 done", again.all)
	}
}

// failingFinish is a real store whose FinishTraces fails from the failAt-th
// call on, as a full disk would.
type failingFinish struct {
	RunnerStore
	failAt int32
	n      atomic.Int32
}

var errDiskFull = errors.New("disk full")

func (f *failingFinish) FinishTraces(ctx context.Context, runID string, rs []store.TraceResult) error {
	if f.n.Add(1) >= f.failAt {
		return errDiskFull
	}
	return f.RunnerStore.FinishTraces(ctx, runID, rs)
}

// A write that fails ends the run with its error: the workers stop
// instead of blocking, and what was stored before stays, matching the
// last progress reported.
func TestRunnerStopsAtAFailedWrite(t *testing.T) {
	st, run := runFixture(t, 60)
	ctx := context.Background()
	var log progressLog
	r := &Runner{Store: &failingFinish{RunnerStore: st, failAt: 3}, Concurrency: 4, Batch: 1}
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx, run, log.add) }()
	select {
	case err := <-done:
		if !errors.Is(err, errDiskFull) {
			t.Fatalf("Run: %v, want %v", err, errDiskFull)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Run still going 10 s after a failed write")
	}
	statuses, err := st.RunStatuses(ctx, run.ID)
	if err != nil {
		t.Fatal(err)
	}
	if p := log.last(); int(p.Done) != len(statuses) || len(statuses) == 0 || len(statuses) >= 60 {
		t.Fatalf("last progress %+v with %d statuses stored: want them equal, some but not all", p, len(statuses))
	}
}

// A run whose context ends stops early and returns ctx's error; the next
// Run goes on where it stopped and grades each remaining trace once.
func TestRunnerResumes(t *testing.T) {
	st, run := runFixture(t, 60)
	ctx, cancel := context.WithCancel(context.Background())
	r := &Runner{Store: st, Concurrency: 2, Batch: 1}
	var first progressLog
	err := r.Run(ctx, run, func(p Progress) {
		first.add(p)
		if p.Done >= 10 {
			cancel()
		}
	})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Run after cancel: %v, want context.Canceled", err)
	}
	stopped := first.last().Done
	if stopped < 10 || stopped >= 60 {
		t.Fatalf("stopped at %d done, want some but not all", stopped)
	}
	var second progressLog
	if err := r.Run(context.Background(), run, second.add); err != nil {
		t.Fatal(err)
	}
	if second.all[0].Done < stopped || second.last().Done != 60 {
		t.Fatalf("resumed from %+v to %+v, want from at least %d to 60", second.all[0], second.last(), stopped)
	}
	statuses, err := st.RunStatuses(context.Background(), run.ID)
	if err != nil {
		t.Fatal(err)
	}
	if len(statuses) != 60 {
		t.Fatalf("%d statuses, want 60 (one per trace)", len(statuses))
	}
	// A trace graded twice would have a second version of its score.
	scores, err := st.ListScores(context.Background(), store.ScoreFilter{RunID: run.ID, History: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(scores) != 60 {
		t.Fatalf("%d scores with history, want 60 (each trace graded once)", len(scores))
	}
}
