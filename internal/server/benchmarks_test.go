package server

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/lookout-dev/lookout/internal/store"
	"github.com/lookout-dev/lookout/internal/store/storetest"
)

// The benchmark endpoints' scenarios live here, run through the same cases
// as every other endpoint.
func init() {
	othersTest = append(othersTest, "/benchmarks")
	takesParams["GET /api/v1/benchmarks/{id}/leaderboard"] = true
	notApplicable["GET /api/v1/benchmarks"] = map[string]string{kUnknown: "a list: nothing to be unknown"}
}

func isBenchmarkRoute(route string) bool { return strings.Contains(route, "/api/v1/benchmarks") }

const quizCriteria = `[{"name": "solved", "evaluator": "code", "expr": "metadata.reward == 1"},
	{"name": "answer", "evaluator": "code", "compare": "contains"}]`

func TestBenchmarkScenarios(t *testing.T) {
	forEachBackend(t, func(t *testing.T, st storeUnderTest) {
		f := newFixture(t, st, Config{MaxBody: smallLimit})
		f.addUser("alice")
		f.addUser("bob")
		ids := map[string]string{
			"tasks":   f.createDataset("alice", "tasks", false),
			"apub":    f.createDataset("alice", "agent-pub", true),
			"bp":      f.createDataset("bob", "bob-agent", false),
			"unknown": "00000000-0000-4000-8000-000000000000",
		}
		tasks := f.push("alice", `{"dataset": "tasks", "messages": [
			[{"role": "user", "content": "6*7?"}, {"role": "assistant", "content": "42"}],
			[{"role": "user", "content": "capital of France?"}, {"role": "assistant", "content": "Paris"}],
			[{"role": "user", "content": "2+2?"}, {"role": "assistant", "content": "4"}]],
			"metadata": [{"task_id": 1, "answer": "42"}, {"task_id": 2, "answer": "Paris"}, {"task_id": 3, "answer": "4"}]}`)
		ids["t1"] = tasks[0]
		f.push("alice", `{"dataset": "agent-pub", "messages": [
			[{"role": "user", "content": "6*7?"}, {"role": "assistant", "content": "It is 42."}],
			[{"role": "user", "content": "capital of France?"}, {"role": "assistant", "content": "Lyon"}]],
			"metadata": [{"task_id": 1, "reward": 1}, {"task_id": 2, "reward": 1}]}`)
		ids["bt"] = f.push("bob", `{"dataset": "bob-agent", "messages": [[{"role": "user", "content": "6*7?"}, {"role": "assistant", "content": "42"}],
			[{"role": "user", "content": "2+2?"}, {"role": "assistant", "content": "4"}]],
			"metadata": [{"task_id": 1, "reward": 1}, {"task_id": 3.0, "reward": 1}]}`)[0]
		var b struct{ ID string }
		f.must(201, "POST", "/api/v1/benchmarks", "alice", `{"name": "quiz", "dataset": "`+ids["tasks"]+`", "reference": "answer", "criteria": `+quizCriteria+`}`).json(t, &b)
		ids["quiz"] = b.ID
		var warned struct {
			ID       string
			Warnings []string
		}
		f.must(201, "POST", "/api/v1/benchmarks", "alice", `{"name": "open", "public": true, "dataset": "`+ids["tasks"]+`", "reference": "answer", "criteria": `+quizCriteria+`}`).json(t, &warned)
		ids["open"] = warned.ID
		if len(warned.Warnings) != 1 || !strings.Contains(warned.Warnings[0], `dataset "tasks" is private`) {
			t.Errorf("a public benchmark of a private dataset: warnings %q", warned.Warnings)
		}
		warned.Warnings = nil
		f.must(201, "POST", "/api/v1/benchmarks", "alice", `{"name": "open-of-public", "public": true, "dataset": "`+ids["apub"]+`", "criteria": `+quizCriteria+`}`).json(t, &warned)
		if len(warned.Warnings) != 0 {
			t.Errorf("a public benchmark of a public dataset: warnings %q", warned.Warnings)
		}
		f.must(201, "POST", "/api/v1/benchmarks", "alice", `{"name": "gone", "dataset": "`+ids["tasks"]+`", "criteria": `+quizCriteria+`}`).json(t, &b)
		ids["gone"] = b.ID
		f.must(201, "POST", "/api/v1/benchmarks/"+ids["open"]+"/runs", "bob", `{"dataset": "`+ids["bp"]+`"}`)

		big := `{"dataset": "` + strings.Repeat("x", smallLimit) + `"}`
		create := func(extra string) string {
			return `{"name": "quiz", "dataset": "{tasks}", "reference": "answer", "criteria": ` + quizCriteria + extra + `}`
		}
		scenarios := []scenario{
			{name: "create: the next version, tasks frozen with references", kind: kSuccess, method: "POST", path: "/api/v1/benchmarks", user: "alice",
				body: create(""), status: 201,
				want: []string{`"name":"quiz","version":2`, `"key":"task_id"`, `"item_count":3`, `"source_dataset_id":"{tasks}"`,
					`"items":\[\{"key":"1","reference":"42","trace_id":"{t1}","input":"6\*7\?"\}`}},
			{name: "create: hand-picked traces", method: "POST", path: "/api/v1/benchmarks", user: "alice",
				body: create(`, "trace_ids": ["{t1}"]`), status: 201, want: []string{`"version":3`, `"item_count":1`}},
			{name: "create: a search query selects the tasks", method: "POST", path: "/api/v1/benchmarks", user: "alice",
				body: create(`, "query": "France OR \"2+2\""`), status: 201, want: []string{`"version":4`, `"item_count":2`, `"key":"2"`, `"key":"3"`}, absent: []string{`"key":"1"`}},
			{name: "create: a bad query says where", method: "POST", path: "/api/v1/benchmarks", user: "alice",
				body: create(`, "query": "(France"`), status: 400, want: []string{`"code":"invalid_query"`}},
			{name: "create: query and trace ids", method: "POST", path: "/api/v1/benchmarks", user: "alice",
				body: create(`, "query": "x", "trace_ids": []`), status: 422, want: []string{`not both`}},
			{name: "create: a trace of another dataset", method: "POST", path: "/api/v1/benchmarks", user: "alice",
				body: create(`, "trace_ids": ["{unknown}"]`), status: 422, want: []string{`trace {unknown} is not in dataset tasks`}},
			{name: "create: a trace of another user's dataset is answered as a missing one", method: "POST", path: "/api/v1/benchmarks", user: "alice",
				body: create(`, "trace_ids": ["{bt}"]`), status: 422, want: []string{`trace {bt} is not in dataset tasks`}},
			{name: "create: traces without the key", method: "POST", path: "/api/v1/benchmarks", user: "alice",
				body: create(`, "key": "nope"`), status: 422, want: []string{`trace 0 \({t1}\) has no task key`}},
			{name: "create: a reference for a task not selected", method: "POST", path: "/api/v1/benchmarks", user: "alice",
				body: create(`, "references": {"9": "x"}`), status: 422, want: []string{`task \\"9\\" is not among`}},
			{name: "create: a human criterion", method: "POST", path: "/api/v1/benchmarks", user: "alice",
				body: `{"name": "q", "dataset": "{tasks}", "criteria": [{"name": "h", "evaluator": "human"}]}`, status: 422, want: []string{`no human criteria`}},
			{name: "create: a policy that does not parse", method: "POST", path: "/api/v1/benchmarks", user: "alice",
				body: `{"name": "q", "dataset": "{tasks}", "criteria": [{"name": "r", "evaluator": "rule", "policy": "raise if"}]}`, status: 422, want: []string{`invalid criteria`}},
			{name: "create: no criteria", method: "POST", path: "/api/v1/benchmarks", user: "alice",
				body: `{"name": "q", "dataset": "{tasks}"}`, status: 422, want: []string{`needs \\"criteria\\"`}},
			{name: "create: bad JSON", kind: kBadJSON, method: "POST", path: "/api/v1/benchmarks", user: "alice",
				body: `{"name": "q",, }`, status: 400, want: []string{`line 1, column 14`}},
			{name: "create: trace ids of the wrong type", kind: kTypes, method: "POST", path: "/api/v1/benchmarks", user: "alice",
				body: `{"name": "q", "dataset": "{tasks}", "trace_ids": [1]}`, status: 422, want: []string{`\$\.trace_ids\[0\]`}},
			{name: "create: without auth", kind: kNoAuth, method: "POST", path: "/api/v1/benchmarks", user: "",
				body: create(""), status: 401},
			{name: "create: from another user's private dataset", kind: kPrivate, method: "POST", path: "/api/v1/benchmarks", user: "bob",
				body: create(""), status: 404},
			{name: "create: too large", kind: kTooLarge, method: "POST", path: "/api/v1/benchmarks", user: "alice", body: big, status: 413},
			{name: "create: from an unknown dataset", kind: kUnknown, method: "POST", path: "/api/v1/benchmarks", user: "alice",
				body: strings.Replace(create(""), "{tasks}", "{unknown}", 1), status: 404},

			{name: "list: mine and public", kind: kSuccess, method: "GET", path: "/api/v1/benchmarks", user: "alice", status: 200,
				want: []string{`"name":"quiz","version":1`, `"name":"open"`}, absent: []string{`"items"`}},
			{name: "list: anonymously, public ones", kind: kNoAuth, method: "GET", path: "/api/v1/benchmarks", user: "", status: 200,
				want: []string{`"name":"open"`}, absent: []string{`"name":"quiz"`}},
			{name: "list: not another user's private ones", kind: kPrivate, method: "GET", path: "/api/v1/benchmarks", user: "bob", status: 200,
				want: []string{`"name":"open"`}, absent: []string{`"name":"quiz"`, `"name":"gone"`}},

			{name: "get: with tasks and criteria", kind: kSuccess, method: "GET", path: "/api/v1/benchmarks/{quiz}", user: "alice", status: 200,
				want: []string{`"items":\[`, `"criteria":\[\{"name":"solved"`, `"owner":"alice"`}},
			{name: "get: a private one anonymously", kind: kNoAuth, method: "GET", path: "/api/v1/benchmarks/{quiz}", user: "", status: 404},
			{name: "get: another user's private one", kind: kPrivate, method: "GET", path: "/api/v1/benchmarks/{quiz}", user: "bob", status: 404},
			{name: "get: another user's public one", method: "GET", path: "/api/v1/benchmarks/{open}", user: "bob", status: 200},
			{name: "get: unknown", kind: kUnknown, method: "GET", path: "/api/v1/benchmarks/{unknown}", user: "alice", status: 404},

			{name: "run: a dataset against the benchmark", kind: kSuccess, method: "POST", path: "/api/v1/benchmarks/{open}/runs", user: "alice",
				body: `{"dataset": "{apub}"}`, status: 201,
				// Task 1 passes both criteria; task 2 is solved by reward but
				// "Lyon" does not contain the reference "Paris"; task 3 is missing.
				want: []string{`"accuracy":0.3333333333333333`, `"dataset":"agent-pub"`, `"tasks":3,"covered":2,"missing":1,"traces":2,"extra":0,"passed":1`,
					`\{"key":"1","traces":1,"passed":1,"score":1,"trace_ids":\["[^"]+"\]\}`, `\{"key":"3","traces":0,"passed":0,"score":0,"trace_ids":\[\]\}`}},
			{name: "run: bad JSON", kind: kBadJSON, method: "POST", path: "/api/v1/benchmarks/{open}/runs", user: "alice", body: `{"dataset"}`, status: 400},
			{name: "run: dataset of the wrong type", kind: kTypes, method: "POST", path: "/api/v1/benchmarks/{open}/runs", user: "alice", body: `{"dataset": 1}`, status: 422,
				want: []string{`\$\.dataset`}},
			{name: "run: no dataset", method: "POST", path: "/api/v1/benchmarks/{open}/runs", user: "alice", body: `{}`, status: 422},
			{name: "run: without auth", kind: kNoAuth, method: "POST", path: "/api/v1/benchmarks/{open}/runs", user: "", body: `{"dataset": "{apub}"}`, status: 401},
			{name: "run: another user's private dataset", kind: kPrivate, method: "POST", path: "/api/v1/benchmarks/{open}/runs", user: "bob", body: `{"dataset": "{tasks}"}`, status: 404},
			{name: "run: another user's public dataset", method: "POST", path: "/api/v1/benchmarks/{open}/runs", user: "bob", body: `{"dataset": "{apub}"}`, status: 403},
			{name: "run: another user's private benchmark", method: "POST", path: "/api/v1/benchmarks/{quiz}/runs", user: "bob", body: `{"dataset": "{bp}"}`, status: 404},
			{name: "run: too large", kind: kTooLarge, method: "POST", path: "/api/v1/benchmarks/{open}/runs", user: "alice", body: big, status: 413},
			{name: "run: unknown dataset", kind: kUnknown, method: "POST", path: "/api/v1/benchmarks/{open}/runs", user: "alice", body: `{"dataset": "{unknown}"}`, status: 404},

			{name: "leaderboard: best first", kind: kSuccess, method: "GET", path: "/api/v1/benchmarks/{open}/leaderboard", user: "bob", status: 200,
				want: []string{`"entries":\[\{[^\]]*"dataset":"bob-agent"[^\]]*"accuracy":0.6666666666666666.*"dataset":"agent-pub"`}, absent: []string{`"items"`}},
			{name: "leaderboard: with each task", method: "GET", path: "/api/v1/benchmarks/{open}/leaderboard?items=true", user: "alice", status: 200,
				want: []string{`"items":\[\{"key":"1"`}},
			{name: "leaderboard: anonymously, public datasets only", kind: kNoAuth, method: "GET", path: "/api/v1/benchmarks/{open}/leaderboard", user: "", status: 200,
				want: []string{`"dataset":"agent-pub"`}, absent: []string{`bob-agent`}},
			{name: "leaderboard: items of the wrong type", kind: kTypes, method: "GET", path: "/api/v1/benchmarks/{open}/leaderboard?items=maybe", user: "alice", status: 400},
			{name: "leaderboard: another user's private benchmark", kind: kPrivate, method: "GET", path: "/api/v1/benchmarks/{quiz}/leaderboard", user: "bob", status: 404},
			{name: "leaderboard: unknown", kind: kUnknown, method: "GET", path: "/api/v1/benchmarks/{unknown}/leaderboard", user: "alice", status: 404},

			{name: "delete: another user's public one", method: "DELETE", path: "/api/v1/benchmarks/{open}", user: "bob", status: 403},
			{name: "delete: another user's private one", kind: kPrivate, method: "DELETE", path: "/api/v1/benchmarks/{gone}", user: "bob", status: 404},
			{name: "delete: without auth", kind: kNoAuth, method: "DELETE", path: "/api/v1/benchmarks/{gone}", user: "", status: 401},
			{name: "delete", kind: kSuccess, method: "DELETE", path: "/api/v1/benchmarks/{gone}", user: "alice", status: 204},
			{name: "delete: gone", method: "DELETE", path: "/api/v1/benchmarks/{gone}", user: "alice", status: 404},
			{name: "delete: unknown", kind: kUnknown, method: "DELETE", path: "/api/v1/benchmarks/{unknown}", user: "alice", status: 404},
		}
		pairs := []string{}
		for k, v := range ids {
			pairs = append(pairs, "{"+k+"}", v)
		}
		expand := strings.NewReplacer(pairs...)
		for i := range scenarios {
			scenarios[i].body = expand.Replace(scenarios[i].body)
		}
		checkAreaCoverage(t, f.srv, scenarios, expand, isBenchmarkRoute, 6)
		runScenarios(t, f, scenarios, expand)

		// A run writes the accuracy into the dataset's metadata.
		f.must(200, "GET", "/api/v1/datasets/"+ids["apub"], "alice", "")
		d, err := f.st.Dataset(context.Background(), ids["apub"])
		if err != nil {
			t.Fatal(err)
		}
		for _, want := range []string{`"benchmark":"open"`, `"benchmark_version":1`, `"accuracy":0.3333333333333333`} {
			if !strings.Contains(string(d.Metadata), want) {
				t.Errorf("agent-pub's metadata %s lacks %s", d.Metadata, want)
			}
		}
	})
}

