package gateway

import (
	"encoding/json"
	"errors"
	"fmt"
	"math/rand"
	"strings"
	"testing"

	"github.com/lookout-dev/lookout/internal/jsonscan"
	"github.com/lookout-dev/lookout/internal/trace"
)

// TestAnthropicMessages: how content blocks become events.
func TestAnthropicMessages(t *testing.T) {
	for _, tc := range []struct{ name, body, want string }{
		{"system string, content string",
			`{"system":"Be brief.","messages":[{"role":"user","content":"hi"}]}`,
			`[{"role":"system","content":"Be brief."},{"role":"user","content":"hi"}]`},
		{"system blocks and one text block are strings; cache_control goes",
			`{"system":[{"type":"text","text":"Be brief.","cache_control":{"type":"ephemeral"}}],"messages":[{"role":"user","content":[{"type":"text","text":"hi","cache_control":{"type":"ephemeral","ttl":"1h"}}]}]}`,
			`[{"role":"system","content":"Be brief."},{"role":"user","content":"hi"}]`},
		{"several system blocks stay parts",
			`{"system":[{"type":"text","text":"a"},{"type":"text","text":"b"}],"messages":[]}`,
			`[{"role":"system","content":[{"type":"text","text":"a"},{"type":"text","text":"b"}]}]`},
		{"images: base64 and url",
			`{"messages":[{"role":"user","content":[{"type":"image","source":{"type":"base64","media_type":"image/jpeg","data":"/9j/4A=="}},{"type":"image","source":{"type":"url","url":"https://example.com/a.png"}},{"type":"image","source":{"type":"file","file_id":"file_011"}}]}]}`,
			`[{"role":"user","content":[{"type":"image","image_url":"data:image/jpeg;base64,/9j/4A=="},{"type":"image","image_url":"https://example.com/a.png"},{"type":"image","source":{"type":"file","file_id":"file_011"}}]}]`},
		{"tool_use: content null beside calls, input as arguments",
			`{"messages":[{"role":"assistant","content":[{"type":"tool_use","id":"toolu_1","name":"ls","input":{"path":"/tmp","all":true}}]}]}`,
			`[{"role":"assistant","content":null,"tool_calls":[{"id":"toolu_1","type":"function","function":{"name":"ls","arguments":{"path":"/tmp","all":true}}}]}]`},
		{"tool_results before the text of their message, in block order",
			`{"messages":[{"role":"user","content":[{"type":"text","text":"Also: hurry."},{"type":"tool_result","tool_use_id":"t1","content":"one"},{"type":"tool_result","tool_use_id":"t2","content":[{"type":"text","text":"two"}],"is_error":true},{"type":"tool_result","tool_use_id":"t3","is_error":false}]}]}`,
			`[{"role":"tool","content":"one","tool_call_id":"t1"},{"role":"tool","content":"two","tool_call_id":"t2","is_error":true},{"role":"tool","content":"","tool_call_id":"t3"},{"role":"user","content":"Also: hurry."}]`},
		{"a tool_result with an image keeps parts",
			`{"messages":[{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":[{"type":"text","text":"screenshot"},{"type":"image","source":{"type":"base64","media_type":"image/png","data":"AA=="}}]}]}]}`,
			`[{"role":"tool","content":[{"type":"text","text":"screenshot"},{"type":"image","image_url":"data:image/png;base64,AA=="}],"tool_call_id":"t1"}]`},
		{"thinking and redacted thinking are kept as parts",
			`{"messages":[{"role":"assistant","content":[{"type":"thinking","thinking":"Let me see.","signature":"EqQB"},{"type":"redacted_thinking","data":"EmwKAhgB"},{"type":"text","text":"Done."}]}]}`,
			`[{"role":"assistant","content":[{"type":"thinking","thinking":"Let me see.","signature":"EqQB"},{"type":"redacted_thinking","data":"EmwKAhgB"},{"type":"text","text":"Done."}]}]`},
		{"other blocks are kept as parts",
			`{"messages":[{"role":"user","content":[{"type":"document","source":{"type":"text","media_type":"text/plain","data":"The grass is green."},"title":"Notes","citations":{"enabled":true}},{"type":"text","text":"Summarise."}]}]}`,
			`[{"role":"user","content":[{"type":"document","source":{"type":"text","media_type":"text/plain","data":"The grass is green."},"title":"Notes","citations":{"enabled":true}},{"type":"text","text":"Summarise."}]}]`},
		{"text with citations keeps them",
			`{"messages":[{"role":"assistant","content":[{"type":"text","text":"Green.","citations":[{"type":"char_location","cited_text":"green","document_index":0,"start_char_index":13,"end_char_index":18}]}]}]}`,
			`[{"role":"assistant","content":[{"type":"text","text":"Green.","citations":[{"type":"char_location","cited_text":"green","document_index":0,"start_char_index":13,"end_char_index":18}]}]}]`},
		{"input spelled differently is one input",
			`{"messages":[{"role":"assistant","content":[{"type":"tool_use","id":"a","name":"f","input":{ "q" : "caf\u00e9\/x" }}]}]}`,
			`[{"role":"assistant","content":null,"tool_calls":[{"id":"a","type":"function","function":{"name":"f","arguments":{"q":"café/x"}}}]}]`},
	} {
		req, err := Anthropic().ParseRequest([]byte(tc.body))
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		if got := eventsJSON(req.Events); got != tc.want {
			t.Errorf("%s:\n got %s\nwant %s", tc.name, got, tc.want)
		}
	}
}

