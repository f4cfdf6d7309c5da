// Package mlflow decodes MLflow traces into canonical traces.
//
// # Inputs
//
// One JSON object is one trace; several objects one after another (JSONL)
// are read in turn. Two shapes are read:
//
//	{"spans": [...]}                                   MLflow 2 (Trace.to_dict "data" alone)
//	{"info": {...}, "data": {"spans": [...], ...}}     MLflow 2 and 3 Trace.to_dict / trace JSON
//
// and each span may use either of MLflow's span dictionaries:
//
//	| member            | MLflow 2 span dict (schema v2)         | MLflow 3 span dict (v3 proto / v4)                 |
//	|-------------------|----------------------------------------|----------------------------------------------------|
//	| span id           | context.span_id ("0x" + 16 hex)        | span_id (16 hex, or base64 in v3)                  |
//	| trace id          | context.trace_id ("0x" + 32 hex)       | trace_id (kept in Span.Extra, as is otel_trace_id) |
//	| parent            | parent_id (null or an id)              | parent_span_id (null, "" or an id)                 |
//	| times             | start_time, end_time (ns integers)     | start_time_unix_nano, end_time_unix_nano (ns,      |
//	|                   |                                        | integers or strings of digits)                     |
//	| status            | status_code, status_message            | status: {code, message}                            |
//	| attributes        | attributes: values JSON-encoded text   | the same                                           |
//
// Span.ID is the span id as given (it must be a non-empty string without
// '.', since addresses are dotted), ParentID the parent's, Name the name,
// Start and End time.Unix(0, ns) in UTC, Status the status code without any
// STATUS_CODE_ prefix (OK, ERROR or UNSET; the integers 0, 1, 2 of OTLP JSON
// are read as UNSET, OK, ERROR), StatusMessage the message. Kind is the
// decoded mlflow.spanType (CHAT_MODEL, TOOL, AGENT, ...). Attributes is the
// attributes object verbatim, so values stay JSON-encoded text. Inputs and
// Outputs are mlflow.spanInputs and mlflow.spanOutputs decoded one level: the
// JSON value the string holds, or the string itself when it is not JSON
// (Python repr text such as "{'action_group_name': ...}" is kept so, never
// an error). events and every other member are kept in Span.Extra (a member
// whose name the canonical span uses is kept as "mlflow_<name>").
//
// Spans are ordered parents before children, siblings (and roots) by start
// time, then by file order. A span whose parent is not in the file is an
// orphan: it keeps its ParentID and is placed among the roots, as exporters
// do produce such spans.
//
// Trace.ID is the trace id: context.trace_id (every span of the file must
// have the same one), else info's trace_id or request_id, else the first
// span's trace_id. Trace.Metadata is the info object when there is one.
// Members of data other than spans are kept in Trace.Extra "data"; other
// top-level members in Trace.Extra by name.
//
// A trace is rejected (a recoverable *decoding.Error with its index and the
// JSON path) for: a span with no span id, or one that is not a non-empty
// string without '.'; a span id used twice; a parent id that is not a string
// or null; a parent chain that loops; a missing start time; a time that is
// not a non-negative integer of nanoseconds fitting int64; an end before the
// start; an unknown status code; a member given in both span shapes; spans
// of one file with different context.trace_id; attributes, info or data that
// are not objects; spans that are not an array of objects; a name or
// mlflow.spanType that is not a string. JSON that does not parse is fatal.
//
// # Events
//
// Spans are visited in start-time order (ties in tree order); every event
// carries the id of the span it comes from.
//
//	| span (Kind)            | events                                                                  |
//	|------------------------|-------------------------------------------------------------------------|
//	| CHAT_MODEL, LLM, CHAT  | inputs: the "messages" list of the inputs object, or the inputs when    |
//	|                        | they are a list of messages, one event per message (OpenAI shape),      |
//	|                        | then outputs: each choices[].message (or choices[].text) as an          |
//	|                        | assistant message; else an output "messages" list (a conversation);     |
//	|                        | else an output object with "content" as one assistant message; else a   |
//	|                        | string output as assistant text. A conversation prefix already emitted  |
//	|                        | by an earlier span is not emitted again.                                |
//	| TOOL                   | an assistant message (null content) with one tool call {id: span id,    |
//	|                        | type: "function", name: span name (mlflow.spanFunctionName when the     |
//	|                        | name is empty), arguments: the inputs object}, then a tool output       |
//	|                        | {tool_call_id: span id, content: outputs as text}. When an earlier      |
//	|                        | chat output made a call of that name (or function name) that has no     |
//	|                        | output yet, the span answers that call instead: only the tool output    |
//	|                        | is emitted, with that call's id.                                        |
//	| any other type         | none: the span is kept in the tree only                                 |
//
// Details: a message list is used only when every element is an object with
// a string role that reads as a canonical event (else the span gives no
// events from it). Output messages are assistant messages whatever role they
// name (MLflow's Bedrock wrapper writes "user" there). An output "messages"
// list that starts with the input messages is the whole conversation; else
// it follows the inputs. Message identity for the prefix rule is role,
// content (absent = null), tool calls (id, name, arguments) and
// tool_call_id; a tool message with a tool_call_id is identified by role and
// id alone, so the copy of a TOOL span's output in the next chat input is
// recognised even when its text differs. A call without id that a TOOL
// span answers takes the span id, on the call and its output. A tool
// message of a later prompt that repeats an output emitted already (same
// tool_call_id; without ids, an output a TOOL span gave for that name, or
// with no name the same text) is not emitted again. The rules are
// spantree.Deriver's, shared with the OpenTelemetry decoder. Tool
// arguments that are not an object are wrapped as {"input": value}; no
// inputs give {}. Outputs as text: a string as is, null or none as null
// content, anything else its compact JSON text.
package mlflow

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/lookout-dev/lookout/internal/formats/decoding"
	"github.com/lookout-dev/lookout/internal/formats/spantree"
	"github.com/lookout-dev/lookout/internal/jsonscan"
	"github.com/lookout-dev/lookout/internal/trace"
)

