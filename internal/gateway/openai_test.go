package gateway

import (
	"encoding/json"
	"errors"
	"fmt"
	"math/rand"
	"sort"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/lookout-dev/lookout/internal/jsonscan"
	"github.com/lookout-dev/lookout/internal/trace"
)

// TestBadRequests: malformed bodies and members of the wrong type are
// errors naming the JSON path, for every provider.
func TestBadRequests(t *testing.T) {
	for _, tc := range []struct {
		provider, body, path, msg string
	}{
		{"openai", ``, "$", "unexpected end"},
		{"openai", `[]`, "$", "must be an object"},
		{"openai", `{}`, "$", `no "messages"`},
		{"openai", `{"messages": {}}`, "$.messages", "must be an array"},
		{"openai", `{"messages": [{"role": 5}]}`, "$.messages[0].role", "role must be a string"},
		{"openai", `{"messages": [{"role": "user", "content": 5}]}`, "$.messages[0].content", "content must be"},
		{"openai", `{"messages": [{"role": "assistant", "tool_calls": [{"id": "x"}]}]}`, "$.messages[0].tool_calls[0]", `no "function"`},
		{"openai", `{"messages": [], "stream": "yes"}`, "$.stream", "boolean"},
		{"openai", `{"messages": [], "model": 4}`, "$.model", "string"},
		{"openai", `{"messages": []} x`, "$", "after top-level value"},
		{"openai", `{"messages": [{"role": "user", "content": "a` + "\x01" + `"}]}`, "$.messages[0].content", "control character"},
		{"anthropic", `{"model": "m"}`, "$", `no "messages"`},
		{"anthropic", `{"messages": [{"role": "user"}]}`, "$.messages[0]", `"role" and a "content"`},
		{"anthropic", `{"messages": [{"role": "user", "content": 3}]}`, "$.messages[0].content", "string or a list"},
		{"anthropic", `{"messages": [{"role": "user", "content": [{"text": "x"}]}]}`, "$.messages[0].content[0]", `"type"`},
		{"anthropic", `{"messages": [{"role": "user", "content": [{"type": "text"}]}]}`, "$.messages[0].content[0]", `"text" string`},
		{"anthropic", `{"messages": [{"role": "user", "content": [{"type": "image", "source": 5}]}]}`, "$.messages[0].content[0].source", "must be an object"},
		{"anthropic", `{"messages": [{"role": "assistant", "content": [{"type": "tool_use", "id": "t", "name": "f", "input": [1]}]}]}`, "$.messages[0].content[0].input", "must be an object"},
		{"anthropic", `{"messages": [{"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t", "content": 1}]}]}`, "$.messages[0].content[0].content", "string or a list"},
		{"anthropic", `{"system": 1, "messages": []}`, "$.system", "string or a list"},
		{"gemini", `{}`, "$", `no "contents"`},
		{"gemini", `{"contents": [{"parts": [{"text": 1}]}]}`, "$.contents[0].parts[0].text", "string"},
		{"gemini", `{"contents": [{"parts": [{"functionCall": {"name": "f", "args": [1]}}]}]}`, "$.contents[0].parts[0].functionCall.args", "must be an object"},
		{"gemini", `{"contents": [{"parts": [{"function_call": {"args": {}}}]}]}`, "$.contents[0].parts[0].function_call", `"name"`},
		{"gemini", `{"contents": [{"parts": {}}]}`, "$.contents[0].parts", "must be an array"},
		{"gemini", `{"contents": [1]}`, "$.contents[0]", "must be an object"},
		{"gemini", `{"contents": [], "systemInstruction": {"parts": [{"text": false}]}}`, "$.systemInstruction.parts[0].text", "string"},
	} {
		_, err := providers[tc.provider].ParseRequest([]byte(tc.body))
		var se *jsonscan.Error
		if !errors.As(err, &se) {
			t.Errorf("%s %s: error %v has no JSON place", tc.provider, tc.body, err)
			continue
		}
		if se.Path != tc.path || !strings.Contains(err.Error(), tc.msg) || !strings.HasPrefix(err.Error(), tc.provider+" request: ") {
			t.Errorf("%s %s:\n got %v (path %s)\nwant path %s and %q", tc.provider, tc.body, err, se.Path, tc.path, tc.msg)
		}
	}
}

