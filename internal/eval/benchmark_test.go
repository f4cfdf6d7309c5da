package eval

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/lookout-dev/lookout/internal/formats/invariant"
	"github.com/lookout-dev/lookout/internal/testcorpus"
	"github.com/lookout-dev/lookout/internal/trace"
)

// tauBench decodes the tau-bench file with the importer.
func tauBench(t *testing.T) []SourceTrace {
	t.Helper()
	tauBenchFile := testcorpus.File(t, "openai/tau-bench/gpt-4o-airline.json")
	f, err := os.Open(tauBenchFile)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	dec := invariant.NewDecoder(f, tauBenchFile)
	var out []SourceTrace
	for {
		tr, err := dec.Next()
		if err != nil {
			break
		}
		out = append(out, SourceTrace{ID: fmt.Sprintf("t%d", len(out)), Index: int64(len(out)), Trace: tr})
	}
	if len(out) != 200 {
		t.Fatalf("decoded %d tau-bench traces, want 200", len(out))
	}
	return out
}

// rawRuns reads the same file with encoding/json, apart from the importer.
func rawRuns(t *testing.T) []struct {
	TaskID int     `json:"task_id"`
	Reward float64 `json:"reward"`
	Trial  int     `json:"trial"`
} {
	t.Helper()
	data, err := os.ReadFile(testcorpus.File(t, "openai/tau-bench/gpt-4o-airline.json"))
	if err != nil {
		t.Fatal(err)
	}
	var runs []struct {
		TaskID int     `json:"task_id"`
		Reward float64 `json:"reward"`
		Trial  int     `json:"trial"`
	}
	if err := json.Unmarshal(data, &runs); err != nil {
		t.Fatal(err)
	}
	return runs
}

func TestBenchmarkOverTauBench(t *testing.T) {
	src := tauBench(t)
	runs := rawRuns(t)
	// The tasks: the first trial of each task, references by path.
	items, err := SelectItems(src, "task_id", "info.task.user_id", nil)
	if err != nil {
		t.Fatal(err)
	}
	distinct := map[int]bool{}
	for _, r := range runs {
		distinct[r.TaskID] = true
	}
	if len(items) != len(distinct) {
		t.Fatalf("%d items, want one per distinct task_id (%d)", len(items), len(distinct))
	}
	if items[0].Key != strconv.Itoa(runs[0].TaskID) || items[0].TraceID != "t0" || items[0].Input == "" || len(items[0].Reference) < 3 {
		t.Errorf("first item %+v", items[0])
	}

	criteria := []Criterion{
		{Name: "solved", Evaluator: "code", Expr: "metadata.reward == 1"},
		// The reference (the task's user id) is put in the metadata: every
		// trace of a task must see its own task's reference.
		{Name: "own-reference", Evaluator: "code", Expr: "metadata.reference == metadata.info.task.user_id"},
		{Name: "calls", Evaluator: "code", Type: TypeNumber, Expr: "len(tool_calls)"},
	}
	// An agent that ran only the tasks below 25 (all their trials), plus a
	// trace of a task the benchmark does not have.
	sc, err := NewScorer(criteria, items, "task_id", nil)
	if err != nil {
		t.Fatal(err)
	}
	for i, st := range src {
		if runs[i].TaskID < 25 {
			if err := sc.Add(context.Background(), st.ID, st.Trace); err != nil {
				t.Fatal(err)
			}
		}
	}
	stray := &trace.Trace{Metadata: json.RawMessage(`{"task_id": 999, "reward": 1}`)}
	if err := sc.Add(context.Background(), "stray", stray); err != nil {
		t.Fatal(err)
	}
	sum, per := sc.Result()

	// Recomputed from the raw file: per task, the share of its trials with
	// reward 1; missing tasks count 0; the mean over all tasks.
	trials, solved := map[int]int{}, map[int]int{}
	graded := 0
	for _, r := range runs {
		if r.TaskID < 25 {
			trials[r.TaskID]++
			graded++
			if r.Reward == 1 {
				solved[r.TaskID]++
			}
		}
	}
	var want float64
	for task := range distinct {
		if trials[task] > 0 {
			want += float64(solved[task]) / float64(trials[task])
		}
	}
	want /= float64(len(distinct))
	if math.Abs(sum.Accuracy-want) > 1e-12 {
		t.Errorf("accuracy %v, want %v", sum.Accuracy, want)
	}
	if sum.Tasks != len(distinct) || sum.Covered != 25 || sum.Missing != len(distinct)-25 || sum.Traces != graded || sum.Extra != 1 {
		t.Errorf("summary %+v", sum)
	}
	for _, s := range sum.Criteria {
		switch s.Criterion {
		case "own-reference":
			if s.Passed != graded || s.Failed != 0 {
				t.Errorf("own-reference %+v: every trace must see its task's reference", s)
			}
		case "calls":
			if s.Mean == nil || *s.Mean <= 0 {
				t.Errorf("calls %+v", s)
			}
		}
	}
	for _, ir := range per {
		task, _ := strconv.Atoi(ir.Key)
		if ir.Traces != trials[task] || ir.Passed != solved[task] || len(ir.TraceIDs) != trials[task] {
			t.Errorf("task %s: %+v, want %d traces, %d passed", ir.Key, ir, trials[task], solved[task])
		}
	}
}