// NewDecoder returns a streaming decoder over r; file names r in errors. A
// trace that breaks a rule gives a recoverable error; JSON that does not
// parse is fatal.
func NewDecoder(r io.Reader, file string) decoding.Decoder {
	return decoding.NewPerValue(r, file, decodeValue, true)
}

// Canonical member names that Extra must not use: the trace's (plus the
// Invariant JSONL keys), and the span's.
var (
	traceReserved = []string{"id", "name", "index", "metadata", "events", "spans", "annotations", "messages"}
	spanReserved  = []string{"id", "parent_id", "name", "kind", "start_time", "end_time", "status", "status_message",
		"attributes", "inputs", "outputs", "value", "execution"}
)

func keep(f *trace.Fields, key string, raw []byte, reserved []string) {
	if slices.Contains(reserved, key) {
		key = "mlflow_" + key
	}
	*f = append(*f, trace.Field{Key: key, Value: compact(raw)})
}

// span is a span being decoded, with what the tree and events need.
type span struct {
	trace.Span
	offset  int    // where the span object starts
	path    string // its JSON path
	order   int    // position in the file
	startNS int64

	hasParent, hasStart, hasEnd bool
	ctxTrace                    string // context.trace_id
	ctxTraceOff                 int    // where it is
	hasCtxTrace                 bool
	funcName                    string // decoded mlflow.spanFunctionName
}

type parser struct {
	spans   []*span
	traceID string // first span-level trace_id (MLflow 3)
}

