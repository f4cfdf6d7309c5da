package bedrock

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/lookout-dev/lookout/internal/formats/decoding"
	"github.com/lookout-dev/lookout/internal/trace"
)

// ev builds an SDK trace event: {"trace": {<extra>, "trace": {<phase>: <inner>}}}.
func ev(phase, inner string, extra ...string) string {
	head := ""
	for _, e := range extra {
		head += e + ","
	}
	return `{"trace":{` + head + `"trace":{"` + phase + `":` + inner + `}}}`
}

// orch builds an orchestration step event.
func orch(stepName, body string, extra ...string) string {
	return ev("orchestrationTrace", `{"`+stepName+`":`+body+`}`, extra...)
}

func list(events ...string) string { return "[" + strings.Join(events, ",\n") + "]" }

func decodeString(t *testing.T, in string) *trace.Trace {
	t.Helper()
	tr := decodeOne(t, []byte(in), "synthetic.json")
	checkInvariants(t, tr)
	roundTrip(t, tr)
	return tr
}

func TestErrors(t *testing.T) {
	okTrace := orch("rationale", `{"text":"hi","traceId":"t-0"}`)
	tests := []struct {
		name, in  string
		path, msg string
		line, col int // checked when not 0
	}{
		{"string at top", `"hello"`, "$", "must be a JSON array of events or an object", 1, 1},
		{"number at top", `42`, "$", "not a number", 0, 0},
		{"empty list", `[]`, "$", "holds no events", 0, 0},
		{"empty groups", `{}`, "$", "holds no events", 0, 0},
		{"element not an object", `[1]`, "$[0]", "an event must be an object, not a number", 1, 2},
		{"neither trace nor chunk", `[{"foo": {}}]`, "$[0]", "must hold a trace, chunk, returnControl or files member", 0, 0},
		{"trace and chunk", `[{"trace": {"trace": {"guardrailTrace": {}}}, "chunk": {"bytes": ""}}]`, "$[0]", "not trace and chunk", 0, 0},
		{"trace of no kind", `[{"trace": {"trace": {}}}]`, "$[0].trace.trace", "one trace kind", 0, 0},
		{"both kinds", `[{"chunk": {"bytes": ""}, "returnControl": {}}]`, "$[0]", "not chunk and returnControl", 0, 0},
		{"frame of unknown type", `[{"headers": {":event-type": "bogus"}, "payload": {}}]`, `$[0].headers[":event-type"]`, `not "bogus"`, 0, 0},
		{"repeated headers", `[{"headers": {":event-type": "chunk"}, "payload": {"bytes": "SGk=", "message": "late"}, "headers": {":message-type": "exception"}}]`,
			"$[0].headers", `member "headers" is given twice`, 1, 89},
		{"frame without headers", `[{"payload": {}}]`, "$[0]", `needs "headers"`, 0, 0},
		{"frame without event type", `[{"headers": {}, "payload": {}}]`, "$[0].headers", `no ":event-type"`, 0, 0},
		{"frame without payload", `[{"headers": {":event-type": "chunk"}}]`, "$[0]", `needs a "payload"`, 0, 0},
		{"exception frame", `[{"headers": {":event-type": "throttlingException", ":message-type": "exception", ":exception-type": "throttlingException"}, "payload": {"message": "slow down"}}]`,
			"$[0]", "exception event (throttlingException): slow down", 0, 0},
		{"bad eventTime", "[\n" + orch("rationale", `{"text":"hi","traceId":"t-0"}`, `"eventTime": "yesterday"`) + "]",
			"$[0].trace.eventTime", `eventTime must be an ISO-8601 time such as 2025-05-21T09:50:19.483305356Z, not "yesterday"`, 2, 24},
		{"eventTime beyond year 9999", list(orch("rationale", `{"traceId":"t-0"}`, `"eventTime": "9999-12-31T23:59:59-01:00"`)), "$[0].trace.eventTime", "ISO-8601", 0, 0},
		{"eventTime a number", list(orch("rationale", `{"traceId":"t-0"}`, `"eventTime": 1716285019`)), "$[0].trace.eventTime", "eventTime must be a string, not a number", 0, 0},
		{"bad base64 that is not text", `[{"chunk": {"bytes": "abc\u0001"}}]`, "$[0].chunk.bytes", "neither base64", 1, 22},
		{"chunk bytes a number", `[{"chunk": {"bytes": 12}}]`, "$[0].chunk.bytes", "chunk bytes must be a string, not a number", 0, 0},
		{"chunk without bytes", `[{"chunk": {"attribution": {}}}]`, "$[0].chunk", `a chunk needs "bytes"`, 0, 0},
		{"bad chunk in a frame read after its payload", "[" + okTrace + ",\n{\"payload\": {\n  \"bytes\": \"%%\\u0000\"},\n \"headers\": {\":event-type\": \"chunk\"}}]",
			"$[1].payload.bytes", "neither base64", 3, 12},
		{"trace without trace", `[{"trace": {"agentId": "A"}}]`, "$[0].trace", `needs a "trace" object`, 0, 0},
		{"trace with two kinds", `[{"trace": {"trace": {"orchestrationTrace": {}, "guardrailTrace": {}}}}]`, "$[0].trace.trace", "not 2 (orchestrationTrace, guardrailTrace)", 0, 0},
		{"phase with two steps", list(ev("orchestrationTrace", `{"rationale": {}, "observation": {}}`)), "$[0].trace.trace.orchestrationTrace", "one step, not rationale and observation", 0, 0},
		{"rationale text a number", list(orch("rationale", `{"text": 3}`)), "$[0].trace.trace.orchestrationTrace.rationale.text", "text must be a string, not a number", 0, 0},
		{"token count a fraction", list(orch("modelInvocationOutput", `{"metadata": {"usage": {"inputTokens": 1.5}}}`)),
			"$[0].trace.trace.orchestrationTrace.modelInvocationOutput.metadata.usage.inputTokens", "must be an integer", 0, 0},
		{"isValid a string", list(ev("preProcessingTrace", `{"modelInvocationOutput": {"parsedResponse": {"isValid": "yes"}}}`)),
			"$[0].trace.trace.preProcessingTrace.modelInvocationOutput.parsedResponse.isValid", "isValid must be a boolean, not a string", 0, 0},
		{"parameters not a list", list(orch("invocationInput", `{"actionGroupInvocationInput": {"parameters": {}}}`)),
			"$[0].trace.trace.orchestrationTrace.invocationInput.actionGroupInvocationInput.parameters", "parameters must be an array", 0, 0},
		{"event_order not an integer", list(orch("rationale", `{"traceId":"t-0"}`, `"event_order": "x"`)), "$[0].trace.event_order", "event_order must be a number", 0, 0},
		{"group not a list", `{"t-0": 1}`, `$["t-0"]`, "a traceId group must be an array", 0, 0},
		{"grouped event without type", `{"t-0": [{"data": {}}]}`, `$["t-0"][0]`, `needs "data"`, 0, 0},
		{"grouped data not an object", `{"t-0": [{"data": [], "type": "rationale"}]}`, `$["t-0"][0].data`, "data must be an object", 0, 0},
		{"grouped traceId differs from key", `{"t-0": [{"data": {"traceId": "t-1"}, "type": "rationale"}]}`, `$["t-0"][0].data.traceId`, `"t-1" differs from its group key "t-0"`, 0, 0},
		{"grouped step with a bad field", `{"t-0": [{"type": "rationale", "data": {"text": true}}]}`, `$["t-0"][0].data.text`, "text must be a string, not a boolean", 0, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dec := NewDecoder(strings.NewReader(tc.in), "bad.json")
			tr, err := dec.Next()
			if err == nil {
				t.Fatalf("decoded %s", trace.AppendTrace(nil, tr))
			}
			var de *decoding.Error
			if !errors.As(err, &de) {
				t.Fatalf("error %T %v is not a *decoding.Error", err, err)
			}
			if de.File != "bad.json" || de.Line < 1 || de.Col < 1 {
				t.Errorf("error %q lacks file, line or column: %+v", de, de)
			}
			if de.Path != tc.path {
				t.Errorf("path %q, want %q (%s)", de.Path, tc.path, de.Msg)
			}
			if !strings.Contains(de.Msg, tc.msg) {
				t.Errorf("message %q does not contain %q", de.Msg, tc.msg)
			}
			if tc.line != 0 && (de.Line != tc.line || de.Col != tc.col) {
				t.Errorf("at %d:%d, want %d:%d", de.Line, de.Col, tc.line, tc.col)
			}
			if !de.Recoverable || de.Trace != 0 {
				t.Errorf("Recoverable %v Trace %d, want a recoverable error about trace 0", de.Recoverable, de.Trace)
			}
			if _, err := dec.Next(); !errors.Is(err, io.EOF) {
				t.Errorf("after the error Next gave %v, want io.EOF", err)
			}
		})
	}
}

