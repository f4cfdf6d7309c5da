package otlp

import (
	"encoding/json"
	"strings"

	"github.com/lookout-dev/lookout/internal/trace"
)

// Semantic span kinds (trace.Span.Kind).
const (
	KindLLM       = "LLM"
	KindTool      = "TOOL"
	KindAgent     = "AGENT"
	KindChain     = "CHAIN"
	KindEmbedding = "EMBEDDING"
	KindRetriever = "RETRIEVER"
)

// classify names what a span does, from the first attribute that says so;
// see the package documentation.
func classify(n *node) string {
	if k := strings.ToUpper(strings.TrimSpace(n.attrStr("openinference.span.kind"))); k != "" {
		return k
	}
	if op := n.attrStr("gen_ai.operation.name"); op != "" {
		switch op {
		case "chat", "text_completion", "generate_content", "completion", "call_llm":
			return KindLLM
		case "execute_tool":
			return KindTool
		case "invoke_agent", "create_agent":
			return KindAgent
		case "embeddings":
			return KindEmbedding
		case "chain":
			return KindChain
		}
	}
	if t := n.attr("mlflow.spanType").decodedAny(); t.isStr() && t.str != "" {
		switch k := strings.ToUpper(t.str); k {
		case "CHAT_MODEL", "LLM":
			return KindLLM
		default:
			return k
		}
	}
	if k := n.attrStr("langsmith.span.kind"); k != "" {
		return strings.ToUpper(k)
	}
	switch n.attrStr("traceloop.span.kind") {
	case "tool":
		return KindTool
	case "agent":
		return KindAgent
	case "workflow", "task":
		return KindChain
	}
	switch n.attrStr("llm.request.type") {
	case "chat", "completion":
		return KindLLM
	case "embedding":
		return KindEmbedding
	}
	switch op := n.attrStr("ai.operationId"); {
	case op == "ai.toolCall":
		return KindTool
	case strings.HasPrefix(op, "ai.embed"):
		return KindEmbedding
	case strings.HasPrefix(op, "ai.generate") || strings.HasPrefix(op, "ai.stream"):
		return KindLLM
	}
	switch strings.ToUpper(n.sp.Type) {
	case "GENERATION":
		return KindLLM
	case "TOOL", "AGENT", "CHAIN", "EMBEDDING", "RETRIEVER", "EVALUATOR", "GUARDRAIL":
		return strings.ToUpper(n.sp.Type)
	}
	if n.attr("gen_ai.input.messages") != nil || n.attr("gen_ai.output.messages") != nil ||
		n.hasPrefix("gen_ai.prompt.") || n.hasPrefix("gen_ai.completion.") || n.hasPrefix("llm.input_messages.") {
		return KindLLM
	}
	if n.attr("gen_ai.tool.name") != nil && (n.attr("gen_ai.tool.call.id") != nil || n.attr("gen_ai.tool.call.arguments") != nil) {
		return KindTool
	}
	return ""
}

func (n *node) hasPrefix(prefix string) bool {
	for _, a := range n.sp.Attributes {
		if strings.HasPrefix(a.Key, prefix) {
			return true
		}
	}
	return false
}

// toolInfo is what a tool span tells about its call.
type toolInfo struct {
	name, id  string
	args      json.RawMessage // the call's arguments (see arguments); nil when not given
	result    trace.Content   // when hasResult (see toolResult)
	hasResult bool
}

// view computes the span's chat view: its input and output as messages.
func (n *node) view() {
	if n.kind == KindTool {
		ti := n.toolInfo()
		n.tool = ti
		call := trace.Event{Role: "assistant", Content: trace.Content{Kind: trace.ContentNull},
			ToolCalls: []trace.ToolCall{{ID: ti.id, Type: "function", Function: trace.Function{Name: ti.name, Arguments: ti.args}}}}
		if ti.args == nil {
			call.ToolCalls[0].Function.Arguments = json.RawMessage(`{}`)
		}
		n.in = []trace.Event{call}
		if ti.hasResult {
			n.out = []trace.Event{{Role: "tool", ToolCallID: ti.id, Content: ti.result}}
		}
		n.structured = true
		return
	}
	in, inText := n.inputMessages()
	out, outText := n.outputMessages()
	n.structured = in != nil && !inText || out != nil && !outText
	if n.kind != KindLLM {
		// Plain text is a prompt or a completion only for a model call.
		if inText {
			in = nil
		}
		if outText {
			out = nil
		}
	}
	n.in, n.out = in, out
	if len(n.in) > 0 || n.kind == KindLLM {
		n.in = n.withSystemInstructions(n.in)
	}
}

// withSystemInstructions puts gen_ai.system_instructions first as a system
// message, unless the input has a system message already.
func (n *node) withSystemInstructions(in []trace.Event) []trace.Event {
	si := n.attr("gen_ai.system_instructions")
	if si == nil {
		return in
	}
	for _, m := range in {
		if m.Role == "system" || m.Role == "developer" {
			return in
		}
	}
	var c trace.Content
	d := si.decoded()
	switch {
	case d.isArr():
		c, _, _ = genaiParts(d.arr, "system")
	case d.isStr():
		c = trace.TextContent(d.str)
	default:
		return in
	}
	if c.Kind == trace.ContentAbsent {
		return in
	}
	return append([]trace.Event{{Role: "system", Content: c}}, in...)
}