// decodeValue decodes one trace object held in data (valid JSON). Errors
// are *jsonscan.Error values with offset and path.
func decodeValue(data []byte) (*trace.Trace, error) {
	s := jsonscan.NewStrict(data)
	if k := s.Peek(); k != jsonscan.Object {
		return nil, s.Errorf(`an MLflow trace must be an object, {"spans": [...]} or {"info": {...}, "data": {"spans": [...]}}, not %s`, jsonscan.Article(k))
	}
	t := &trace.Trace{}
	p := &parser{}
	var (
		topSpans, hasData, dataSpans bool
		infoID                       string
		dataExtra                    trace.Fields
	)
	start := s.Offset()
	err := s.Object(func(key string) error {
		switch key {
		case "spans":
			if topSpans || dataSpans {
				return s.Errorf("spans given twice: a file holds one trace")
			}
			topSpans = true
			return p.spanList(s)
		case "info":
			if t.Metadata != nil {
				return s.Errorf("info given twice")
			}
			if k := s.Peek(); k != jsonscan.Object {
				return s.Errorf("info must be an object, not %s", jsonscan.Article(k))
			}
			istart := s.Offset()
			err := s.Object(func(k string) error {
				if (k == "trace_id" || k == "request_id") && s.Peek() == jsonscan.String {
					v, err := s.String(k)
					if infoID == "" || k == "trace_id" {
						infoID = v
					}
					return err
				}
				return s.Skip()
			})
			if err != nil {
				return err
			}
			t.Metadata = compact(s.Data()[istart:s.Offset()])
			return nil
		case "data":
			if hasData {
				return s.Errorf("data given twice")
			}
			hasData = true
			if k := s.Peek(); k != jsonscan.Object {
				return s.Errorf("data must be an object, not %s", jsonscan.Article(k))
			}
			return s.Object(func(k string) error {
				if k == "spans" {
					if topSpans || dataSpans {
						return s.Errorf("spans given twice: a file holds one trace")
					}
					dataSpans = true
					return p.spanList(s)
				}
				raw, err := s.Raw()
				if err == nil {
					dataExtra = append(dataExtra, trace.Field{Key: k, Value: compact(raw)})
				}
				return err
			})
		}
		raw, err := s.Raw()
		if err == nil {
			keep(&t.Extra, key, raw, traceReserved)
		}
		return err
	})
	if err == nil {
		err = s.End()
	}
	if err != nil {
		return nil, err
	}
	if !topSpans && !hasData {
		return nil, s.ErrorAt(start, `an MLflow trace needs "spans", or "info" and "data" with "spans"`)
	}
	if len(dataExtra) > 0 {
		t.Extra = append(t.Extra, trace.Field{Key: "data", Value: dataExtra.Object()})
	}

	// The trace id.
	for _, sp := range p.spans {
		if !sp.hasCtxTrace {
			continue
		}
		if t.ID == "" {
			t.ID = sp.ctxTrace
		} else if sp.ctxTrace != t.ID {
			return nil, &jsonscan.Error{Offset: sp.ctxTraceOff, Path: sp.path + ".context.trace_id",
				Msg: "trace_id " + strconv.Quote(sp.ctxTrace) + " differs from " + strconv.Quote(t.ID) + " of an earlier span: a file holds one trace"}
		}
	}
	if t.ID == "" {
		t.ID = infoID
	}
	if t.ID == "" {
		t.ID = p.traceID
	}

	spans, err := p.tree()
	if err != nil {
		return nil, err
	}
	t.Spans = make([]trace.Span, len(spans))
	for i, sp := range spans {
		t.Spans[i] = sp.Span
	}
	t.Events = deriveEvents(spans)
	return t, nil
}

func (p *parser) spanList(s *jsonscan.Scanner) error {
	if k := s.Peek(); k != jsonscan.Array {
		return s.Errorf("spans must be an array of span objects, not %s", jsonscan.Article(k))
	}
	return s.Array(func(int) error { return p.span(s) })
}

// span decodes one span object of either shape.
func (p *parser) span(s *jsonscan.Scanner) error {
	if k := s.Peek(); k != jsonscan.Object {
		return s.Errorf("a span must be an object, not %s", jsonscan.Article(k))
	}
	sp := &span{offset: s.Offset(), path: s.Path(), order: len(p.spans)}
	var given givenKeys
	if err := s.Object(func(key string) error { return p.member(s, sp, &given, key) }); err != nil {
		return err
	}
	if given.id == "" {
		return s.ErrorAt(sp.offset, "the span has no span id (context.span_id or span_id)")
	}
	if !sp.hasStart {
		return s.ErrorAt(sp.offset, "span %q has no start time (start_time or start_time_unix_nano)", sp.ID)
	}
	if sp.hasEnd && sp.End.Before(sp.Start) {
		return s.ErrorAt(sp.offset, "span %q ends (%d) before it starts (%d)", sp.ID, sp.End.UnixNano(), sp.startNS)
	}
	p.spans = append(p.spans, sp)
	return nil
}

