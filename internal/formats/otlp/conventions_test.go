package otlp

import (
	"strings"
	"testing"
	"time"
)

// sp builds a span of trace "t" starting at second start.
func sp(id, parent string, start int64, attrs ...string) Span {
	s := Span{TraceID: "t", SpanID: id, ParentID: parent, Name: id, Start: time.Unix(start, 0)}
	for i := 0; i+1 < len(attrs); i += 2 {
		s.Attributes = append(s.Attributes, Attr{Key: attrs[i], Value: []byte(attrs[i+1])})
	}
	return s
}

// TestConventions: each row of the mapping table, on the smallest trace
// that shows it.
func TestConventions(t *testing.T) {
	cases := []struct {
		name   string
		spans  []Span
		events string // one compact event per line
	}{
		{"GenAI messages with parts; tool span answers by id", []Span{
			sp("c1", "", 1, "gen_ai.operation.name", `"chat"`,
				"gen_ai.input.messages", `"[{\"role\":\"user\",\"parts\":[{\"type\":\"text\",\"content\":\"hi\"}]}]"`,
				"gen_ai.output.messages", `[{"role":"assistant","parts":[{"type":"text","content":"let me look"},{"type":"tool_call","id":"c","name":"f","arguments":"{\"x\":1}"}]}]`),
			sp("t1", "", 2, "gen_ai.operation.name", `"execute_tool"`, "gen_ai.tool.name", `"f"`, "gen_ai.tool.call.id", `"c"`,
				"gen_ai.tool.call.result", `{"ok":true}`),
			sp("c2", "", 3, "gen_ai.operation.name", `"chat"`,
				"gen_ai.input.messages", `[{"role":"user","parts":[{"type":"text","content":"hi"}]},{"role":"assistant","parts":[{"type":"text","content":"let me look"},{"type":"tool_call","id":"c","name":"f","arguments":{"x":1}}]},{"role":"tool","parts":[{"type":"tool_call_response","id":"c","response":"{\"ok\": true}"}]}]`,
				"gen_ai.output.messages", `[{"role":"assistant","parts":[{"type":"text","content":"done"}]}]`),
		}, `{"role":"user","content":"hi","span_id":"c1"}
{"role":"assistant","content":"let me look","tool_calls":[{"id":"c","type":"function","function":{"name":"f","arguments":{"x":1}}}],"span_id":"c1"}
{"role":"tool","content":"{\"ok\":true}","tool_call_id":"c","span_id":"t1"}
{"role":"assistant","content":"done","span_id":"c2"}`},

		{"older flattened gen_ai.prompt / gen_ai.completion with tool calls", []Span{
			sp("c", "", 1, "llm.request.type", `"chat"`,
				"gen_ai.prompt.0.role", `"system"`, "gen_ai.prompt.0.content", `"be nice"`,
				"gen_ai.prompt.1.role", `"user"`, "gen_ai.prompt.1.content", `"weather?"`,
				"gen_ai.completion.0.role", `"assistant"`,
				"gen_ai.completion.0.tool_calls.0.id", `"call_9"`, "gen_ai.completion.0.tool_calls.0.name", `"get_weather"`,
				"gen_ai.completion.0.tool_calls.0.arguments", `"{\"city\": \"Oslo\"}"`),
		}, `{"role":"system","content":"be nice","span_id":"c"}
{"role":"user","content":"weather?","span_id":"c"}
{"role":"assistant","content":null,"tool_calls":[{"id":"call_9","type":"function","function":{"name":"get_weather","arguments":{"city":"Oslo"}}}],"span_id":"c"}`},

		{"OpenInference flattened messages and a TOOL span answering by name", []Span{
			sp("l", "", 1, "openinference.span.kind", `"LLM"`,
				"llm.input_messages.0.message.role", `"user"`,
				"llm.input_messages.0.message.contents.0.message_content.type", `"text"`,
				"llm.input_messages.0.message.contents.0.message_content.text", `"look"`,
				"llm.input_messages.0.message.contents.1.message_content.type", `"image"`,
				"llm.input_messages.0.message.contents.1.message_content.image.image.url", `"http://x/i.png"`,
				"llm.output_messages.0.message.role", `"assistant"`,
				"llm.output_messages.0.message.tool_calls.0.tool_call.function.name", `"describe"`),
			sp("tool", "", 2, "openinference.span.kind", `"TOOL"`, "tool.name", `"describe"`, "input.value", `"{}"`, "output.value", `"a cat"`),
		}, `{"role":"user","content":[{"type":"text","text":"look"},{"type":"image_url","image_url":{"url":"http://x/i.png"}}],"span_id":"l"}
{"role":"assistant","content":null,"tool_calls":[{"id":"tool","type":"function","function":{"name":"describe","arguments":{}}}],"span_id":"l"}
{"role":"tool","content":"a cat","tool_call_id":"tool","span_id":"tool"}`},

		{"OpenInference input.value / output.value as OpenAI request and response", []Span{
			sp("l", "", 1, "openinference.span.kind", `"LLM"`,
				"input.value", `"{\"messages\": [{\"role\": \"user\", \"content\": \"2+2?\"}], \"model\": \"m\"}"`,
				"output.value", `"{\"choices\": [{\"message\": {\"role\": \"assistant\", \"content\": \"4\"}}]}"`),
		}, `{"role":"user","content":"2+2?","span_id":"l"}
{"role":"assistant","content":"4","span_id":"l"}`},

		{"MLflow span attributes", []Span{
			sp("m", "", 1, "mlflow.spanType", `"\"CHAT_MODEL\""`,
				"mlflow.spanInputs", `"{\"messages\": [{\"role\": \"user\", \"content\": \"q\"}]}"`,
				"mlflow.spanOutputs", `"{\"choices\": [{\"message\": {\"role\": \"assistant\", \"content\": \"a\"}}]}"`),
			sp("tool", "", 2, "mlflow.spanType", `"\"TOOL\""`, "mlflow.spanInputs", `"{\"q\": 1}"`, "mlflow.spanOutputs", `"\"r\""`),
		}, `{"role":"user","content":"q","span_id":"m"}
{"role":"assistant","content":"a","span_id":"m"}
{"role":"assistant","content":null,"tool_calls":[{"id":"tool","type":"function","function":{"name":"tool","arguments":{"q":1}}}],"span_id":"tool"}
{"role":"tool","content":"r","tool_call_id":"tool","span_id":"tool"}`},

		{"Vercel AI SDK: the wrapper's inner doGenerate call gives the events", []Span{
			sp("gen", "", 1, "ai.operationId", `"ai.generateText"`, "ai.prompt", `"{\"prompt\": \"weather?\"}"`,
				"ai.response.text", `"It is sunny."`),
			sp("do1", "gen", 2, "ai.operationId", `"ai.generateText.doGenerate"`,
				"ai.prompt.messages", `"[{\"role\": \"user\", \"content\": [{\"type\": \"text\", \"text\": \"weather?\"}]}]"`,
				"ai.response.toolCalls", `"[{\"toolCallId\": \"v1\", \"toolName\": \"weather\", \"input\": \"{\\\"city\\\": \\\"SF\\\"}\"}]"`),
			sp("tool", "gen", 3, "ai.operationId", `"ai.toolCall"`, "ai.toolCall.name", `"weather"`, "ai.toolCall.id", `"v1"`,
				"ai.toolCall.args", `"{\"city\": \"SF\"}"`, "ai.toolCall.result", `"{\"temp\": 20}"`),
			sp("do2", "gen", 4, "ai.operationId", `"ai.generateText.doGenerate"`,
				"ai.prompt.messages", `"[{\"role\": \"user\", \"content\": [{\"type\": \"text\", \"text\": \"weather?\"}]}, {\"role\": \"assistant\", \"content\": [{\"type\": \"tool-call\", \"toolCallId\": \"v1\", \"toolName\": \"weather\", \"input\": {\"city\": \"SF\"}}]}, {\"role\": \"tool\", \"content\": [{\"type\": \"tool-result\", \"toolCallId\": \"v1\", \"toolName\": \"weather\", \"output\": {\"type\": \"json\", \"value\": {\"temp\": 20}}}]}]"`,
				"ai.response.text", `"It is sunny."`),
		}, `{"role":"user","content":[{"type":"text","text":"weather?"}],"span_id":"do1"}
{"role":"assistant","content":null,"tool_calls":[{"id":"v1","type":"function","function":{"name":"weather","arguments":{"city":"SF"}}}],"span_id":"do1"}
{"role":"tool","content":"{\"temp\": 20}","tool_call_id":"v1","span_id":"tool"}
{"role":"assistant","content":"It is sunny.","span_id":"do2"}`},

		{"GenAI span events (older conventions)", []Span{{TraceID: "t", SpanID: "e", Start: time.Unix(1, 0),
			Attributes: []Attr{{Key: "gen_ai.operation.name", Value: []byte(`"chat"`)}},
			Events: []Event{
				{Name: "gen_ai.system.message", Attributes: []Attr{{Key: "content", Value: []byte(`"sys"`)}}},
				{Name: "gen_ai.user.message", Attributes: []Attr{{Key: "content", Value: []byte(`"hello"`)}}},
				{Name: "gen_ai.choice", Attributes: []Attr{{Key: "index", Value: []byte(`0`)}, {Key: "message", Value: []byte(`"{\"role\": \"assistant\", \"content\": \"hey\"}"`)}}},
			}}}, `{"role":"system","content":"sys","span_id":"e"}
{"role":"user","content":"hello","span_id":"e"}
{"role":"assistant","content":"hey","span_id":"e"}`},

		{"a model call resends the history: the prefix is not repeated", []Span{
			sp("c1", "", 1, "gen_ai.operation.name", `"chat"`, "gen_ai.input.messages", `[{"role":"user","content":"a"}]`,
				"gen_ai.output.messages", `[{"role":"assistant","content":"b"}]`),
			sp("c2", "", 2, "gen_ai.operation.name", `"chat"`, "gen_ai.input.messages", `[{"role":"user","content":"a"},{"role":"assistant","content":"b"},{"role":"user","content":"c"}]`,
				"gen_ai.output.messages", `[{"role":"assistant","content":"d"}]`),
			sp("c3", "", 3, "gen_ai.operation.name", `"chat"`, "gen_ai.input.messages", `[{"role":"user","content":"x"}]`,
				"gen_ai.output.messages", `[{"role":"assistant","content":"y"}]`),
		}, `{"role":"user","content":"a","span_id":"c1"}
{"role":"assistant","content":"b","span_id":"c1"}
{"role":"user","content":"c","span_id":"c2"}
{"role":"assistant","content":"d","span_id":"c2"}
{"role":"user","content":"x","span_id":"c3"}
{"role":"assistant","content":"y","span_id":"c3"}`},

		{"a model call instrumented twice: the one with messages counts", []Span{
			sp("outer", "", 1, "openinference.span.kind", `"LLM"`, "llm.input_messages.0.message.role", `"user"`,
				"llm.input_messages.0.message.content", `"q"`, "llm.output_messages.0.message.role", `"assistant"`,
				"llm.output_messages.0.message.content", `"a"`),
			{TraceID: "t", SpanID: "inner", ParentID: "outer", Start: time.Unix(2, 0), Type: "GENERATION", Input: []byte(`"user: q"`), Output: []byte(`"a"`)},
		}, `{"role":"user","content":"q","span_id":"outer"}
{"role":"assistant","content":"a","span_id":"outer"}`},

		{"a completion: plain text in and out of a model call", []Span{
			sp("l", "", 1, "openinference.span.kind", `"LLM"`, "input.value", `"Say hi"`, "output.value", `"hi"`),
		}, `{"role":"user","content":"Say hi","span_id":"l"}
{"role":"assistant","content":"hi","span_id":"l"}`},

		{"Anthropic blocks: tool_use is a tool call, tool_result a tool message", []Span{
			sp("c", "", 1, "gen_ai.operation.name", `"chat"`,
				"gen_ai.input.messages", `[{"role":"user","content":"go"},{"role":"assistant","content":[{"type":"text","text":"ok"},{"type":"tool_use","id":"tu","name":"run","input":{"cmd":"ls"}}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"tu","content":"a.txt"}]}]`,
				"gen_ai.output.messages", `{"role":"model","content":"one file"}`),
		}, `{"role":"user","content":"go","span_id":"c"}
{"role":"assistant","content":[{"type":"text","text":"ok"}],"tool_calls":[{"id":"tu","type":"function","function":{"name":"run","arguments":{"cmd":"ls"}}}],"span_id":"c"}
{"role":"tool","content":"a.txt","tool_call_id":"tu","span_id":"c"}
{"role":"assistant","content":"one file","span_id":"c"}`},

		{"no model call: the outermost span with messages", []Span{
			sp("agent", "", 1, "openinference.span.kind", `"AGENT"`, "input.value", `"[{\"role\": \"user\", \"content\": \"u\"}]"`,
				"output.value", `"{\"messages\": [{\"role\": \"assistant\", \"content\": \"v\"}]}"`),
			sp("node", "agent", 2, "openinference.span.kind", `"CHAIN"`, "input.value", `"[{\"role\": \"user\", \"content\": \"u\"}]"`),
		}, `{"role":"user","content":"u","span_id":"agent"}
{"role":"assistant","content":"v","span_id":"agent"}`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tr := mapOne(t, c.spans)
			got := strings.TrimSuffix(eventsJSON(tr), "\n")
			if got != c.events {
				t.Errorf("events:\n%s\nwant:\n%s", got, c.events)
			}
			checkTrace(t, tr)
		})
	}
}
