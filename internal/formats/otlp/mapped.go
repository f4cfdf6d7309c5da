package otlp

import (
	"encoding/json"
	"errors"
	"fmt"

	"google.golang.org/protobuf/encoding/protowire"

	"github.com/lookout-dev/lookout/internal/trace"
)

// Mapped is one span mapped on its own: checked, classified, in its
// canonical form and with its chat view, which is all of MapTrace's work
// that needs no other span of the trace. A receiver that assembles a trace
// from spans arriving over time maps each span once (MapSpans), keeps it
// (AppendBinary, DecodeMapped), and makes the trace from all the spans kept
// so far whenever it grows (AssembleTrace), without reading any span's
// attributes or messages again.
type Mapped struct{ m mapped }

// SpanID is the id of the span.
func (m *Mapped) SpanID() string { return m.m.span.ID }

// MapSpans maps each span of one trace on its own, in the order given,
// after checking the spans as MapTrace does: it fails where MapTrace fails,
// with the same *Problem.
func MapSpans(spans []Span) ([]*Mapped, error) {
	idx := make([]int, len(spans))
	for i := range idx {
		idx[i] = i
	}
	nodes, byID, _, p := indexNodes(spans, idx)
	if p == nil {
		_, p = tree(nodes, byID)
	}
	if p != nil {
		return nil, p
	}
	out := make([]*Mapped, len(nodes))
	for i, n := range nodes {
		n.mapSelf()
		out[i] = &Mapped{n.mapped}
	}
	return out, nil
}

// AssembleTrace makes the trace of mapped spans, given in the order
// MapTrace would be given them: AssembleTrace of the spans MapSpans mapped
// (in one call or several) is the trace MapTrace makes of the spans. It
// fails, with a *Problem naming the span (its index in ms), for spans of
// different trace ids, a span id used twice and a parent chain that loops:
// what spans mapped apart can still break together.
func AssembleTrace(ms []*Mapped) (*trace.Trace, error) {
	nodes := make([]*node, len(ms))
	byID := make(map[string]*node, len(ms))
	traceID := ""
	for i, m := range ms {
		n := &node{mapped: m.m, idx: i, id: m.m.span.ID, parentID: m.m.span.ParentID, order: i}
		if !n.span.Start.IsZero() {
			n.startNS = n.span.Start.UnixNano()
		}
		prob := func(format string, args ...any) *Problem {
			return &Problem{Span: i, TraceID: n.traceID, SpanID: n.id, Msg: fmt.Sprintf(format, args...)}
		}
		if i == 0 {
			traceID = n.traceID
		} else if n.traceID != traceID {
			return nil, prob("belongs to trace %q, not %q: a trace's spans share one trace id", n.traceID, traceID)
		}
		if prev, dup := byID[n.id]; dup {
			return nil, prob("span id %s is used twice (also by span #%d)", n.id, prev.idx)
		}
		nodes[i] = n
		byID[n.id] = n
	}
	ordered, p := tree(nodes, byID)
	if p != nil {
		return nil, p
	}
	return assemble(traceID, ordered), nil
}

// The binary form of a Mapped (AppendBinary, DecodeMapped), for a receiver
// to keep mapped spans in: a zero byte, which never starts a Span's binary
// form (its first byte is a field's tag), the version of the form, then
// protobuf wire format like a Span's. Field numbers are fixed once stored;
// add new ones, never renumber. A span stored mapped stays as this version
// of Lookout mapped it.
const (
	mappedMark    = 0
	mappedVersion = 1
)

// Fields of a Mapped.
const (
	mTraceID = iota + 1
	mSpan
	mKind
	mStructured // present when set, empty
	mIn         // repeated event
	mOut        // repeated event
	mTool
)

// Fields of a canonical span.
const (
	sID = iota + 1
	sParentID
	sName
	sKind
	sStart
	sEnd
	sStatus
	sStatusMessage
	sAttributes
	sInputs
	sOutputs
	sValue
	sExecution
	sExtra // repeated kv
)

// Fields of an event.
const (
	eRole = iota + 1
	eContent
	eToolCall // repeated
	eToolCallID
	eSpanID
	eExtra // repeated kv
)

// Fields of content: its kind as one byte, its text, its parts.
const (
	cKind = iota + 1
	cText
	cPart // repeated: type 1, text 2, kv 3
)

// Fields of a tool call.
const (
	tcID = iota + 1
	tcType
	tcName
	tcArguments
	tcFunctionExtra // repeated kv
	tcExtra         // repeated kv
)

// Fields of a tool span's call: its id, name, arguments and result are
// those of the span's view (the call in, its output out), not kept twice.
const (
	tArgs      = iota + 1 // present when the span gave arguments
	tHasResult            // present when it gave a result
)

