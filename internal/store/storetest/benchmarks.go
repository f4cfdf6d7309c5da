package storetest

import (
	"encoding/json"
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/lookout-dev/lookout/internal/store"
)

func testBenchmarks(t *testing.T, open func(t *testing.T) store.Store) {
	e := newEnv(t, open)
	alice, bob := e.user("alice"), e.user("bob")
	src := e.dataset(alice, "tasks", false)
	runA := e.dataset(alice, "agent-a", false)
	runB := e.dataset(bob, "agent-b", true)

	create := func(b store.Benchmark) store.Benchmark {
		t.Helper()
		out, err := e.st.CreateBenchmark(e.ctx, b)
		if err != nil {
			t.Fatalf("CreateBenchmark(%q): %v", b.Name, err)
		}
		return out
	}
	items := json.RawMessage(`[ {"key": "1", "reference": "42"}, {"key":"2","reference":null} ]`)
	criteria := json.RawMessage(`[{"name":"solved","evaluator":"code","expr":"metadata.reward == 1"}]`)
	v1 := create(store.Benchmark{OwnerID: alice.ID, Name: "airline", Description: "d1", SourceDatasetID: src.ID,
		Key: "task_id", Criteria: criteria, Items: items, ItemCount: 2})
	if v1.Version != 1 || v1.OwnerName != "alice" || v1.SourceDatasetID != src.ID || v1.Key != "task_id" || v1.ItemCount != 2 || v1.Public {
		t.Fatalf("first version %+v", v1)
	}
	if string(v1.Items) != `[{"key":"1","reference":"42"},{"key":"2","reference":null}]` || string(v1.Criteria) != string(criteria) {
		t.Errorf("items %s criteria %s: want them as given, compacted", v1.Items, v1.Criteria)
	}
	checkTime(t, "benchmark created_at", v1.CreatedAt)
	// The same name again is the next version; another owner's starts at 1;
	// versions made at once all get numbers of their own.
	v2 := create(store.Benchmark{OwnerID: alice.ID, Name: "airline", Key: "task_id", Criteria: criteria, Items: json.RawMessage(`[]`), Public: true})
	if v2.Version != 2 || v2.SourceDatasetID != "" || !v2.Public {
		t.Fatalf("second version %+v", v2)
	}
	var wg sync.WaitGroup
	versions := make([]int, 4)
	for i := range versions {
		wg.Add(1)
		go func() {
			defer wg.Done()
			b, err := e.st.CreateBenchmark(e.ctx, store.Benchmark{OwnerID: bob.ID, Name: "airline", Key: "k", Criteria: criteria, Items: items})
			if err != nil {
				t.Errorf("concurrent CreateBenchmark: %v", err)
				return
			}
			versions[i] = b.Version
		}()
	}
	wg.Wait()
	slices.Sort(versions)
	if !slices.Equal(versions, []int{1, 2, 3, 4}) {
		t.Errorf("concurrent versions %v, want 1 to 4", versions)
	}

	got, err := e.st.Benchmark(e.ctx, v1.ID)
	if err != nil || got.Version != 1 || string(got.Items) != string(v1.Items) || got.Description != "d1" {
		t.Fatalf("Benchmark(v1) = %+v, %v", got, err)
	}
	// Alice sees her two versions, Bob's four (all private) stay his;
	// a third user sees only the public one.
	names := func(userID string) []string {
		t.Helper()
		bs, err := e.st.ListBenchmarks(e.ctx, userID)
		if err != nil {
			t.Fatalf("ListBenchmarks: %v", err)
		}
		var out []string
		for _, b := range bs {
			if b.Items != nil {
				t.Errorf("ListBenchmarks returned the items of %s v%d", b.Name, b.Version)
			}
			out = append(out, fmt.Sprintf("%s/%s@%d", b.OwnerName, b.Name, b.Version))
		}
		return out
	}
	if got := names(alice.ID); !slices.Equal(got, []string{"alice/airline@2", "alice/airline@1"}) {
		t.Errorf("alice's list %q", got)
	}
	if got := names(bob.ID); len(got) != 5 {
		t.Errorf("bob's list %q: want his 4 and alice's public one", got)
	}
	carol := e.user("carol")
	if got := names(carol.ID); !slices.Equal(got, []string{"alice/airline@2"}) {
		t.Errorf("carol's list %q", got)
	}

	// Results: one per dataset and version, replaced by a rerun, best first.
	addResult := func(r store.BenchmarkResult) store.BenchmarkResult {
		t.Helper()
		out, err := e.st.AddBenchmarkResult(e.ctx, r)
		if err != nil {
			t.Fatalf("AddBenchmarkResult: %v", err)
		}
		return out
	}
	ra := addResult(store.BenchmarkResult{BenchmarkID: v1.ID, DatasetID: runA.ID, Accuracy: 0.25,
		Summary: json.RawMessage(`{"items": 2}`), Items: json.RawMessage(`[{"key":"1","score":0.5}]`)})
	if ra.DatasetName != "agent-a" || ra.OwnerName != "alice" || ra.Accuracy != 0.25 || string(ra.Summary) != `{"items":2}` {
		t.Fatalf("result %+v", ra)
	}
	checkTime(t, "result created_at", ra.CreatedAt)
	addResult(store.BenchmarkResult{BenchmarkID: v1.ID, DatasetID: runB.ID, Accuracy: 0.5, Summary: json.RawMessage(`{}`), Items: json.RawMessage(`[]`)})
	rerun := addResult(store.BenchmarkResult{BenchmarkID: v1.ID, DatasetID: runA.ID, Accuracy: 0.75, Summary: json.RawMessage(`{"items": 2, "again": true}`), Items: json.RawMessage(`[]`)})
	board := func(id string) []string {
		t.Helper()
		rs, err := e.st.BenchmarkResults(e.ctx, id)
		if err != nil {
			t.Fatalf("BenchmarkResults: %v", err)
		}
		out := []string{}
		for _, r := range rs {
			out = append(out, fmt.Sprintf("%s:%g:%s", r.DatasetName, r.Accuracy, r.Summary))
		}
		return out
	}
	if got, want := board(v1.ID), []string{`agent-a:0.75:{"items":2,"again":true}`, "agent-b:0.5:{}"}; !slices.Equal(got, want) {
		t.Errorf("leaderboard\n got %q\nwant %q", got, want)
	}
	if rerun.ID == ra.ID {
		t.Errorf("a rerun kept the old result's id")
	}
	if got := board(v2.ID); len(got) != 0 {
		t.Errorf("v2's leaderboard %q, want empty", got)
	}

	// Bad input is refused and stores nothing.
	for name, b := range map[string]store.Benchmark{
		"no name":        {OwnerID: alice.ID, Key: "k", Criteria: criteria, Items: items},
		"no key":         {OwnerID: alice.ID, Name: "x", Criteria: criteria, Items: items},
		"items object":   {OwnerID: alice.ID, Name: "x", Key: "k", Criteria: criteria, Items: json.RawMessage(`{}`)},
		"criteria null":  {OwnerID: alice.ID, Name: "x", Key: "k", Criteria: json.RawMessage(`null`), Items: items},
		"NUL in name":    {OwnerID: alice.ID, Name: "a\x00b", Key: "k", Criteria: criteria, Items: items},
		"negative count": {OwnerID: alice.ID, Name: "x", Key: "k", Criteria: criteria, Items: items, ItemCount: -1},
	} {
		_, err := e.st.CreateBenchmark(e.ctx, b)
		wantErr(t, "CreateBenchmark "+name, err, store.ErrInvalid)
	}
	_, err = e.st.CreateBenchmark(e.ctx, store.Benchmark{OwnerID: missingID, Name: "x", Key: "k", Criteria: criteria, Items: items})
	wantErr(t, "CreateBenchmark of a missing owner", err, store.ErrNotFound)
	_, err = e.st.CreateBenchmark(e.ctx, store.Benchmark{OwnerID: alice.ID, Name: "x", Key: "k", SourceDatasetID: missingID, Criteria: criteria, Items: items})
	wantErr(t, "CreateBenchmark from a missing dataset", err, store.ErrNotFound)
	for name, r := range map[string]store.BenchmarkResult{
		"accuracy over 1":  {BenchmarkID: v1.ID, DatasetID: runA.ID, Accuracy: 1.5, Summary: json.RawMessage(`{}`), Items: json.RawMessage(`[]`)},
		"summary an array": {BenchmarkID: v1.ID, DatasetID: runA.ID, Summary: json.RawMessage(`[]`), Items: json.RawMessage(`[]`)},
	} {
		_, err := e.st.AddBenchmarkResult(e.ctx, r)
		wantErr(t, "AddBenchmarkResult "+name, err, store.ErrInvalid)
	}
	_, err = e.st.AddBenchmarkResult(e.ctx, store.BenchmarkResult{BenchmarkID: v1.ID, DatasetID: missingID, Summary: json.RawMessage(`{}`), Items: json.RawMessage(`[]`)})
	wantErr(t, "AddBenchmarkResult of a missing dataset", err, store.ErrNotFound)
	_, err = e.st.AddBenchmarkResult(e.ctx, store.BenchmarkResult{BenchmarkID: missingID, DatasetID: runA.ID, Summary: json.RawMessage(`{}`), Items: json.RawMessage(`[]`)})
	wantErr(t, "AddBenchmarkResult to a missing benchmark", err, store.ErrNotFound)
	if got := names(alice.ID); len(got) != 2 {
		t.Errorf("after refused creations alice has %q", got)
	}

	// Deleting a dataset drops its results and unlinks benchmarks made from
	// it; deleting a version drops its results; the other versions stay.
	if err := e.st.DeleteDataset(e.ctx, runB.ID); err != nil {
		t.Fatal(err)
	}
	if got := board(v1.ID); len(got) != 1 {
		t.Errorf("leaderboard after deleting agent-b: %q", got)
	}
	if err := e.st.DeleteDataset(e.ctx, src.ID); err != nil {
		t.Fatal(err)
	}
	if got, err := e.st.Benchmark(e.ctx, v1.ID); err != nil || got.SourceDatasetID != "" || got.ItemCount != 2 {
		t.Errorf("v1 after deleting its source: %+v, %v (want it kept, unlinked)", got, err)
	}
	if err := e.st.DeleteBenchmark(e.ctx, v1.ID); err != nil {
		t.Fatal(err)
	}
	_, err = e.st.Benchmark(e.ctx, v1.ID)
	wantErr(t, "Benchmark after delete", err, store.ErrNotFound)
	_, err = e.st.BenchmarkResults(e.ctx, v1.ID)
	wantErr(t, "BenchmarkResults after delete", err, store.ErrNotFound)
	wantErr(t, "DeleteBenchmark twice", e.st.DeleteBenchmark(e.ctx, v1.ID), store.ErrNotFound)
	if got := names(alice.ID); !slices.Equal(got, []string{"alice/airline@2"}) {
		t.Errorf("after delete alice has %q", got)
	}
	for _, id := range []string{"nope", "", missingID} {
		_, err := e.st.Benchmark(e.ctx, id)
		wantErr(t, fmt.Sprintf("Benchmark(%q)", id), err, store.ErrNotFound)
		wantErr(t, fmt.Sprintf("DeleteBenchmark(%q)", id), e.st.DeleteBenchmark(e.ctx, id), store.ErrNotFound)
		_, err = e.st.BenchmarkResults(e.ctx, id)
		wantErr(t, fmt.Sprintf("BenchmarkResults(%q)", id), err, store.ErrNotFound)
	}
}