// TestAnthropicUsage: input counts cache reads and writes; a stream's
// message_delta updates what it repeats.
func TestAnthropicUsage(t *testing.T) {
	resp, err := Anthropic().ParseResponse([]byte(`{"type":"message","role":"assistant","content":[],"model":"m","stop_reason":"end_turn","usage":{"input_tokens":10,"cache_creation_input_tokens":200,"cache_read_input_tokens":3000,"output_tokens":7}}`))
	if err != nil || resp.Usage != (Usage{3210, 7}) {
		t.Errorf("usage %+v err %v", resp.Usage, err)
	}
	if got := eventsJSON(resp.Events); got != `[{"role":"assistant","content":""}]` {
		t.Errorf("empty content: %s", got)
	}
	st := Anthropic().NewStream()
	for _, ev := range []string{
		`{"type":"message_start","message":{"model":"m","role":"assistant","content":[],"usage":{"input_tokens":10,"cache_read_input_tokens":5,"output_tokens":1}}}`,
		`{"type":"message_delta","delta":{"stop_reason":"max_tokens"},"usage":{"output_tokens":64}}`,
		`{"type":"message_delta","delta":{},"usage":{"input_tokens":12,"output_tokens":70}}`,
	} {
		if _, _, err := st.Add("", []byte(ev)); err != nil {
			t.Fatal(err)
		}
	}
	if r := st.Response(); r.Usage != (Usage{12, 70}) || r.FinishReason != "max_tokens" {
		t.Errorf("stream usage %+v finish %q", r.Usage, r.FinishReason)
	}
}

func anStart(index int, block string) sseEvent {
	return sseEvent{"content_block_start", []byte(fmt.Sprintf(`{"type":"content_block_start","index":%d,"content_block":%s}`, index, block))}
}

func anDelta(index int, delta string) sseEvent {
	return sseEvent{"content_block_delta", []byte(fmt.Sprintf(`{"type":"content_block_delta","index":%d,"delta":%s}`, index, delta))}
}

func anJSON(index int, partial string) sseEvent {
	lit, _ := json.Marshal(partial)
	return anDelta(index, `{"type":"input_json_delta","partial_json":`+string(lit)+`}`)
}

func anStop(index int) sseEvent {
	return sseEvent{"content_block_stop", []byte(fmt.Sprintf(`{"type":"content_block_stop","index":%d}`, index))}
}

var anMessageStart = sseEvent{"message_start", []byte(`{"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","model":"claude-x","content":[],"stop_reason":null,"usage":{"input_tokens":5,"output_tokens":1}}}`)}

// TestAnthropicStreamInput: partial_json split anywhere assembles to the
// input; the tool_use block's events are held and the stream is open from
// its start to its stop.
func TestAnthropicStreamInput(t *testing.T) {
	rng := rand.New(rand.NewSource(3))
	want := string(canonJSON(json.RawMessage(awkwardArgs)))
	for _, pieces := range splits(awkwardArgs, rng) {
		st := Anthropic().NewStream()
		events := []sseEvent{anMessageStart, anStart(0, `{"type":"tool_use","id":"toolu_1","name":"write_file","input":{}}`), anJSON(0, "")}
		for _, p := range pieces {
			events = append(events, anJSON(0, p))
		}
		for i, ev := range events {
			hold, done, err := st.Add(ev.name, ev.data)
			if err != nil || done || hold != (i > 0) || st.Settled() != (i == 0) {
				t.Fatalf("pieces %q event %d: hold %v done %v settled %v err %v", pieces, i, hold, done, st.Settled(), err)
			}
		}
		if hold, _, err := st.Add("content_block_stop", anStop(0).data); !hold || err != nil || !st.Settled() {
			t.Fatalf("stop: hold %v settled %v err %v", hold, st.Settled(), err)
		}
		c := st.Response().Events[0].ToolCalls[0]
		if c.ID != "toolu_1" || c.Function.Name != "write_file" || string(c.Function.Arguments) != want {
			t.Fatalf("pieces %q: %s %s %s", pieces, c.ID, c.Function.Name, c.Function.Arguments)
		}
	}
}

