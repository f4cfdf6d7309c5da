package snorkel

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/lookout-dev/lookout/internal/formats/decoding"
	"github.com/lookout-dev/lookout/internal/formats/internal/golden"
	"github.com/lookout-dev/lookout/internal/testcorpus"
	"github.com/lookout-dev/lookout/internal/trace"
)

const seedFile = "seeds/snorkel-example.json"

func readCorpus(t testing.TB, name string) []byte {
	t.Helper()
	data, err := os.ReadFile(testcorpus.File(t, name))
	if err != nil {
		t.Fatalf("the shared corpus must sit beside the repository: %v", err)
	}
	return data
}

// decodeAll reads every trace, collecting errors; it stops at a fatal one.
func decodeAll(t testing.TB, data []byte, name string) (traces []*trace.Trace, errs []*decoding.Error) {
	t.Helper()
	dec := NewDecoder(bytes.NewReader(data), name)
	for range len(data) + 2 {
		tr, err := dec.Next()
		if errors.Is(err, io.EOF) {
			if dec.DatasetMetadata() != nil {
				t.Errorf("dataset metadata %s, want none", dec.DatasetMetadata())
			}
			return traces, errs
		}
		if err != nil {
			var de *decoding.Error
			if !errors.As(err, &de) {
				t.Fatalf("error %T %v is not a *decoding.Error", err, err)
			}
			errs = append(errs, de)
			if !de.Recoverable {
				if _, err := dec.Next(); !errors.Is(err, io.EOF) {
					t.Fatalf("Next after a fatal error gave %v, want io.EOF", err)
				}
				return traces, errs
			}
			continue
		}
		traces = append(traces, tr)
	}
	t.Fatalf("decoder does not stop")
	return nil, nil
}

// ---- an independent reading of the seed with encoding/json ----

// wantSpan is what the test expects of one span.
type wantSpan struct {
	id, parent, kind string
	meta             map[string]any
	value            any
	hasValue         bool
}

// expectedKind is the mapping table written out for the step types of the
// seed; the test fails if the seed holds a type it does not list.
var expectedKind = map[string]string{
	"ROOT_STEP":     "none",
	"USER_MESSAGE":  "user",
	"AI_RESPONSE":   "assistant",
	"DOC_RETRIEVAL": "tool",
}

// walk lists the steps of one root in pre-order with position ids.
func walk(t *testing.T, step map[string]any, id, parent string, out *[]wantSpan) {
	t.Helper()
	w := wantSpan{id: id, parent: parent, kind: step["step_type"].(string)}
	w.meta, _ = step["metadata"].(map[string]any)
	w.value, w.hasValue = step["value"]
	*out = append(*out, w)
	subs, _ := step["substeps"].([]any)
	for i, s := range subs {
		walk(t, s.(map[string]any), id+"-"+strconv.Itoa(i), id, out)
	}
}