// givenKeys are the members that gave a span's id, parent, times and
// status, which each shape names differently: one may be given only once.
type givenKeys struct{ id, parent, start, end, status string }

// once records key as what gave a value held in *prev, or fails when an
// earlier member gave it already.
func once(s *jsonscan.Scanner, prev *string, key, what string) error {
	if *prev != "" {
		return s.Errorf("%s given twice (%s and %s)", what, *prev, key)
	}
	*prev = key
	return nil
}

// member decodes one member of a span object.
func (p *parser) member(s *jsonscan.Scanner, sp *span, given *givenKeys, key string) error {
	switch key {
	case "name":
		return optString(s, &sp.Name, key, "name")
	case "context":
		return p.context(s, sp, given)
	case "span_id":
		if err := once(s, &given.id, key, "the span id"); err != nil {
			return err
		}
		return p.spanID(s, sp)
	case "trace_id":
		if s.Peek() == jsonscan.String && p.traceID == "" {
			start := s.Offset()
			v, err := s.String(key)
			if err != nil {
				return err
			}
			p.traceID = v
			keep(&sp.Extra, key, s.Data()[start:s.Offset()], spanReserved)
			return nil
		}
	case "parent_id", "parent_span_id":
		if err := once(s, &given.parent, key, "the parent id"); err != nil {
			return err
		}
		return parentID(s, sp, key)
	case "start_time", "start_time_unix_nano":
		if err := once(s, &given.start, key, "the start time"); err != nil {
			return err
		}
		return startTime(s, sp, key)
	case "end_time", "end_time_unix_nano":
		if err := once(s, &given.end, key, "the end time"); err != nil {
			return err
		}
		return endTime(s, sp, key)
	case "status_code":
		if err := once(s, &given.status, key, "the status"); err != nil {
			return err
		}
		return statusCode(s, &sp.Span, key)
	case "status_message":
		return optString(s, &sp.StatusMessage, key, key)
	case "status":
		if err := once(s, &given.status, key, "the status"); err != nil {
			return err
		}
		return status(s, &sp.Span)
	case "attributes":
		return attributes(s, sp)
	}
	raw, err := s.Raw()
	if err == nil {
		keep(&sp.Extra, key, raw, spanReserved)
	}
	return err
}

// optString reads a string into *dst, or null (leaving *dst as it is).
func optString(s *jsonscan.Scanner, dst *string, key, what string) error {
	switch s.Peek() {
	case jsonscan.Null:
		return s.Null()
	case jsonscan.String:
		v, err := s.String(key)
		*dst = v
		return err
	}
	return s.Errorf("%s must be a string, not %s", what, jsonscan.Article(s.Peek()))
}

// context reads MLflow 2's context {span_id, trace_id}; other members keep
// the rest of it in Extra "context".
func (p *parser) context(s *jsonscan.Scanner, sp *span, given *givenKeys) error {
	if k := s.Peek(); k != jsonscan.Object {
		return s.Errorf("context must be an object, not %s", jsonscan.Article(k))
	}
	var rest trace.Fields
	err := s.Object(func(k string) error {
		switch k {
		case "span_id":
			if err := once(s, &given.id, "context.span_id", "the span id"); err != nil {
				return err
			}
			return p.spanID(s, sp)
		case "trace_id":
			if s.Peek() == jsonscan.String {
				sp.ctxTraceOff = s.Offset()
				v, err := s.String(k)
				sp.ctxTrace, sp.hasCtxTrace = v, true
				return err
			}
			if s.Peek() == jsonscan.Null {
				return s.Null()
			}
			return s.Errorf("context.trace_id must be a string, not %s", jsonscan.Article(s.Peek()))
		}
		raw, err := s.Raw()
		if err == nil {
			rest = append(rest, trace.Field{Key: k, Value: compact(raw)})
		}
		return err
	})
	if err != nil || len(rest) == 0 {
		return err
	}
	sp.Extra = append(sp.Extra, trace.Field{Key: "context", Value: rest.Object()})
	return nil
}