// TestBrokenInput: input that is not JSON at all stops the decoder.
func TestBrokenInput(t *testing.T) {
	dec := NewDecoder(strings.NewReader("[\n{\"trace\": "), "cut.json")
	_, err := dec.Next()
	var de *decoding.Error
	if !errors.As(err, &de) || de.Recoverable || de.File != "cut.json" || de.Line == 0 {
		t.Fatalf("want an unrecoverable placed error, got %#v", err)
	}
	if _, err := dec.Next(); !errors.Is(err, io.EOF) {
		t.Fatalf("then %v, want io.EOF", err)
	}
}

// TestSkipAndGoOn: several invocations in one input; a bad one is reported
// with its index and the next one still decodes.
func TestSkipAndGoOn(t *testing.T) {
	good := list(orch("rationale", `{"text": "hi", "traceId": "t-0"}`))
	in := good + "\n" + `[{"nope": 1}]` + "\n" + good
	dec := NewDecoder(strings.NewReader(in), "many.jsonl")
	var got []string
	for {
		tr, err := dec.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		var de *decoding.Error
		if errors.As(err, &de) {
			if !de.Recoverable || de.Trace != 1 || de.Line != 2 || de.Path != "$[0]" {
				t.Fatalf("error %+v", de)
			}
			got = append(got, "error")
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, tr.Events[0].Content.Text)
	}
	if strings.Join(got, ",") != "hi,error,hi" {
		t.Fatalf("got %v", got)
	}
}

