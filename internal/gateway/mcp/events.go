package mcp

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"

	"github.com/lookout-dev/lookout/internal/trace"
)

// How MCP maps to the canonical model (the README's "MCP" section says the
// same for users):
//
//	tools/call request  → {"role": "assistant", "content": null,
//	                       "tool_calls": [{"id", "type": "function",
//	                         "function": {"name", "arguments"}}]}
//	tools/call result   → {"role": "tool", "tool_call_id", "content": the
//	                       text items joined by "\n", "metadata": {...}}
//	tools/call error    → a tool event whose content is the error message
//	tools/list result   → {"tools": [the tools as listed]}
//
// A tool event's metadata keeps what its text content does not: "is_error"
// (the result's isError, when given), "structured_content" (the result's
// structuredContent), "other_content" (every content item that is not
// text, such as images, audio, resources and resource links, verbatim) and
// "error" (a JSON-RPC error answer). Every event's metadata has "server",
// the MCP server's name from its initialize answer, which the policy
// language's server(...) reads.

// callParams are a tools/call request's params.
type callParams struct {
	Name      string
	Arguments json.RawMessage // nil when absent or null
}

// parseCallParams reads tools/call params: {"name": string, "arguments"?:
// object}. A request Lookout cannot read is not passed on.
func parseCallParams(params json.RawMessage) (callParams, error) {
	var p callParams
	if len(params) == 0 || params[0] != '{' {
		return p, errors.New("params must be an object with the tool's name")
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(params, &obj); err != nil {
		return p, err
	}
	name := obj["name"]
	if len(name) == 0 || name[0] != '"' {
		return p, errors.New("params.name must be a string")
	}
	if err := json.Unmarshal(name, &p.Name); err != nil {
		return p, err
	}
	if p.Name == "" {
		return p, errors.New("params.name must not be empty")
	}
	switch args := obj["arguments"]; {
	case len(args) == 0 || string(args) == "null":
	case args[0] == '{':
		p.Arguments = trace.Compact(args)
	default:
		return p, errors.New("params.arguments must be an object")
	}
	return p, nil
}

// callEvent is the assistant event of one tools/call request.
func callEvent(toolCallID string, p callParams, server string) trace.Event {
	return trace.Event{
		Role:    "assistant",
		Content: trace.Content{Kind: trace.ContentNull},
		ToolCalls: []trace.ToolCall{{
			ID:       toolCallID,
			Type:     "function",
			Function: trace.Function{Name: p.Name, Arguments: p.Arguments},
		}},
		Extra: metadataField(server, nil),
	}
}

// resultEvent is the tool event of a tools/call result.
func resultEvent(toolCallID string, result json.RawMessage, server string) trace.Event {
	ev := trace.Event{Role: "tool", ToolCallID: toolCallID}
	var r struct {
		Content           []json.RawMessage `json:"content"`
		IsError           *bool             `json:"isError"`
		StructuredContent json.RawMessage   `json:"structuredContent"`
	}
	if len(result) == 0 || result[0] != '{' || json.Unmarshal(result, &r) != nil {
		// Not a CallToolResult: its JSON is the content, so that the
		// guardrails still read what the client will be handed.
		ev.Content = trace.TextContent(string(result))
		ev.Extra = metadataField(server, nil)
		return ev
	}
	var text strings.Builder
	var other [][]byte
	for _, item := range r.Content {
		var it struct {
			Type     string          `json:"type"`
			Text     *string         `json:"text"`
			Resource json.RawMessage `json:"resource"`
		}
		if json.Unmarshal(item, &it) != nil || it.Type != "text" || it.Text == nil {
			other = append(other, trace.Compact(item))
			// An embedded resource's text is text the model reads too.
			if it.Type == "resource" {
				var res struct {
					Text *string `json:"text"`
				}
				if json.Unmarshal(it.Resource, &res) == nil && res.Text != nil {
					appendText(&text, *res.Text)
				}
			}
			continue
		}
		appendText(&text, *it.Text)
	}
	ev.Content = trace.TextContent(text.String())
	var meta []trace.Field
	if r.IsError != nil {
		meta = append(meta, trace.Field{Key: "is_error", Value: boolJSON(*r.IsError)})
	}
	if len(r.StructuredContent) > 0 && string(r.StructuredContent) != "null" {
		meta = append(meta, trace.Field{Key: "structured_content", Value: trace.Compact(r.StructuredContent)})
	}
	if len(other) > 0 {
		meta = append(meta, trace.Field{Key: "other_content", Value: joinBatch(other, true)})
	}
	ev.Extra = metadataField(server, meta)
	return ev
}

func appendText(b *strings.Builder, s string) {
	if b.Len() > 0 {
		b.WriteByte('\n')
	}
	b.WriteString(s)
}

// errorEvent is the tool event of a JSON-RPC error answering a tools/call.
func errorEvent(toolCallID string, rpcErr json.RawMessage, server string) trace.Event {
	var e struct {
		Message string `json:"message"`
	}
	msg := string(rpcErr)
	if json.Unmarshal(rpcErr, &e) == nil && e.Message != "" {
		msg = e.Message
	}
	return trace.Event{
		Role:       "tool",
		ToolCallID: toolCallID,
		Content:    trace.TextContent(msg),
		Extra: metadataField(server, []trace.Field{
			{Key: "is_error", Value: boolJSON(true)},
			{Key: "error", Value: trace.Compact(rpcErr)},
		}),
	}
}

// toolsEvent is the tools event of a tools/list result: Invariant's
// {"tools": [...]}, which rules quantify over as Tool and ToolParameter.
// ok is false when the result lists no tools array.
func toolsEvent(result json.RawMessage, server string) (ev trace.Event, ok bool) {
	var r struct {
		Tools json.RawMessage `json:"tools"`
	}
	if json.Unmarshal(result, &r) != nil || len(r.Tools) == 0 || r.Tools[0] != '[' {
		return ev, false
	}
	ev.Extra = append(trace.Fields{{Key: "tools", Value: trace.Compact(r.Tools)}}, metadataField(server, nil)...)
	return ev, true
}

// metadataField is the event's "metadata" member: {"server", ...more}, or
// nothing when both are empty.
func metadataField(server string, more []trace.Field) trace.Fields {
	if server == "" && len(more) == 0 {
		return nil
	}
	var b bytes.Buffer
	b.WriteByte('{')
	if server != "" {
		b.WriteString(`"server":`)
		b.Write(trace.AppendString(nil, server))
	}
	for _, f := range more {
		if b.Len() > 1 {
			b.WriteByte(',')
		}
		b.Write(trace.AppendString(nil, f.Key))
		b.WriteByte(':')
		b.Write(f.Value)
	}
	b.WriteByte('}')
	return trace.Fields{{Key: "metadata", Value: json.RawMessage(b.Bytes())}}
}

func boolJSON(v bool) json.RawMessage {
	if v {
		return json.RawMessage("true")
	}
	return json.RawMessage("false")
}
