package eval

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/lookout-dev/lookout/internal/policy"
	"github.com/lookout-dev/lookout/internal/store"
	"github.com/lookout-dev/lookout/internal/trace"
)

// A benchmark is a frozen list of tasks, each named by a key that the traces
// of an agent's run carry in their metadata (tau-bench's task_id), with the
// task's reference answer. Scoring a dataset against it evaluates each of
// the dataset's traces of a task with the reference put in the trace's
// metadata as "reference" (where compare criteria and expressions read it),
// and the accuracy is the mean over tasks of the share of that task's
// traces that pass every pass/fail criterion: a task the dataset lacks
// scores 0, and several trials of one task count as one task.

// Item is one task of a benchmark.
type Item struct {
	Key       string          `json:"key"`
	Reference json.RawMessage `json:"reference,omitempty"` // absent: none
	TraceID   string          `json:"trace_id,omitempty"`  // the trace it was taken from
	Input     string          `json:"input,omitempty"`     // the task's first user message, shortened
}

// ReferenceKey is the metadata member a benchmark's reference is put in.
const ReferenceKey = "reference"

// maxInput bounds the task text kept with an item (it is for display).
const maxInput = 500

// MetaValue reads a dotted path (info.task.outputs) in a JSON object.
func MetaValue(meta json.RawMessage, path string) (json.RawMessage, bool) {
	cur := meta
	for _, part := range strings.Split(path, ".") {
		var obj map[string]json.RawMessage
		if json.Unmarshal(cur, &obj) != nil {
			return nil, false
		}
		v, ok := obj[part]
		if !ok {
			return nil, false
		}
		cur = v
	}
	return cur, true
}

// TaskKey is the task key of a trace: the value at path in its metadata, a
// string as it is, a number or boolean as written. Objects, arrays and null
// name no task.
func TaskKey(meta json.RawMessage, path string) (string, bool) {
	v, ok := MetaValue(meta, path)
	if !ok {
		return "", false
	}
	v = bytes.TrimSpace(v)
	if len(v) == 0 {
		return "", false
	}
	switch v[0] {
	case '"':
		var s string
		if json.Unmarshal(v, &s) != nil {
			return "", false
		}
		return s, true
	case '{', '[', 'n':
		return "", false
	}
	// A number is named by its value, so 3 and 3.0 are one task.
	if f, err := strconv.ParseFloat(string(v), 64); err == nil {
		return strconv.FormatFloat(f, 'g', -1, 64), true
	}
	return string(v), true
}

// SourceTrace is a trace a benchmark's tasks are taken from.
type SourceTrace struct {
	ID    string
	Index int64
	Trace *trace.Trace
}

// SelectItems makes a benchmark's tasks from traces in order: one per
// distinct key, from the first trace that has it. refPath names the
// reference in the traces' metadata ("" for none); refs, keyed by task,
// gives references by hand and wins over refPath. A trace without the key
// is an error naming it, and so is a reference for a task no trace has.
func SelectItems(traces []SourceTrace, key, refPath string, refs map[string]json.RawMessage) ([]Item, error) {
	sel, err := NewItemSelector(key, refPath, refs)
	if err != nil {
		return nil, err
	}
	for _, st := range traces {
		if err := sel.Add(st); err != nil {
			return nil, err
		}
	}
	return sel.Items()
}

// ItemSelector is SelectItems one trace at a time, so that a selection of
// a whole large dataset never holds more than one of its traces.
type ItemSelector struct {
	key, refPath string
	refs         map[string]json.RawMessage
	seen         map[string]bool
	items        []Item
}

// NewItemSelector starts a selection.
func NewItemSelector(key, refPath string, refs map[string]json.RawMessage) (*ItemSelector, error) {
	if key == "" {
		return nil, errors.New("a benchmark needs a task key (the metadata member naming each task)")
	}
	return &ItemSelector{key: key, refPath: refPath, refs: refs, seen: map[string]bool{}, items: []Item{}}, nil
}