func TestToolCalls(t *testing.T) {
	in := list(
		orch("modelInvocationInput", `{"type": "ORCHESTRATION", "traceId": "t-0", "text": "{\"messages\":[{\"role\":\"user\",\"content\":\"[{text=Weather in Paris and Rome?, type=text}]\"}]}"}`),
		orch("rationale", `{"text": "I will call both.", "traceId": "t-0"}`),
		orch("invocationInput", `{"invocationType": "ACTION_GROUP", "traceId": "t-0", "actionGroupInvocationInput": {"actionGroupName": "weather", "apiPath": "/current", "verb": "get",
			"parameters": [{"name": "city", "type": "string", "value": "Paris"}, {"name": "city", "type": "string", "value": "dup"}, {"...": "..."}],
			"requestBody": {"content": {"application/json": {"properties": [{"name": "units", "type": "string", "value": "C"}]}}}}}`),
		orch("invocationInput", `{"traceId": "t-0", "actionGroupInvocationInput": {"actionGroupName": "weather", "function": "current", "parameters": [{"name": "city", "value": "Rome"}, {"name": "days"}]}}`),
		orch("observation", `{"type": "ACTION_GROUP", "traceId": "t-0", "actionGroupInvocationOutput": {"text": "Paris 20C"}}`),
		orch("observation", `{"type": "ACTION_GROUP", "traceId": "t-0", "actionGroupInvocationOutput": {"text": "Rome 25C"}}`),
		orch("observation", `{"type": "ACTION_GROUP", "traceId": "t-0", "actionGroupInvocationOutput": {}}`),
		orch("invocationInput", `{"traceId": "t-1", "codeInterpreterInvocationInput": {"code": "print(1)"}}`),
		orch("observation", `{"traceId": "t-1", "codeInterpreterInvocationOutput": {"executionOutput": "1\n"}}`),
		orch("observation", `{"traceId": "t-1", "codeInterpreterInvocationOutput": {"executionError": "boom"}}`),
		orch("observation", `{"traceId": "t-1", "finalResponse": {"text": "Paris 20C, Rome 25C."}, "type": "FINISH"}`),
	)
	tr := decodeString(t, in)
	type row struct{ role, content, spanID, calls, answers string }
	var got []row
	for _, e := range tr.Events {
		r := row{role: e.Role, content: e.Content.String(), spanID: e.SpanID, answers: e.ToolCallID}
		if e.Content.Kind == trace.ContentNull {
			r.content = "<null>"
		}
		for _, c := range e.ToolCalls {
			r.calls += c.ID + " " + c.Function.Name + " " + string(c.Function.Arguments) + ";"
		}
		got = append(got, r)
	}
	want := []row{
		{"user", "Weather in Paris and Rome?", "t-0", "", ""},
		{"assistant", "I will call both.", "t-0", `t-0-call-0 weather__/current {"city":"Paris","units":"C"};t-0-call-1 weather__current {"city":"Rome","days":null};`, ""},
		{"tool", "Paris 20C", "t-0", "", "t-0-call-0"},
		{"tool", "Rome 25C", "t-0", "", "t-0-call-1"},
		{"tool", "<null>", "t-0", "", ""}, // no call left to answer
		{"assistant", "<null>", "t-1", `t-1-call-0 code_interpreter {"code":"print(1)"};`, ""},
		{"tool", "1\n", "t-1", "", "t-1-call-0"},
		{"tool", "boom", "t-1", "", ""},
		{"assistant", "Paris 20C, Rome 25C.", "t-1", "", ""},
	}
	if len(got) != len(want) {
		t.Fatalf("%d events, want %d: %+v", len(got), len(want), got)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("event %d:\n got %+v\nwant %+v", i, got[i], want[i])
		}
	}
}

