package storetest

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lookout-dev/lookout/internal/store"
)

// scoreKey is what a test compares of a score.
func scoreKey(s store.Score) string {
	return fmt.Sprintf("%s|%s|%s|%s|v%d|cur=%v|%s|%s", s.TraceID[:8], s.Address, s.Criterion, s.Value, s.Version, s.Current, s.Source, s.Comment)
}

func (e *env) scores(f store.ScoreFilter) []string {
	e.t.Helper()
	ss, err := e.st.ListScores(e.ctx, f)
	if err != nil {
		e.t.Fatalf("ListScores(%+v): %v", f, err)
	}
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = scoreKey(s)
	}
	return out
}

func testScores(t *testing.T, open func(t *testing.T) store.Store) {
	e := newEnv(t, open)
	u := e.user("grader")
	d := e.dataset(u, "graded", false)
	other := e.dataset(u, "other", false)
	ids := e.add(u.ID, d.ID, simple("a", 3, nil), simple("b", 2, nil))
	oid := e.add(u.ID, other.ID, simple("o", 1, nil))[0]

	add := func(ss ...store.Score) []store.Score {
		t.Helper()
		out, err := e.st.AddScores(e.ctx, ss)
		if err != nil {
			t.Fatalf("AddScores: %v", err)
		}
		return out
	}
	first := add(
		store.Score{TraceID: ids[0], Criterion: "solved", Value: json.RawMessage(`true`), Source: "code", Comment: "c1"},
		store.Score{TraceID: ids[0], Address: "messages.1", Criterion: "tone", Value: json.RawMessage(` "polite" `), Source: "human", Author: "grader"},
		store.Score{TraceID: ids[1], Criterion: "solved", Value: json.RawMessage(`0.25`), Source: "llm", Extra: json.RawMessage(`{"why":"x"}`)},
		store.Score{TraceID: oid, Criterion: "solved", Value: json.RawMessage(`false`), Source: "rule"},
	)
	if first[0].Version != 1 || !first[0].Current || first[1].Value == nil || string(first[1].Value) != `"polite"` {
		t.Fatalf("first scores %+v", first)
	}
	checkTime(t, "score created_at", first[0].CreatedAt)
	// A new score on the same target and criterion supersedes; the
	// address makes a different target.
	second := add(store.Score{TraceID: ids[0], Criterion: "solved", Value: json.RawMessage(`false`), Source: "human", Comment: "c2"})
	if second[0].Version != 2 {
		t.Fatalf("second version %d, want 2", second[0].Version)
	}
	// Two scores on one target in one call get consecutive versions.
	third := add(
		store.Score{TraceID: ids[1], Criterion: "solved", Value: json.RawMessage(`0.5`), Source: "llm"},
		store.Score{TraceID: ids[1], Criterion: "solved", Value: json.RawMessage(`0.75`), Source: "llm"},
	)
	if third[0].Version != 2 || third[1].Version != 3 {
		t.Fatalf("versions %d %d, want 2 3", third[0].Version, third[1].Version)
	}
	a, b := ids[0][:8], ids[1][:8]
	want := []string{
		a + "||solved|false|v2|cur=true|human|c2",
		a + "|messages.1|tone|\"polite\"|v1|cur=true|human|",
		b + "||solved|0.75|v3|cur=true|llm|",
	}
	if got := e.scores(store.ScoreFilter{DatasetID: d.ID}); !slices.Equal(got, want) {
		t.Errorf("current scores of the dataset\n got %q\nwant %q", got, want)
	}
	wantHist := []string{
		a + "||solved|true|v1|cur=false|code|c1",
		a + "||solved|false|v2|cur=true|human|c2",
	}
	if got := e.scores(store.ScoreFilter{TraceID: ids[0], Criterion: "solved", History: true}); !slices.Equal(got, wantHist) {
		t.Errorf("history\n got %q\nwant %q", got, wantHist)
	}
	if got := e.scores(store.ScoreFilter{DatasetID: d.ID, Criterion: "tone"}); len(got) != 1 {
		t.Errorf("by criterion: %q", got)
	}
	if got := e.scores(store.ScoreFilter{DatasetID: other.ID}); len(got) != 1 {
		t.Errorf("the other dataset's scores: %q", got)
	}
	got, err := e.st.Score(e.ctx, first[2].ID)
	if err != nil || string(got.Extra) != `{"why":"x"}` || got.Current {
		t.Errorf("Score: %+v %v", got, err)
	}

	// Deleting the current version brings back the one before it; a new
	// score after that continues the numbering.
	wantErr(t, "DeleteScore", e.st.DeleteScore(e.ctx, second[0].ID), nil)
	if got := e.scores(store.ScoreFilter{TraceID: ids[0], Criterion: "solved"}); !slices.Equal(got, []string{a + "||solved|true|v1|cur=true|code|c1"}) {
		t.Errorf("after deleting v2: %q", got)
	}
	if again := add(store.Score{TraceID: ids[0], Criterion: "solved", Value: json.RawMessage(`1`), Source: "human"}); again[0].Version != 2 {
		t.Errorf("version after a delete: %d", again[0].Version)
	}
	wantErr(t, "DeleteScore twice", e.st.DeleteScore(e.ctx, second[0].ID), store.ErrNotFound)
	wantErr(t, "DeleteScore bad id", e.st.DeleteScore(e.ctx, "nope"), store.ErrNotFound)
	_, err = e.st.Score(e.ctx, second[0].ID)
	wantErr(t, "Score deleted", err, store.ErrNotFound)

	// Bad scores: nothing of the call is stored.
	before := e.scores(store.ScoreFilter{DatasetID: d.ID, History: true})
	for _, bad := range []struct {
		s      store.Score
		target error
	}{
		{store.Score{TraceID: ids[0], Criterion: "x", Value: json.RawMessage(`{"a":1}`), Source: "human"}, store.ErrInvalid},
		{store.Score{TraceID: ids[0], Criterion: "x", Value: json.RawMessage(`tru`), Source: "human"}, store.ErrInvalid},
		{store.Score{TraceID: ids[0], Criterion: "x", Value: json.RawMessage(`true`), Source: "robot"}, store.ErrInvalid},
		{store.Score{TraceID: ids[0], Criterion: " ", Value: json.RawMessage(`true`), Source: "human"}, store.ErrInvalid},
		{store.Score{TraceID: ids[0], Criterion: "x", Value: json.RawMessage(`true`), Source: "human", Comment: "a\x00b"}, store.ErrInvalid},
		{store.Score{TraceID: "00000000-0000-4000-8000-000000000000", Criterion: "x", Value: json.RawMessage(`true`), Source: "human"}, store.ErrNotFound},
	} {
		_, err := e.st.AddScores(e.ctx, []store.Score{{TraceID: ids[1], Criterion: "ok", Value: json.RawMessage(`true`), Source: "human"}, bad.s})
		wantErr(t, fmt.Sprintf("AddScores(%+v)", bad.s), err, bad.target)
	}
	if after := e.scores(store.ScoreFilter{DatasetID: d.ID, History: true}); !slices.Equal(before, after) {
		t.Errorf("a failed AddScores left scores: %q", after)
	}
	_, err = e.st.ListScores(e.ctx, store.ScoreFilter{})
	wantErr(t, "ListScores without a trace or dataset", err, store.ErrInvalid)

	// Scores go with their trace.
	wantErr(t, "DeleteTrace", e.st.DeleteTrace(e.ctx, ids[1]), nil)
	if got := e.scores(store.ScoreFilter{DatasetID: d.ID, History: true}); len(got) != 3 {
		t.Errorf("after deleting a trace: %q", got)
	}
}

