// Package snorkel decodes Snorkel hierarchical step traces into canonical
// traces.
//
// # Input
//
// A JSON array of root steps, or one root step object; several such values
// one after another (JSONL) are read in turn. Each root step is one trace.
// A step is
//
//	{"step_type": "...", "metadata": {...}, "value": ..., "substeps": [...],
//	 "substep_execution_type": "serial"|"parallel", "metadata_expand": ...}
//
// # Rules
//
// Checked exactly; a trace that breaks one is skipped and reported with a
// recoverable *decoding.Error naming the trace index, the JSON path and the
// rule, and the other traces still import. JSON that does not parse is fatal.
//
//   - a step is an object; step_type is required and is a non-empty string;
//   - the root's step_type is ROOT_STEP;
//   - a step with no substeps (absent or []) has a value (null is not one);
//   - substeps, when given, is an array of steps;
//   - substep_execution_type is "serial" (the default) or "parallel";
//   - metadata is an object whose values are strings, numbers or booleans
//     (null, arrays and objects are errors);
//   - no other field (and no field twice): "unknown field X; allowed: ...".
//
// # Tree
//
// One span per step, in pre-order. Ids come from positions and hold no dots:
// the root is "0", its children "0-0", "0-1", a grandchild "0-1-0". Name and
// Kind are the step_type, Attributes the metadata object (tokens, latency
// and the rest stay there), Value the value, Execution the
// substep_execution_type when given; metadata_expand is kept verbatim in
// Span.Extra. Trace.Metadata is the root's metadata. Snorkel steps carry no
// ids, names or times, so the trace has none either.
//
// # Events
//
// Steps map to events in pre-order; every event carries the id of its span.
// step_type is split into words at every character that is not a letter or
// a digit and compared without regard to case:
//
//	| step_type                                          | events                                                       |
//	|----------------------------------------------------|--------------------------------------------------------------|
//	| first word USER (USER_MESSAGE, USER_QUERY, ...)     | user message, content = value                                |
//	| first word SYSTEM (SYSTEM_PROMPT, ...)              | system message, content = value                              |
//	| a word RETRIEVAL, TOOL, SEARCH, FUNCTION, API, CALL | assistant message with one tool call {id: span id, type:     |
//	| or QUERY, or its plural (DOC_RETRIEVAL, WEB_SEARCH, | "function", name: step_type in lower case, arguments: {}}    |
//	| TOOL_CALL, SQL_QUERIES, ...)                        | and null content, then a tool output {role: tool,            |
//	|                                                    | tool_call_id: span id, content = value}                      |
//	| first word AI or AGENT, or starting with ASSISTANT  | assistant message, content = value                           |
//	| (AI_RESPONSE, AGENT_PLAN, ASSISTANT_REPLY, ...)     |                                                              |
//	| anything else (ROOT_STEP, PLANNER, ...)             | none: the step is kept in the tree only                      |
//
// The rows are tried in this order, so USER_QUERY is a user message and
// AI_TOOL_CALL a tool call. Whole words are matched, not substrings, so
// RESEARCH_AGENT is not a search tool and CAPITAL_LOOKUP not an API call. A
// string value becomes text content; any other value its compact JSON text;
// no value (or null) gives null content.
package snorkel

import (
	"encoding/json"
	"errors"
	"io"
	"strconv"
	"strings"
	"unicode"

	"github.com/lookout-dev/lookout/internal/formats/decoding"
	"github.com/lookout-dev/lookout/internal/jsonscan"
	"github.com/lookout-dev/lookout/internal/trace"
)

// NewDecoder returns a streaming decoder over r; file names r in errors.
func NewDecoder(r io.Reader, file string) decoding.Decoder {
	return &decoder{vr: decoding.NewValueReader(r, file)}
}

type bounds struct{ start, end int }

type decoder struct {
	vr    *decoding.ValueReader
	index int  // index of the next trace in the input
	done  bool // no more top-level values

	// The current top-level value: checked to be JSON as a whole, then
	// decoded one root step at a time.
	src     decoding.Source
	isArray bool
	elems   []bounds
	next    int
}

// Next decodes the next root step. A root that breaks a Snorkel rule gives a
// recoverable error; JSON that does not parse is fatal.
func (d *decoder) Next() (*trace.Trace, error) {
	for {
		if d.next < len(d.elems) {
			i := d.next
			el := d.elems[i]
			d.next++
			idx := d.index
			d.index++
			root := "$"
			if d.isArray {
				root = "$[" + strconv.Itoa(i) + "]"
			}
			t, err := decodeRoot(d.src.Data[el.start:el.end], root)
			if err != nil {
				e := d.place(err, el.start)
				e.Trace = idx
				e.Recoverable = true
				return nil, e
			}
			return t, nil
		}
		if d.done {
			return nil, io.EOF
		}
		if err := d.load(); err != nil {
			return nil, err
		}
	}
}

