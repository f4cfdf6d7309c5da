package server

import (
	"context"
	"encoding/json"
	"path/filepath"
	"testing"
	"time"

	"github.com/lookout-dev/lookout/internal/eval"
	"github.com/lookout-dev/lookout/internal/store"
	"github.com/lookout-dev/lookout/internal/store/sqlite"
	"github.com/lookout-dev/lookout/internal/trace"
)

// TestStartAndClose: Start takes up a run an earlier server left running
// and Close waits for the background work; a closed server starts
// nothing, and Close may be called again.
func TestStartAndClose(t *testing.T) {
	ctx := context.Background()
	st, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "lookout.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	u, err := st.CreateUser(ctx, "alice", "x")
	if err != nil {
		t.Fatal(err)
	}
	d, err := st.CreateDataset(ctx, store.Dataset{OwnerID: u.ID, Name: "d"})
	if err != nil {
		t.Fatal(err)
	}
	var nts []store.NewTrace
	for _, reward := range []string{"1", "0", "1"} {
		nts = append(nts, store.NewTrace{Trace: &trace.Trace{
			Events:   []trace.Event{{Role: "user", Content: trace.TextContent("hi")}},
			Metadata: json.RawMessage(`{"reward": ` + reward + `}`)}})
	}
	if _, err := st.AddTraces(ctx, u.ID, d.ID, nts); err != nil {
		t.Fatal(err)
	}
	cs, err := eval.ParseCriteria([]byte(`[{"name": "solved", "evaluator": "code", "expr": "metadata.reward == 1"}]`))
	if err != nil {
		t.Fatal(err)
	}
	frozen, _ := json.Marshal(cs)
	run, err := st.CreateRun(ctx, store.EvalRun{DatasetID: d.ID, Name: "left running", Criteria: frozen, Total: 3})
	if err != nil {
		t.Fatal(err)
	}

	closed := New(Config{Store: st})
	closed.Close()
	closed.Close()
	if err := closed.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if ss, err := st.RunStatuses(ctx, run.ID); err != nil || len(ss) != 0 {
		t.Fatalf("a closed server graded %d traces (%v), want none", len(ss), err)
	}

	srv := New(Config{Store: st})
	if err := srv.Start(ctx); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		got, err := st.Run(ctx, run.ID)
		if err != nil {
			t.Fatal(err)
		}
		if got.State == store.RunDone {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("run still %s after 10 s", got.State)
		}
		time.Sleep(10 * time.Millisecond)
	}
	srv.Close()
	ss, err := st.RunStatuses(ctx, run.ID)
	if err != nil || len(ss) != 3 {
		t.Fatalf("%d statuses (%v), want 3", len(ss), err)
	}
}