// AppendBinary appends the binary form of m to b.
func (m *Mapped) AppendBinary(b []byte) []byte {
	b = append(b, mappedMark, mappedVersion)
	x := &m.m
	b = str(b, mTraceID, x.traceID)
	b = nested(b, mSpan, func(b []byte) []byte { return appendCanonicalSpan(b, &x.span) })
	b = str(b, mKind, x.kind)
	if x.structured {
		b = raw(b, mStructured, json.RawMessage{})
	}
	for i := range x.in {
		b = nested(b, mIn, func(b []byte) []byte { return appendEvent(b, &x.in[i]) })
	}
	for i := range x.out {
		b = nested(b, mOut, func(b []byte) []byte { return appendEvent(b, &x.out[i]) })
	}
	if ti := x.tool; ti != nil {
		b = nested(b, mTool, func(b []byte) []byte {
			if ti.args != nil {
				b = raw(b, tArgs, json.RawMessage{})
			}
			if ti.hasResult {
				b = raw(b, tHasResult, json.RawMessage{})
			}
			return b
		})
	}
	return b
}

// nested appends a length-delimited field whose content fn appends.
func nested(b []byte, num protowire.Number, fn func([]byte) []byte) []byte {
	b = protowire.AppendTag(b, num, protowire.BytesType)
	at := len(b)
	b = fn(b)
	n := len(b) - at
	// Move the content on to make room for its length.
	size := protowire.SizeVarint(uint64(n))
	b = append(b, make([]byte, size)...)
	copy(b[at+size:], b[at:at+n])
	protowire.AppendVarint(b[:at], uint64(n))
	return b
}

func fieldList(b []byte, num protowire.Number, f trace.Fields) []byte {
	for _, x := range f {
		b = kv(b, num, x.Key, x.Value)
	}
	return b
}

func appendCanonicalSpan(b []byte, sp *trace.Span) []byte {
	b = str(b, sID, sp.ID)
	b = str(b, sParentID, sp.ParentID)
	b = str(b, sName, sp.Name)
	b = str(b, sKind, sp.Kind)
	b = tm(b, sStart, sp.Start)
	b = tm(b, sEnd, sp.End)
	b = str(b, sStatus, sp.Status)
	b = str(b, sStatusMessage, sp.StatusMessage)
	b = raw(b, sAttributes, sp.Attributes)
	b = raw(b, sInputs, sp.Inputs)
	b = raw(b, sOutputs, sp.Outputs)
	b = raw(b, sValue, sp.Value)
	b = str(b, sExecution, sp.Execution)
	return fieldList(b, sExtra, sp.Extra)
}

func appendEvent(b []byte, e *trace.Event) []byte {
	b = str(b, eRole, e.Role)
	if c := &e.Content; c.Kind != trace.ContentAbsent || c.Text != "" || c.Parts != nil {
		b = nested(b, eContent, func(b []byte) []byte { return appendContent(b, c) })
	}
	for i := range e.ToolCalls {
		tc := &e.ToolCalls[i]
		b = nested(b, eToolCall, func(b []byte) []byte {
			b = str(b, tcID, tc.ID)
			b = str(b, tcType, tc.Type)
			b = str(b, tcName, tc.Function.Name)
			b = raw(b, tcArguments, tc.Function.Arguments)
			b = fieldList(b, tcFunctionExtra, tc.Function.Extra)
			return fieldList(b, tcExtra, tc.Extra)
		})
	}
	b = str(b, eToolCallID, e.ToolCallID)
	b = str(b, eSpanID, e.SpanID)
	return fieldList(b, eExtra, e.Extra)
}

func appendContent(b []byte, c *trace.Content) []byte {
	b = raw(b, cKind, json.RawMessage{byte(c.Kind)})
	b = str(b, cText, c.Text)
	for i := range c.Parts {
		p := &c.Parts[i]
		b = nested(b, cPart, func(b []byte) []byte {
			b = str(b, 1, p.Type)
			b = str(b, 2, p.Text)
			return fieldList(b, 3, p.Extra)
		})
	}
	return b
}

var errMapped = errors.New("not a mapped span in Lookout's binary form")