// inputMessages reads the span's input from the first source that has
// one. text is set when the input is plain text rather than messages.
func (n *node) inputMessages() (msgs []trace.Event, text bool) {
	if v := n.attr("gen_ai.input.messages"); v != nil {
		if m := parseMessages(v, "user"); m != nil {
			return m, false
		}
	}
	if t := n.flat("llm.input_messages."); t != nil {
		return openInferenceMessages(t, "user"), false
	}
	if t := n.flat("gen_ai.prompt."); t != nil {
		return promptMessages(t, "user"), false
	}
	for _, k := range []string{"gen_ai.prompt", "mlflow.spanInputs", "ai.prompt.messages", "ai.prompt"} {
		if v := n.attr(k); v != nil {
			if m := parseMessages(v.decodedAny(), "user"); m != nil {
				return m, false
			}
		}
	}
	if m := n.eventMessages(false); m != nil {
		return m, false
	}
	if v := n.attr("events"); v != nil { // pydantic-ai: the GenAI events as one JSON attribute
		if m := eventList(v.decoded(), false); m != nil {
			return m, false
		}
	}
	return n.payload(n.attr("input.value"), n.sp.Input, "user")
}

// outputMessages reads the span's output like inputMessages.
func (n *node) outputMessages() (msgs []trace.Event, text bool) {
	if v := n.attr("gen_ai.output.messages"); v != nil {
		if m := parseMessages(v, "assistant"); m != nil {
			return m, false
		}
	}
	if t := n.flat("llm.output_messages."); t != nil {
		return openInferenceMessages(t, "assistant"), false
	}
	if t := n.flat("gen_ai.completion."); t != nil {
		return promptMessages(t, "assistant"), false
	}
	for _, k := range []string{"gen_ai.completion", "mlflow.spanOutputs"} {
		if v := n.attr(k); v != nil {
			if m := parseMessages(v.decodedAny(), "assistant"); m != nil {
				return m, false
			}
		}
	}
	if tc, txt := n.attr("ai.response.toolCalls"), n.attr("ai.response.text"); tc != nil || txt != nil {
		e := trace.Event{Role: "assistant", Content: trace.Content{Kind: trace.ContentNull}}
		if t, ok := txt.text(); ok {
			e.Content = trace.TextContent(t)
		}
		if d := tc.decoded(); d.isArr() {
			e.ToolCalls, _ = toolCalls(d.arr)
		}
		return []trace.Event{e}, false
	}
	if m := n.eventMessages(true); m != nil {
		return m, false
	}
	if v := n.attr("events"); v != nil {
		if m := eventList(v.decoded(), true); m != nil {
			return m, false
		}
	}
	if v := n.attr("gen_ai.output"); v != nil && n.kind == KindLLM { // any-agent
		return anyAgentOutput(v, n.attrStr("gen_ai.output.type")), false
	}
	for _, k := range []string{"pydantic_ai.all_messages", "all_messages_events"} {
		if v := n.attr(k); v != nil && n.sp.Output == nil {
			if m := parseMessages(v, "assistant"); m != nil {
				return m, false
			}
		}
	}
	return n.payload(n.attr("output.value"), n.sp.Output, "assistant")
}

// payload reads input.value / output.value, or else the source's own
// input or output (Langfuse): messages when a message shape fits, else
// plain text when the payload is a string.
func (n *node) payload(attr *val, raw []byte, role string) ([]trace.Event, bool) {
	v := attr
	if v == nil && raw != nil {
		v = n.parser().parse(raw)
	}
	if v == nil || v.isNull() {
		return nil, false
	}
	if m := parseMessages(v, role); m != nil {
		return m, false
	}
	if s, ok := v.text(); ok {
		return []trace.Event{{Role: role, Content: trace.TextContent(s)}}, true
	}
	return nil, false
}

// eventMessages reads the span events of the older GenAI conventions:
// gen_ai.system.message, gen_ai.user.message, gen_ai.assistant.message,
// gen_ai.tool.message (input) and gen_ai.choice (output), with the body's
// members as attributes.
func (n *node) eventMessages(output bool) []trace.Event {
	var out []trace.Event
	for _, e := range n.sp.Events {
		isChoice := e.Name == "gen_ai.choice"
		if !strings.HasPrefix(e.Name, "gen_ai.") || isChoice != output {
			continue
		}
		role := ""
		switch e.Name {
		case "gen_ai.system.message":
			role = "system"
		case "gen_ai.user.message":
			role = "user"
		case "gen_ai.assistant.message", "gen_ai.choice":
			role = "assistant"
		case "gen_ai.tool.message":
			role = "tool"
		default:
			continue
		}
		v := n.parser().parse(objectOf(e.Attributes))
		if v == nil {
			continue
		}
		if m := v.get("message"); m.decoded().isObj() {
			v = m.decoded()
		}
		ms, ok := message(v, role)
		if ok {
			out = append(out, ms...)
		}
	}
	return out
}