// TestAnthropicStreamText: text deltas split anywhere give the text; text
// events are never held.
func TestAnthropicStreamText(t *testing.T) {
	rng := rand.New(rand.NewSource(4))
	text := "Line one — with \"quotes\", a tab\t, and 😀.\nLine two."
	for _, pieces := range splits(text, rng) {
		st := Anthropic().NewStream()
		events := []sseEvent{anMessageStart, anStart(0, `{"type":"text","text":""}`), {"ping", []byte(`{"type": "ping"}`)}}
		for _, p := range pieces {
			lit, _ := json.Marshal(p)
			events = append(events, anDelta(0, `{"type":"text_delta","text":`+string(lit)+`}`))
		}
		events = append(events, anStop(0), sseEvent{"message_delta", []byte(`{"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"output_tokens":15}}`)})
		for _, ev := range events {
			if hold, done, err := st.Add(ev.name, ev.data); hold || done || err != nil || !st.Settled() {
				t.Fatalf("%s: hold %v done %v err %v", ev.data, hold, done, err)
			}
		}
		if _, done, _ := st.Add("message_stop", []byte(`{"type":"message_stop"}`)); !done {
			t.Fatal("message_stop is not done")
		}
		r := st.Response()
		if got := eventsJSON(r.Events); got != eventsJSON([]trace.Event{{Role: "assistant", Content: trace.TextContent(text)}}) || r.Model != "claude-x" || r.FinishReason != "end_turn" {
			t.Fatalf("pieces %q: %s %q %q", pieces, got, r.Model, r.FinishReason)
		}
	}
}