// DecodeMapped reads a span that Mapped.AppendBinary wrote, or one that
// AppendBinary wrote (an earlier Lookout kept spans so), which it maps
// now on its own: it fails then as MapSpans would for it alone. The span's
// JSON values are read in place: b must not change while m is used.
func DecodeMapped(b []byte) (*Mapped, error) {
	if len(b) == 0 || b[0] != mappedMark {
		sp, err := DecodeBinary(b)
		if err != nil {
			return nil, err
		}
		ms, err := MapSpans([]Span{sp})
		if err != nil {
			return nil, err
		}
		return ms[0], nil
	}
	if len(b) < 2 || b[1] != mappedVersion {
		return nil, fmt.Errorf("%w: unknown version", errMapped)
	}
	var x mapped
	err := fields(b[2:], func(num protowire.Number, v []byte) error {
		var err error
		switch num {
		case mTraceID:
			x.traceID = string(v)
		case mSpan:
			err = decodeCanonicalSpan(v, &x.span)
		case mKind:
			x.kind = string(v)
		case mStructured:
			x.structured = true
		case mIn, mOut:
			var e trace.Event
			if err = decodeEvent(v, &e); err == nil {
				if num == mIn {
					x.in = append(x.in, e)
				} else {
					x.out = append(x.out, e)
				}
			}
		case mTool:
			x.tool = &toolInfo{}
			err = fields(v, func(n protowire.Number, _ []byte) error {
				switch n {
				case tArgs:
					x.tool.args = json.RawMessage{} // set below
				case tHasResult:
					x.tool.hasResult = true
				}
				return nil
			})
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	if ti := x.tool; ti != nil {
		// As view made them: in is the call, out its output.
		if len(x.in) != 1 || len(x.in[0].ToolCalls) != 1 || ti.hasResult != (len(x.out) == 1) || len(x.out) > 1 {
			return nil, fmt.Errorf("%w: a tool span's call", errMapped)
		}
		call := &x.in[0].ToolCalls[0]
		ti.id, ti.name = call.ID, call.Function.Name
		if ti.args != nil {
			ti.args = call.Function.Arguments
		}
		if ti.hasResult {
			ti.result = x.out[0].Content
		}
	}
	return &Mapped{x}, nil
}

// rawOf is a JSON value read, in place (non-nil even when empty: present).
func rawOf(b []byte) json.RawMessage {
	return json.RawMessage(b[:len(b):len(b)])
}

// fieldOf appends the member kv wrote in b (a key 1 and a JSON value 2).
func fieldOf(f trace.Fields, b []byte) (trace.Fields, error) {
	var x trace.Field
	err := fields(b, func(n protowire.Number, y []byte) error {
		switch n {
		case 1:
			x.Key = string(y)
		case 2:
			x.Value = rawOf(y)
		}
		return nil
	})
	return append(f, x), err
}

func decodeCanonicalSpan(b []byte, sp *trace.Span) error {
	return fields(b, func(num protowire.Number, v []byte) error {
		var err error
		switch num {
		case sID:
			sp.ID = string(v)
		case sParentID:
			sp.ParentID = string(v)
		case sName:
			sp.Name = string(v)
		case sKind:
			sp.Kind = string(v)
		case sStart:
			sp.Start, err = decodeTime(v)
		case sEnd:
			sp.End, err = decodeTime(v)
		case sStatus:
			sp.Status = string(v)
		case sStatusMessage:
			sp.StatusMessage = string(v)
		case sAttributes:
			sp.Attributes = rawOf(v)
		case sInputs:
			sp.Inputs = rawOf(v)
		case sOutputs:
			sp.Outputs = rawOf(v)
		case sValue:
			sp.Value = rawOf(v)
		case sExecution:
			sp.Execution = string(v)
		case sExtra:
			sp.Extra, err = fieldOf(sp.Extra, v)
		}
		return err
	})
}

func decodeEvent(b []byte, e *trace.Event) error {
	return fields(b, func(num protowire.Number, v []byte) error {
		var err error
		switch num {
		case eRole:
			e.Role = string(v)
		case eContent:
			err = decodeContent(v, &e.Content)
		case eToolCall:
			var tc trace.ToolCall
			err = fields(v, func(n protowire.Number, y []byte) error {
				var err error
				switch n {
				case tcID:
					tc.ID = string(y)
				case tcType:
					tc.Type = string(y)
				case tcName:
					tc.Function.Name = string(y)
				case tcArguments:
					tc.Function.Arguments = rawOf(y)
				case tcFunctionExtra:
					tc.Function.Extra, err = fieldOf(tc.Function.Extra, y)
				case tcExtra:
					tc.Extra, err = fieldOf(tc.Extra, y)
				}
				return err
			})
			e.ToolCalls = append(e.ToolCalls, tc)
		case eToolCallID:
			e.ToolCallID = string(v)
		case eSpanID:
			e.SpanID = string(v)
		case eExtra:
			e.Extra, err = fieldOf(e.Extra, v)
		}
		return err
	})
}

func decodeContent(b []byte, c *trace.Content) error {
	err := fields(b, func(num protowire.Number, v []byte) error {
		var err error
		switch num {
		case cKind:
			if len(v) != 1 || v[0] > byte(trace.ContentParts) {
				return fmt.Errorf("%w: a content kind", errMapped)
			}
			c.Kind = trace.ContentKind(v[0])
		case cText:
			c.Text = string(v)
		case cPart:
			var p trace.Part
			err = fields(v, func(n protowire.Number, y []byte) error {
				var err error
				switch n {
				case 1:
					p.Type = string(y)
				case 2:
					p.Text = string(y)
				case 3:
					p.Extra, err = fieldOf(p.Extra, y)
				}
				return err
			})
			c.Parts = append(c.Parts, p)
		}
		return err
	})
	if c.Kind == trace.ContentParts && c.Parts == nil {
		c.Parts = []trace.Part{} // as the mapping makes them: "content": []
	}
	return err
}