func TestReturnControl(t *testing.T) {
	rc := `{"returnControl": {"invocationId": "inv.1", "invocationInputs": [
		{"functionInvocationInput": {"actionGroup": "ag", "function": "f", "parameters": [{"name": "a", "type": "string", "value": "x"}]}},
		{"apiInvocationInput": {"actionGroup": "ag", "apiPath": "/p", "httpMethod": "GET", "requestBody": {"content": {"application/json": {"properties": [{"name": "b", "type": "integer", "value": "2"}]}}}}}]}}`
	frame := `{"headers": {":event-type": "returnControl", ":message-type": "event"}, "payload": {"invocationId": "inv-2", "invocationInputs": [{"functionInvocationInput": {"function": "g"}}]}}`
	tr := decodeString(t, list(orch("rationale", `{"text": "I need the user's tool.", "traceId": "t-0"}`), rc, frame))
	if len(tr.Spans) != 4 || tr.Spans[2].ID != "return-control-inv_1" || tr.Spans[2].Kind != "return-control" || tr.Spans[3].ID != "return-control-inv-2" {
		t.Fatalf("spans %v", spanIDs(tr))
	}
	if a := attrs(t, tr.Spans[2].Attributes); a["invocationId"] != "inv.1" {
		t.Errorf("attributes %v", a)
	}
	if len(tr.Events) != 3 {
		t.Fatalf("%d events", len(tr.Events))
	}
	calls := tr.Events[1].ToolCalls
	if len(calls) != 2 || calls[0].Function.Name != "ag__f" || string(calls[0].Function.Arguments) != `{"a":"x"}` ||
		calls[1].Function.Name != "ag__/p" || string(calls[1].Function.Arguments) != `{"b":"2"}` || calls[0].ID != "inv.1-call-0" {
		t.Errorf("calls %+v", calls)
	}
	if c := tr.Events[2].ToolCalls; len(c) != 1 || c[0].Function.Name != "action_group__g" {
		t.Errorf("frame calls %+v", c)
	}
}

func spanIDs(tr *trace.Trace) []string {
	var ids []string
	for _, sp := range tr.Spans {
		ids = append(ids, sp.ID)
	}
	return ids
}