func testCriteriaAndRuns(t *testing.T, open func(t *testing.T) store.Store) {
	e := newEnv(t, open)
	u := e.user("runner")
	d := e.dataset(u, "evaluated", false)
	ids := e.add(u.ID, d.ID, simple("a", 1, nil), simple("b", 1, nil), simple("c", 1, nil))

	c1, err := e.st.SaveCriterion(e.ctx, store.Criterion{DatasetID: d.ID, Name: "solved", Definition: json.RawMessage(`{"evaluator": "code", "expr": "metadata.reward == 1"}`)})
	wantErr(t, "SaveCriterion", err, nil)
	if string(c1.Definition) != `{"evaluator":"code","expr":"metadata.reward == 1"}` {
		t.Errorf("definition %s", c1.Definition)
	}
	c2, err := e.st.SaveCriterion(e.ctx, store.Criterion{DatasetID: d.ID, Name: "solved", Definition: json.RawMessage(`{"evaluator": "human"}`)})
	if err != nil || c2.ID != c1.ID || string(c2.Definition) != `{"evaluator":"human"}` {
		t.Errorf("SaveCriterion by name updates: %+v %v", c2, err)
	}
	_, err = e.st.SaveCriterion(e.ctx, store.Criterion{DatasetID: d.ID, Name: "a", Definition: json.RawMessage(`[]`)})
	wantErr(t, "SaveCriterion of a list", err, store.ErrInvalid)
	_, err = e.st.SaveCriterion(e.ctx, store.Criterion{DatasetID: "00000000-0000-4000-8000-000000000000", Name: "a", Definition: json.RawMessage(`{}`)})
	wantErr(t, "SaveCriterion unknown dataset", err, store.ErrNotFound)
	cs, err := e.st.ListCriteria(e.ctx, d.ID)
	if err != nil || len(cs) != 1 || cs[0].Name != "solved" {
		t.Errorf("ListCriteria %+v %v", cs, err)
	}
	wantErr(t, "DeleteCriterion", e.st.DeleteCriterion(e.ctx, c1.ID), nil)
	wantErr(t, "DeleteCriterion again", e.st.DeleteCriterion(e.ctx, c1.ID), store.ErrNotFound)

	crit := json.RawMessage(`[{"name":"solved"}]`)
	r1, err := e.st.CreateRun(e.ctx, store.EvalRun{DatasetID: d.ID, Name: "first", Criteria: crit, Total: 3})
	if err != nil || r1.State != store.RunRunning || r1.Total != 3 || string(r1.Criteria) != string(crit) {
		t.Fatalf("CreateRun %+v %v", r1, err)
	}
	r2, err := e.st.CreateRun(e.ctx, store.EvalRun{DatasetID: d.ID, Name: "second", Criteria: crit, Total: 3})
	wantErr(t, "CreateRun", err, nil)
	_, err = e.st.CreateRun(e.ctx, store.EvalRun{DatasetID: d.ID, Criteria: crit, State: "sleeping"})
	wantErr(t, "CreateRun bad state", err, store.ErrInvalid)

	ok := func(trace, crit string) store.TraceStatus {
		return store.TraceStatus{TraceID: trace, Criterion: crit, Status: store.StatusEvaluated}
	}
	err = e.st.FinishTraces(e.ctx, r1.ID, []store.TraceResult{
		{TraceID: ids[0], Statuses: []store.TraceStatus{ok(ids[0], "solved")}, Scores: []store.Score{{TraceID: ids[0], Criterion: "solved", Value: json.RawMessage(`true`), Source: "code", RunID: r1.ID}}},
		{TraceID: ids[1], Statuses: []store.TraceStatus{{TraceID: ids[1], Criterion: "solved", Status: store.StatusError, Error: "boom"}}},
	})
	wantErr(t, "FinishTraces", err, nil)
	// A bad result leaves nothing of its batch.
	err = e.st.FinishTraces(e.ctx, r2.ID, []store.TraceResult{
		{TraceID: ids[2], Statuses: []store.TraceStatus{ok(ids[2], "solved")}},
		{TraceID: ids[0], Statuses: []store.TraceStatus{ok(ids[0], "solved")}, Scores: []store.Score{{TraceID: ids[0], Criterion: "solved", Value: json.RawMessage(`[1]`), Source: "code"}}},
	})
	wantErr(t, "FinishTraces with a bad score", err, store.ErrInvalid)
	err = e.st.FinishTraces(e.ctx, r2.ID, []store.TraceResult{{TraceID: ids[2], Statuses: []store.TraceStatus{{TraceID: ids[2], Criterion: "solved", Status: store.StatusInProgress}}}})
	wantErr(t, "FinishTraces with an in-progress status", err, store.ErrInvalid)
	st2, err := e.st.RunStatuses(e.ctx, r2.ID)
	if err != nil || len(st2) != 0 {
		t.Errorf("statuses of run 2 after failed finishes: %+v %v", st2, err)
	}
	wantErr(t, "FinishTraces run 2", e.st.FinishTraces(e.ctx, r2.ID, []store.TraceResult{{TraceID: ids[1], Statuses: []store.TraceStatus{ok(ids[1], "solved")}}}), nil)

	st1, err := e.st.RunStatuses(e.ctx, r1.ID)
	if err != nil || len(st1) != 2 || st1[0].TraceID != ids[0] || st1[0].Status != "evaluated" || st1[1].Status != "error" || st1[1].Error != "boom" {
		t.Errorf("RunStatuses %+v %v", st1, err)
	}
	latest, err := e.st.LatestStatuses(e.ctx, d.ID)
	if err != nil || len(latest) != 2 || latest[0].TraceID != ids[0] || latest[1].TraceID != ids[1] || latest[1].Status != "evaluated" {
		t.Errorf("LatestStatuses (trace b from the newer run) %+v %v", latest, err)
	}
	if sc := e.scores(store.ScoreFilter{TraceID: ids[0]}); len(sc) != 1 {
		t.Errorf("run scores %q", sc)
	}
	if sc := e.scores(store.ScoreFilter{RunID: r1.ID, History: true}); len(sc) != 1 || !strings.Contains(sc[0], "|solved|true|") {
		t.Errorf("scores by run %q", sc)
	}
	if sc := e.scores(store.ScoreFilter{RunID: r2.ID, History: true}); len(sc) != 0 {
		t.Errorf("scores of run 2 %q", sc)
	}

	wantErr(t, "SetRunState", e.st.SetRunState(e.ctx, r1.ID, store.RunDone, ""), nil)
	wantErr(t, "SetRunState bad", e.st.SetRunState(e.ctx, r1.ID, "nap", ""), store.ErrInvalid)
	wantErr(t, "SetRunState unknown", e.st.SetRunState(e.ctx, "00000000-0000-4000-8000-000000000000", store.RunDone, ""), store.ErrNotFound)
	runs, err := e.st.ListRuns(e.ctx, d.ID)
	if err != nil || len(runs) != 2 {
		t.Fatalf("ListRuns %+v %v", runs, err)
	}
	running, err := e.st.RunsIn(e.ctx, store.RunRunning)
	if err != nil || len(running) != 1 || running[0].ID != r2.ID {
		t.Errorf("RunsIn(running) %+v %v", running, err)
	}
	if r, err := e.st.Run(e.ctx, r1.ID); err != nil || r.State != store.RunDone || r.Name != "first" {
		t.Errorf("Run %+v %v", r, err)
	}
	testRunLeases(t, e, r1.ID, r2.ID)
	// Runs, their statuses and the criteria go with the dataset.
	wantErr(t, "DeleteDataset", e.st.DeleteDataset(e.ctx, d.ID), nil)
	_, err = e.st.Run(e.ctx, r1.ID)
	wantErr(t, "Run after DeleteDataset", err, store.ErrNotFound)
	_, err = e.st.RunStatuses(e.ctx, r1.ID)
	wantErr(t, "RunStatuses after DeleteDataset", err, store.ErrNotFound)
}

