package otlp

import (
	"encoding/json"
	"strings"

	"github.com/lookout-dev/lookout/internal/trace"
)

// Message shapes. A payload (an attribute holding messages, input.value,
// a Langfuse input) is read by the first shape that fits; see the package
// documentation for the list. parseMessages returns nil when no shape fits,
// which is not an error: the span simply gives no chat messages.

// normRole maps the role names of other vocabularies onto the OpenAI ones
// rules are written against: Gemini's "model" and LangChain's "ai" are
// "assistant", LangChain's "human" is "user". Other roles stay as given.
func normRole(r string) string {
	switch r {
	case "model", "ai", "AIMessage", "AIMessageChunk":
		return "assistant"
	case "human", "HumanMessage", "HumanMessageChunk":
		return "user"
	case "SystemMessage":
		return "system"
	case "ToolMessage", "FunctionMessage", "function":
		return "tool"
	}
	return r
}

// parseMessages reads a payload as a list of chat messages. defRole is the
// role of messages that name none (an output's messages are the
// assistant's).
func parseMessages(v *val, defRole string) []trace.Event {
	v = v.decoded()
	switch {
	case v.isArr():
		return messageList(v.arr, defRole)
	case v.isObj():
		return messageObject(v, defRole)
	}
	return nil
}

// messageList reads a list whose elements are all messages (or items that
// are not messages but are known to be harmless: tool definitions). nil
// when an element is not a message.
func messageList(items []*val, defRole string) []trace.Event {
	if len(items) == 0 {
		return nil
	}
	// Vercel AI SDK tool calls: [{toolCallId, toolName, input|args}].
	if items[0].isObj() && items[0].has("toolName") {
		var calls []trace.ToolCall
		for _, it := range items {
			if !it.isObj() || !it.has("toolName") {
				return nil
			}
			calls = append(calls, toolCall(it.getStr("toolCallId"), it.getStr("toolName"), firstOf(it.get("input"), it.get("args"))))
		}
		return []trace.Event{{Role: "assistant", Content: trace.Content{Kind: trace.ContentNull}, ToolCalls: calls}}
	}
	var out []trace.Event
	for _, it := range items {
		if !it.isObj() {
			return nil
		}
		if isToolDefinition(it) {
			continue
		}
		if !isMessage(it) {
			return nil
		}
		ms, ok := message(it, defRole)
		if !ok {
			return nil
		}
		out = appendMerged(out, ms)
	}
	if out == nil {
		out = []trace.Event{}
	}
	return out
}

// appendMerged appends ms, folding a Responses API function_call item into
// the assistant message just before it, as Chat Completions would have it.
func appendMerged(out, ms []trace.Event) []trace.Event {
	for _, m := range ms {
		if m.Role == "assistant" && m.Content.Kind == trace.ContentAbsent && len(m.ToolCalls) > 0 && len(out) > 0 {
			prev := &out[len(out)-1]
			if prev.Role == "assistant" && len(prev.ToolCalls) > 0 && fromResponses(m) && fromResponses(*prev) {
				prev.ToolCalls = append(prev.ToolCalls, m.ToolCalls...)
				continue
			}
		}
		out = append(out, m)
	}
	for i := range out {
		out[i].Extra = dropField(out[i].Extra, responsesMark)
	}
	return out
}

const responsesMark = "\x00responses"

func fromResponses(e trace.Event) bool { return e.Extra.Get(responsesMark) != nil }

func dropField(f trace.Fields, key string) trace.Fields {
	for i := range f {
		if f[i].Key == key {
			return append(f[:i:i], f[i+1:]...)
		}
	}
	return f
}

// isToolDefinition recognises the tool definitions the Langfuse LangChain
// handler appends to a prompt as {"role": "tool", "content": {"type":
// "function", "function": {...}}}: they are not messages.
func isToolDefinition(v *val) bool {
	c := v.get("content")
	return v.getStr("role") == "tool" && c.isObj() && c.getStr("type") == "function" && c.get("function").isObj() && !v.has("tool_call_id")
}