// eventList reads pydantic-ai's "events" attribute: GenAI event bodies
// with an "event.name" member; the choices are the output.
func eventList(v *val, output bool) []trace.Event {
	if !v.isArr() {
		return nil
	}
	var out []trace.Event
	for _, it := range v.arr {
		if !it.isObj() {
			return nil
		}
		isChoice := it.getStr("event.name") == "gen_ai.choice" || it.get("message").isObj() && it.has("index")
		if isChoice != output {
			continue
		}
		if isChoice {
			ms, ok := message(it.get("message"), "assistant")
			if !ok {
				return nil
			}
			out = append(out, ms...)
			continue
		}
		ms, ok := message(it, "user")
		if !ok {
			return nil
		}
		out = append(out, ms...)
	}
	if out == nil {
		return nil
	}
	return out
}

// anyAgentOutput reads any-agent's gen_ai.output: with gen_ai.output.type
// "json" either a list of {tool.name, tool.args} calls or a JSON answer;
// with "text" the answer's text.
func anyAgentOutput(v *val, typ string) []trace.Event {
	if typ == "json" {
		if d := v.decoded(); d.isArr() && len(d.arr) > 0 && d.arr[0].isObj() && d.arr[0].has("tool.name") {
			if calls, ok := toolCalls(d.arr); ok {
				return []trace.Event{{Role: "assistant", Content: trace.Content{Kind: trace.ContentNull}, ToolCalls: calls}}
			}
		}
	}
	return []trace.Event{{Role: "assistant", Content: trace.TextContent(v.asText())}}
}

// toolInfo reads a tool span's name, call id, arguments and result.
func (n *node) toolInfo() *toolInfo {
	ti := &toolInfo{}
	var args, result *val
	for _, k := range []string{"gen_ai.tool.name", "tool.name", "ai.toolCall.name"} {
		if s := n.attrStr(k); s != "" {
			ti.name = s
			break
		}
	}
	if ti.name == "" {
		if fn := n.attr("mlflow.spanFunctionName").decodedAny(); fn.isStr() {
			ti.name = fn.str
		}
	}
	if ti.name == "" {
		ti.name = strings.TrimPrefix(n.sp.Name, "execute_tool ")
	}
	for _, k := range []string{"gen_ai.tool.call.id", "ai.toolCall.id", "tool_call.id"} {
		if s := n.attrStr(k); s != "" {
			ti.id = s
			break
		}
	}
	for _, k := range []string{"gen_ai.tool.call.arguments", "gen_ai.tool.args", "ai.toolCall.args", "tool_arguments",
		"gcp.vertex.agent.tool_call_args", "mlflow.spanInputs", "input.value"} {
		if v := n.attr(k); v != nil {
			args = v.decodedAny()
			break
		}
	}
	if args == nil && n.sp.Input != nil {
		args = n.parser().parse(n.sp.Input)
	}
	if args == nil {
		if v := n.attr("tool.parameters"); v != nil {
			args = v.decodedAny()
		}
	}
	if args.isObj() && len(args.obj) == 1 && args.obj[0].key == "input" && n.sp.Input != nil && n.attr("input.value") == nil {
		// LangSmith and Langfuse wrap tool input as {"input": ...}.
		if in := args.obj[0].v; in.isObj() {
			args = in
		}
	}
	for _, k := range []string{"gen_ai.tool.call.result", "gen_ai.output", "ai.toolCall.result", "tool_response",
		"gcp.vertex.agent.tool_response", "mlflow.spanOutputs", "output.value"} {
		if v := n.attr(k); v != nil {
			result, ti.hasResult = v, true
			if k == "mlflow.spanOutputs" {
				result = v.decodedAny()
			}
			break
		}
	}
	if !ti.hasResult && n.sp.Output != nil {
		if v := n.parser().parse(n.sp.Output); v != nil && !v.isNull() {
			result, ti.hasResult = v, true
		}
	}
	if args != nil {
		ti.args = arguments(args)
	}
	if ti.hasResult {
		ti.result = toolResult(result)
	}
	return ti
}

// toolResult is a tool's result as message content: text as it is (JSON
// text stays the text it was), anything else its compact JSON.
func toolResult(v *val) trace.Content {
	if v == nil {
		return trace.Content{Kind: trace.ContentNull}
	}
	if c := mcpContent(v); c != nil {
		cc, _, _ := contentParts(c.arr, "tool")
		return cc
	}
	return textOf(v)
}

// mcpContent returns the content blocks of an MCP tool result
// ({"content": [{"type": "text", "text": ...}, ...], "isError"?,
// "structuredContent"?}), or nil when v is not one.
func mcpContent(v *val) *val {
	if !v.isObj() {
		return nil
	}
	c := v.get("content")
	if !c.isArr() || len(c.arr) == 0 {
		return nil
	}
	for _, m := range v.obj {
		switch m.key {
		case "content", "isError", "structuredContent", "_meta":
		default:
			return nil
		}
	}
	for _, b := range c.arr {
		if !b.isObj() || b.getStr("type") == "" {
			return nil
		}
	}
	return c
}