// TestOpenAIMessages: request messages read as canonical events; the
// members that say "none" go, so a message sent back with or without them
// is one event.
func TestOpenAIMessages(t *testing.T) {
	for _, tc := range []struct{ name, messages, want string }{
		{"none members dropped",
			`[{"role":"assistant","content":"hi","refusal":null,"annotations":[],"audio":null,"function_call":null,"tool_calls":[]}]`,
			`[{"role":"assistant","content":"hi"}]`},
		{"refusal kept",
			`[{"role":"assistant","content":null,"refusal":"no"}]`,
			`[{"role":"assistant","content":null,"refusal":"no"}]`},
		{"arguments string and object alike",
			`[{"role":"assistant","content":null,"tool_calls":[{"id":"a","type":"function","function":{"name":"f","arguments":"{\"q\": \"caf\\u00e9\"}"}},{"id":"b","type":"function","function":{"name":"f","arguments":{"q":"café"}}}]}]`,
			`[{"role":"assistant","content":null,"tool_calls":[{"id":"a","type":"function","function":{"name":"f","arguments":{"q":"café"}}},{"id":"b","type":"function","function":{"name":"f","arguments":{"q":"café"}}}]}]`},
		{"arguments not an object stay text",
			`[{"role":"assistant","tool_calls":[{"id":"a","function":{"name":"f","arguments":"caf\u00e9 ["}}]}]`,
			`[{"role":"assistant","tool_calls":[{"id":"a","function":{"name":"f","arguments":"café ["}}]}]`},
		{"parts and tool outputs",
			`[{"role":"user","content":[{"type":"text","text":"see"},{"type":"image_url","image_url":{"url":"data:image/png;base64,AA=="}}]},{"role":"tool","tool_call_id":"a","content":"ok"}]`,
			`[{"role":"user","content":[{"type":"text","text":"see"},{"type":"image_url","image_url":{"url":"data:image/png;base64,AA=="}}]},{"role":"tool","content":"ok","tool_call_id":"a"}]`},
	} {
		req, err := OpenAI().ParseRequest([]byte(`{"model":"m","messages":` + tc.messages + `}`))
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		if got := eventsJSON(req.Events); got != tc.want {
			t.Errorf("%s:\n got %s\nwant %s", tc.name, got, tc.want)
		}
	}
}

// TestOpenAIChoices: the choice with index 0 is the answer, wherever it is.
func TestOpenAIChoices(t *testing.T) {
	body := `{"model":"m","choices":[{"index":1,"message":{"role":"assistant","content":"second"},"finish_reason":"length"},{"message":{"role":"assistant","content":"first"},"finish_reason":"stop","index":0}],"usage":{"prompt_tokens":3,"completion_tokens":4}}`
	resp, err := OpenAI().ParseResponse([]byte(body))
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Events) != 1 || resp.Events[0].Content.Text != "first" || resp.FinishReason != "stop" || resp.Usage != (Usage{3, 4}) {
		t.Errorf("got %s %q %+v", eventsJSON(resp.Events), resp.FinishReason, resp.Usage)
	}
	empty, err := OpenAI().ParseResponse([]byte(`{"choices":[],"usage":null}`))
	if err != nil || len(empty.Events) != 0 {
		t.Errorf("no choices: %v %s", err, eventsJSON(empty.Events))
	}
}

// oaChunk is one chat.completion.chunk event with the first choice's delta.
func oaChunk(delta, finish string) sseEvent {
	f := "null"
	if finish != "" {
		f = `"` + finish + `"`
	}
	return sseEvent{data: []byte(`{"id":"c","object":"chat.completion.chunk","model":"gpt-4o","choices":[{"index":0,"delta":` + delta + `,"finish_reason":` + f + `}]}`)}
}