// load reads the next top-level value and checks that it is JSON.
func (d *decoder) load() error {
	d.elems, d.next, d.isArray = d.elems[:0], 0, false
	v, err := d.vr.Next(d.index)
	if err != nil {
		d.done = true
		if errors.Is(err, io.EOF) {
			return nil
		}
		return err // an *decoding.Error
	}
	d.src = v.Source
	// Structure only: the rule at the door is decodeRoot's, so that it
	// rejects one trace, not the file.
	s := jsonscan.New(v.Data)
	switch k := s.Peek(); k {
	case jsonscan.Array:
		d.isArray = true
		err = s.Array(func(int) error {
			start := s.Offset()
			if err := s.Skip(); err != nil {
				return err
			}
			d.elems = append(d.elems, bounds{start, s.Offset()})
			return nil
		})
	case jsonscan.Object:
		err = s.Skip()
		d.elems = append(d.elems, bounds{0, s.Offset()})
	default:
		if err = s.Skip(); err == nil {
			err = s.Errorf("a Snorkel input is a JSON array of ROOT_STEP objects or one ROOT_STEP object, not %s", jsonscan.Article(k))
		}
	}
	if err == nil {
		err = s.End()
	}
	if err != nil {
		d.done = true
		d.elems = d.elems[:0]
		return d.place(err, 0)
	}
	return nil
}

// place turns an error of a scanner over src.Data[base:] into a placed one.
func (d *decoder) place(err error, base int) *decoding.Error {
	var se *jsonscan.Error
	if errors.As(err, &se) {
		return d.src.Errorf(base+se.Offset, se.Path, "%s", se.Msg)
	}
	return d.src.Wrap(err)
}

// DatasetMetadata is always nil: Snorkel files have no dataset header.
func (d *decoder) DatasetMetadata() json.RawMessage { return nil }

// allowed lists the fields of a step, for the unknown-field message.
const allowed = "step_type, metadata, value, substeps, substep_execution_type, metadata_expand"

const (
	fStepType = 1 << iota
	fMetadata
	fValue
	fSubsteps
	fExecution
	fExpand
)

var fieldBits = map[string]int{
	"step_type":              fStepType,
	"metadata":               fMetadata,
	"value":                  fValue,
	"substeps":               fSubsteps,
	"substep_execution_type": fExecution,
	"metadata_expand":        fExpand,
}

type builder struct {
	spans []trace.Span
}

// decodeRoot decodes one root step held in data (valid JSON) into a trace.
// Errors are *jsonscan.Error values relative to data.
func decodeRoot(data []byte, root string) (*trace.Trace, error) {
	s := jsonscan.NewStrict(data)
	s.SetRoot(root)
	b := &builder{spans: make([]trace.Span, 0, 8)}
	if err := b.step(s, "", "0"); err != nil {
		return nil, err
	}
	t := &trace.Trace{Spans: b.spans, Metadata: b.spans[0].Attributes}
	t.Events = events(b.spans)
	return t, nil
}

// step decodes the step at the scanner into b.spans (pre-order) with the
// given id and parent.
func (b *builder) step(s *jsonscan.Scanner, parent, id string) error {
	if k := s.Peek(); k != jsonscan.Object {
		return s.Errorf("a step must be an object, not %s", jsonscan.Article(k))
	}
	start := s.Offset()
	at := len(b.spans)
	b.spans = append(b.spans, trace.Span{ID: id, ParentID: parent})
	var (
		seen     int
		stepType string
		value    json.RawMessage
		meta     json.RawMessage
		exec     string
		extra    trace.Fields
		children int
	)
	err := s.Object(func(key string) error {
		bit, ok := fieldBits[key]
		if !ok {
			return s.Errorf("unknown field %q; allowed: %s", key, allowed)
		}
		if seen&bit != 0 {
			return s.Errorf("field %q given twice", key)
		}
		seen |= bit
		switch key {
		case "step_type":
			if k := s.Peek(); k != jsonscan.String {
				return s.Errorf("step_type must be a string, not %s", jsonscan.Article(k))
			}
			v, err := s.String(key)
			if err != nil {
				return err
			}
			if v == "" {
				return s.Errorf("step_type must be a non-empty string")
			}
			if parent == "" && v != "ROOT_STEP" {
				return s.Errorf("the root step's step_type must be \"ROOT_STEP\", not %q", v)
			}
			stepType = v
		case "metadata":
			if k := s.Peek(); k != jsonscan.Object {
				return s.Errorf("metadata must be an object, not %s", jsonscan.Article(k))
			}
			mstart := s.Offset()
			err := s.Object(func(string) error {
				switch k := s.Peek(); k {
				case jsonscan.String, jsonscan.Number, jsonscan.Bool:
					return s.Skip()
				default:
					return s.Errorf("metadata values must be strings, numbers or booleans, not %s", jsonscan.Article(k))
				}
			})
			if err != nil {
				return err
			}
			meta = trace.Compact(s.Data()[mstart:s.Offset()])
		case "value":
			raw, err := trace.DecodeRaw(s)
			if err != nil {
				return err
			}
			value = raw
		case "substeps":
			if k := s.Peek(); k != jsonscan.Array {
				return s.Errorf("substeps must be an array of steps, not %s", jsonscan.Article(k))
			}
			return s.Array(func(i int) error {
				children++
				return b.step(s, id, id+"-"+strconv.Itoa(i))
			})
		case "substep_execution_type":
			if k := s.Peek(); k != jsonscan.String {
				return s.Errorf("substep_execution_type must be \"serial\" or \"parallel\", not %s", jsonscan.Article(k))
			}
			v, err := s.String(key)
			if err != nil {
				return err
			}
			if v != "serial" && v != "parallel" {
				return s.Errorf("substep_execution_type must be \"serial\" or \"parallel\", not %q", v)
			}
			exec = v
		case "metadata_expand":
			raw, err := trace.DecodeRaw(s)
			if err != nil {
				return err
			}
			extra = append(extra, trace.Field{Key: key, Value: raw})
		}
		return nil
	})
	if err != nil {
		return err
	}
	if seen&fStepType == 0 {
		return s.ErrorAt(start, "the step has no step_type (a required string)")
	}
	if children == 0 && (value == nil || string(value) == "null") {
		return s.ErrorAt(start, "a step with no substeps must have a value (%s has none)", stepType)
	}
	sp := &b.spans[at]
	sp.Name, sp.Kind = stepType, stepType
	sp.Attributes, sp.Value, sp.Execution, sp.Extra = meta, value, exec, extra
	return nil
}