// Add takes the next trace of the selection.
func (sel *ItemSelector) Add(st SourceTrace) error {
	k, ok := TaskKey(st.Trace.Metadata, sel.key)
	if !ok {
		return fmt.Errorf("trace %d (%s) has no task key: its metadata has no string or number at %q", st.Index, st.ID, sel.key)
	}
	if sel.seen[k] {
		return nil
	}
	sel.seen[k] = true
	it := Item{Key: k, TraceID: st.ID, Input: firstUserText(st.Trace)}
	if sel.refPath != "" {
		if v, ok := MetaValue(st.Trace.Metadata, sel.refPath); ok {
			it.Reference = trace.Compact(v)
		}
	}
	if v, ok := sel.refs[k]; ok {
		it.Reference = trace.Compact(v)
	}
	sel.items = append(sel.items, it)
	return nil
}

// Items ends the selection.
func (sel *ItemSelector) Items() ([]Item, error) {
	for k := range sel.refs {
		if !sel.seen[k] {
			return nil, fmt.Errorf("references: task %q is not among the selected traces", k)
		}
	}
	if len(sel.items) == 0 {
		return nil, errors.New("a benchmark needs at least one task: the selection is empty")
	}
	return sel.items, nil
}

func firstUserText(t *trace.Trace) string {
	for i := range t.Events {
		if t.Events[i].Role == "user" {
			s := strings.TrimSpace(t.Events[i].Content.String())
			if len(s) > maxInput {
				cut := maxInput
				for cut > 0 && !utf8.RuneStart(s[cut]) {
					cut--
				}
				s = s[:cut] + "…"
			}
			return s
		}
	}
	return ""
}

// CheckBenchmarkCriteria checks a benchmark's criteria (filling in their
// defaults): at least one must be pass/fail (it makes the accuracy), and
// none may need a person, since a benchmark run grades at once.
func CheckBenchmarkCriteria(cs []Criterion) error {
	graded := false
	for i := range cs {
		c := &cs[i]
		if err := c.Check(); err != nil {
			return err
		}
		if c.Evaluator == "human" {
			return fmt.Errorf("%s: a benchmark grades at once, so it takes no human criteria", c.Name)
		}
		if c.Type == TypeBool {
			graded = true
		}
	}
	if !graded {
		return errors.New("a benchmark needs at least one pass/fail (type bool) criterion: they make its accuracy")
	}
	return nil
}

// Scorer scores an agent's traces against a benchmark, trace by trace.
type Scorer struct {
	criteria []Criterion
	evs      []*Evaluator
	key      string
	items    []Item
	byKey    map[string]int
	tasks    []taskScore
	scores   []store.Score
	statuses []store.TraceStatus
	traces   int
	extra    int
}

type taskScore struct {
	traces, passed int
	traceIDs       []string
}

// NewScorer prepares the scoring of one dataset.
func NewScorer(criteria []Criterion, items []Item, key string, llm *LLM) (*Scorer, error) {
	criteria = append([]Criterion(nil), criteria...)
	if err := CheckBenchmarkCriteria(criteria); err != nil {
		return nil, err
	}
	evs, err := CompileAll(criteria, llm)
	if err != nil {
		return nil, err
	}
	s := &Scorer{criteria: criteria, evs: evs, key: key, items: items, byKey: map[string]int{}, tasks: make([]taskScore, len(items))}
	for i, it := range items {
		s.byKey[it.Key] = i
	}
	return s, nil
}

// SetDetectorModel gives the rule criteria the model that answers their
// model-backed detectors.
func (s *Scorer) SetDetectorModel(m *policy.DetectorModel) {
	for _, e := range s.evs {
		e.SetDetectorModel(m)
	}
}