func oaArgs(index int, frag string) sseEvent {
	lit, _ := json.Marshal(frag)
	return oaChunk(fmt.Sprintf(`{"tool_calls":[{"index":%d,"function":{"arguments":%s}}]}`, index, lit), "")
}

func oaStart(index int, id, name string) sseEvent {
	return oaChunk(fmt.Sprintf(`{"tool_calls":[{"index":%d,"id":%q,"type":"function","function":{"name":%q,"arguments":""}}]}`, index, id, name), "")
}

// splits cuts s in two at every byte, and at random places into up to 6
// pieces; never inside a UTF-8 sequence (an API's JSON strings hold whole
// characters), but inside escapes like \u00e9 and \".
func splits(s string, rng *rand.Rand) [][]string {
	var out [][]string
	var at []int
	for i := 0; i <= len(s); i++ {
		if i == len(s) || utf8.RuneStart(s[i]) {
			at = append(at, i)
			out = append(out, []string{s[:i], s[i:]})
		}
	}
	for range 50 {
		cuts := []int{0, len(s)}
		for range 1 + rng.Intn(5) {
			cuts = append(cuts, at[rng.Intn(len(at))])
		}
		sort.Ints(cuts)
		var pieces []string
		for i := 1; i < len(cuts); i++ {
			pieces = append(pieces, s[cuts[i-1]:cuts[i]])
		}
		out = append(out, pieces)
	}
	return out
}

// Arguments text with the awkward spots: escapes (\u00e9, \", \\), raw
// multi-byte UTF-8, nesting.
const awkwardArgs = `{"path":"C:\\tmp\\caf\u00e9 \"quoted\".txt","text":"naïve — ✓ 😀","n":[1,{"a":null}]}`

// TestOpenAIStreamArguments: arguments split anywhere, and a call's name
// and arguments in separate chunks, assemble to the object; every event
// of the call is held and the stream is open until the choice finishes.
func TestOpenAIStreamArguments(t *testing.T) {
	rng := rand.New(rand.NewSource(2))
	want := canonJSON(json.RawMessage(awkwardArgs))
	for _, pieces := range splits(awkwardArgs, rng) {
		events := []sseEvent{oaChunk(`{"role":"assistant","content":null}`, ""), oaStart(0, "call_1", "write_file")}
		for _, p := range pieces {
			events = append(events, oaArgs(0, p))
		}
		st := OpenAI().NewStream()
		for i, ev := range events {
			hold, done, err := st.Add("", ev.data)
			if err != nil || done || hold != (i > 0) || st.Settled() != (i == 0) {
				t.Fatalf("pieces %q event %d: hold %v done %v settled %v err %v", pieces, i, hold, done, st.Settled(), err)
			}
		}
		if _, _, err := st.Add("", oaChunk(`{}`, "tool_calls").data); err != nil || !st.Settled() {
			t.Fatalf("finish: settled %v err %v", st.Settled(), err)
		}
		resp := st.Response()
		if len(resp.Events) != 1 || len(resp.Events[0].ToolCalls) != 1 {
			t.Fatalf("pieces %q: %s", pieces, eventsJSON(resp.Events))
		}
		c := resp.Events[0].ToolCalls[0]
		if c.ID != "call_1" || c.Function.Name != "write_file" || string(c.Function.Arguments) != string(want) || resp.FinishReason != "tool_calls" {
			t.Fatalf("pieces %q: call %s %s %s, want %s", pieces, c.ID, c.Function.Name, c.Function.Arguments, want)
		}
	}
}