func TestSeed(t *testing.T) {
	data := readCorpus(t, seedFile)
	var roots []map[string]any
	if err := json.Unmarshal(data, &roots); err != nil {
		t.Fatal(err)
	}
	traces, errs := decodeAll(t, data, seedFile)
	if len(errs) > 0 {
		t.Fatalf("errors: %v", errs)
	}
	if len(traces) != len(roots) || len(traces) != 2 {
		t.Fatalf("%d traces, want %d (the manifest says 2)", len(traces), len(roots))
	}
	totalSpans := 0
	for ti, root := range roots {
		tr := traces[ti]
		golden.RoundTrip(t, tr)
		var want []wantSpan
		walk(t, root, "0", "", &want)
		totalSpans += len(want)
		if len(tr.Spans) != len(want) {
			t.Fatalf("trace %d: %d spans, want %d", ti, len(tr.Spans), len(want))
		}
		var wantEvents []trace.Event
		toolCalls, toolOutputs := 0, 0
		for i, w := range want {
			sp := tr.Spans[i]
			if sp.ID != w.id || sp.ParentID != w.parent {
				t.Errorf("trace %d span %d: id %q parent %q, want %q %q", ti, i, sp.ID, sp.ParentID, w.id, w.parent)
			}
			if sp.Kind != w.kind || sp.Name != w.kind {
				t.Errorf("span %s: kind %q name %q, want %q", sp.ID, sp.Kind, sp.Name, w.kind)
			}
			var meta map[string]any
			if err := json.Unmarshal(sp.Attributes, &meta); err != nil || !reflect.DeepEqual(meta, w.meta) {
				t.Errorf("span %s: attributes %s, want %v (%v)", sp.ID, sp.Attributes, w.meta, err)
			}
			var value any
			if err := json.Unmarshal(sp.Value, &value); err != nil || !reflect.DeepEqual(value, w.value) {
				t.Errorf("span %s: value %s, want %v", sp.ID, sp.Value, w.value)
			}
			text, _ := w.value.(string)
			switch k, ok := expectedKind[w.kind]; {
			case !ok:
				t.Fatalf("the seed holds step_type %q, which the test's table lacks", w.kind)
			case k == "user" || k == "assistant":
				wantEvents = append(wantEvents, trace.Event{Role: k, Content: trace.TextContent(text), SpanID: w.id})
			case k == "tool":
				toolCalls++
				toolOutputs++
				wantEvents = append(wantEvents,
					trace.Event{Role: "assistant", Content: trace.Content{Kind: trace.ContentNull}, SpanID: w.id,
						ToolCalls: []trace.ToolCall{{ID: w.id, Type: "function", Function: trace.Function{Name: strings.ToLower(w.kind), Arguments: json.RawMessage(`{}`)}}}},
					trace.Event{Role: "tool", Content: trace.TextContent(text), ToolCallID: w.id, SpanID: w.id})
			}
		}
		if sp := tr.Spans[0]; sp.Execution != root["substep_execution_type"] {
			t.Errorf("root execution %q, want %v", sp.Execution, root["substep_execution_type"])
		}
		if !bytes.Equal(tr.Metadata, tr.Spans[0].Attributes) {
			t.Errorf("trace metadata %s, want the root's metadata %s", tr.Metadata, tr.Spans[0].Attributes)
		}
		st := tr.Stats()
		if st.Events != len(wantEvents) || st.ToolCalls != toolCalls || st.ToolOutputs != toolOutputs || st.Spans != len(want) {
			t.Errorf("trace %d: stats %+v, want events %d, tool calls %d, outputs %d, spans %d", ti, st, len(wantEvents), toolCalls, toolOutputs, len(want))
		}
		got := trace.AppendEvents(nil, tr.Events)
		exp := trace.AppendEvents(nil, wantEvents)
		if !bytes.Equal(got, exp) {
			t.Errorf("trace %d events:\n got  %s\n want %s", ti, got, exp)
		}
	}
	if totalSpans != 8 {
		t.Errorf("%d steps in the seed, the manifest says 8", totalSpans)
	}
	// The nesting shown in the file, written out.
	parents := [][][2]string{
		{{"0", ""}, {"0-0", "0"}, {"0-0-0", "0-0"}, {"0-0-0-0", "0-0-0"}, {"0-0-0-1", "0-0-0"}},
		{{"0", ""}, {"0-0", "0"}, {"0-0-0", "0-0"}},
	}
	for ti, ps := range parents {
		for i, p := range ps {
			if sp := traces[ti].Spans[i]; sp.ID != p[0] || sp.ParentID != p[1] {
				t.Errorf("trace %d span %d: %q under %q, want %q under %q", ti, i, sp.ID, sp.ParentID, p[0], p[1])
			}
		}
	}
	// Raw UTF-8 survives.
	if c := traces[1].Events[1].Content.Text; !strings.Contains(c, "ça va") {
		t.Errorf("content %q lost the ç", c)
	}
}

// ---- rules ----

const good = `{"step_type": "ROOT_STEP", "metadata": {"k": "v"}, "value": "ok", "substeps": [
  {"step_type": "USER_MESSAGE", "value": "hi", "substeps": []}]}`