// Add grades one trace of the dataset. A trace of no task of the benchmark
// is counted apart and not graded. An evaluation that fails fails the trace
// on that criterion; only ctx's end is returned as an error.
func (s *Scorer) Add(ctx context.Context, id string, t *trace.Trace) error {
	k, ok := TaskKey(t.Metadata, s.key)
	i, known := s.byKey[k]
	if !ok || !known {
		s.extra++
		return nil
	}
	s.traces++
	task := &s.tasks[i]
	task.traces++
	task.traceIDs = append(task.traceIDs, id)
	withRef := *t
	meta, err := setMember(t.Metadata, ReferenceKey, s.items[i].Reference)
	if err != nil {
		return fmt.Errorf("trace %s: %w", id, err)
	}
	withRef.Metadata = meta
	pass := true
	for _, e := range s.evs {
		res, err := e.Evaluate(ctx, &withRef)
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if err != nil {
			s.statuses = append(s.statuses, store.TraceStatus{TraceID: id, Criterion: e.C.Name, Status: store.StatusError, Error: err.Error()})
			if e.C.Type == TypeBool {
				pass = false
			}
			continue
		}
		for _, r := range res {
			s.scores = append(s.scores, store.Score{TraceID: id, Address: r.Address, Criterion: e.C.Name, Value: r.Value})
			if e.C.Type == TypeBool {
				if p := Pass(r.Value); p == nil || !*p {
					pass = false
				}
			}
		}
	}
	if pass {
		task.passed++
	}
	return nil
}

// ItemResult is how the dataset did on one task.
type ItemResult struct {
	Key      string   `json:"key"`
	Traces   int      `json:"traces"`
	Passed   int      `json:"passed"`
	Score    float64  `json:"score"` // passed / traces; 0 for a missing task
	TraceIDs []string `json:"trace_ids"`
}

// BenchmarkSummary is the figures of a result.
type BenchmarkSummary struct {
	Tasks    int       `json:"tasks"`
	Covered  int       `json:"covered"` // tasks with at least one trace
	Missing  int       `json:"missing"`
	Traces   int       `json:"traces"` // graded traces
	Extra    int       `json:"extra"`  // traces of no task of the benchmark
	Passed   int       `json:"passed"` // traces that passed every pass/fail criterion
	Accuracy float64   `json:"accuracy"`
	Criteria []Summary `json:"criteria"`
}

// Result gives the accuracy, the summary and each task's result.
func (s *Scorer) Result() (BenchmarkSummary, []ItemResult) {
	sum := BenchmarkSummary{Tasks: len(s.items), Traces: s.traces, Extra: s.extra}
	items := make([]ItemResult, len(s.items))
	var total float64
	for i, it := range s.items {
		ts := s.tasks[i]
		ir := ItemResult{Key: it.Key, Traces: ts.traces, Passed: ts.passed, TraceIDs: ts.traceIDs}
		if ir.TraceIDs == nil {
			ir.TraceIDs = []string{}
		}
		if ts.traces > 0 {
			sum.Covered++
			ir.Score = float64(ts.passed) / float64(ts.traces)
		}
		sum.Passed += ts.passed
		total += ir.Score
		items[i] = ir
	}
	sum.Missing = sum.Tasks - sum.Covered
	if sum.Tasks > 0 {
		sum.Accuracy = total / float64(sum.Tasks)
	}
	sum.Criteria = Summarize(s.criteria, s.scores, s.statuses)
	return sum, items
}

// setMember sets obj[name] = v in a JSON object (nil v removes it), so a
// trace's own "reference" never stands in for the benchmark's.
func setMember(obj json.RawMessage, name string, v json.RawMessage) (json.RawMessage, error) {
	m := map[string]json.RawMessage{}
	if len(bytes.TrimSpace(obj)) > 0 {
		if err := json.Unmarshal(obj, &m); err != nil {
			return nil, fmt.Errorf("metadata is not a JSON object: %w", err)
		}
		if m == nil {
			m = map[string]json.RawMessage{}
		}
	}
	if v == nil {
		delete(m, name)
	} else {
		m[name] = v
	}
	return json.Marshal(m)
}