// TestOpenAIStreamCalls: when a call is complete, in sequences of chunks.
func TestOpenAIStreamCalls(t *testing.T) {
	type step struct {
		ev                  sseEvent
		hold, done, settled bool
	}
	for _, tc := range []struct {
		name  string
		steps []step
		want  string // the assembled tool calls
	}{
		{"a later index closes a whole call", []step{
			{oaStart(0, "a", "f"), true, false, false},
			{oaArgs(0, `{"x":1}`), true, false, false},
			{oaStart(1, "b", "g"), true, false, false}, // a is whole: closed, b open
			{oaArgs(1, `{"y":`), true, false, false},
			{oaArgs(1, `2}`), true, false, false},
			{oaChunk(`{}`, "tool_calls"), false, false, true},
			{sseEvent{data: []byte("[DONE]")}, false, true, true},
		}, `a f {"x":1}; b g {"y":2}`},
		{"interleaved calls stay open until each is whole", []step{
			{oaStart(0, "a", "f"), true, false, false},
			{oaStart(1, "b", "g"), true, false, false}, // a has no arguments yet: stays open
			{oaArgs(0, `{"x":`), true, false, false},
			{oaArgs(1, `{"y":`), true, false, false},
			{oaArgs(0, `1}`), true, false, false},
			{oaArgs(1, `2}`), true, false, false}, // a whole and another call went on: closed; b goes on
			{oaChunk(`{}`, "tool_calls"), false, false, true},
		}, `a f {"x":1}; b g {"y":2}`},
		{"a call reopens when more of it comes", []step{
			{oaStart(0, "a", "f"), true, false, false},
			{oaArgs(0, `{}`), true, false, false},
			{oaStart(1, "b", "g"), true, false, false},
			{oaArgs(0, ` `), true, false, false}, // a again: open
			{oaChunk(`{}`, "tool_calls"), false, false, true},
		}, `a f {}; b g ""`},
		{"a whole call in one chunk with the finish", []step{
			{oaChunk(`{"role":"assistant","tool_calls":[{"index":0,"id":"a","type":"function","function":{"name":"f","arguments":"{\"q\":1}"}}]}`, "tool_calls"), true, false, true},
		}, `a f {"q":1}`},
		{"[DONE] closes calls a cut stream left open", []step{
			{oaStart(0, "a", "f"), true, false, false},
			{oaArgs(0, `{"q":`), true, false, false},
			{sseEvent{data: []byte("[DONE]")}, false, true, true},
		}, `a f "{\"q\":"`},
		{"text is not held; other choices are not recorded", []step{
			{oaChunk(`{"role":"assistant","content":"Hel"}`, ""), false, false, true},
			{sseEvent{data: []byte(`{"choices":[{"index":1,"delta":{"tool_calls":[{"index":0,"id":"z","function":{"name":"h","arguments":"{}"}}]}}]}`)}, false, false, true},
			{oaChunk(`{"content":"lo"}`, "stop"), false, false, true},
			{sseEvent{data: []byte(`{"choices":[],"usage":{"prompt_tokens":5,"completion_tokens":2}}`)}, false, false, true},
		}, ``},
		{"an upstream error ends the stream", []step{
			{oaStart(0, "a", "f"), true, false, false},
			{sseEvent{data: []byte(`{"error":{"message":"server overloaded","type":"server_error"}}`)}, false, true, true},
		}, `a f ""`},
		{"keep-alive and empty events", []step{
			{sseEvent{data: []byte("  ")}, false, false, true},
		}, ``},
	} {
		st := OpenAI().NewStream()
		for i, s := range tc.steps {
			hold, done, err := st.Add(s.ev.name, s.ev.data)
			if err != nil || hold != s.hold || done != s.done || st.Settled() != s.settled {
				t.Errorf("%s: step %d: hold %v done %v settled %v err %v, want %v %v %v", tc.name, i, hold, done, st.Settled(), err, s.hold, s.done, s.settled)
			}
		}
		var calls []string
		for _, e := range st.Response().Events {
			for _, c := range e.ToolCalls {
				calls = append(calls, c.ID+" "+c.Function.Name+" "+string(c.Function.Arguments))
			}
		}
		if got := strings.Join(calls, "; "); got != tc.want {
			t.Errorf("%s: calls %s, want %s", tc.name, got, tc.want)
		}
	}
}