func TestRules(t *testing.T) {
	for _, c := range []struct {
		name, bad, path, msg string
	}{
		{"root step_type", `{"step_type": "USER_MESSAGE", "value": "x"}`, "$[1].step_type", `the root step's step_type must be "ROOT_STEP", not "USER_MESSAGE"`},
		{"root step_type lower case", `{"step_type": "root_step", "value": "x"}`, "$[1].step_type", `must be "ROOT_STEP"`},
		{"no step_type", `{"step_type": "ROOT_STEP", "substeps": [{"value": "x"}]}`, "$[1].substeps[0]", "the step has no step_type (a required string)"},
		{"step_type not a string", `{"step_type": 3, "value": "x"}`, "$[1].step_type", "step_type must be a string, not a number"},
		{"step_type null", `{"step_type": "ROOT_STEP", "substeps": [{"step_type": null, "value": "x"}]}`, "$[1].substeps[0].step_type", "step_type must be a string, not null"},
		{"step_type empty", `{"step_type": "ROOT_STEP", "substeps": [{"step_type": "", "value": "x"}]}`, "$[1].substeps[0].step_type", "step_type must be a non-empty string"},
		{"leaf without value", `{"step_type": "ROOT_STEP", "substeps": [{"step_type": "AI_RESPONSE"}]}`, "$[1].substeps[0]", "a step with no substeps must have a value"},
		{"leaf with [] without value", `{"step_type": "ROOT_STEP", "substeps": [{"step_type": "AI_RESPONSE", "substeps": []}]}`, "$[1].substeps[0]", "a step with no substeps must have a value"},
		{"leaf value null", `{"step_type": "ROOT_STEP", "substeps": [{"step_type": "AI_RESPONSE", "value": null}]}`, "$[1].substeps[0]", "a step with no substeps must have a value"},
		{"root leaf without value", `{"step_type": "ROOT_STEP", "substeps": []}`, "$[1]", "a step with no substeps must have a value (ROOT_STEP has none)"},
		{"execution type", `{"step_type": "ROOT_STEP", "value": "x", "substep_execution_type": "concurrent"}`, "$[1].substep_execution_type", `substep_execution_type must be "serial" or "parallel", not "concurrent"`},
		{"execution type case", `{"step_type": "ROOT_STEP", "value": "x", "substep_execution_type": "Serial"}`, "$[1].substep_execution_type", `not "Serial"`},
		{"execution type not a string", `{"step_type": "ROOT_STEP", "value": "x", "substep_execution_type": true}`, "$[1].substep_execution_type", `substep_execution_type must be "serial" or "parallel", not a boolean`},
		{"metadata null value", `{"step_type": "ROOT_STEP", "value": "x", "substeps": [{"step_type": "AI", "value": "y", "metadata": {"agent": "a", "tokens": null}}]}`, "$[1].substeps[0].metadata.tokens", "metadata values must be strings, numbers or booleans, not null"},
		{"metadata array value", `{"step_type": "ROOT_STEP", "value": "x", "metadata": {"tags": ["a"]}}`, "$[1].metadata.tags", "metadata values must be strings, numbers or booleans, not an array"},
		{"metadata object value", `{"step_type": "ROOT_STEP", "value": "x", "metadata": {"cost": {"usd": 1}}}`, "$[1].metadata.cost", "metadata values must be strings, numbers or booleans, not an object"},
		{"metadata not an object", `{"step_type": "ROOT_STEP", "value": "x", "metadata": [1]}`, "$[1].metadata", "metadata must be an object, not an array"},
		{"metadata null", `{"step_type": "ROOT_STEP", "value": "x", "metadata": null}`, "$[1].metadata", "metadata must be an object, not null"},
		{"unknown field", `{"step_type": "ROOT_STEP", "substeps": [{"step_type": "AI", "value": "y", "id": 7}]}`, "$[1].substeps[0].id", `unknown field "id"; allowed: step_type, metadata, value, substeps, substep_execution_type, metadata_expand`},
		{"unknown field on root", `{"step_type": "ROOT_STEP", "value": "x", "Value": "y"}`, "$[1].Value", `unknown field "Value"; allowed:`},
		{"field twice", `{"step_type": "ROOT_STEP", "value": "x", "value": "y"}`, "$[1].value", `member "value" is given twice`},
		{"substeps not an array", `{"step_type": "ROOT_STEP", "value": "x", "substeps": {"step_type": "AI"}}`, "$[1].substeps", "substeps must be an array of steps, not an object"},
		{"substeps null", `{"step_type": "ROOT_STEP", "value": "x", "substeps": null}`, "$[1].substeps", "substeps must be an array of steps, not null"},
		{"step not an object", `{"step_type": "ROOT_STEP", "value": "x", "substeps": ["AI_RESPONSE"]}`, "$[1].substeps[0]", "a step must be an object, not a string"},
		{"root not an object", `42`, "$[1]", "a step must be an object, not a number"},
		{"deep", `{"step_type": "ROOT_STEP", "substeps": [{"step_type": "A", "substeps": [{"step_type": "B", "value": 1}, {"step_type": "C", "substeps": [{"step_type": "D", "value": "v", "metadata": {"x": [1]}}]}]}]}`, "$[1].substeps[0].substeps[1].substeps[0].metadata.x", "metadata values must be"},
	} {
		t.Run(c.name, func(t *testing.T) {
			in := "[\n" + good + ",\n" + c.bad + ",\n" + good + "\n]\n"
			traces, errs := decodeAll(t, []byte(in), "rules.json")
			if len(traces) != 2 {
				t.Errorf("%d traces imported, want the 2 good ones", len(traces))
			}
			for _, tr := range traces {
				if len(tr.Spans) != 2 || len(tr.Events) != 1 {
					t.Errorf("good trace decoded as %d spans, %d events", len(tr.Spans), len(tr.Events))
				}
			}
			if len(errs) != 1 {
				t.Fatalf("errors %v, want one", errs)
			}
			e := errs[0]
			if !e.Recoverable || e.Trace != 1 || e.File != "rules.json" {
				t.Errorf("error %+v: want recoverable, trace 1, file rules.json", e)
			}
			if e.Path != c.path {
				t.Errorf("path %q, want %q", e.Path, c.path)
			}
			if !strings.Contains(e.Msg, c.msg) {
				t.Errorf("message %q does not contain %q", e.Msg, c.msg)
			}
			// The bad trace sits on line 4 of the input (good spans two).
			if e.Line != 4 || e.Col < 1 {
				t.Errorf("error at %d:%d, want line 4", e.Line, e.Col)
			}
		})
	}
}