// parentID reads a parent id: a span id, or null or "" for a root.
func parentID(s *jsonscan.Scanner, sp *span, key string) error {
	switch s.Peek() {
	case jsonscan.Null:
		return s.Null()
	case jsonscan.String:
		v, err := s.String(key)
		sp.ParentID, sp.hasParent = v, v != ""
		return err
	}
	return s.Errorf("%s must be a span id (a string) or null, not %s", key, jsonscan.Article(s.Peek()))
}

func startTime(s *jsonscan.Scanner, sp *span, key string) error {
	ns, ok, err := nanos(s, key)
	if err != nil {
		return err
	}
	if !ok {
		return s.Errorf("%s must be an integer number of nanoseconds, not null", key)
	}
	sp.startNS, sp.hasStart = ns, true
	sp.Start = time.Unix(0, ns).UTC()
	return nil
}

// endTime reads the end time; null is a span that had not ended.
func endTime(s *jsonscan.Scanner, sp *span, key string) error {
	off := s.Offset()
	ns, ok, err := nanos(s, key)
	if err != nil || !ok {
		return err
	}
	if sp.hasStart && ns < sp.startNS {
		return s.ErrorAt(off, "%s %d is before the start time %d", key, ns, sp.startNS)
	}
	sp.hasEnd = true
	sp.End = time.Unix(0, ns).UTC()
	return nil
}

func (p *parser) spanID(s *jsonscan.Scanner, sp *span) error {
	if k := s.Peek(); k != jsonscan.String {
		return s.Errorf("the span id must be a string, not %s", jsonscan.Article(k))
	}
	v, err := s.String("span id")
	if err != nil {
		return err
	}
	if v == "" {
		return s.Errorf("the span id must not be empty")
	}
	if strings.Contains(v, ".") {
		return s.Errorf("the span id %q contains '.', which addresses (spans.<id>...) cannot hold", v)
	}
	sp.ID = v
	return nil
}

// nanos reads a time in nanoseconds: an integer, or a string of digits as
// protobuf JSON writes int64. ok is false for null.
func nanos(s *jsonscan.Scanner, key string) (ns int64, ok bool, err error) {
	off := s.Offset()
	switch s.Peek() {
	case jsonscan.Null:
		return 0, false, s.Null()
	case jsonscan.Number:
		text, err := s.NumberText(key)
		if err != nil {
			return 0, false, err
		}
		n, perr := strconv.ParseInt(text, 10, 64)
		if perr != nil {
			return 0, false, s.ErrorAt(off, "%s must be an integer number of nanoseconds that fits in int64, not %s", key, text)
		}
		ns = n
	case jsonscan.String:
		text, err := s.String(key)
		if err != nil {
			return 0, false, err
		}
		n, perr := strconv.ParseInt(text, 10, 64)
		if perr != nil || text == "" || text[0] == '+' || text[0] == '-' && n >= 0 {
			return 0, false, s.ErrorAt(off, "%s must be an integer number of nanoseconds that fits in int64, not %q", key, text)
		}
		ns = n
	default:
		return 0, false, s.Errorf("%s must be an integer number of nanoseconds, not %s", key, jsonscan.Article(s.Peek()))
	}
	if ns < 0 {
		return 0, false, s.ErrorAt(off, "%s must not be negative (%d)", key, ns)
	}
	return ns, true, nil
}

