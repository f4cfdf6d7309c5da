package spantree

import (
	"encoding/json"
	"testing"

	"github.com/lookout-dev/lookout/internal/trace"
)

func msg(role, text string) trace.Event {
	return trace.Event{Role: role, Content: trace.TextContent(text)}
}

func call(id, name string) trace.Event {
	return trace.Event{Role: "assistant", Content: trace.Content{Kind: trace.ContentNull},
		ToolCalls: []trace.ToolCall{{ID: id, Type: "function", Function: trace.Function{Name: name, Arguments: json.RawMessage(`{}`)}}}}
}

func output(id, text string) trace.Event {
	e := msg("tool", text)
	e.ToolCallID = id
	return e
}

// TestDeriver runs the rules of the Deriver's documentation one by one;
// the format packages test them again on their own inputs.
func TestDeriver(t *testing.T) {
	user := msg("user", "hi")
	for _, c := range []struct {
		name string
		feed func(d *Deriver)
		want string
	}{
		{"a continued conversation gives only its new messages", func(d *Deriver) {
			d.Chat("a", []trace.Event{user}, []trace.Event{msg("assistant", "yo")}, false)
			d.Chat("b", []trace.Event{user, msg("assistant", "yo"), msg("user", "bye")}, nil, false)
		}, `[{"role":"user","content":"hi","span_id":"a"},{"role":"assistant","content":"yo","span_id":"a"},{"role":"user","content":"bye","span_id":"b"}]`},
		{"an output that repeats the input is the whole conversation", func(d *Deriver) {
			d.Chat("a", []trace.Event{user}, []trace.Event{user, msg("assistant", "yo")}, true)
		}, `[{"role":"user","content":"hi","span_id":"a"},{"role":"assistant","content":"yo","span_id":"a"}]`},
		{"unless the caller says it cannot", func(d *Deriver) {
			d.Chat("a", []trace.Event{user}, []trace.Event{user, msg("assistant", "yo")}, false)
		}, `[{"role":"user","content":"hi","span_id":"a"},{"role":"user","content":"hi","span_id":"a"},{"role":"assistant","content":"yo","span_id":"a"}]`},
		{"a tool span answers a call by id, and the next prompt's copy is a prefix", func(d *Deriver) {
			d.Chat("a", []trace.Event{user}, []trace.Event{call("c1", "f")}, false)
			d.Tool(Tool{SpanID: "t", CallID: "c1", Names: []string{"other"}, Result: trace.TextContent("F"), HasResult: true})
			d.Chat("b", []trace.Event{user, call("c1", "f"), output("c1", "F, as the prompt writes it")}, []trace.Event{msg("assistant", "done")}, false)
		}, `[{"role":"user","content":"hi","span_id":"a"},{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":{}}}],"span_id":"a"},` +
			`{"role":"tool","content":"F","tool_call_id":"c1","span_id":"t"},{"role":"assistant","content":"done","span_id":"b"}]`},
		{"a call without id answered by name takes the span's id; its copy in a prompt is dropped", func(d *Deriver) {
			d.Chat("a", []trace.Event{user}, []trace.Event{call("", "f")}, false)
			d.Tool(Tool{SpanID: "t", Names: []string{"g", "f"}, Result: trace.TextContent("F"), HasResult: true})
			named := msg("tool", "F")
			named.Extra = trace.Fields{{Key: "name", Value: json.RawMessage(`"f"`)}}
			d.Chat("b", []trace.Event{msg("system", "s"), named}, nil, false)
		}, `[{"role":"user","content":"hi","span_id":"a"},{"role":"assistant","content":null,"tool_calls":[{"id":"t","type":"function","function":{"name":"f","arguments":{}}}],"span_id":"a"},` +
			`{"role":"tool","content":"F","tool_call_id":"t","span_id":"t"},{"role":"system","content":"s","span_id":"b"}]`},
		{"calls whose ids differ do not match by name", func(d *Deriver) {
			d.Chat("a", nil, []trace.Event{call("c1", "f")}, false)
			d.Tool(Tool{SpanID: "t", CallID: "c9", Names: []string{"f"}, Args: json.RawMessage(`{"x":1}`), Result: trace.TextContent("F"), HasResult: true})
		}, `[{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":{}}}],"span_id":"a"},` +
			`{"role":"assistant","content":null,"tool_calls":[{"id":"c9","type":"function","function":{"name":"f","arguments":{"x":1}}}],"span_id":"t"},{"role":"tool","content":"F","tool_call_id":"c9","span_id":"t"}]`},
		{"a tool span with nothing to show gives nothing; without args, {}", func(d *Deriver) {
			d.Tool(Tool{SpanID: "t", Names: []string{"f"}})
			d.Tool(Tool{SpanID: "u", Names: []string{"g"}, HasResult: true, Result: trace.Content{Kind: trace.ContentNull}})
		}, `[{"role":"assistant","content":null,"tool_calls":[{"id":"u","type":"function","function":{"name":"g","arguments":{}}}],"span_id":"u"},{"role":"tool","content":null,"tool_call_id":"u","span_id":"u"}]`},
	} {
		t.Run(c.name, func(t *testing.T) {
			d := NewDeriver()
			c.feed(d)
			if got := trace.AppendEvents(nil, d.Events()); string(got) != c.want {
				t.Errorf("events\n got  %s\n want %s", got, c.want)
			}
		})
	}
}