// TestAnthropicStreamSequences: blocks and the events around them.
func TestAnthropicStreamSequences(t *testing.T) {
	type step struct {
		ev                  sseEvent
		hold, done, settled bool
	}
	for _, tc := range []struct {
		name  string
		steps []step
		want  string
	}{
		{"two tool_use blocks open at once stay open until each stops", []step{
			{anStart(0, `{"type":"tool_use","id":"a","name":"f","input":{}}`), true, false, false},
			{anStart(1, `{"type":"tool_use","id":"b","name":"g","input":{}}`), true, false, false},
			{anJSON(1, `{"y":2}`), true, false, false},
			{anStop(1), true, false, false},
			{anJSON(0, `{"x":1}`), true, false, false},
			{anStop(0), true, false, true},
			{sseEvent{"message_stop", []byte(`{"type":"message_stop"}`)}, false, true, true},
		}, `[{"role":"assistant","content":null,"tool_calls":[{"id":"a","type":"function","function":{"name":"f","arguments":{"x":1}}},{"id":"b","type":"function","function":{"name":"g","arguments":{"y":2}}}]}]`},
		{"a tool without input, and thinking with its signature", []step{
			{anStart(0, `{"type":"thinking","thinking":""}`), false, false, true},
			{anDelta(0, `{"type":"thinking_delta","thinking":"Hmm"}`), false, false, true},
			{anDelta(0, `{"type":"signature_delta","signature":"Sig=="}`), false, false, true},
			{anStop(0), false, false, true},
			{anStart(1, `{"type":"tool_use","id":"a","name":"now","input":{}}`), true, false, false},
			{anJSON(1, ``), true, false, false},
			{anStop(1), true, false, true},
		}, `[{"role":"assistant","content":[{"type":"thinking","thinking":"Hmm","signature":"Sig=="}],"tool_calls":[{"id":"a","type":"function","function":{"name":"now","arguments":{}}}]}]`},
		{"server tools and redacted thinking are not held", []step{
			{anStart(0, `{"type":"redacted_thinking","data":"EmwK"}`), false, false, true},
			{anStop(0), false, false, true},
			{anStart(1, `{"type":"server_tool_use","id":"srvtoolu_1","name":"web_search","input":{}}`), false, false, true},
			{anJSON(1, `{"query": "weather`), false, false, true},
			{anJSON(1, ` Paris"}`), false, false, true},
			{anStop(1), false, false, true},
			{anStart(2, `{"type":"web_search_tool_result","tool_use_id":"srvtoolu_1","content":[{"type":"web_search_result","title":"Paris","url":"https://example.com"}]}`), false, false, true},
			{anStop(2), false, false, true},
			{anStart(3, `{"type":"text","text":""}`), false, false, true},
			{anDelta(3, `{"type":"text_delta","text":"Rain."}`), false, false, true},
			{anDelta(3, `{"type":"citations_delta","citation":{"type":"web_search_result_location","url":"https://example.com","cited_text":"rain"}}`), false, false, true},
			{anStop(3), false, false, true},
		}, `[{"role":"assistant","content":[{"type":"redacted_thinking","data":"EmwK"},{"type":"server_tool_use","id":"srvtoolu_1","name":"web_search","input":{"query":"weather Paris"}},{"type":"web_search_tool_result","tool_use_id":"srvtoolu_1","content":[{"type":"web_search_result","title":"Paris","url":"https://example.com"}]},{"type":"text","text":"Rain.","citations":[{"type":"web_search_result_location","url":"https://example.com","cited_text":"rain"}]}]}]`},
		{"an error event ends the stream and closes what is open", []step{
			{anStart(0, `{"type":"tool_use","id":"a","name":"f","input":{}}`), true, false, false},
			{anJSON(0, `{"x":`), true, false, false},
			{sseEvent{"error", []byte(`{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`)}, false, true, true},
		}, `[{"role":"assistant","content":null,"tool_calls":[{"id":"a","type":"function","function":{"name":"f","arguments":"{\"x\":"}}]}]`},
		{"message_stop closes a block a cut stream left open", []step{
			{anStart(0, `{"type":"tool_use","id":"a","name":"f","input":{}}`), true, false, false},
			{sseEvent{"message_stop", []byte(`{"type":"message_stop"}`)}, false, true, true},
		}, `[{"role":"assistant","content":null,"tool_calls":[{"id":"a","type":"function","function":{"name":"f","arguments":{}}}]}]`},
		{"events of kinds added later pass", []step{
			{sseEvent{"", []byte(`{"type":"message_annotation","x":1}`)}, false, false, true},
		}, `[]`},
	} {
		st := Anthropic().NewStream()
		for i, s := range tc.steps {
			hold, done, err := st.Add(s.ev.name, s.ev.data)
			if err != nil || hold != s.hold || done != s.done || st.Settled() != s.settled {
				t.Errorf("%s: step %d: hold %v done %v settled %v err %v, want %v %v %v", tc.name, i, hold, done, st.Settled(), err, s.hold, s.done, s.settled)
			}
		}
		if got := eventsJSON(st.Response().Events); got != tc.want {
			t.Errorf("%s:\n got %s\nwant %s", tc.name, got, tc.want)
		}
	}
}

func TestAnthropicStreamBadEvents(t *testing.T) {
	for _, tc := range []struct {
		events []sseEvent
		path   string
	}{
		{[]sseEvent{anDelta(3, `{"type":"text_delta","text":"x"}`)}, "$"},
		{[]sseEvent{anStart(0, `{"type":"tool_use","id":"a","name":"f","input":[]}`)}, "$.content_block.input"},
		{[]sseEvent{anStart(0, `{"type":"text"}`)}, "$.content_block"},
		{[]sseEvent{anStart(0, `{"type":"text","text":""}`), anDelta(0, `{"type":"text_delta","text":5}`)}, "$.delta.text"},
		{[]sseEvent{{"", []byte(`{"type":"content_block_stop","index":"0"}`)}}, "$.index"},
		{[]sseEvent{{"", []byte(`[1]`)}}, "$"},
	} {
		st := Anthropic().NewStream()
		var err error
		for _, ev := range tc.events {
			if _, _, err = st.Add(ev.name, ev.data); err != nil {
				break
			}
		}
		var se *jsonscan.Error
		if !errors.As(err, &se) || se.Path != tc.path || !strings.HasPrefix(err.Error(), "anthropic stream: ") {
			t.Errorf("%s: %v, want path %s", tc.events[len(tc.events)-1].data, err, tc.path)
		}
	}
}