// statusCode reads a status code: OK, ERROR, UNSET, with or without the
// STATUS_CODE_ prefix, or 0, 1, 2 as OTLP JSON writes the enum.
func statusCode(s *jsonscan.Scanner, sp *trace.Span, key string) error {
	off := s.Offset()
	switch s.Peek() {
	case jsonscan.Null:
		return s.Null()
	case jsonscan.Number:
		text, err := s.NumberText(key)
		if err != nil {
			return err
		}
		switch text {
		case "0":
			sp.Status = "UNSET"
		case "1":
			sp.Status = "OK"
		case "2":
			sp.Status = "ERROR"
		default:
			return s.ErrorAt(off, "%s must be OK, ERROR or UNSET (or 1, 2, 0), not %s", key, text)
		}
		return nil
	case jsonscan.String:
		v, err := s.String(key)
		if err != nil {
			return err
		}
		switch c := strings.TrimPrefix(v, "STATUS_CODE_"); c {
		case "OK", "ERROR", "UNSET":
			sp.Status = c
		case "":
			if v != "" {
				return s.ErrorAt(off, "%s must be OK, ERROR or UNSET, not %q", key, v)
			}
		default:
			return s.ErrorAt(off, "%s must be OK, ERROR or UNSET, not %q", key, v)
		}
		return nil
	}
	return s.Errorf("%s must be OK, ERROR or UNSET, not %s", key, jsonscan.Article(s.Peek()))
}

// status reads the MLflow 3 status object {code, message}; any other
// member keeps the whole object in Extra "mlflow_status".
func status(s *jsonscan.Scanner, sp *trace.Span) error {
	if s.Peek() == jsonscan.Null {
		return s.Null()
	}
	if k := s.Peek(); k != jsonscan.Object {
		return s.Errorf("status must be an object {code, message}, not %s", jsonscan.Article(k))
	}
	start := s.Offset()
	other := false
	err := s.Object(func(key string) error {
		switch key {
		case "code":
			return statusCode(s, sp, "status code")
		case "message":
			return optString(s, &sp.StatusMessage, key, "status message")
		}
		other = true
		return s.Skip()
	})
	if err == nil && other {
		sp.Extra = append(sp.Extra, trace.Field{Key: "mlflow_status", Value: compact(s.Data()[start:s.Offset()])})
	}
	return err
}

// attributes keeps the attributes object verbatim and decodes the MLflow
// keys it needs.
func attributes(s *jsonscan.Scanner, sp *span) error {
	if s.Peek() == jsonscan.Null {
		return s.Null()
	}
	if k := s.Peek(); k != jsonscan.Object {
		return s.Errorf("attributes must be an object, not %s", jsonscan.Article(k))
	}
	start := s.Offset()
	err := s.Object(func(key string) error {
		switch key {
		case "mlflow.spanType":
			switch s.Peek() {
			case jsonscan.Null:
				sp.Kind = ""
				return s.Null()
			case jsonscan.String:
				v, err := s.String(key)
				if err != nil {
					return err
				}
				sp.Kind = decodedString(v)
				return nil
			}
			return s.Errorf("mlflow.spanType must be a (JSON-encoded) string, not %s", jsonscan.Article(s.Peek()))
		case "mlflow.spanFunctionName":
			if s.Peek() == jsonscan.String {
				v, err := s.String(key)
				sp.funcName = decodedString(v)
				return err
			}
			return s.Skip()
		case "mlflow.spanInputs", "mlflow.spanOutputs":
			v, err := oneLevel(s, key)
			if err != nil {
				return err
			}
			if key == "mlflow.spanInputs" {
				sp.Inputs = v
			} else {
				sp.Outputs = v
			}
			return nil
		}
		return s.Skip()
	})
	if err != nil {
		return err
	}
	sp.Attributes = compact(s.Data()[start:s.Offset()])
	return nil
}

// decodedString decodes a JSON-encoded string attribute ("\"TOOL\"" is
// TOOL); "null" is ""; other text is kept as it is.
func decodedString(v string) string {
	t := strings.TrimSpace(v)
	if t == "null" {
		return ""
	}
	if len(t) > 0 && t[0] == '"' {
		s := jsonscan.New([]byte(t))
		if str, err := s.String("value"); err == nil && s.End() == nil {
			return str
		}
	}
	return v
}

// oneLevel reads an attribute holding JSON text and returns the JSON value
// the text holds, or the text as a JSON string when it is not JSON. A value
// that is not a string is returned as it is.
func oneLevel(s *jsonscan.Scanner, key string) (json.RawMessage, error) {
	if s.Peek() != jsonscan.String {
		return trace.DecodeRaw(s)
	}
	start := s.Offset()
	v, err := s.String(key)
	if err != nil {
		return nil, err
	}
	// Text that is JSON but breaks the rule at the door stays text.
	if b := []byte(v); jsonscan.CheckStrict(b) == nil {
		return compact(b), nil
	}
	return compact(s.Data()[start:s.Offset()]), nil
}