// Event kinds of the mapping table.
type eventKind uint8

const (
	kindNone eventKind = iota
	kindUser
	kindSystem
	kindTool
	kindAssistant
)

// toolWords are the words that make a step a tool call.
var toolWords = map[string]bool{
	"RETRIEVAL": true, "RETRIEVALS": true,
	"TOOL": true, "TOOLS": true,
	"SEARCH": true, "SEARCHES": true,
	"FUNCTION": true, "FUNCTIONS": true,
	"API": true, "APIS": true,
	"CALL": true, "CALLS": true,
	"QUERY": true, "QUERIES": true,
}

// classify maps a step_type to the events it gives (see the package doc).
func classify(stepType string) eventKind {
	up := strings.ToUpper(stepType)
	words := strings.FieldsFunc(up, func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) })
	if len(words) == 0 {
		return kindNone
	}
	switch words[0] {
	case "USER":
		return kindUser
	case "SYSTEM":
		return kindSystem
	}
	for _, w := range words {
		if toolWords[w] {
			return kindTool
		}
	}
	if words[0] == "AI" || words[0] == "AGENT" || strings.HasPrefix(words[0], "ASSISTANT") {
		return kindAssistant
	}
	return kindNone
}

// content turns a step value into event content.
func content(v json.RawMessage) trace.Content {
	if v == nil || string(v) == "null" {
		return trace.Content{Kind: trace.ContentNull}
	}
	if v[0] == '"' {
		if text, err := jsonscan.New(v).String("value"); err == nil {
			return trace.TextContent(text)
		}
	}
	return trace.TextContent(jsonscan.ValidUTF8(v))
}

// events derives the event list from the spans (in pre-order).
func events(spans []trace.Span) []trace.Event {
	kinds := make([]eventKind, len(spans))
	n := 0
	for i := range spans {
		kinds[i] = classify(spans[i].Kind)
		switch kinds[i] {
		case kindNone:
		case kindTool:
			n += 2
		default:
			n++
		}
	}
	evs := make([]trace.Event, 0, n)
	for i := range spans {
		sp := &spans[i]
		switch kinds[i] {
		case kindUser:
			evs = append(evs, trace.Event{Role: "user", Content: content(sp.Value), SpanID: sp.ID})
		case kindSystem:
			evs = append(evs, trace.Event{Role: "system", Content: content(sp.Value), SpanID: sp.ID})
		case kindAssistant:
			evs = append(evs, trace.Event{Role: "assistant", Content: content(sp.Value), SpanID: sp.ID})
		case kindTool:
			evs = append(evs,
				trace.Event{
					Role:    "assistant",
					Content: trace.Content{Kind: trace.ContentNull},
					ToolCalls: []trace.ToolCall{{
						ID:       sp.ID,
						Type:     "function",
						Function: trace.Function{Name: strings.ToLower(sp.Kind), Arguments: json.RawMessage(`{}`)},
					}},
					SpanID: sp.ID,
				},
				trace.Event{Role: "tool", Content: content(sp.Value), ToolCallID: sp.ID, SpanID: sp.ID},
			)
		}
	}
	return evs
}