// messageObject reads an object payload: a request or response holding
// messages, or a single message.
func messageObject(v *val, defRole string) []trace.Event {
	switch {
	case v.get("messages").decoded().isArr():
		msgs := messageList(v.get("messages").decoded().arr, defRole)
		if msgs == nil {
			return nil
		}
		// Vercel AI SDK prompt {system?, messages}.
		if sys, ok := v.get("system").text(); ok && sys != "" {
			msgs = append([]trace.Event{{Role: "system", Content: trace.TextContent(sys)}}, msgs...)
		}
		return msgs
	case v.get("new_message").isObj(): // Google ADK run input
		ms, _ := message(v.get("new_message"), "user")
		return ms
	case v.has("contents"): // Gemini request
		return geminiRequest(v)
	case v.get("candidates").isArr(): // Gemini response
		var out []trace.Event
		for _, c := range v.get("candidates").arr {
			if c.get("content").isObj() {
				ms, ok := message(c.get("content"), "assistant")
				if !ok {
					return nil
				}
				out = append(out, ms...)
			}
		}
		return out
	case v.get("choices").isArr(): // OpenAI chat completion
		var out []trace.Event
		for _, c := range v.get("choices").arr {
			if m := c.get("message"); m.isObj() {
				ms, ok := message(m, "assistant")
				if !ok {
					return nil
				}
				out = append(out, ms...)
			} else if t, ok := c.get("text").text(); ok {
				out = append(out, trace.Event{Role: "assistant", Content: trace.TextContent(t)})
			}
		}
		return out
	case v.getStr("object") == "response" && v.get("output").isArr(): // OpenAI Responses
		return messageList(v.get("output").arr, "assistant")
	case v.get("message").isObj() && v.has("index") && !v.has("role"): // gen_ai.choice event
		ms, _ := message(v.get("message"), defRole)
		return ms
	case v.get("content").isObj() && v.get("content").get("parts").isArr() && !v.has("role"): // ADK LlmResponse
		ms, _ := message(v.get("content"), defRole)
		return ms
	case v.has("prompt") && !v.has("role"): // Vercel AI SDK {system?, prompt}
		p, ok := v.get("prompt").text()
		if !ok {
			return nil
		}
		var out []trace.Event
		if sys, ok := v.get("system").text(); ok && sys != "" {
			out = append(out, trace.Event{Role: "system", Content: trace.TextContent(sys)})
		}
		return append(out, trace.Event{Role: "user", Content: trace.TextContent(p)})
	case isMessage(v):
		ms, ok := message(v, defRole)
		if !ok {
			return nil
		}
		return ms
	}
	return nil
}

// isMessage reports whether an object looks like one message of a known
// shape.
func isMessage(v *val) bool {
	if _, ok := v.get("role").text(); ok {
		return v.has("content") || v.has("parts") || v.has("tool_calls") || v.has("text") || v.has("additional_kwargs")
	}
	if isLangChain(v) {
		return true
	}
	switch v.getStr("type") {
	case "function_call", "function_call_output", "message":
		return true
	}
	return false
}

func isLangChain(v *val) bool {
	if v.has("lc") && v.getStr("type") == "constructor" && v.get("kwargs").isObj() {
		return true
	}
	switch v.getStr("type") {
	case "human", "ai", "system", "tool", "function", "AIMessageChunk", "chat":
		return v.has("content")
	}
	return false
}

func geminiRequest(v *val) []trace.Event {
	var out []trace.Event
	cfg := v.get("config")
	if cfg == nil {
		cfg = v.get("generation_config")
	}
	for _, si := range []*val{cfg.get("system_instruction"), cfg.get("systemInstruction"), v.get("system_instruction"), v.get("systemInstruction")} {
		if si == nil {
			continue
		}
		if t, ok := si.text(); ok {
			out = append(out, trace.Event{Role: "system", Content: trace.TextContent(t)})
		} else if si.isObj() {
			ms, ok := message(si, "system")
			if ok {
				for _, m := range ms {
					m.Role = "system"
					out = append(out, m)
				}
			}
		}
		break
	}
	c := v.get("contents")
	switch {
	case c.isStr():
		out = append(out, trace.Event{Role: "user", Content: trace.TextContent(c.str)})
	case c.isArr():
		for _, it := range c.arr {
			if t, ok := it.text(); ok {
				out = append(out, trace.Event{Role: "user", Content: trace.TextContent(t)})
				continue
			}
			if !it.isObj() {
				return nil
			}
			ms, ok := message(it, "user")
			if !ok {
				return nil
			}
			out = append(out, ms...)
		}
	default:
		return nil
	}
	return out
}