// compact returns a compact copy of the valid JSON value raw, as
// trace.Compact does, but finds the end of each string with
// bytes.IndexByte, which is several times faster on the long strings MLflow
// attributes hold.
func compact(raw []byte) json.RawMessage {
	out := make(json.RawMessage, 0, len(raw))
	start := 0
	for i := 0; i < len(raw); i++ {
		switch raw[i] {
		case '"':
			j := i + 1
			for {
				k := bytes.IndexByte(raw[j:], '"')
				if k < 0 {
					return append(out, raw[start:]...) // not valid JSON: keep the rest
				}
				j += k
				bs := 0
				for p := j - 1; p > i && raw[p] == '\\'; p-- {
					bs++
				}
				if bs%2 == 0 {
					break
				}
				j++
			}
			i = j
		case ' ', '\t', '\n', '\r':
			out = append(out, raw[start:i]...)
			start = i + 1
		}
	}
	return append(out, raw[start:]...)
}

// tree orders the spans parents before children, siblings by start time
// then file order; orphans are roots. A parent chain that loops is an error.
func (p *parser) tree() ([]*span, error) {
	byID := make(map[string]*span, len(p.spans))
	for _, sp := range p.spans {
		if prev, dup := byID[sp.ID]; dup {
			return nil, &jsonscan.Error{Offset: sp.offset, Path: sp.path,
				Msg: "span id " + strconv.Quote(sp.ID) + " is used twice (also by " + prev.path + ")"}
		}
		byID[sp.ID] = sp
	}
	// p.spans[i].order is i.
	order, loop := spantree.Order(len(p.spans), func(i int) int {
		if sp := p.spans[i]; sp.hasParent {
			if parent, ok := byID[sp.ParentID]; ok {
				return parent.order
			}
		}
		return -1
	}, func(i int) int64 { return p.spans[i].startNS })
	if loop >= 0 {
		sp := p.spans[loop]
		return nil, &jsonscan.Error{Offset: sp.offset, Path: sp.path,
			Msg: "span " + strconv.Quote(sp.ID) + " is its own ancestor: its parent chain loops (parent " + strconv.Quote(sp.ParentID) + ")"}
	}
	out := make([]*span, len(order))
	for k, i := range order {
		out[k] = p.spans[i]
	}
	return out, nil
}

// ---- events ----

// deriveEvents gives the chat events of the model-call and tool spans,
// visited in start-time order (ties in tree order).
func deriveEvents(spans []*span) []trace.Event {
	sel := make([]*span, 0, len(spans))
	for _, sp := range spans {
		switch strings.ToUpper(sp.Kind) {
		case "CHAT_MODEL", "LLM", "CHAT", "TOOL":
			sel = append(sel, sp)
		}
	}
	spantree.ByStart(sel, func(sp *span) int64 { return sp.startNS })
	d := spantree.NewDeriver()
	for _, sp := range sel {
		if strings.ToUpper(sp.Kind) == "TOOL" {
			d.Tool(sp.tool())
			continue
		}
		out, outIsConv := outputMessages(sp.Outputs)
		d.Chat(sp.ID, inputMessages(sp.Inputs), out, outIsConv)
	}
	return d.Events()
}

// tool is what a TOOL span tells about its call: it is named as the span
// or as its function, takes its inputs as arguments and gives its outputs
// as text.
func (sp *span) tool() spantree.Tool {
	t := spantree.Tool{SpanID: sp.ID, Args: arguments(sp.Inputs), Result: textContent(sp.Outputs), HasResult: true}
	for _, n := range [2]string{sp.Name, sp.funcName} {
		if n != "" {
			t.Names = append(t.Names, n)
		}
	}
	return t
}

// arguments makes tool call arguments of span inputs: an object as it is,
// nothing as {}, anything else wrapped as {"input": value}.
func arguments(in json.RawMessage) json.RawMessage {
	switch {
	case len(in) == 0 || string(in) == "null":
		return json.RawMessage(`{}`)
	case in[0] == '{':
		return in
	}
	b := append([]byte(`{"input":`), in...)
	return append(b, '}')
}

