// Package trace holds Lookout's canonical trace model: a flat list of chat
// events that rules quantify over, plus an optional tree of spans or steps
// for hierarchical formats. See DESIGN.md, "Canonical model".
package trace

import (
	"encoding/json"
	"time"
)

// Field is one JSON member kept verbatim because the model has no place of
// its own for it. Keeping these makes every format round-trip unchanged.
type Field struct {
	Key   string
	Value json.RawMessage
}

// Fields are unknown members in input order.
type Fields []Field

// Get returns the value of key, or nil.
func (f Fields) Get(key string) json.RawMessage {
	for _, x := range f {
		if x.Key == key {
			return x.Value
		}
	}
	return nil
}

// Object returns the fields as one JSON object, in their order.
func (f Fields) Object() json.RawMessage {
	b := []byte{'{'}
	for i, x := range f {
		if i > 0 {
			b = append(b, ',')
		}
		b = AppendString(b, x.Key)
		b = append(b, ':')
		b = append(b, x.Value...)
	}
	return append(b, '}')
}

// Trace is one agent run.
type Trace struct {
	ID          string
	Name        string
	Index       *int64          // position in its dataset, when the source gives one
	Metadata    json.RawMessage // a JSON object, or nil
	Events      []Event
	Spans       []Span // optional tree, parents before children
	Annotations []Annotation
	Extra       Fields
}

// ContentKind tells how an event's content was given.
type ContentKind uint8

const (
	ContentAbsent ContentKind = iota // no "content" key
	ContentNull                      // "content": null
	ContentText                      // "content": "..."
	ContentParts                     // "content": [{type...}, ...]
)

// Content is null, a string, or a list of parts.
type Content struct {
	Kind  ContentKind
	Text  string // for ContentText
	Parts []Part // for ContentParts
}

// TextContent is a convenience constructor.
func TextContent(s string) Content { return Content{Kind: ContentText, Text: s} }

// String is the text of the content: the string itself, or the text parts
// joined by newlines.
func (c Content) String() string {
	switch c.Kind {
	case ContentText:
		return c.Text
	case ContentParts:
		var b []byte
		for _, p := range c.Parts {
			if p.Type != "text" {
				continue
			}
			if b != nil {
				b = append(b, '\n')
			}
			b = append(b, p.Text...)
			if b == nil {
				b = []byte{}
			}
		}
		return string(b)
	}
	return ""
}

// Part is one element of list content: {type: "text", text} or
// {type: "image", image_url} or anything else (kept in Extra).
type Part struct {
	Type  string
	Text  string // only for type "text"
	Extra Fields // every other member, e.g. image_url
}

// Event is a message {role, content, tool_calls} or a tool output
// {role: "tool", content, tool_call_id}.
type Event struct {
	Role       string
	Content    Content
	ToolCalls  []ToolCall
	ToolCallID string
	SpanID     string // the span this event was derived from, if any
	Extra      Fields
}

// IsToolOutput reports whether the event answers a tool call.
func (e *Event) IsToolOutput() bool { return e.Role == "tool" }

// ToolCall is {id, type, function: {name, arguments}}.
type ToolCall struct {
	ID       string
	Type     string
	Function Function
	Extra    Fields
}

// Function names the tool and holds its arguments.
type Function struct {
	Name string
	// Arguments is a JSON object when the arguments were an object or a
	// string that parses as one; otherwise the original text as a JSON string.
	// nil when the call has no arguments member.
	Arguments json.RawMessage
	Extra     Fields
}

// Span is a node of the tree: an MLflow or OpenTelemetry span, a Snorkel
// step, or a Bedrock phase.
type Span struct {
	ID            string
	ParentID      string // "" for a root
	Name          string
	Kind          string // step_type, span type, Bedrock phase
	Start, End    time.Time
	Status        string
	StatusMessage string
	Attributes    json.RawMessage // JSON object (metadata for steps)
	Inputs        json.RawMessage
	Outputs       json.RawMessage
	Value         json.RawMessage
	Execution     string // how children run: "serial" or "parallel"; "" when not said
	Extra         Fields
}

// Annotation is a note attached to an address in the trace.
type Annotation struct {
	Address string
	Content string
	Extra   Fields // extra_metadata, source, author, ...
}

// Stats counts what a trace holds.
type Stats struct {
	Events, ToolCalls, ToolOutputs, Spans int
}

// Stats counts events, tool calls, tool outputs and spans.
func (t *Trace) Stats() Stats {
	s := Stats{Events: len(t.Events), Spans: len(t.Spans)}
	for i := range t.Events {
		s.ToolCalls += len(t.Events[i].ToolCalls)
		if t.Events[i].IsToolOutput() {
			s.ToolOutputs++
		}
	}
	return s
}