// message reads one message object of any known shape. It may give
// several events: tool results inside a user or tool message (Anthropic
// tool_result blocks, GenAI tool_call_response parts, Gemini
// function_response parts) become tool messages of their own.
func message(v *val, defRole string) ([]trace.Event, bool) {
	if !v.isObj() {
		return nil, false
	}
	if v.getStr("type") == "constructor" && v.get("kwargs").isObj() {
		// LangChain serialized message: {lc, type: constructor, id: [..., "AIMessage"], kwargs}.
		k := v.get("kwargs")
		role := ""
		if id := v.get("id"); id.isArr() && len(id.arr) > 0 {
			role, _ = id.arr[len(id.arr)-1].text()
		}
		return langchainMessage(k, normRole(role))
	}
	switch v.getStr("type") {
	case "function_call": // OpenAI Responses item
		e := trace.Event{Role: "assistant", ToolCalls: []trace.ToolCall{toolCall(firstStr(v, "call_id", "id"), v.getStr("name"), v.get("arguments"))}}
		e.Extra = append(e.Extra, trace.Field{Key: responsesMark, Value: json.RawMessage("true")})
		return []trace.Event{e}, true
	case "function_call_output":
		return []trace.Event{{Role: "tool", ToolCallID: v.getStr("call_id"), Content: textOf(v.get("output"))}}, true
	}
	role, hasRole := v.get("role").text()
	if !hasRole {
		if isLangChain(v) {
			return langchainMessage(v, normRole(v.getStr("type")))
		}
		if v.getStr("type") != "message" && defRole == "" {
			return nil, false
		}
		role = defRole
	}
	role = normRole(role)
	if v.has("additional_kwargs") && !v.has("tool_calls") {
		return langchainMessage(v, role)
	}
	e := trace.Event{Role: role}
	var extra []trace.Event // tool results split out of the message
	switch c := v.get("content"); {
	case c == nil:
		if t, ok := v.get("text").text(); ok && !v.has("parts") { // BeeAI {role, text}
			e.Content = trace.TextContent(t)
		}
	case c.isNull():
		e.Content = trace.Content{Kind: trace.ContentNull}
	case c.isStr():
		e.Content = trace.TextContent(c.str)
	case c.isArr():
		e.Content, e.ToolCalls, extra = contentParts(c.arr, role)
	default:
		e.Content = trace.TextContent(c.asText())
	}
	if p := v.get("parts"); p.isArr() && v.get("content") == nil {
		e.Content, e.ToolCalls, extra = genaiParts(p.arr, role)
	}
	if tc := v.get("tool_calls"); tc.isArr() {
		calls, ok := toolCalls(tc.arr)
		if !ok {
			return nil, false
		}
		e.ToolCalls = append(e.ToolCalls, calls...)
	}
	if id, ok := v.get("tool_call_id").text(); ok {
		e.ToolCallID = id
	}
	if n, ok := v.get("name").text(); ok && n != "" {
		e.Extra = append(e.Extra, trace.Field{Key: "name", Value: trace.AppendString(nil, n)})
	}
	if onlyResults(extra, &e) {
		return extra, true
	}
	return append(extra, e), true
}

// onlyResults reports whether a message held tool results and nothing
// else, so that it is replaced by them.
func onlyResults(results []trace.Event, e *trace.Event) bool {
	return len(results) > 0 && len(e.ToolCalls) == 0 &&
		(e.Content.Kind == trace.ContentAbsent || e.Content.Kind == trace.ContentNull)
}

// langchainMessage reads a LangChain message ({type|role, content,
// additional_kwargs.tool_calls, tool_calls, tool_call_id, name}).
func langchainMessage(v *val, role string) ([]trace.Event, bool) {
	if role == "" {
		role = normRole(v.getStr("type"))
	}
	e := trace.Event{Role: role}
	var extra []trace.Event
	switch c := v.get("content"); {
	case c == nil:
	case c.isNull():
		e.Content = trace.Content{Kind: trace.ContentNull}
	case c.isStr():
		e.Content = trace.TextContent(c.str)
	case c.isArr():
		e.Content, e.ToolCalls, extra = contentParts(c.arr, role)
	default:
		e.Content = trace.TextContent(c.asText())
	}
	if tc := v.get("tool_calls"); tc.isArr() && len(tc.arr) > 0 {
		calls, ok := toolCalls(tc.arr)
		if !ok {
			return nil, false
		}
		e.ToolCalls = append(e.ToolCalls, calls...)
	} else if tc := v.get("additional_kwargs").get("tool_calls"); tc.isArr() {
		calls, ok := toolCalls(tc.arr)
		if !ok {
			return nil, false
		}
		e.ToolCalls = append(e.ToolCalls, calls...)
	}
	if id, ok := v.get("tool_call_id").text(); ok {
		e.ToolCallID = id
	}
	if n, ok := v.get("name").text(); ok && n != "" {
		e.Extra = append(e.Extra, trace.Field{Key: "name", Value: trace.AppendString(nil, n)})
	}
	if onlyResults(extra, &e) {
		return extra, true
	}
	return append(extra, e), true
}