// textContent is outputs as text: a string as is, null or none as null
// content, anything else its compact JSON text.
func textContent(v json.RawMessage) trace.Content {
	if len(v) == 0 || string(v) == "null" {
		return trace.Content{Kind: trace.ContentNull}
	}
	if v[0] == '"' {
		if s, err := jsonscan.New(v).String("outputs"); err == nil {
			return trace.TextContent(s)
		}
	}
	// Invalid UTF-8 becomes U+FFFD (one for each run of bad bytes), so that
	// the text survives the canonical round trip.
	return trace.TextContent(strings.ToValidUTF8(string(v), "\uFFFD"))
}

// member returns the last value of key in the object raw, or nil.
func member(raw json.RawMessage, key string) json.RawMessage {
	if len(raw) == 0 || raw[0] != '{' {
		return nil
	}
	s := jsonscan.New(raw)
	var v json.RawMessage
	err := s.Object(func(k string) error {
		if k != key {
			return s.Skip()
		}
		r, err := s.Raw()
		v = r
		return err
	})
	if err != nil {
		return nil
	}
	return v
}

// messageList decodes a JSON array of OpenAI-shaped messages; nil when it
// is not one.
func messageList(raw json.RawMessage) []trace.Event {
	if len(raw) == 0 || raw[0] != '[' {
		return nil
	}
	s := jsonscan.New(raw)
	var evs []trace.Event
	err := s.Array(func(int) error {
		var e trace.Event
		if err := message(s, &e); err != nil {
			return err
		}
		evs = append(evs, e)
		return nil
	})
	if err != nil {
		return nil
	}
	return evs
}

var errNotMessage = errors.New("not a message")

// message decodes one message; it must be an object with a string role.
func message(s *jsonscan.Scanner, e *trace.Event) error {
	if s.Peek() != jsonscan.Object {
		return errNotMessage
	}
	if err := trace.DecodeEvent(s, e); err != nil {
		return err
	}
	if e.Role == "" {
		return errNotMessage
	}
	e.SpanID = ""
	return nil
}

func inputMessages(in json.RawMessage) []trace.Event {
	if len(in) == 0 {
		return nil
	}
	switch in[0] {
	case '{':
		return messageList(member(in, "messages"))
	case '[':
		return messageList(in)
	}
	return nil
}

// outputMessages returns the output's messages, and whether they are a
// conversation (an output "messages" list) rather than new messages.
func outputMessages(out json.RawMessage) ([]trace.Event, bool) {
	if len(out) == 0 {
		return nil, false
	}
	switch out[0] {
	case '"':
		c := textContent(out)
		return []trace.Event{{Role: "assistant", Content: c}}, false
	case '{':
	default:
		return nil, false
	}
	if choices := member(out, "choices"); len(choices) > 0 && choices[0] == '[' {
		var evs []trace.Event
		s := jsonscan.New(choices)
		_ = s.Array(func(int) error {
			choice, err := s.Raw()
			if err != nil {
				return err
			}
			if msg := member(choice, "message"); len(msg) > 0 && msg[0] == '{' {
				var e trace.Event
				ms := jsonscan.New(msg)
				if err := trace.DecodeEvent(ms, &e); err == nil {
					e.Role, e.SpanID = "assistant", ""
					evs = append(evs, e)
				}
			} else if text := member(choice, "text"); len(text) > 0 && text[0] == '"' {
				evs = append(evs, trace.Event{Role: "assistant", Content: textContent(text)})
			}
			return nil
		})
		return evs, false
	}
	if msgs := member(out, "messages"); len(msgs) > 0 && msgs[0] == '[' {
		return messageList(msgs), true
	}
	if c := member(out, "content"); c != nil {
		var e trace.Event
		if err := trace.DecodeEvent(jsonscan.New(out), &e); err == nil {
			e.Role, e.SpanID = "assistant", ""
			return []trace.Event{e}, false
		}
	}
	return nil, false
}