func TestSpans(t *testing.T) {
	in := list(
		ev("guardrailTrace", `{"action": "NONE", "inputAssessments": [{}], "traceId": "g-pre-0"}`, `"eventTime": "2025-05-21T09:50:19.5Z"`, `"agentId": "A"`),
		ev("guardrailTrace", `{"action": "INTERVENED", "traceId": "g-pre-0"}`, `"eventTime": "2025-05-21 09:50:19.25+00:00"`),
		ev("failureTrace", `{"failureReason": "Lambda failed", "failureCode": 500, "traceId": "f-0"}`),
		orch("rationale", `{"text": "a", "traceId": "a.b:c"}`),
		orch("rationale", `{"text": "b", "traceId": "a_b_c"}`),
		orch("rationale", `{"text": "c", "traceId": "root"}`),
		orch("rationale", `{"text": "d"}`),
		ev("somethingNewTrace", `{"traceId": "n-0", "detail": {}}`),
		orch("rationale", `{"text": "e", "traceId": "k-0"}`, `"collaboratorName": "Helper"`, `"sessionId": "s2"`),
		orch("observation", `{"finalResponse": {"text": "helper says hi"}, "traceId": "k-0"}`, `"collaboratorName": "Helper"`),
		`{"files": {"files": [{"name": "out.csv"}]}}`,
	)
	tr := decodeString(t, in)
	wantIDs := "root,g-pre-0,f-0,a_b_c,a_b_c-2,root-2,orchestration-untraced,n-0,k-0"
	if got := strings.Join(spanIDs(tr), ","); got != wantIDs {
		t.Fatalf("span ids %s, want %s", got, wantIDs)
	}
	g := tr.Spans[1]
	if a := attrs(t, g.Attributes); g.Kind != "guardrail" || a["action"] != "INTERVENED" {
		t.Errorf("guardrail span %s %v", g.Kind, a)
	}
	if !g.Start.Equal(time.Date(2025, 5, 21, 9, 50, 19, 250e6, time.UTC)) || !g.End.Equal(time.Date(2025, 5, 21, 9, 50, 19, 500e6, time.UTC)) {
		t.Errorf("guardrail span times %v %v: want the earliest and latest eventTime", g.Start, g.End)
	}
	f := tr.Spans[2]
	if a := attrs(t, f.Attributes); f.Kind != "failure" || f.Status != "ERROR" || f.StatusMessage != "Lambda failed" || a["failureCode"] != 500.0 {
		t.Errorf("failure span %+v", f)
	}
	if a := attrs(t, tr.Spans[3].Attributes); a["traceId"] != "a.b:c" {
		t.Errorf("sanitized span keeps traceId %v", a["traceId"])
	}
	if tr.Spans[7].Kind != "somethingNewTrace" {
		t.Errorf("unknown trace kind gave span kind %q", tr.Spans[7].Kind)
	}
	k := tr.Spans[8]
	if a := attrs(t, k.Attributes); k.Kind != "collaborator" || a["collaboratorName"] != "Helper" || a["finalResponse"] != "helper says hi" || a["phase"] != "orchestration" {
		t.Errorf("collaborator span %s %v", k.Kind, a)
	}
	// A collaborator's finalResponse is no event; there is no final answer.
	if last := tr.Events[len(tr.Events)-1]; last.Content.Text != "e" {
		t.Errorf("last event %q", last.Content.Text)
	}
	if countList(t, tr.Spans[0].Extra.Get("files")) != 1 {
		t.Errorf("files event not kept")
	}
	var md map[string]any
	_ = json.Unmarshal(tr.Metadata, &md)
	if md["agentId"] != "A" {
		t.Errorf("metadata %v", md)
	}
	if tr.ID != "" {
		t.Errorf("trace id %q from traceIds that are not UUIDs", tr.ID)
	}
}

func TestFinalAnswer(t *testing.T) {
	final := func(text string) string {
		return orch("observation", `{"finalResponse": {"text": "`+text+`"}, "type": "FINISH", "traceId": "t-0"}`)
	}
	chunk := func(b string) string { return `{"chunk": {"bytes": "` + b + `"}}` }
	tests := []struct {
		name   string
		in     []string
		events []string // role:text@span
	}{
		{"final response only", []string{final("Hi")}, []string{"assistant:Hi@t-0"}},
		{"chunk only, base64", []string{chunk("SGk=")}, []string{"assistant:Hi@root"}},
		{"equal: once", []string{final("Hi"), chunk("SGk=")}, []string{"assistant:Hi@t-0"}},
		{"differ: the chunk, in the root", []string{final("Hi"), chunk("SG8=")}, []string{"assistant:Ho@root"}},
		{"plain text chunks", []string{chunk("Hello world"), chunk(", again")}, []string{"assistant:Hello world, again@root"}},
		{"text that is not base64 of UTF-8", []string{chunk("Test")}, []string{"assistant:Test@root"}},
		// "é" is C3 A9: "w6k=" holds both bytes, "ww==" and "qQ==" one each.
		{"a character split between chunks", []string{chunk("w6k="), chunk("ww=="), chunk("qQ==")}, []string{"assistant:éé@root"}},
		{"mixed chunks decode one by one", []string{chunk("Hello world"), chunk("SGk=")}, []string{"assistant:Hello worldHi@root"}},
		{"several final responses", []string{final("first"), orch("rationale", `{"text": "r", "traceId": "t-1"}`), final("second")},
			[]string{"assistant:first@t-0", "assistant:r@t-1", "assistant:second@t-0"}},
		{"reprompt", []string{orch("observation", `{"repromptResponse": {"text": "Say again?", "source": "PARSER"}, "type": "REPROMPT", "traceId": "t-0"}`)},
			[]string{"assistant:Say again?@t-0"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tr := decodeString(t, list(tc.in...))
			var got []string
			for _, e := range tr.Events {
				got = append(got, e.Role+":"+e.Content.Text+"@"+e.SpanID)
			}
			if strings.Join(got, "|") != strings.Join(tc.events, "|") {
				t.Errorf("events %q, want %q", got, tc.events)
			}
		})
	}
}

