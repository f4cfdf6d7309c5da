package mlflow

import (
	"testing"

	"github.com/lookout-dev/lookout/internal/trace"
)

// TestEventsShared: what MLflow traces gained from sharing the deriver with
// the OpenTelemetry decoder (spantree.Deriver).
func TestEventsShared(t *testing.T) {
	user := map[string]any{"role": "user", "content": "hi"}
	idless := map[string]any{"role": "assistant", "content": nil, "tool_calls": []any{
		map[string]any{"type": "function", "function": map[string]any{"name": "f", "arguments": "{}"}}}}
	withID := map[string]any{"role": "assistant", "content": nil, "tool_calls": []any{
		map[string]any{"id": "c1", "type": "function", "function": map[string]any{"name": "f", "arguments": "{}"}}}}
	choice := func(m any) map[string]any { return map[string]any{"choices": []any{map[string]any{"message": m}}} }
	for _, c := range []struct {
		name, in, want string
	}{
		{"a call without id takes the id of the tool span that answers it",
			spans(mkSpan("l", "", "CHAT_MODEL", 0, attr("mlflow.spanInputs", []any{user})+", "+attr("mlflow.spanOutputs", choice(idless))),
				mkSpan("f", "", "TOOL", 1, attr("mlflow.spanOutputs", "F"))),
			`[{"role":"user","content":"hi","span_id":"l"},{"role":"assistant","content":null,"tool_calls":[{"id":"f","type":"function","function":{"name":"f","arguments":{}}}],"span_id":"l"},` +
				`{"role":"tool","content":"F","tool_call_id":"f","span_id":"f"}]`},
		{"a tool output already emitted is not repeated from a later prompt",
			spans(mkSpan("l", "", "CHAT_MODEL", 0, attr("mlflow.spanInputs", []any{user})+", "+attr("mlflow.spanOutputs", choice(withID))),
				mkSpan("f", "", "TOOL", 1, attr("mlflow.spanOutputs", "F")),
				// The next prompt adds a system message: not a continuation,
				// so it is emitted again, but not the output of c1.
				mkSpan("m", "", "CHAT_MODEL", 2, attr("mlflow.spanInputs", []any{map[string]any{"role": "system", "content": "s"}, user, withID,
					map[string]any{"role": "tool", "tool_call_id": "c1", "content": "F"}}))),
			`[{"role":"user","content":"hi","span_id":"l"},{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":{}}}],"span_id":"l"},` +
				`{"role":"tool","content":"F","tool_call_id":"c1","span_id":"f"},` +
				`{"role":"system","content":"s","span_id":"m"},{"role":"user","content":"hi","span_id":"m"},{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":{}}}],"span_id":"m"}]`},
	} {
		t.Run(c.name, func(t *testing.T) {
			tr := decodeOne(t, c.in)
			if got := trace.AppendEvents(nil, tr.Events); string(got) != c.want {
				t.Errorf("events\n got  %s\n want %s", got, c.want)
			}
		})
	}
}