// testRunLeases: a running run's lease is held by one owner at a time,
// renewed by its owner, taken by another once released or expired, and
// a run that is not running has none to take.
func testRunLeases(t *testing.T, e *env, done, running string) {
	t.Helper()
	claim := func(id, owner string, lease time.Duration) bool {
		t.Helper()
		held, err := e.st.ClaimRun(e.ctx, id, owner, lease)
		if err != nil {
			t.Fatalf("ClaimRun(%s): %v", owner, err)
		}
		return held
	}
	if !claim(running, "a", time.Hour) || claim(running, "b", time.Hour) || !claim(running, "a", time.Hour) {
		t.Fatal("a's lease: want a to take and renew it, and b refused")
	}
	if claim(done, "a", time.Hour) {
		t.Error("a run that is done was claimed")
	}
	wantErr(t, "ReleaseRun by one that does not hold it", e.st.ReleaseRun(e.ctx, running, "b"), nil)
	if claim(running, "b", time.Hour) {
		t.Error("b took the lease after releasing one it did not hold")
	}
	wantErr(t, "ReleaseRun", e.st.ReleaseRun(e.ctx, running, "a"), nil)
	if !claim(running, "b", time.Millisecond) {
		t.Fatal("b could not take a released lease")
	}
	time.Sleep(20 * time.Millisecond) // past b's lease, by the database's clock too
	// Of owners claiming an expired lease at once, one gets it.
	var won atomic.Int32
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			held, err := e.st.ClaimRun(e.ctx, running, fmt.Sprintf("c%d", i), time.Hour)
			if err != nil {
				t.Errorf("ClaimRun c%d: %v", i, err)
			}
			if held {
				won.Add(1)
			}
		})
	}
	wg.Wait()
	if won.Load() != 1 {
		t.Errorf("%d of 8 owners took one expired lease; want 1", won.Load())
	}
	_, err := e.st.ClaimRun(e.ctx, running, "", time.Hour)
	wantErr(t, "ClaimRun without an owner", err, store.ErrInvalid)
	_, err = e.st.ClaimRun(e.ctx, running, "d", 0)
	wantErr(t, "ClaimRun without a lease", err, store.ErrInvalid)
}
