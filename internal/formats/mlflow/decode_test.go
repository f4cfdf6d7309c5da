package mlflow

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os"
	"reflect"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/lookout-dev/lookout/internal/formats/decoding"
	"github.com/lookout-dev/lookout/internal/formats/internal/golden"
	"github.com/lookout-dev/lookout/internal/testcorpus"
	"github.com/lookout-dev/lookout/internal/trace"
)

const seedFile = "seeds/mlflow-bedrock-trace.json"

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
			de := golden.DecodingError(t, err)
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

func decodeOne(t *testing.T, in string) *trace.Trace {
	t.Helper()
	traces, errs := decodeAll(t, []byte(in), "one.json")
	if len(errs) > 0 || len(traces) != 1 {
		t.Fatalf("%d traces, errors %v", len(traces), errs)
	}
	golden.RoundTrip(t, traces[0])
	return traces[0]
}

func jsonValue(t *testing.T, raw []byte) any {
	t.Helper()
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatalf("%s: %v", raw, err)
	}
	return v
}

// TestSeed checks the seed against an independent reading of it with
// encoding/json.
func TestSeed(t *testing.T) {
	data := readCorpus(t, seedFile)
	var doc struct {
		Spans []struct {
			Name    string `json:"name"`
			Context struct {
				SpanID  string `json:"span_id"`
				TraceID string `json:"trace_id"`
			} `json:"context"`
			ParentID   *string           `json:"parent_id"`
			StartTime  json.Number       `json:"start_time"`
			EndTime    json.Number       `json:"end_time"`
			StatusCode string            `json:"status_code"`
			StatusMsg  string            `json:"status_message"`
			Attributes map[string]string `json:"attributes"`
			Events     []any             `json:"events"`
		} `json:"spans"`
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	if err := dec.Decode(&doc); err != nil {
		t.Fatal(err)
	}
	traces, errs := decodeAll(t, data, seedFile)
	if len(errs) > 0 || len(traces) != 1 {
		t.Fatalf("%d traces, errors %v", len(traces), errs)
	}
	tr := traces[0]
	golden.RoundTrip(t, tr)
	if len(tr.Spans) != len(doc.Spans) || len(tr.Spans) != 5 {
		t.Fatalf("%d spans, want %d (the manifest says 5)", len(tr.Spans), len(doc.Spans))
	}
	if tr.ID != doc.Spans[0].Context.TraceID || tr.Metadata != nil {
		t.Errorf("trace id %q metadata %s", tr.ID, tr.Metadata)
	}

	// Expected order: the root, then its children by start time.
	type ws struct {
		id, parent string
		start      int64
		i          int
	}
	var want []ws
	var root ws
	for i, s := range doc.Spans {
		start, err := s.StartTime.Int64()
		if err != nil {
			t.Fatal(err)
		}
		w := ws{id: s.Context.SpanID, start: start, i: i}
		if s.ParentID != nil {
			w.parent = *s.ParentID
			want = append(want, w)
		} else {
			root = w
		}
	}
	sort.SliceStable(want, func(a, b int) bool { return want[a].start < want[b].start })
	want = append([]ws{root}, want...)
	children := 0
	for i, w := range want {
		sp := tr.Spans[i]
		src := doc.Spans[w.i]
		if sp.ID != w.id || sp.ParentID != w.parent {
			t.Errorf("span %d: %q under %q, want %q under %q", i, sp.ID, sp.ParentID, w.id, w.parent)
		}
		if w.parent == root.id {
			children++
		}
		end, _ := src.EndTime.Int64()
		if sp.Start.UnixNano() != w.start || sp.End.UnixNano() != end || sp.Start.Location().String() != "UTC" {
			t.Errorf("span %s: times %v %v, want %d %d", sp.ID, sp.Start, sp.End, w.start, end)
		}
		if sp.Name != src.Name || sp.Status != src.StatusCode || sp.StatusMessage != src.StatusMsg {
			t.Errorf("span %s: name %q status %q %q", sp.ID, sp.Name, sp.Status, sp.StatusMessage)
		}
		var kind string
		if err := json.Unmarshal([]byte(src.Attributes["mlflow.spanType"]), &kind); err != nil || sp.Kind != kind {
			t.Errorf("span %s: kind %q, want %q", sp.ID, sp.Kind, kind)
		}
		var attrs map[string]string
		if err := json.Unmarshal(sp.Attributes, &attrs); err != nil || !reflect.DeepEqual(attrs, src.Attributes) {
			t.Errorf("span %s: attributes not kept verbatim (%v)", sp.ID, err)
		}
		for _, io := range []struct {
			key string
			got json.RawMessage
		}{{"mlflow.spanInputs", sp.Inputs}, {"mlflow.spanOutputs", sp.Outputs}} {
			text, ok := src.Attributes[io.key]
			if !ok {
				if io.got != nil {
					t.Errorf("span %s: %s %s, want none", sp.ID, io.key, io.got)
				}
				continue
			}
			var exp any
			if json.Unmarshal([]byte(text), &exp) != nil {
				exp = text // Python repr: kept as the string
			}
			if got := jsonValue(t, io.got); !reflect.DeepEqual(got, exp) {
				t.Errorf("span %s: %s decoded to %.200s, want %.200v", sp.ID, io.key, io.got, exp)
			}
		}
		if ev := sp.Extra.Get("events"); string(ev) != "[]" {
			t.Errorf("span %s: events %s, want []", sp.ID, ev)
		}
	}
	if children != 4 {
		t.Errorf("%d spans directly under the root, want 4", children)
	}

	// Exact nanoseconds: the root's start against the digits in the file.
	m := regexp.MustCompile(`"start_time": (\d+)`).FindSubmatch(data)
	n, err := strconv.ParseInt(string(m[1]), 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	if tr.Spans[0].Start.UnixNano() != n || n != 1731388531754725000 {
		t.Errorf("root start %d, file says %s", tr.Spans[0].Start.UnixNano(), m[1])
	}
	if int64(float64(n)) == n {
		t.Errorf("%d survives float64; the test does not show int64 decoding", n)
	}

	// Python repr outputs stay strings.
	for _, sp := range tr.Spans {
		if sp.Name == "Invoking Action Group" {
			if s, ok := jsonValue(t, sp.Outputs).(string); !ok || !strings.HasPrefix(s, "{'action_group_name': ") {
				t.Errorf("repr outputs %.80s", sp.Outputs)
			}
		}
	}

	// Events by the mapping table, from the raw attributes: chat spans in
	// start order give their input messages, then each choice's message as
	// an assistant message.
	var wantEvents []trace.Event
	toolCalls, toolOutputs := 0, 0
	sorted := append([]ws(nil), want...)
	sort.SliceStable(sorted, func(a, b int) bool { return sorted[a].start < sorted[b].start })
	for _, w := range sorted {
		src := doc.Spans[w.i]
		var kind string
		json.Unmarshal([]byte(src.Attributes["mlflow.spanType"]), &kind)
		switch kind {
		case "CHAT_MODEL", "LLM", "CHAT":
			var in struct {
				Messages []struct{ Role, Content string } `json:"messages"`
			}
			var out struct {
				Choices []struct {
					Message struct{ Role, Content string } `json:"message"`
				} `json:"choices"`
			}
			if err := json.Unmarshal([]byte(src.Attributes["mlflow.spanInputs"]), &in); err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal([]byte(src.Attributes["mlflow.spanOutputs"]), &out); err != nil {
				t.Fatal(err)
			}
			for _, m := range in.Messages {
				wantEvents = append(wantEvents, trace.Event{Role: m.Role, Content: trace.TextContent(m.Content), SpanID: w.id})
			}
			for _, c := range out.Choices {
				wantEvents = append(wantEvents, trace.Event{Role: "assistant", Content: trace.TextContent(c.Message.Content), SpanID: w.id})
			}
		case "TOOL":
			toolCalls++
			toolOutputs++
		}
	}
	st := tr.Stats()
	if st.Events != len(wantEvents) || st.ToolCalls != toolCalls || st.ToolOutputs != toolOutputs || st.Spans != 5 || len(wantEvents) != 2 {
		t.Fatalf("stats %+v, want %d events (2), %d tool calls, %d outputs", st, len(wantEvents), toolCalls, toolOutputs)
	}
	for i, w := range wantEvents {
		e := tr.Events[i]
		if e.Role != w.Role || e.Content.Kind != trace.ContentText || e.Content.Text != w.Content.Text || e.SpanID != w.SpanID {
			t.Errorf("event %d: %s, want role %s span %s content %.60q", i, trace.AppendEvent(nil, &e), w.Role, w.SpanID, w.Content.Text)
		}
	}
	// The message's own members are kept (here "name": null).
	if got := string(tr.Events[0].Extra.Get("name")); got != "null" {
		t.Errorf("input message extra name %q", got)
	}
}

// mlflow3 is an MLflow 3 trace: info/data, span dicts with span_id,
// parent_span_id, *_unix_nano (numbers and strings) and a status object.
// An agent asks a model, which calls a tool; the next model call repeats
// the conversation; a second tool runs without a model call.
const mlflow3 = `{"info": {"trace_id": "tr-7f3a", "trace_location": {"type": "MLFLOW_EXPERIMENT", "mlflow_experiment": {"experiment_id": "0"}},
  "request_time": "2025-06-01T10:00:00Z", "execution_duration": "2.5s", "state": "OK", "trace_metadata": {"mlflow.trace_schema.version": "3"}, "tags": {}},
 "data": {"spans": [
  {"trace_id": "tr-7f3a", "span_id": "c1", "parent_span_id": "a1", "name": "get_weather", "start_time_unix_nano": "1748772000300000000", "end_time_unix_nano": "1748772000400000000",
   "status": {"code": "STATUS_CODE_OK", "message": ""}, "events": [],
   "attributes": {"mlflow.spanType": "\"TOOL\"", "mlflow.spanInputs": "{\"city\": \"Paris\"}", "mlflow.spanOutputs": "\"sunny, 24C\""}},
  {"trace_id": "tr-7f3a", "span_id": "a1", "parent_span_id": null, "name": "agent", "start_time_unix_nano": 1748772000000000000, "end_time_unix_nano": 1748772002500000000,
   "status": {"code": "OK", "message": ""}, "events": [], "otel_trace_id": "0x5b8aa5a2d2c872e8321cf37308d69df2",
   "attributes": {"mlflow.traceRequestId": "\"tr-7f3a\"", "mlflow.spanType": "\"AGENT\"", "mlflow.spanInputs": "{\"question\": \"weather in Paris?\"}", "mlflow.spanOutputs": "\"It is sunny.\""}},
  {"trace_id": "tr-7f3a", "span_id": "b1", "parent_span_id": "a1", "name": "Completions", "start_time_unix_nano": 1748772000100000000, "end_time_unix_nano": 1748772000200000000,
   "status": {"code": "OK", "message": ""}, "events": [],
   "attributes": {"mlflow.spanType": "\"CHAT_MODEL\"",
     "mlflow.spanInputs": "{\"model\": \"gpt-4o\", \"messages\": [{\"role\": \"system\", \"content\": \"Be brief.\"}, {\"role\": \"user\", \"content\": \"weather in Paris?\"}], \"tools\": [{\"type\": \"function\", \"function\": {\"name\": \"get_weather\"}}]}",
     "mlflow.spanOutputs": "{\"id\": \"chatcmpl-1\", \"choices\": [{\"index\": 0, \"message\": {\"role\": \"assistant\", \"content\": null, \"tool_calls\": [{\"id\": \"call_1\", \"type\": \"function\", \"function\": {\"name\": \"get_weather\", \"arguments\": \"{\\\"city\\\": \\\"Paris\\\"}\"}}]}, \"finish_reason\": \"tool_calls\"}]}"}},
  {"trace_id": "tr-7f3a", "span_id": "d1", "parent_span_id": "a1", "name": "Completions", "start_time_unix_nano": 1748772000500000000, "end_time_unix_nano": 1748772000600000000,
   "status": {"code": "OK", "message": ""}, "events": [],
   "attributes": {"mlflow.spanType": "\"CHAT_MODEL\"",
     "mlflow.spanInputs": "{\"model\": \"gpt-4o\", \"messages\": [{\"role\": \"system\", \"content\": \"Be brief.\"}, {\"role\": \"user\", \"content\": \"weather in Paris?\"}, {\"role\": \"assistant\", \"tool_calls\": [{\"id\": \"call_1\", \"type\": \"function\", \"function\": {\"name\": \"get_weather\", \"arguments\": \"{\\\"city\\\":\\\"Paris\\\"}\"}}]}, {\"role\": \"tool\", \"tool_call_id\": \"call_1\", \"content\": \"sunny, 24 C\"}]}",
     "mlflow.spanOutputs": "{\"choices\": [{\"index\": 0, \"message\": {\"role\": \"assistant\", \"content\": \"It is sunny.\"}}]}"}},
  {"trace_id": "tr-7f3a", "span_id": "e1", "parent_span_id": "a1", "name": "", "start_time_unix_nano": 1748772000700000000, "end_time_unix_nano": null,
   "status": {"code": "STATUS_CODE_ERROR", "message": "disk full"}, "events": [{"name": "exception", "time_unix_nano": 1748772000700000001, "attributes": {"exception.message": "disk full"}}],
   "attributes": {"mlflow.spanType": "\"TOOL\"", "mlflow.spanFunctionName": "\"log_answer\"", "mlflow.spanInputs": "\"It is sunny.\"", "mlflow.spanOutputs": "{\"ok\": false}"}}
 ], "request": "{\"question\": \"weather in Paris?\"}"}}`

func TestMLflow3(t *testing.T) {
	tr := decodeOne(t, mlflow3)
	if tr.ID != "tr-7f3a" {
		t.Errorf("trace id %q", tr.ID)
	}
	var info map[string]any
	if err := json.Unmarshal(tr.Metadata, &info); err != nil || info["state"] != "OK" || info["trace_id"] != "tr-7f3a" {
		t.Errorf("metadata %s", tr.Metadata)
	}
	if got := string(tr.Extra.Get("data")); got != `{"request":"{\"question\": \"weather in Paris?\"}"}` {
		t.Errorf("data extra %s", got)
	}
	order := []string{"a1", "b1", "c1", "d1", "e1"}
	for i, sp := range tr.Spans {
		if sp.ID != order[i] {
			t.Errorf("span %d is %q, want %q", i, sp.ID, order[i])
		}
		if i > 0 && sp.ParentID != "a1" {
			t.Errorf("span %s parent %q", sp.ID, sp.ParentID)
		}
		if string(sp.Extra.Get("trace_id")) != `"tr-7f3a"` {
			t.Errorf("span %s: trace_id not kept: %v", sp.ID, sp.Extra)
		}
	}
	c1 := tr.Spans[2]
	if c1.Start.UnixNano() != 1748772000300000000 || c1.Status != "OK" || c1.Kind != "TOOL" {
		t.Errorf("c1 %+v", c1)
	}
	e1 := tr.Spans[4]
	if e1.Status != "ERROR" || e1.StatusMessage != "disk full" || !e1.End.IsZero() || e1.Extra.Get("events") == nil {
		t.Errorf("e1 %+v", e1)
	}
	if string(tr.Spans[0].Extra.Get("otel_trace_id")) != `"0x5b8aa5a2d2c872e8321cf37308d69df2"` {
		t.Errorf("otel_trace_id not kept")
	}
	want := `[{"role":"system","content":"Be brief.","span_id":"b1"},` +
		`{"role":"user","content":"weather in Paris?","span_id":"b1"},` +
		`{"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function","function":{"name":"get_weather","arguments":{"city":"Paris"}}}],"span_id":"b1"},` +
		`{"role":"tool","content":"sunny, 24C","tool_call_id":"call_1","span_id":"c1"},` +
		`{"role":"assistant","content":"It is sunny.","span_id":"d1"},` +
		`{"role":"assistant","content":null,"tool_calls":[{"id":"e1","type":"function","function":{"name":"log_answer","arguments":{"input":"It is sunny."}}}],"span_id":"e1"},` +
		`{"role":"tool","content":"{\"ok\":false}","tool_call_id":"e1","span_id":"e1"}]`
	if got := trace.AppendEvents(nil, tr.Events); string(got) != want {
		t.Errorf("events\n got  %s\n want %s", got, want)
	}
	if st := tr.Stats(); st.ToolCalls != 2 || st.ToolOutputs != 2 {
		t.Errorf("stats %+v", st)
	}
}

func mkSpan(id, parent, kind string, start int64, attrs string) string {
	p := "null"
	if parent != "" {
		p = strconv.Quote(parent)
	}
	a := `"mlflow.spanType": ` + strconv.Quote(strconv.Quote(kind))
	if attrs != "" {
		a += ", " + attrs
	}
	return `{"name": "` + id + `", "context": {"span_id": "` + id + `", "trace_id": "0xt"}, "parent_id": ` + p +
		`, "start_time": ` + strconv.FormatInt(start, 10) + `, "end_time": ` + strconv.FormatInt(start+5, 10) +
		`, "status_code": "OK", "status_message": "", "attributes": {` + a + `}, "events": []}`
}

func attr(key string, v any) string {
	b, _ := json.Marshal(v)
	return strconv.Quote(key) + ": " + strconv.Quote(string(b))
}

func spans(s ...string) string { return `{"spans": [` + strings.Join(s, ",\n") + `]}` }

func TestEvents(t *testing.T) {
	user := map[string]any{"role": "user", "content": "hi"}
	sys := map[string]any{"role": "system", "content": "sys"}
	answer := map[string]any{"choices": []any{map[string]any{"message": map[string]any{"role": "assistant", "content": "hello"}}}}
	for _, c := range []struct {
		name, in, want string
	}{
		{"nested duplicate chat spans emit once",
			spans(mkSpan("r", "", "CHAIN", 0, ""),
				mkSpan("l", "r", "CHAT_MODEL", 10, attr("mlflow.spanInputs", map[string]any{"messages": []any{sys, user}})+", "+attr("mlflow.spanOutputs", answer)),
				mkSpan("o", "l", "CHAT_MODEL", 11, attr("mlflow.spanInputs", map[string]any{"messages": []any{sys, user}, "model": "m"})+", "+attr("mlflow.spanOutputs", answer))),
			`[{"role":"system","content":"sys","span_id":"l"},{"role":"user","content":"hi","span_id":"l"},{"role":"assistant","content":"hello","span_id":"l"}]`},
		{"a continued conversation emits only the new turn",
			spans(mkSpan("r", "", "LLM", 0, attr("mlflow.spanInputs", []any{user})+", "+attr("mlflow.spanOutputs", answer)),
				mkSpan("s", "", "LLM", 20, attr("mlflow.spanInputs", map[string]any{"messages": []any{user, map[string]any{"role": "assistant", "content": "hello"}, map[string]any{"role": "user", "content": "bye"}}})+", "+attr("mlflow.spanOutputs", "ciao"))),
			`[{"role":"user","content":"hi","span_id":"r"},{"role":"assistant","content":"hello","span_id":"r"},{"role":"user","content":"bye","span_id":"s"},{"role":"assistant","content":"ciao","span_id":"s"}]`},
		{"a different conversation is emitted whole",
			spans(mkSpan("r", "", "CHAT", 0, attr("mlflow.spanInputs", []any{user})),
				mkSpan("s", "", "CHAT", 20, attr("mlflow.spanInputs", []any{sys, user}))),
			`[{"role":"user","content":"hi","span_id":"r"},{"role":"system","content":"sys","span_id":"s"},{"role":"user","content":"hi","span_id":"s"}]`},
		{"output messages conversation and content output",
			spans(mkSpan("r", "", "CHAT_MODEL", 0, attr("mlflow.spanInputs", map[string]any{"messages": []any{user}})+", "+attr("mlflow.spanOutputs", map[string]any{"messages": []any{user, map[string]any{"role": "assistant", "content": "yo"}}})),
				mkSpan("s", "", "LLM", 20, attr("mlflow.spanOutputs", map[string]any{"content": []any{map[string]any{"type": "text", "text": "done"}}, "role": "model", "stop": "end"}))),
			`[{"role":"user","content":"hi","span_id":"r"},{"role":"assistant","content":"yo","span_id":"r"},{"role":"assistant","content":[{"type":"text","text":"done"}],"span_id":"s","stop":"end"}]`},
		{"completion choices text",
			spans(mkSpan("r", "", "LLM", 0, attr("mlflow.spanOutputs", map[string]any{"choices": []any{map[string]any{"text": "t1"}, map[string]any{"text": 5}}}))),
			`[{"role":"assistant","content":"t1","span_id":"r"}]`},
		{"messages not in the OpenAI shape give no events",
			spans(mkSpan("r", "", "CHAT_MODEL", 0, attr("mlflow.spanInputs", map[string]any{"messages": []any{map[string]any{"type": "human", "content": "hi"}}})+", "+attr("mlflow.spanOutputs", map[string]any{"choices": "x"})),
				mkSpan("s", "", "CHAT_MODEL", 1, attr("mlflow.spanInputs", []any{user, "hi"})+", "+attr("mlflow.spanOutputs", 7)),
				mkSpan("u", "", "LLM", 2, `"mlflow.spanInputs": "{'messages': [{'role': 'user'}]}"`)),
			`[]`},
		{"tool span without a call, inputs not an object, no outputs",
			spans(mkSpan("t", "", "TOOL", 0, attr("mlflow.spanInputs", []any{1, 2})),
				mkSpan("u", "", "TOOL", 1, ""),
				mkSpan("v", "", "TOOL", 2, attr("mlflow.spanOutputs", map[string]any{"b": 1, "a": []any{}})+`, "mlflow.spanInputs": "{'repr': 1}"`)),
			`[{"role":"assistant","content":null,"tool_calls":[{"id":"t","type":"function","function":{"name":"t","arguments":{"input":[1,2]}}}],"span_id":"t"},{"role":"tool","content":null,"tool_call_id":"t","span_id":"t"},` +
				`{"role":"assistant","content":null,"tool_calls":[{"id":"u","type":"function","function":{"name":"u","arguments":{}}}],"span_id":"u"},{"role":"tool","content":null,"tool_call_id":"u","span_id":"u"},` +
				`{"role":"assistant","content":null,"tool_calls":[{"id":"v","type":"function","function":{"name":"v","arguments":{"input":"{'repr': 1}"}}}],"span_id":"v"},{"role":"tool","content":"{\"a\":[],\"b\":1}","tool_call_id":"v","span_id":"v"}]`},
		{"parallel calls answered by tool spans by name",
			spans(mkSpan("l", "", "CHAT_MODEL", 0, attr("mlflow.spanInputs", []any{user})+", "+attr("mlflow.spanOutputs", map[string]any{"choices": []any{map[string]any{"message": map[string]any{"role": "assistant", "content": nil, "tool_calls": []any{
				map[string]any{"id": "c1", "type": "function", "function": map[string]any{"name": "f", "arguments": "{}"}},
				map[string]any{"id": "c2", "type": "function", "function": map[string]any{"name": "g", "arguments": "{}"}}}}}}})),
				mkSpan("g", "", "TOOL", 1, attr("mlflow.spanOutputs", "G")),
				mkSpan("f", "", "TOOL", 2, attr("mlflow.spanOutputs", "F")),
				mkSpan("f2", "", "TOOL", 3, attr("mlflow.spanFunctionName", "f")+", "+attr("mlflow.spanOutputs", "F2")),
				mkSpan("m", "", "CHAT_MODEL", 4, attr("mlflow.spanInputs", []any{user,
					map[string]any{"role": "assistant", "content": nil, "tool_calls": []any{
						map[string]any{"id": "c1", "type": "function", "function": map[string]any{"name": "f", "arguments": "{}"}},
						map[string]any{"id": "c2", "type": "function", "function": map[string]any{"name": "g", "arguments": "{}"}}}},
					map[string]any{"role": "tool", "tool_call_id": "c2", "content": "G"},
					map[string]any{"role": "tool", "tool_call_id": "c1", "content": "F"}}))),
			`[{"role":"user","content":"hi","span_id":"l"},{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":{}}},{"id":"c2","type":"function","function":{"name":"g","arguments":{}}}],"span_id":"l"},` +
				`{"role":"tool","content":"G","tool_call_id":"c2","span_id":"g"},{"role":"tool","content":"F","tool_call_id":"c1","span_id":"f"},` +
				`{"role":"assistant","content":null,"tool_calls":[{"id":"f2","type":"function","function":{"name":"f2","arguments":{}}}],"span_id":"f2"},{"role":"tool","content":"F2","tool_call_id":"f2","span_id":"f2"}]`},
		{"other span types stay in the tree",
			spans(mkSpan("r", "", "AGENT", 0, attr("mlflow.spanInputs", []any{user})+", "+attr("mlflow.spanOutputs", answer)),
				mkSpan("s", "r", "RETRIEVER", 1, attr("mlflow.spanOutputs", "docs")),
				mkSpan("u", "r", "UNKNOWN", 2, "")),
			`[]`},
	} {
		t.Run(c.name, func(t *testing.T) {
			tr := decodeOne(t, c.in)
			if got := trace.AppendEvents(nil, tr.Events); string(got) != c.want {
				t.Errorf("events\n got  %s\n want %s", got, c.want)
			}
		})
	}
}

// TestRawAttributeValues: attribute values that are not JSON-encoded
// strings are taken as they are, and text made of them stays valid UTF-8.
func TestRawAttributeValues(t *testing.T) {
	in := spans(mkSpan("t", "", "TOOL", 0, `"mlflow.spanInputs": {"q": 1}, "mlflow.spanOutputs": {"a": " x"}`))
	tr := decodeOne(t, in)
	if string(tr.Spans[0].Inputs) != `{"q":1}` || len(tr.Events) != 2 {
		t.Fatalf("inputs %s, %d events", tr.Spans[0].Inputs, len(tr.Events))
	}
	if got := tr.Events[1].Content.Text; got != `{"a":" x"}` {
		t.Errorf("tool output %q", got)
	}
	// Bytes that are not UTF-8 are refused at their place (the rule at
	// the door, jsonscan), not stored as they came.
	in = spans(mkSpan("t", "", "TOOL", 0, `"mlflow.spanOutputs": {"a": "`+"\xff\xfe"+` x"}`))
	traces, errs := decodeAll(t, []byte(in), "one.json")
	if len(traces) != 0 || len(errs) != 1 || errs[0].Path != `$.spans[0].attributes["mlflow.spanOutputs"].a` || !strings.Contains(errs[0].Msg, "invalid UTF-8") {
		t.Errorf("not UTF-8: %d traces, errors %v", len(traces), errs)
	}
}

func TestTree(t *testing.T) {
	// Children listed before parents, siblings out of start order, an
	// orphan, and two roots.
	in := spans(
		mkSpan("c2", "p", "UNKNOWN", 30, ""),
		mkSpan("c1", "p", "UNKNOWN", 20, ""),
		mkSpan("orphan", "gone", "UNKNOWN", 5, ""),
		mkSpan("g", "c2", "UNKNOWN", 31, ""),
		mkSpan("p", "", "UNKNOWN", 10, ""),
		mkSpan("c0", "p", "UNKNOWN", 20, ""),
	)
	tr := decodeOne(t, in)
	var got []string
	for _, sp := range tr.Spans {
		got = append(got, sp.ID+"<"+sp.ParentID)
	}
	want := "orphan<gone p< c1<p c0<p c2<p g<c2"
	if strings.Join(got, " ") != want {
		t.Errorf("order %v, want %s", got, want)
	}
}

func TestShapes(t *testing.T) {
	// null and missing members, status as integers, extras kept and
	// renamed when they collide with canonical names.
	in := `{"spans": [{"name": null, "context": {"span_id": "s", "trace_id": null, "trace_flags": 1}, "start_time": 0, "end_time": null,
	  "status_code": 2, "status_message": null, "attributes": null, "kind": "SERVER", "value": 1}], "name": "x", "version": 2}` + "\n" +
		`{"info": {"request_id": "tr-old", "timestamp_ms": 1}, "data": {"spans": []}}` + "\n" +
		`{"info": {"request_id": "tr-old", "trace_id": "tr-new"}, "data": {"spans": [{"span_id": "AAAAAAAAAAE=", "trace_id": "base64==", "parent_span_id": "", "start_time_unix_nano": "5", "status": {"code": 1, "deprecated_code": 0}}]}}`
	traces, errs := decodeAll(t, []byte(in), "shapes.jsonl")
	if len(errs) > 0 || len(traces) != 3 {
		t.Fatalf("%d traces, errors %v", len(traces), errs)
	}
	for _, tr := range traces {
		golden.RoundTrip(t, tr)
	}
	sp := traces[0].Spans[0]
	if sp.Status != "ERROR" || sp.Start.UnixNano() != 0 || !sp.End.IsZero() || sp.Attributes != nil || traces[0].ID != "" {
		t.Errorf("span %+v", sp)
	}
	if string(sp.Extra.Get("mlflow_kind")) != `"SERVER"` || string(sp.Extra.Get("mlflow_value")) != "1" || string(sp.Extra.Get("context")) != `{"trace_flags":1}` {
		t.Errorf("span extra %v", sp.Extra)
	}
	if string(traces[0].Extra.Get("mlflow_name")) != `"x"` || string(traces[0].Extra.Get("version")) != "2" {
		t.Errorf("trace extra %v", traces[0].Extra)
	}
	if traces[1].ID != "tr-old" || len(traces[1].Spans) != 0 || len(traces[1].Events) != 0 {
		t.Errorf("trace 1 %+v", traces[1])
	}
	sp = traces[2].Spans[0]
	if traces[2].ID != "tr-new" || sp.ID != "AAAAAAAAAAE=" || sp.ParentID != "" || sp.Status != "OK" ||
		string(sp.Extra.Get("mlflow_status")) != `{"code":1,"deprecated_code":0}` {
		t.Errorf("trace 2 %q span %+v", traces[2].ID, sp)
	}
}

func TestErrors(t *testing.T) {
	good := spans(mkSpan("0x01", "", "CHAT_MODEL", 1, attr("mlflow.spanInputs", map[string]any{"messages": []any{map[string]any{"role": "user", "content": "q"}}})))
	good = strings.ReplaceAll(good, "\n", " ")
	s := func(body string) string { return `{"spans": [` + body + `]}` }
	for _, c := range []struct {
		name, bad, path, msg string
	}{
		{"no span id", s(`{"name": "a", "start_time": 1}`), "$.spans[0]", "the span has no span id (context.span_id or span_id)"},
		{"span id a number", s(`{"context": {"span_id": 5}, "start_time": 1}`), "$.spans[0].context.span_id", "the span id must be a string, not a number"},
		{"span id null", s(`{"span_id": null, "start_time": 1}`), "$.spans[0].span_id", "the span id must be a string, not null"},
		{"span id empty", s(`{"span_id": "", "start_time": 1}`), "$.spans[0].span_id", "the span id must not be empty"},
		{"span id with a dot", s(`{"span_id": "a.b", "start_time": 1}`), "$.spans[0].span_id", `the span id "a.b" contains '.'`},
		{"span id twice in one span", s(`{"context": {"span_id": "a"}, "span_id": "a", "start_time": 1}`), "$.spans[0].span_id", "the span id given twice (context.span_id and span_id)"},
		{"duplicate span id", s(`{"span_id": "a", "start_time": 1}, {"span_id": "a", "start_time": 2}`), "$.spans[1]", `span id "a" is used twice (also by $.spans[0])`},
		{"parent a number", s(`{"span_id": "a", "parent_id": 1, "start_time": 1}`), "$.spans[0].parent_id", "parent_id must be a span id (a string) or null, not a number"},
		{"parent twice", s(`{"span_id": "a", "parent_id": null, "parent_span_id": "b", "start_time": 1}`), "$.spans[0].parent_span_id", "the parent id given twice"},
		{"parent cycle", s(`{"span_id": "r", "start_time": 1}, {"span_id": "a", "parent_id": "b", "start_time": 1}, {"span_id": "b", "parent_id": "a", "start_time": 1}`), "$.spans[1]", `span "a" is its own ancestor`},
		{"own parent", s(`{"span_id": "a", "parent_id": "a", "start_time": 1}`), "$.spans[0]", `span "a" is its own ancestor`},
		{"no start time", s(`{"span_id": "a", "end_time": 1}`), "$.spans[0]", `span "a" has no start time`},
		{"start null", s(`{"span_id": "a", "start_time": null}`), "$.spans[0].start_time", "start_time must be an integer number of nanoseconds, not null"},
		{"start a fraction", s(`{"span_id": "a", "start_time": 1.5}`), "$.spans[0].start_time", "must be an integer number of nanoseconds that fits in int64, not 1.5"},
		{"start an exponent", s(`{"span_id": "a", "start_time": 1.7e18}`), "$.spans[0].start_time", "not 1.7e18"},
		{"start overflows", s(`{"span_id": "a", "start_time": 9223372036854775808}`), "$.spans[0].start_time", "fits in int64"},
		{"start negative", s(`{"span_id": "a", "start_time": -1}`), "$.spans[0].start_time", "start_time must not be negative"},
		{"start text", s(`{"span_id": "a", "start_time_unix_nano": "soon"}`), "$.spans[0].start_time_unix_nano", `not "soon"`},
		{"start signed text", s(`{"span_id": "a", "start_time_unix_nano": "+5"}`), "$.spans[0].start_time_unix_nano", `not "+5"`},
		{"start a boolean", s(`{"span_id": "a", "start_time": true}`), "$.spans[0].start_time", "not a boolean"},
		{"start twice", s(`{"span_id": "a", "start_time": 1, "start_time_unix_nano": 1}`), "$.spans[0].start_time_unix_nano", "the start time given twice"},
		{"end before start", s(`{"span_id": "a", "start_time": 10, "end_time": 5}`), "$.spans[0].end_time", "end_time 5 is before the start time 10"},
		{"end before start, end first", s(`{"span_id": "a", "end_time": 5, "start_time": 10}`), "$.spans[0]", `span "a" ends (5) before it starts (10)`},
		{"status code", s(`{"span_id": "a", "start_time": 1, "status_code": "FINE"}`), "$.spans[0].status_code", `status_code must be OK, ERROR or UNSET, not "FINE"`},
		{"status code number", s(`{"span_id": "a", "start_time": 1, "status": {"code": 7}}`), "$.spans[0].status.code", "must be OK, ERROR or UNSET (or 1, 2, 0), not 7"},
		{"status not an object", s(`{"span_id": "a", "start_time": 1, "status": "OK"}`), "$.spans[0].status", "status must be an object {code, message}, not a string"},
		{"status twice", s(`{"span_id": "a", "start_time": 1, "status_code": "OK", "status": {"code": "OK"}}`), "$.spans[0].status", "the status given twice"},
		{"attributes an array", s(`{"span_id": "a", "start_time": 1, "attributes": []}`), "$.spans[0].attributes", "attributes must be an object, not an array"},
		{"span type a number", s(`{"span_id": "a", "start_time": 1, "attributes": {"mlflow.spanType": 3}}`), `$.spans[0].attributes["mlflow.spanType"]`, "mlflow.spanType must be a (JSON-encoded) string, not a number"},
		{"name a number", s(`{"span_id": "a", "start_time": 1, "name": 3}`), "$.spans[0].name", "name must be a string, not a number"},
		{"context a string", s(`{"context": "a", "start_time": 1}`), "$.spans[0].context", "context must be an object, not a string"},
		{"trace ids differ", s(`{"context": {"span_id": "a", "trace_id": "0x1"}, "start_time": 1}, {"context": {"span_id": "b", "trace_id": "0x2"}, "start_time": 1}`), "$.spans[1].context.trace_id", `trace_id "0x2" differs from "0x1" of an earlier span: a file holds one trace`},
		{"span not an object", s(`"a"`), "$.spans[0]", "a span must be an object, not a string"},
		{"spans not an array", `{"spans": {}}`, "$.spans", "spans must be an array of span objects, not an object"},
		{"spans twice", `{"spans": [], "data": {"spans": []}}`, "$.data.spans", "spans given twice: a file holds one trace"},
		{"top level an array", `[{"spans": []}]`, "$", "an MLflow trace must be an object"},
		{"no spans", `{"trace": {}}`, "$", `an MLflow trace needs "spans", or "info" and "data" with "spans"`},
		{"info not an object", `{"info": "tr-1", "data": {"spans": []}}`, "$.info", "info must be an object, not a string"},
		{"data not an object", `{"info": {}, "data": []}`, "$.data", "data must be an object, not an array"},
	} {
		t.Run(c.name, func(t *testing.T) {
			in := good + "\n" + c.bad + "\n" + good + "\n"
			traces, errs := decodeAll(t, []byte(in), "errors.jsonl")
			if len(traces) != 2 {
				t.Errorf("%d traces imported, want the 2 good ones", len(traces))
			}
			if len(errs) != 1 {
				t.Fatalf("errors %v, want one", errs)
			}
			e := errs[0]
			if !e.Recoverable || e.Trace != 1 || e.File != "errors.jsonl" || e.Line != 2 || e.Col < 1 {
				t.Errorf("error %+v: want recoverable, trace 1, errors.jsonl line 2", e)
			}
			if e.Path != c.path {
				t.Errorf("path %q, want %q", e.Path, c.path)
			}
			if !strings.Contains(e.Msg, c.msg) {
				t.Errorf("message %q does not contain %q", e.Msg, c.msg)
			}
		})
	}
}

func TestErrorPosition(t *testing.T) {
	in := "{\"spans\": [\n  {\"span_id\": \"a\",\n   \"start_time\": 1.5}]}"
	_, errs := decodeAll(t, []byte(in), "pos.json")
	if len(errs) != 1 {
		t.Fatalf("errors %v", errs)
	}
	want := "pos.json:3:18: $.spans[0].start_time: start_time must be an integer number of nanoseconds that fits in int64, not 1.5"
	if errs[0].Error() != want {
		t.Errorf("error\n %q\nwant\n %q", errs[0].Error(), want)
	}
}

func TestInvalidJSONIsFatal(t *testing.T) {
	for _, in := range []string{
		`{"spans": [{"span_id": "a", "start_time": 1,}]}`,
		`{"spans": [{"span_id": "a" "start_time": 1}]}`,
		`{"spans": [}`,
		`{"spans": [tru]}`,
		"{\"spans\": [{\"name\": \"a\tb\"}]}",
	} {
		traces, errs := decodeAll(t, []byte(`{"spans": []}`+"\n"+in+"\n"+`{"spans": []}`), "bad.json")
		if len(traces) != 1 || len(errs) != 1 || errs[0].Recoverable || errs[0].Line != 2 || errs[0].File != "bad.json" {
			t.Errorf("%q: %d traces, errors %v: want the first trace, then one fatal error on line 2", in, len(traces), errs)
		}
	}
}