// TestBenchmarkTauBench makes a benchmark of the tau-bench airline tasks
// and scores two agents' datasets against it; the test recomputes each
// accuracy from the traces' own rewards.
func TestBenchmarkTauBench(t *testing.T) {
	tau := storetest.TauBench(t)
	forEachBackend(t, func(t *testing.T, st storeUnderTest) {
		ctx := context.Background()
		f := newFixture(t, st, Config{})
		u := f.addUser("alice")
		add := func(name string, keep func(task int) bool) (string, map[int][]float64) {
			d, err := f.st.CreateDataset(ctx, store.Dataset{OwnerID: u.ID, Name: name})
			if err != nil {
				t.Fatal(err)
			}
			rewards := map[int][]float64{}
			var nts []store.NewTrace
			for _, tr := range tau {
				var m struct {
					TaskID int     `json:"task_id"`
					Reward float64 `json:"reward"`
				}
				if err := json.Unmarshal(tr.Metadata, &m); err != nil {
					t.Fatal(err)
				}
				if keep(m.TaskID) {
					rewards[m.TaskID] = append(rewards[m.TaskID], m.Reward)
					nts = append(nts, storetest.NewTraceOf(tr, "alice"))
				}
			}
			if _, err := f.st.AddTraces(ctx, u.ID, d.ID, nts); err != nil {
				t.Fatal(err)
			}
			return d.ID, rewards
		}
		src, all := add("airline-tasks", func(int) bool { return true })
		half, halfRewards := add("agent-half", func(task int) bool { return task%2 == 0 })

		// The tasks; no-cancel fails a trace that cancels a reservation.
		criteria := `[{"name": "solved", "evaluator": "code", "expr": "metadata.reward == 1"},
			{"name": "no-cancel", "evaluator": "rule", "policy": "raise \"cancel\" if:\n    (call: ToolCall)\n    call is tool:cancel_reservation\n"}]`
		var b benchmarkJSON
		f.must(201, "POST", "/api/v1/benchmarks", "alice", `{"name": "airline", "dataset": "`+src+`", "reference": "info.task.outputs", "criteria": `+criteria+`}`).json(t, &b)
		if b.ItemCount != len(all) || b.Version != 1 {
			t.Fatalf("benchmark %d tasks v%d, want %d v1", b.ItemCount, b.Version, len(all))
		}
		// Only solved: the expected accuracy is the mean over all tasks of
		// the share of their trials with reward 1.
		onlySolved := `[{"name": "solved", "evaluator": "code", "expr": "metadata.reward == 1"}]`
		var solvedOnly benchmarkJSON
		f.must(201, "POST", "/api/v1/benchmarks", "alice", `{"name": "airline", "dataset": "`+src+`", "criteria": `+onlySolved+`}`).json(t, &solvedOnly)
		if solvedOnly.Version != 2 {
			t.Fatalf("second version %d", solvedOnly.Version)
		}
		want := func(rewards map[int][]float64) float64 {
			var sum float64
			for task := range all {
				rs := rewards[task]
				ok := 0
				for _, r := range rs {
					if r == 1 {
						ok++
					}
				}
				if len(rs) > 0 {
					sum += float64(ok) / float64(len(rs))
				}
			}
			return sum / float64(len(all))
		}
		type result struct {
			Accuracy float64
			Summary  struct {
				Tasks, Covered, Missing, Traces, Passed int
				Criteria                                []struct {
					Criterion      string
					Passed, Failed int
				}
			}
		}
		run := func(benchID, datasetID string) result {
			var r result
			f.must(201, "POST", "/api/v1/benchmarks/"+benchID+"/runs", "alice", `{"dataset": "`+datasetID+`"}`).json(t, &r)
			return r
		}
		full := run(solvedOnly.ID, src)
		if math.Abs(full.Accuracy-want(all)) > 1e-12 || full.Summary.Missing != 0 || full.Summary.Traces != len(tau) {
			t.Errorf("full dataset: %+v, want accuracy %v", full, want(all))
		}
		h := run(solvedOnly.ID, half)
		if math.Abs(h.Accuracy-want(halfRewards)) > 1e-12 || h.Summary.Missing != len(all)-len(halfRewards) {
			t.Errorf("half dataset: %+v, want accuracy %v", h, want(halfRewards))
		}
		// With the rule as well, a trace must also not cancel: the accuracy
		// can only fall, and the rule's failures are counted.
		both := run(b.ID, src)
		var rule struct{ Passed, Failed int }
		for _, c := range both.Summary.Criteria {
			if c.Criterion == "no-cancel" {
				rule.Passed, rule.Failed = c.Passed, c.Failed
			}
		}
		if both.Accuracy > full.Accuracy || rule.Failed == 0 || rule.Passed+rule.Failed != len(tau) {
			t.Errorf("with the rule: accuracy %v (solved alone %v), no-cancel %+v", both.Accuracy, full.Accuracy, rule)
		}

		// With server-sent events: progress up to every trace, then the same
		// result.
		stream := f.do("POST", "/api/v1/benchmarks/"+solvedOnly.ID+"/runs", "alice", strings.NewReader(`{"dataset": "`+src+`"}`),
			"Content-Type", "application/json", "Accept", "text/event-stream")
		events := regexp.MustCompile(`(?m)^event: (\w+)\ndata: (.*)$`).FindAllStringSubmatch(string(stream.body), -1)
		if stream.status != 200 || len(events) < 2 {
			t.Fatalf("stream: %d %s", stream.status, stream.body)
		}
		last, final := events[len(events)-2], events[len(events)-1]
		var streamed result
		if last[1] != "progress" || last[2] != fmt.Sprintf(`{"done":%d,"total":%d}`, len(tau), len(tau)) ||
			final[1] != "done" || json.Unmarshal([]byte(final[2]), &streamed) != nil || streamed.Accuracy != full.Accuracy {
			t.Errorf("stream ends with %q then %q", last, final)
		}

		// The leaderboard of version 2: the full run first; the datasets'
		// metadata name the benchmark and carry the accuracy.
		var board struct {
			Entries []struct {
				Dataset  string
				Accuracy float64
			}
		}
		f.must(200, "GET", "/api/v1/benchmarks/"+solvedOnly.ID+"/leaderboard", "alice", "").json(t, &board)
		if len(board.Entries) != 2 || board.Entries[0].Dataset != "airline-tasks" || board.Entries[1].Dataset != "agent-half" {
			t.Errorf("leaderboard %+v", board)
		}
		d, err := f.st.Dataset(ctx, half)
		if err != nil {
			t.Fatal(err)
		}
		var meta struct {
			Benchmark        string
			BenchmarkVersion int `json:"benchmark_version"`
			Accuracy         float64
		}
		if err := json.Unmarshal(d.Metadata, &meta); err != nil || meta.Benchmark != "airline" || meta.BenchmarkVersion != 2 || meta.Accuracy != h.Accuracy {
			t.Errorf("agent-half metadata %s (%v)", d.Metadata, err)
		}
		// The tasks are frozen: deleting the source dataset keeps them.
		f.must(204, "DELETE", "/api/v1/datasets/"+src, "alice", "")
		var after benchmarkJSON
		f.must(200, "GET", "/api/v1/benchmarks/"+b.ID, "alice", "").json(t, &after)
		var items []struct{ Key string }
		if err := json.Unmarshal(after.Items, &items); err != nil || len(items) != len(all) || after.SourceDatasetID != "" {
			t.Errorf("after deleting the source: %d items, source %q (%v)", len(items), after.SourceDatasetID, err)
		}
		if _, err := strconv.Atoi(items[0].Key); err != nil {
			t.Errorf("task key %q is not tau-bench's task_id", items[0].Key)
		}
	})
}