// TestErrorPosition checks line and column against the place of the value
// that broke the rule.
func TestErrorPosition(t *testing.T) {
	in := "[\n  {\"step_type\": \"ROOT_STEP\",\n   \"value\": \"x\",\n   \"metadata\": {\"a\": 1,\n      \"tokens\": null}}\n]"
	_, errs := decodeAll(t, []byte(in), "pos.json")
	if len(errs) != 1 {
		t.Fatalf("errors %v", errs)
	}
	off := strings.Index(in, "null")
	line := strings.Count(in[:off], "\n") + 1
	col := off - strings.LastIndex(in[:off], "\n")
	e := errs[0]
	if e.Line != line || e.Col != col || e.Path != "$[0].metadata.tokens" {
		t.Errorf("error %q at %d:%d, want %d:%d", e, e.Line, e.Col, line, col)
	}
	want := "pos.json:5:17: $[0].metadata.tokens: metadata values must be strings, numbers or booleans, not null"
	if e.Error() != want {
		t.Errorf("error text\n %q\nwant\n %q", e.Error(), want)
	}
}

func TestInvalidJSONIsFatal(t *testing.T) {
	for _, in := range []string{
		"[\n" + good + ",\n" + `{"step_type": "ROOT_STEP", "value": tru}` + "\n]",
		"[\n" + good + ",\n" + `{"step_type": "ROOT_STEP", "value": "x",}` + "\n]",
		"[\n" + good + ",\n" + `{"step_type": "ROOT_STEP" "value": "x"}` + "\n]",
		"[" + good + "} ",
		"[" + good,
	} {
		traces, errs := decodeAll(t, []byte(in), "bad.json")
		if len(traces) != 0 {
			t.Errorf("%q: %d traces before a fatal error, want none", in, len(traces))
		}
		if len(errs) != 1 || errs[0].Recoverable || errs[0].Line < 1 || errs[0].File != "bad.json" {
			t.Errorf("%q: errors %v, want one fatal placed error", in, errs)
		}
	}
	// Not an array or object.
	_, errs := decodeAll(t, []byte(`"ROOT_STEP"`), "s.json")
	if len(errs) != 1 || errs[0].Recoverable || !strings.Contains(errs[0].Msg, "JSON array of ROOT_STEP objects") {
		t.Errorf("errors %v", errs)
	}
}

func TestShapes(t *testing.T) {
	// One root object; then several values one after another.
	traces, errs := decodeAll(t, []byte(good), "one.json")
	if len(errs) != 0 || len(traces) != 1 {
		t.Fatalf("one object: %d traces, errors %v", len(traces), errs)
	}
	_, errs = decodeAll(t, []byte(`{"step_type": "X", "value": 1}`), "one.json")
	if len(errs) != 1 || errs[0].Path != "$.step_type" || errs[0].Trace != 0 || !errs[0].Recoverable {
		t.Errorf("one object: errors %v", errs)
	}
	in := good + "\n" + `[` + good + `, {"step_type": "X", "value": 1}]` + "\n" + good + "\n[]\n"
	traces, errs = decodeAll(t, []byte(in), "many.jsonl")
	if len(traces) != 3 || len(errs) != 1 || errs[0].Trace != 2 || errs[0].Path != "$[1].step_type" || errs[0].Line != 4 {
		t.Errorf("values: %d traces, errors %+v", len(traces), errs)
	}
	traces, errs = decodeAll(t, []byte("  \n[]\n"), "empty.json")
	if len(traces) != 0 || len(errs) != 0 {
		t.Errorf("empty list: %d traces, errors %v", len(traces), errs)
	}
}