func TestUserFromRequest(t *testing.T) {
	tests := []struct {
		name, text, want string
	}{
		{"java block", `{"messages":[{"role":"user","content":"[{text=Hi there, type=text}]"}]}`, "Hi there"},
		{"java block without type, assistant prefill after", `{"system":"","messages":[{"content":"[{text=What is 1 + 1?}]","role":"user"},{"content":"[{text=Thought: <thinking> (1)}]","role":"assistant"}]}`, "What is 1 + 1?"},
		{"plain string", `{"messages":[{"role":"user","content":"Find the sum."}]}`, "Find the sum."},
		{"last user message of a conversation", `{"messages":[{"role":"user","content":"first"},{"role":"assistant","content":"a"},{"role":"user","content":"second"}]}`, "second"},
		{"JSON text blocks", `{"messages":[{"role":"user","content":[{"type":"text","text":"a"},{"type":"text","text":"b"}]}]}`, "a\nb"},
		{"several java blocks stay wrapped", `{"messages":[{"role":"user","content":"[{text=a, type=text}, {text=b, type=text}]"}]}`, "[{text=a, type=text}, {text=b, type=text}]"},
		{"image block", `{"messages":[{"role":"user","content":[{"type":"image","source":{}}]}]}`, ""},
		{"tool result", `{"messages":[{"role":"user","content":"[{tool_use_id=toolu_1, type=tool_result, content=[]}]"}]}`, ""},
		{"function results", `{"messages":[{"role":"user","content":"  <function_results> x"}]}`, ""},
		{"Claude 2 prompt", "\n\nHuman: hello\n\nAssistant:", ""},
		{"broken JSON", `{"messages":[{"role":"user","content":"x"}`, ""},
		{"no user", `{"messages":[{"role":"assistant","content":"x"}]}`, ""},
		{"blank", `{"messages":[{"role":"user","content":"[{text= , type=text}]"}]}`, ""},
	}
	for _, tc := range tests {
		got, ok := userFromRequest(tc.text)
		if got != tc.want || ok != (tc.want != "") {
			t.Errorf("%s: got %q %v, want %q", tc.name, got, ok, tc.want)
		}
	}
}