// toolCalls reads tool calls in the OpenAI shape {id, type, function:
// {name, arguments}}, LangChain's {id, name, args} or the flat {id, name,
// arguments}.
func toolCalls(items []*val) ([]trace.ToolCall, bool) {
	var out []trace.ToolCall
	for _, it := range items {
		if !it.isObj() {
			return nil, false
		}
		if f := it.get("function"); f.isObj() {
			c := toolCall(it.getStr("id"), f.getStr("name"), f.get("arguments"))
			if t := it.getStr("type"); t != "" {
				c.Type = t
			}
			out = append(out, c)
			continue
		}
		name := firstStr(it, "name", "toolName", "tool.name")
		if name == "" {
			return nil, false
		}
		out = append(out, toolCall(firstStr(it, "id", "toolCallId"), name, firstOf(it.get("args"), it.get("arguments"), it.get("input"), it.get("tool.args"))))
	}
	return out, true
}

// toolCall builds a tool call; arguments given as text are parsed when they
// hold a JSON object, absent arguments are {}.
func toolCall(id, name string, args *val) trace.ToolCall {
	return trace.ToolCall{ID: id, Type: "function", Function: trace.Function{Name: name, Arguments: arguments(args)}}
}

// arguments makes tool-call arguments: an object as it is, JSON text
// holding an object parsed, nothing or null {}, any other string kept as a
// string, any other value wrapped as {"input": value}.
func arguments(v *val) json.RawMessage {
	switch {
	case v.isNull():
		return json.RawMessage(`{}`)
	case v.isObj():
		return v.compact()
	case v.isStr():
		if strings.TrimSpace(v.str) == "" {
			return json.RawMessage(`{}`)
		}
		return trace.ParseArguments(v.str, nil)
	}
	b := append([]byte(`{"input":`), v.compact()...)
	return append(b, '}')
}

// contentParts reads OpenAI-style list content. Text parts stay parts;
// Anthropic tool_use blocks become tool calls and tool_result blocks tool
// messages; OpenAI Responses input_text/output_text parts are text parts.
func contentParts(items []*val, role string) (trace.Content, []trace.ToolCall, []trace.Event) {
	c := trace.Content{Kind: trace.ContentParts, Parts: []trace.Part{}}
	var calls []trace.ToolCall
	var results []trace.Event
	for _, it := range items {
		if t, ok := it.text(); ok {
			c.Parts = append(c.Parts, trace.Part{Type: "text", Text: t})
			continue
		}
		if !it.isObj() {
			c.Parts = append(c.Parts, trace.Part{Type: "", Extra: trace.Fields{{Key: "value", Value: it.compact()}}})
			continue
		}
		switch typ := it.getStr("type"); typ {
		case "text", "input_text", "output_text":
			if t, ok := it.get("text").text(); ok {
				c.Parts = append(c.Parts, trace.Part{Type: "text", Text: t})
				continue
			}
		case "tool_use":
			calls = append(calls, toolCall(it.getStr("id"), it.getStr("name"), it.get("input")))
			continue
		case "tool_result":
			results = append(results, trace.Event{Role: "tool", ToolCallID: it.getStr("tool_use_id"), Content: resultContent(it.get("content"))})
			continue
		case "tool-call": // Vercel AI SDK
			calls = append(calls, toolCall(it.getStr("toolCallId"), it.getStr("toolName"), firstOf(it.get("input"), it.get("args"))))
			continue
		case "tool-result":
			out := firstOf(it.get("output"), it.get("result"))
			if out.isObj() && out.has("type") && out.has("value") && len(out.obj) == 2 {
				out = out.get("value") // AI SDK 5: {type: json|text, value}
			}
			results = append(results, trace.Event{Role: "tool", ToolCallID: it.getStr("toolCallId"), Content: textOf(out)})
			continue
		}
		c.Parts = append(c.Parts, rawPart(it))
	}
	if len(c.Parts) == 0 && (len(calls) > 0 || len(results) > 0) {
		c = trace.Content{Kind: trace.ContentNull}
	}
	return c, calls, results
}

// resultContent is the content of a tool result: text, or a list of
// blocks kept as parts.
func resultContent(v *val) trace.Content {
	if v.isArr() {
		c, _, _ := contentParts(v.arr, "tool")
		return c
	}
	return textOf(v)
}