func TestSelectItems(t *testing.T) {
	tr := func(meta string) *trace.Trace {
		return &trace.Trace{Metadata: json.RawMessage(meta), Events: []trace.Event{{Role: "user", Content: trace.TextContent("  do it  ")}}}
	}
	src := []SourceTrace{
		{ID: "a", Index: 0, Trace: tr(`{"task": {"id": 3}, "answer": "x"}`)},
		{ID: "b", Index: 1, Trace: tr(`{"task": {"id": 3.0}, "answer": "y"}`)},
		{ID: "c", Index: 2, Trace: tr(`{"task": {"id": "q"}}`)},
	}
	items, err := SelectItems(src, "task.id", "answer", map[string]json.RawMessage{"q": json.RawMessage(` [1, 2] `)})
	if err != nil {
		t.Fatal(err)
	}
	got, _ := json.Marshal(items)
	want := `[{"key":"3","reference":"x","trace_id":"a","input":"do it"},{"key":"q","reference":[1,2],"trace_id":"c","input":"do it"}]`
	if string(got) != want {
		t.Errorf("items\n got %s\nwant %s", got, want)
	}
	for name, c := range map[string]struct {
		src  []SourceTrace
		key  string
		refs map[string]json.RawMessage
		want string
	}{
		"no key":         {src, "", nil, "needs a task key"},
		"missing key":    {append(src[:1:1], SourceTrace{ID: "z", Index: 7, Trace: tr(`{"task": {}}`)}), "task.id", nil, `trace 7 (z) has no task key`},
		"object key":     {[]SourceTrace{{ID: "o", Trace: tr(`{"task": {"id": {}}}`)}}, "task.id", nil, "no task key"},
		"unknown ref":    {src, "task.id", map[string]json.RawMessage{"nope": json.RawMessage(`1`)}, `task "nope" is not among`},
		"empty":          {nil, "task.id", nil, "at least one task"},
		"not an object":  {[]SourceTrace{{ID: "n", Trace: tr(`[1]`)}}, "task", nil, "no task key"},
		"null key value": {[]SourceTrace{{ID: "n", Trace: tr(`{"task": null}`)}}, "task", nil, "no task key"},
	} {
		_, err := SelectItems(c.src, c.key, "", c.refs)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want one saying %q", name, err, c.want)
		}
	}
}

func TestBenchmarkCriteriaChecked(t *testing.T) {
	for name, c := range map[string]struct {
		cs   []Criterion
		want string
	}{
		"human":       {[]Criterion{{Name: "h", Evaluator: "human", Type: TypeBool}, {Name: "c", Evaluator: "code", Expr: "true", Type: TypeBool}}, "no human criteria"},
		"only number": {[]Criterion{{Name: "n", Evaluator: "code", Expr: "1", Type: TypeNumber}}, "at least one pass/fail"},
		"bad policy":  {[]Criterion{{Name: "r", Evaluator: "rule", Policy: "raise if"}}, "r: policy"},
	} {
		if err := CheckBenchmarkCriteria(c.cs); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", name, err, c.want)
		}
	}
	// The reference a trace carries itself never stands in for the
	// benchmark's: a task without one has none.
	items := []Item{{Key: "1"}}
	sc, err := NewScorer([]Criterion{{Name: "has-ref", Evaluator: "code", Expr: `"reference" in metadata`}}, items, "k", nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := sc.Add(context.Background(), "x", &trace.Trace{Metadata: json.RawMessage(`{"k": 1, "reference": "cheat"}`)}); err != nil {
		t.Fatal(err)
	}
	if sum, _ := sc.Result(); sum.Accuracy != 0 || sum.Passed != 0 {
		t.Errorf("a trace's own reference was kept: %+v", sum)
	}
}