func TestSmallHelpers(t *testing.T) {
	for in, want := range map[string]string{
		"37901850-e166-4283-bb79-dc573285869d-0":         "37901850-e166-4283-bb79-dc573285869d",
		"37901850-e166-4283-bb79-dc573285869d":           "37901850-e166-4283-bb79-dc573285869d",
		"37901850-e166-4283-bb79-dc573285869dx":          "",
		"3790185g-e166-4283-bb79-dc573285869d-0":         "",
		"short":                                          "",
		"9197b92e-e3c6-4cc6-9df4-9fc7cc00c4bb-guardrail": "9197b92e-e3c6-4cc6-9df4-9fc7cc00c4bb",
	} {
		if got := uuidPrefix(in); got != want {
			t.Errorf("uuidPrefix(%q) = %q, want %q", in, got, want)
		}
	}
	for in, want := range map[string]string{"a-b_c9": "a-b_c9", "a.b": "a_b", "é.x": "__x", "[0]": "_0_"} {
		if got := sanitizeID(in); got != want {
			t.Errorf("sanitizeID(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestForms: the same invocation as an SDK list, as frames (headers first or
// payload first) and grouped gives the same events and spans.
func TestForms(t *testing.T) {
	steps := []struct{ name, body string }{
		{"rationale", `{"text": "thinking", "traceId": "t-0"}`},
		{"invocationInput", `{"traceId": "t-0", "knowledgeBaseLookupInput": {"knowledgeBaseId": "KB1", "text": "q"}}`},
		{"observation", `{"traceId": "t-0", "knowledgeBaseLookupOutput": {"retrievedReferences": [{"content": {"text": "ref"}}]}}`},
		{"observation", `{"traceId": "t-1", "finalResponse": {"text": "done"}}`},
	}
	var sdk, headersFirst, payloadFirst []string
	grouped := map[string][]string{}
	var order []string
	for i, s := range steps {
		payload := `{"trace": {"orchestrationTrace": {"` + s.name + `": ` + s.body + `}}}`
		sdk = append(sdk, `{"trace": `+payload+`}`)
		headersFirst = append(headersFirst, `{"headers": {":event-type": "trace"}, "payload": `+payload+`}`)
		payloadFirst = append(payloadFirst, `{"payload": `+payload+`, "headers": {":event-type": "trace"}}`)
		key := "t-0"
		if i == 3 {
			key = "t-1"
		}
		if grouped[key] == nil {
			order = append(order, key)
		}
		grouped[key] = append(grouped[key], `{"data": `+s.body+`, "event_order": `+string(rune('0'+i))+`, "type": "`+s.name+`"}`)
	}
	var g []string
	for _, k := range order {
		g = append(g, `"`+k+`": [`+strings.Join(grouped[k], ",")+`]`)
	}
	// In reverse key order: event_order puts the groups back.
	groupedIn := "{" + g[1] + "," + g[0] + "}"
	var want []byte
	for i, in := range []string{list(sdk...), list(headersFirst...), list(payloadFirst...), groupedIn} {
		tr := decodeString(t, in)
		tr.Spans = nil // the kept parts differ by form
		got := trace.AppendTrace(nil, tr)
		if i == 0 {
			want = got
			if !bytes.Contains(got, []byte(`"name":"knowledge_base__KB1"`)) {
				t.Fatalf("unexpected decoding %s", got)
			}
			continue
		}
		if !bytes.Equal(got, want) {
			t.Errorf("form %d:\n got %s\nwant %s", i, got, want)
		}
	}
	// Without event_order, the grouped form keeps file order.
	noOrder := `{"t-1": [{"data": {"text": "b"}, "type": "rationale"}], "t-0": [{"data": {"text": "a"}, "type": "rationale"}]}`
	tr := decodeString(t, noOrder)
	if tr.Events[0].Content.Text != "b" || tr.Spans[1].ID != "t-1" {
		t.Errorf("grouped form without event_order reordered: %v", spanIDs(tr))
	}
	// Phases of grouped parts come from the prompt type or the traceId.
	phases := `{"x-pre-0": [{"data": {}, "type": "modelInvocationOutput"}],
		"x-guardrail-post-0": [{"data": {"action": "NONE"}, "type": "guardrailTrace"}],
		"x-9": [{"data": {}, "type": "modelInvocationOutput"}, {"data": {"type": "POST_PROCESSING"}, "type": "modelInvocationInput"}]}`
	tr = decodeString(t, phases)
	var kinds []string
	for _, sp := range tr.Spans[1:] {
		kinds = append(kinds, sp.Kind)
	}
	if strings.Join(kinds, ",") != "pre-processing,guardrail,post-processing" {
		t.Errorf("grouped phases %v", kinds)
	}
}

// TestInvalidUTF8: bytes that are not UTF-8 in the input (JSON parsers let
// them through in raw values) never reach event text, so the trace survives
// the canonical round trip.
// TestInvalidUTF8: a string that is not UTF-8 is refused at its place
// (the rule at the door, jsonscan), not stored with its bytes replaced.
func TestInvalidUTF8(t *testing.T) {
	in := list(
		orch("invocationInput", "{\"traceId\": \"t-0\", \"knowledgeBaseLookupInput\": {\"knowledgeBaseId\": \"K\", \"text\": \"q\xff\"}}"),
	)
	_, err := NewDecoder(strings.NewReader(in), "bad.json").Next()
	var de *decoding.Error
	if !errors.As(err, &de) || de.Path != "$[0].trace.trace.orchestrationTrace.invocationInput.knowledgeBaseLookupInput.text" || !strings.Contains(de.Msg, "invalid UTF-8 (byte 0xff)") {
		t.Fatalf("got %v, want invalid UTF-8 at the text", err)
	}
}