// rawPart keeps a part it does not know verbatim.
func rawPart(v *val) trace.Part {
	p := trace.Part{}
	for _, m := range v.obj {
		if m.key == "type" {
			if t, ok := m.v.text(); ok && t != "" {
				p.Type = t
				continue
			}
		}
		if m.key == "text" && m.v.isStr() && p.Type == "text" {
			p.Text = m.v.str
			continue
		}
		p.Extra = append(p.Extra, trace.Field{Key: m.key, Value: m.v.compact()})
	}
	if p.Type == "text" {
		// A text part without a string text: keep it under another type so
		// that it round-trips.
		p.Type = "text_value"
	}
	return p
}

// genaiParts reads the parts of an OpenTelemetry GenAI message ({type:
// text, content}, {type: tool_call, id, name, arguments}, {type:
// tool_call_response, id, response}) or of a Gemini content ({text},
// {function_call}, {function_response}). One text part becomes string
// content; several stay parts.
func genaiParts(items []*val, role string) (trace.Content, []trace.ToolCall, []trace.Event) {
	var parts []trace.Part
	var calls []trace.ToolCall
	var results []trace.Event
	for _, it := range items {
		if !it.isObj() {
			if t, ok := it.text(); ok {
				parts = append(parts, trace.Part{Type: "text", Text: t})
			}
			continue
		}
		switch typ := it.getStr("type"); {
		case typ == "text":
			t, ok := it.get("content").text()
			if !ok {
				t, ok = it.get("text").text()
			}
			if ok {
				parts = append(parts, trace.Part{Type: "text", Text: t})
				continue
			}
		case typ == "tool_call":
			calls = append(calls, toolCall(idOf(it.get("id")), it.getStr("name"), it.get("arguments")))
			continue
		case typ == "tool_call_response":
			r := it.get("response")
			if r == nil {
				r = it.get("result")
			}
			results = append(results, trace.Event{Role: "tool", ToolCallID: idOf(it.get("id")), Content: textOf(r)})
			continue
		case typ == "" && it.has("text") && it.get("text").isStr() && !it.has("thought"):
			parts = append(parts, trace.Part{Type: "text", Text: it.get("text").str})
			continue
		case typ == "" && (it.get("function_call").isObj() || it.get("functionCall").isObj()):
			fc := firstOf(it.get("function_call"), it.get("functionCall"))
			calls = append(calls, toolCall(fc.getStr("id"), fc.getStr("name"), fc.get("args")))
			continue
		case typ == "" && (it.get("function_response").isObj() || it.get("functionResponse").isObj()):
			fr := firstOf(it.get("function_response"), it.get("functionResponse"))
			e := trace.Event{Role: "tool", ToolCallID: fr.getStr("id"), Content: textOf(fr.get("response"))}
			if n := fr.getStr("name"); n != "" {
				e.Extra = trace.Fields{{Key: "name", Value: trace.AppendString(nil, n)}}
			}
			results = append(results, e)
			continue
		}
		parts = append(parts, rawPart(it))
	}
	var c trace.Content
	switch {
	case len(parts) == 1 && parts[0].Type == "text":
		c = trace.TextContent(parts[0].Text)
	case len(parts) > 0:
		c = trace.Content{Kind: trace.ContentParts, Parts: parts}
	case len(calls) > 0:
		c = trace.Content{Kind: trace.ContentNull}
	}
	return c, calls, results
}

// idOf reads a tool-call id: a string, or the last of a list of strings
// (Microsoft Agent Framework writes [run id, call id]).
func idOf(v *val) string {
	if t, ok := v.text(); ok {
		return t
	}
	if v.isArr() && len(v.arr) > 0 {
		t, _ := v.arr[len(v.arr)-1].text()
		return t
	}
	if v != nil && !v.isNull() {
		return v.asText()
	}
	return ""
}

// textOf is a value as message content: a string as it is, null as null,
// anything else as its compact JSON text.
func textOf(v *val) trace.Content {
	if v.isNull() {
		return trace.Content{Kind: trace.ContentNull}
	}
	return trace.TextContent(v.asText())
}

func firstOf(vs ...*val) *val {
	for _, v := range vs {
		if v != nil {
			return v
		}
	}
	return nil
}

func firstStr(v *val, keys ...string) string {
	for _, k := range keys {
		if s, ok := v.get(k).text(); ok && s != "" {
			return s
		}
	}
	return ""
}