// TestOpenAIStreamText: text, usage and finish of a text stream; other
// string members (reasoning_content of compatible servers) accumulate.
func TestOpenAIStreamText(t *testing.T) {
	st := OpenAI().NewStream()
	for _, ev := range []sseEvent{
		oaChunk(`{"role":"assistant","content":"","refusal":null}`, ""),
		oaChunk(`{"reasoning_content":"think "}`, ""),
		oaChunk(`{"reasoning_content":"more"}`, ""),
		oaChunk(`{"content":"Hi"}`, ""),
		oaChunk(`{"content":" there"}`, "stop"),
		{data: []byte(`{"id":"c","choices":[],"usage":{"prompt_tokens":9,"completion_tokens":3,"total_tokens":12}}`)},
	} {
		if hold, _, err := st.Add("", ev.data); hold || err != nil {
			t.Fatalf("hold %v err %v", hold, err)
		}
	}
	resp := st.Response()
	want := `[{"role":"assistant","content":"Hi there","reasoning_content":"think more"}]`
	if got := eventsJSON(resp.Events); got != want || resp.Usage != (Usage{9, 3}) || resp.FinishReason != "stop" || resp.Model != "gpt-4o" {
		t.Errorf("got %s %+v %q %q", got, resp.Usage, resp.FinishReason, resp.Model)
	}
}

func TestOpenAIStreamBadChunks(t *testing.T) {
	for _, tc := range []struct{ data, path string }{
		{`{"choices":[{"index":0,"delta":{"content":5}}]}`, "$.choices[0].delta.content"},
		{`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":"x"}]}}]}`, "$.choices[0].delta.tool_calls[0].index"},
		{`{"choices":[{"index":0,"delta":{"tool_calls":{}}}]}`, "$.choices[0].delta.tool_calls"},
		{`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":1}}]}}]}`, "$.choices[0].delta.tool_calls[0].function.arguments"},
		{`{"choices":`, "$.choices"},
		{`data`, "$"},
	} {
		_, _, err := OpenAI().NewStream().Add("", []byte(tc.data))
		var se *jsonscan.Error
		if !errors.As(err, &se) || se.Path != tc.path {
			t.Errorf("%s: %v, want path %s", tc.data, err, tc.path)
		}
	}
}

// The events a stream assembles are valid canonical JSON that reads back.
func TestOpenAIStreamEventsRoundTrip(t *testing.T) {
	st := OpenAI().NewStream()
	for _, ev := range []sseEvent{oaStart(0, "a", "f"), oaArgs(0, awkwardArgs), oaChunk(`{"audio":{"id":"x"}}`, "tool_calls")} {
		if _, _, err := st.Add("", ev.data); err != nil {
			t.Fatal(err)
		}
	}
	b := trace.AppendEvents(nil, st.Response().Events)
	if _, err := trace.DecodeEvents(jsonscan.New(b), "events"); err != nil || !json.Valid(b) {
		t.Errorf("%s: %v", b, err)
	}
}

// TestOpenAIRequestFields: model, stream (null is false) and tools (the
// deprecated functions when there are no tools).
func TestOpenAIRequestFields(t *testing.T) {
	for _, tc := range []struct {
		body, model string
		stream      bool
		tools       string
	}{
		{`{"model":"gpt-4o","stream":true,"messages":[],"tools":[{"type":"function","function":{"name":"f"}}]}`, "gpt-4o", true, `[{"type":"function","function":{"name":"f"}}]`},
		{`{"model":null,"stream":null,"messages":[],"tools":null}`, "", false, ``},
		{`{"messages":[],"functions":[ {"name":"f"} ]}`, "", false, `[{"name":"f"}]`},
		{`{"messages":[],"functions":[{"name":"f"}],"tools":[{"type":"function","function":{"name":"g"}}]}`, "", false, `[{"type":"function","function":{"name":"g"}}]`},
	} {
		req, err := OpenAI().ParseRequest([]byte(tc.body))
		if err != nil || req.Model != tc.model || req.Stream != tc.stream || string(req.Tools) != tc.tools || req.Events == nil {
			t.Errorf("%s: %+v %v", tc.body, req, err)
		}
	}
}