func TestModel(t *testing.T) {
	in := `[{"step_type": "ROOT_STEP", "metadata": {"source": "x", "ok": true, "n": 1.5e3},
	  "substep_execution_type": "parallel", "metadata_expand": ["source"],
	  "substeps": [
	    {"step_type": "SYSTEM_PROMPT", "value": "be nice"},
	    {"step_type": "USER_QUERY", "value": {"q": "weather?"}},
	    {"step_type": "AGENT_PLAN", "substeps": [
	      {"step_type": "WEB_SEARCH", "value": ["r1", "r2"], "metadata": {"tokens": 3}},
	      {"step_type": "RESEARCH_NOTES", "value": 42},
	      {"step_type": "tool-call", "value": null, "substeps": [{"step_type": "ASSISTANT", "value": "done"}]}
	    ]}
	  ]}]`
	traces, errs := decodeAll(t, []byte(in), "m.json")
	if len(errs) != 0 || len(traces) != 1 {
		t.Fatalf("%d traces, errors %v", len(traces), errs)
	}
	tr := traces[0]
	golden.RoundTrip(t, tr)
	root := tr.Spans[0]
	if root.Execution != "parallel" || string(root.Extra.Get("metadata_expand")) != `["source"]` || root.Value != nil {
		t.Errorf("root span %+v", root)
	}
	if string(tr.Metadata) != `{"source":"x","ok":true,"n":1.5e3}` {
		t.Errorf("metadata %s", tr.Metadata)
	}
	ids := []string{"0", "0-0", "0-1", "0-2", "0-2-0", "0-2-1", "0-2-2", "0-2-2-0"}
	for i, sp := range tr.Spans {
		if sp.ID != ids[i] || sp.Execution != "" && i != 0 {
			t.Errorf("span %d: %+v", i, sp)
		}
	}
	want := `[{"role":"system","content":"be nice","span_id":"0-0"},` +
		`{"role":"user","content":"{\"q\":\"weather?\"}","span_id":"0-1"},` +
		`{"role":"assistant","content":null,"span_id":"0-2"},` +
		`{"role":"assistant","content":null,"tool_calls":[{"id":"0-2-0","type":"function","function":{"name":"web_search","arguments":{}}}],"span_id":"0-2-0"},` +
		`{"role":"tool","content":"[\"r1\",\"r2\"]","tool_call_id":"0-2-0","span_id":"0-2-0"},` +
		`{"role":"assistant","content":null,"tool_calls":[{"id":"0-2-2","type":"function","function":{"name":"tool-call","arguments":{}}}],"span_id":"0-2-2"},` +
		`{"role":"tool","content":null,"tool_call_id":"0-2-2","span_id":"0-2-2"},` +
		`{"role":"assistant","content":"done","span_id":"0-2-2-0"}]`
	if got := trace.AppendEvents(nil, tr.Events); string(got) != want {
		t.Errorf("events\n got  %s\n want %s", got, want)
	}
	if string(tr.Spans[5].Value) != "42" || tr.Spans[5].Kind != "RESEARCH_NOTES" {
		t.Errorf("span 0-2-1: %+v", tr.Spans[5])
	}
}

func TestClassify(t *testing.T) {
	for _, c := range []struct {
		stepType string
		want     eventKind
	}{
		{"ROOT_STEP", kindNone},
		{"USER_MESSAGE", kindUser},
		{"USER", kindUser},
		{"user_input", kindUser},
		{"USER_QUERY", kindUser},
		{"SYSTEM_PROMPT", kindSystem},
		{"AI_RESPONSE", kindAssistant},
		{"AI", kindAssistant},
		{"AGENT_PLAN", kindAssistant},
		{"ASSISTANT", kindAssistant},
		{"ASSISTANT_REPLY", kindAssistant},
		{"ASSISTANTMESSAGE", kindAssistant},
		{"DOC_RETRIEVAL", kindTool},
		{"TOOL_CALL", kindTool},
		{"AI_TOOL_CALL", kindTool},
		{"AGENT_SEARCH", kindTool},
		{"WEB_SEARCH", kindTool},
		{"FUNCTION_CALL", kindTool},
		{"API_REQUEST", kindTool},
		{"SQL_QUERY", kindTool},
		{"SQL_QUERIES", kindTool},
		{"TOOLS", kindTool},
		{"external api call", kindTool},
		{"RESEARCH_AGENT", kindNone},
		{"CAPITAL_LOOKUP", kindNone},
		{"RECALL", kindNone},
		{"TOOLCALL", kindNone},
		{"PLANNER", kindNone},
		{"__", kindNone},
		{"AIR_QUALITY", kindNone},
		{"USERS", kindNone},
	} {
		if got := classify(c.stepType); got != c.want {
			t.Errorf("classify(%q) = %d, want %d", c.stepType, got, c.want)
		}
	}
}
