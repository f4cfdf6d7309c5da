package eval

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lookout-dev/lookout/internal/chat/chattest"
	"github.com/lookout-dev/lookout/internal/store"
)

// TestRunsLeases: managers on one store, as servers on one database,
// never work on one run together. The one that did not start a run leaves
// it alone while its starter renews the lease, takes it at once when the
// starter stops, and a run whose holder vanished (a lease nobody renews)
// is taken once the lease expires; every trace is graded once.
func TestRunsLeases(t *testing.T) {
	const n = 40
	st, fixture := runFixture(t, n)
	ctx := context.Background()
	d, err := st.Dataset(ctx, fixture.DatasetID)
	if err != nil {
		t.Fatal(err)
	}
	judge := chattest.New(t, func(*chattest.Request) chattest.Reply {
		time.Sleep(20 * time.Millisecond)
		return chattest.Reply{Content: "PASS\nfine"}
	})
	const lease = 300 * time.Millisecond
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	manager := func() *Runs {
		m := NewRuns(st, Runner{LLM: &LLM{URL: judge.URL, Model: "judge"}, Concurrency: 2, Batch: 2}, log)
		m.SetLease(lease)
		t.Cleanup(m.Stop)
		return m
	}
	a, b := manager(), manager()
	criteria := []byte(`[{"name": "fine", "evaluator": "llm", "prompt": "Is the answer fine?"}]`)

	// both reports, sampled, whether the two managers ever worked on run
	// id at the same time.
	both := func(id string) (stop func() bool) {
		var overlap atomic.Bool
		done := make(chan struct{})
		go func() {
			for {
				select {
				case <-done:
					return
				case <-time.After(time.Millisecond):
				}
				if a.activeRun(id) != nil && b.activeRun(id) != nil {
					overlap.Store(true)
				}
			}
		}()
		return func() bool { close(done); return overlap.Load() }
	}
	waitDone := func(id string) {
		t.Helper()
		deadline := time.Now().Add(60 * time.Second) // generous: packages run side by side
		for {
			r, err := st.Run(ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			if r.State != store.RunRunning {
				if r.State != store.RunDone {
					t.Fatalf("run %s ended %s (%s), want done", id, r.State, r.Error)
				}
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("run %s still running after 60 s", id)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	gradedOnce := func(id string) {
		t.Helper()
		statuses, err := st.RunStatuses(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		scores, err := st.ListScores(ctx, store.ScoreFilter{RunID: id, History: true})
		if err != nil {
			t.Fatal(err)
		}
		if len(statuses) != n || len(scores) != n {
			t.Errorf("run %s: %d statuses and %d scores with history; want %d of each (every trace graded once)", id, len(statuses), len(scores), n)
		}
	}

	// Started by a; b, looking for runs without a server, leaves it.
	run, err := a.Create(ctx, d, "first", criteria)
	if err != nil {
		t.Fatal(err)
	}
	overlapped := both(run.ID)
	if err := b.Resume(ctx); err != nil {
		t.Fatal(err)
	}
	for range 3 { // past a lease: a renews it, b's loop looks twice
		time.Sleep(lease)
		if b.activeRun(run.ID) != nil {
			t.Fatal("b took the run a works on and renews")
		}
	}
	// a stops (a server shut down): b goes on with the run at once.
	a.Stop()
	waitDone(run.ID)
	if overlapped() {
		t.Error("a and b worked on the first run at the same time")
	}
	gradedOnce(run.ID)

	// A run whose holder vanished: a server looking for runs without one
	// takes it when the lease expires. b stops first and c starts looking
	// only once the vanished server holds the lease: a manager looking
	// while the run is created could claim it before the vanished server.
	b.Stop()
	run2, err := st.CreateRun(ctx, store.EvalRun{DatasetID: d.ID, Name: "orphan", Criteria: mustFreeze(t, criteria), Total: n})
	if err != nil {
		t.Fatal(err)
	}
	if held, err := st.ClaimRun(ctx, run2.ID, "a server that died", 2*lease); err != nil || !held {
		t.Fatalf("claim for the server that died: %v %v", held, err)
	}
	claimed := time.Now()
	c := manager()
	if err := c.Resume(ctx); err != nil {
		t.Fatal(err)
	}
	time.Sleep(lease)
	if time.Since(claimed) < 2*lease && c.activeRun(run2.ID) != nil {
		t.Fatal("c took a run before its lease expired")
	}
	waitDone(run2.ID)
	gradedOnce(run2.ID)
}

// mustFreeze is criteria as a run stores them.
func mustFreeze(t *testing.T, criteria []byte) []byte {
	t.Helper()
	cs, err := ParseCriteria(criteria)
	if err != nil {
		t.Fatal(err)
	}
	frozen, err := json.Marshal(cs)
	if err != nil {
		t.Fatal(err)
	}
	return frozen
}
