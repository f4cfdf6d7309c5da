package trace

import (
	"encoding/json"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/lookout-dev/lookout/internal/jsonscan"
)

// Canonical JSON of a trace:
//
//	{"id", "name", "index", "metadata", "events": [...], "spans": [...],
//	 "annotations": [...], ...unknown members}
//
// Events have the OpenAI/Invariant shape plus "span_id"; members absent from
// the model are left out. Decoders accept exactly what the encoders write,
// and keep what they do not know in Extra.

// MarshalJSON writes canonical JSON.
func (t *Trace) MarshalJSON() ([]byte, error) { return AppendTrace(nil, t), nil }

// UnmarshalJSON reads canonical JSON.
func (t *Trace) UnmarshalJSON(data []byte) error {
	s := jsonscan.New(data)
	*t = Trace{}
	if err := DecodeTrace(s, t); err != nil {
		return err
	}
	return s.End()
}

// AppendTrace appends the canonical JSON of t.
func AppendTrace(b []byte, t *Trace) []byte {
	w := objWriter{b: append(b, '{')}
	if t.ID != "" {
		w.key("id")
		w.b = AppendString(w.b, t.ID)
	}
	if t.Name != "" {
		w.key("name")
		w.b = AppendString(w.b, t.Name)
	}
	if t.Index != nil {
		w.key("index")
		w.b = strconv.AppendInt(w.b, *t.Index, 10)
	}
	if t.Metadata != nil {
		w.key("metadata")
		w.b = append(w.b, t.Metadata...)
	}
	w.key("events")
	w.b = AppendEvents(w.b, t.Events)
	if len(t.Spans) > 0 {
		w.key("spans")
		w.b = AppendSpans(w.b, t.Spans)
	}
	if len(t.Annotations) > 0 {
		w.key("annotations")
		w.b = AppendAnnotations(w.b, t.Annotations)
	}
	w.extra(t.Extra)
	return append(w.b, '}')
}

// SizeHint is about the size of t's canonical JSON, a little over: a
// buffer of this capacity takes AppendTrace without growing (growing by
// doubling allocated four to six times the size of a large trace).
func SizeHint(t *Trace) int {
	n := 64 + strSize(t.ID) + strSize(t.Name) + len(t.Metadata) + fieldsSize(t.Extra)
	for i := range t.Events {
		e := &t.Events[i]
		n += 48 + strSize(e.Role) + strSize(e.Content.Text) + strSize(e.ToolCallID) + strSize(e.SpanID) + fieldsSize(e.Extra)
		for j := range e.Content.Parts {
			p := &e.Content.Parts[j]
			n += 24 + strSize(p.Type) + strSize(p.Text) + fieldsSize(p.Extra)
		}
		for j := range e.ToolCalls {
			c := &e.ToolCalls[j]
			n += 64 + strSize(c.ID) + strSize(c.Type) + strSize(c.Function.Name) + len(c.Function.Arguments) + fieldsSize(c.Extra) + fieldsSize(c.Function.Extra)
		}
	}
	for i := range t.Spans {
		sp := &t.Spans[i]
		n += 160 + strSize(sp.ID) + strSize(sp.ParentID) + strSize(sp.Name) + strSize(sp.Kind) + strSize(sp.Status) + strSize(sp.StatusMessage) +
			len(sp.Attributes) + len(sp.Inputs) + len(sp.Outputs) + len(sp.Value) + strSize(sp.Execution) + fieldsSize(sp.Extra)
	}
	for i := range t.Annotations {
		a := &t.Annotations[i]
		n += 32 + strSize(a.Address) + strSize(a.Content) + fieldsSize(a.Extra)
	}
	return n + n/64
}

// strSize is about the size of s as a JSON string. A long text is counted
// with its common escapes (quotes, backslashes, line breaks, tabs), which
// make up much of tool outputs that are JSON or code; strings.Count is a
// vector scan, cheap beside the copy.
func strSize(s string) int {
	if len(s) < 4096 {
		return len(s) + len(s)/8 + 2
	}
	return len(s) + 2 + strings.Count(s, `"`) + strings.Count(s, `\`) + strings.Count(s, "\n") + strings.Count(s, "\t") + strings.Count(s, "\r")
}

func fieldsSize(f Fields) int {
	n := 0
	for _, x := range f {
		n += 4 + len(x.Key) + len(x.Value)
	}
	return n
}

// DecodeTrace reads a canonical trace object.
func DecodeTrace(s *jsonscan.Scanner, t *Trace) error {
	if err := s.Expect(jsonscan.Object, "trace"); err != nil {
		return err
	}
	return s.Object(func(key string) error {
		var err error
		switch key {
		case "id":
			t.ID, err = s.String("id")
		case "name":
			t.Name, err = s.String("name")
		case "index":
			var n int64
			n, err = s.Int64("index")
			t.Index = &n
		case "metadata":
			t.Metadata, err = DecodeObject(s, "metadata")
		case "events":
			t.Events, err = DecodeEvents(s, "events")
		case "spans":
			t.Spans, err = DecodeSpans(s)
		case "annotations":
			t.Annotations, err = DecodeAnnotations(s)
		default:
			err = decodeExtra(s, &t.Extra, key)
		}
		return err
	})
}

// AppendEvents appends a JSON array of events.
func AppendEvents(b []byte, events []Event) []byte {
	b = append(b, '[')
	for i := range events {
		if i > 0 {
			b = append(b, ',')
		}
		b = AppendEvent(b, &events[i])
	}
	return append(b, ']')
}

// AppendEvent appends one event in the OpenAI/Invariant shape.
func AppendEvent(b []byte, e *Event) []byte {
	w := objWriter{b: append(b, '{')}
	if e.Role != "" {
		w.key("role")
		w.b = AppendString(w.b, e.Role)
	}
	switch e.Content.Kind {
	case ContentNull:
		w.key("content")
		w.b = append(w.b, "null"...)
	case ContentText:
		w.key("content")
		w.b = AppendString(w.b, e.Content.Text)
	case ContentParts:
		w.key("content")
		w.b = append(w.b, '[')
		for i := range e.Content.Parts {
			if i > 0 {
				w.b = append(w.b, ',')
			}
			p := &e.Content.Parts[i]
			pw := objWriter{b: append(w.b, '{')}
			if p.Type != "" {
				pw.key("type")
				pw.b = AppendString(pw.b, p.Type)
			}
			if p.Type == "text" {
				pw.key("text")
				pw.b = AppendString(pw.b, p.Text)
			}
			pw.extra(p.Extra)
			w.b = append(pw.b, '}')
		}
		w.b = append(w.b, ']')
	}
	if len(e.ToolCalls) > 0 {
		w.key("tool_calls")
		w.b = append(w.b, '[')
		for i := range e.ToolCalls {
			if i > 0 {
				w.b = append(w.b, ',')
			}
			w.b = appendToolCall(w.b, &e.ToolCalls[i])
		}
		w.b = append(w.b, ']')
	}
	if e.ToolCallID != "" {
		w.key("tool_call_id")
		w.b = AppendString(w.b, e.ToolCallID)
	}
	if e.SpanID != "" {
		w.key("span_id")
		w.b = AppendString(w.b, e.SpanID)
	}
	w.extra(e.Extra)
	return append(w.b, '}')
}

func appendToolCall(b []byte, c *ToolCall) []byte {
	w := objWriter{b: append(b, '{')}
	if c.ID != "" {
		w.key("id")
		w.b = AppendString(w.b, c.ID)
	}
	if c.Type != "" {
		w.key("type")
		w.b = AppendString(w.b, c.Type)
	}
	w.key("function")
	fw := objWriter{b: append(w.b, '{')}
	if c.Function.Name != "" {
		fw.key("name")
		fw.b = AppendString(fw.b, c.Function.Name)
	}
	if c.Function.Arguments != nil {
		fw.key("arguments")
		fw.b = append(fw.b, c.Function.Arguments...)
	}
	fw.extra(c.Function.Extra)
	w.b = append(fw.b, '}')
	w.extra(c.Extra)
	return append(w.b, '}')
}

// DecodeEvents reads a JSON array of events.
func DecodeEvents(s *jsonscan.Scanner, what string) ([]Event, error) {
	if err := s.Expect(jsonscan.Array, what); err != nil {
		return nil, err
	}
	events := []Event{}
	err := s.Array(func(int) error {
		events = append(events, Event{})
		return DecodeEvent(s, &events[len(events)-1])
	})
	return events, err
}

// DecodeEvent reads one event object. A known member whose value the model
// cannot hold as such (an empty role, "tool_calls": null) is kept in Extra,
// so that the event still round-trips unchanged.
func DecodeEvent(s *jsonscan.Scanner, e *Event) error {
	if err := s.Expect(jsonscan.Object, "event"); err != nil {
		return err
	}
	return s.Object(func(key string) error {
		switch key {
		case "role":
			if s.Peek() == jsonscan.String {
				v, err := s.String(key)
				if err != nil || v != "" {
					e.Role = v
					return err
				}
				return keepRaw(&e.Extra, key, []byte(`""`))
			}
			return s.Errorf("role must be a string, not %s", s.Peek())
		case "content":
			return decodeContent(s, &e.Content)
		case "tool_calls":
			switch s.Peek() {
			case jsonscan.Array:
				var calls []ToolCall
				err := s.Array(func(int) error {
					calls = append(calls, ToolCall{})
					return decodeToolCall(s, &calls[len(calls)-1])
				})
				if err != nil {
					return err
				}
				if len(calls) == 0 {
					return keepRaw(&e.Extra, key, []byte(`[]`))
				}
				e.ToolCalls = calls
				return nil
			case jsonscan.Null:
				return decodeExtra(s, &e.Extra, key)
			}
			return s.Errorf("tool_calls must be a list of tool calls, not %s", s.Peek())
		case "tool_call_id":
			return optString(s, &e.ToolCallID, &e.Extra, key)
		case "span_id":
			return optString(s, &e.SpanID, &e.Extra, key)
		}
		return decodeExtra(s, &e.Extra, key)
	})
}

// optString stores a non-empty string in dst and anything else in Extra.
func optString(s *jsonscan.Scanner, dst *string, extra *Fields, key string) error {
	if s.Peek() == jsonscan.String {
		start := s.Offset()
		v, err := s.String(key)
		if err != nil {
			return err
		}
		if v != "" {
			*dst = v
			return nil
		}
		return keepRaw(extra, key, s.Data()[start:s.Offset()])
	}
	return decodeExtra(s, extra, key)
}

func decodeContent(s *jsonscan.Scanner, c *Content) error {
	switch s.Peek() {
	case jsonscan.Null:
		c.Kind = ContentNull
		return s.Null()
	case jsonscan.String:
		v, err := s.String("content")
		c.Kind, c.Text = ContentText, v
		return err
	case jsonscan.Array:
		c.Kind = ContentParts
		c.Parts = []Part{}
		return s.Array(func(int) error {
			c.Parts = append(c.Parts, Part{})
			return decodePart(s, &c.Parts[len(c.Parts)-1])
		})
	}
	if s.Peek() == jsonscan.Invalid {
		return s.Skip()
	}
	return s.Errorf("content must be null, a string or a list of parts, not %s", s.Peek())
}

func decodePart(s *jsonscan.Scanner, p *Part) error {
	if err := s.Expect(jsonscan.Object, "content part"); err != nil {
		return err
	}
	var textRaw json.RawMessage
	var text string
	hasText := false
	textAt := 0 // where "text" came among the other members kept
	err := s.Object(func(key string) error {
		switch key {
		case "type":
			return optString(s, &p.Type, &p.Extra, key)
		case "text":
			if s.Peek() == jsonscan.String {
				start := s.Offset()
				v, err := s.String(key)
				text, hasText, textAt = v, true, len(p.Extra)
				textRaw = s.Data()[start:s.Offset()]
				return err
			}
		}
		return decodeExtra(s, &p.Extra, key)
	})
	if hasText {
		if p.Type == "text" {
			p.Text = text
		} else {
			// Only text parts have a model field for text; keep it
			// verbatim, in its place among the other members, so that the
			// part reads back as it was written.
			p.Extra = slices.Insert(p.Extra, min(textAt, len(p.Extra)), Field{Key: "text", Value: Compact(textRaw)})
		}
	}
	return err
}

func decodeToolCall(s *jsonscan.Scanner, c *ToolCall) error {
	if err := s.Expect(jsonscan.Object, "tool call"); err != nil {
		return err
	}
	start := s.Offset()
	hasFunction := false
	err := s.Object(func(key string) error {
		switch key {
		case "id":
			return optString(s, &c.ID, &c.Extra, key)
		case "type":
			return optString(s, &c.Type, &c.Extra, key)
		case "function":
			if err := s.Expect(jsonscan.Object, "function"); err != nil {
				return err
			}
			hasFunction = true
			return decodeFunction(s, &c.Function)
		}
		return decodeExtra(s, &c.Extra, key)
	})
	if err == nil && !hasFunction {
		return s.ErrorAt(start, `tool call has no "function" object`)
	}
	return err
}

func decodeFunction(s *jsonscan.Scanner, f *Function) error {
	return s.Object(func(key string) error {
		switch key {
		case "name":
			return optString(s, &f.Name, &f.Extra, key)
		case "arguments":
			switch s.Peek() {
			case jsonscan.Object:
				raw, err := s.Raw()
				f.Arguments = Compact(raw)
				return err
			case jsonscan.String:
				start := s.Offset()
				text, err := s.String(key)
				if err != nil {
					return err
				}
				f.Arguments = ParseArguments(text, s.Data()[start:s.Offset()])
				return nil
			}
		}
		return decodeExtra(s, &f.Extra, key)
	})
}

// ParseArguments turns arguments given as a JSON string into an object when
// the text parses as one; otherwise it keeps the string (quoted, as the JSON
// string literal lit, or re-encoded when lit is nil).
func ParseArguments(text string, lit []byte) json.RawMessage {
	// Text that is JSON but breaks the rule at the door stays text.
	if len(text) > 0 && firstNonSpace(text) == '{' && jsonscan.CheckStrict([]byte(text)) == nil {
		return jsonscan.AppendCompact(nil, []byte(text))
	}
	if lit != nil {
		return append(json.RawMessage(nil), lit...)
	}
	return AppendString(nil, text)
}

func firstNonSpace(s string) byte {
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case ' ', '\t', '\n', '\r':
			continue
		}
		return s[i]
	}
	return 0
}

// AppendSpans appends a JSON array of spans.
func AppendSpans(b []byte, spans []Span) []byte {
	b = append(b, '[')
	for i := range spans {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendSpan(b, &spans[i])
	}
	return append(b, ']')
}

func appendSpan(b []byte, sp *Span) []byte {
	w := objWriter{b: append(b, '{')}
	str := func(k, v string) {
		if v != "" {
			w.key(k)
			w.b = AppendString(w.b, v)
		}
	}
	raw := func(k string, v json.RawMessage) {
		if v != nil {
			w.key(k)
			w.b = append(w.b, v...)
		}
	}
	tm := func(k string, v time.Time) {
		if !v.IsZero() {
			w.key(k)
			w.b = append(w.b, '"')
			w.b = v.UTC().AppendFormat(w.b, time.RFC3339Nano)
			w.b = append(w.b, '"')
		}
	}
	str("id", sp.ID)
	str("parent_id", sp.ParentID)
	str("name", sp.Name)
	str("kind", sp.Kind)
	tm("start_time", sp.Start)
	tm("end_time", sp.End)
	str("status", sp.Status)
	str("status_message", sp.StatusMessage)
	raw("attributes", sp.Attributes)
	raw("inputs", sp.Inputs)
	raw("outputs", sp.Outputs)
	raw("value", sp.Value)
	str("execution", sp.Execution)
	w.extra(sp.Extra)
	return append(w.b, '}')
}

// DecodeSpans reads the canonical JSON array of spans.
func DecodeSpans(s *jsonscan.Scanner) ([]Span, error) {
	if err := s.Expect(jsonscan.Array, "spans"); err != nil {
		return nil, err
	}
	var spans []Span
	err := s.Array(func(int) error {
		spans = append(spans, Span{})
		sp := &spans[len(spans)-1]
		if err := s.Expect(jsonscan.Object, "span"); err != nil {
			return err
		}
		return s.Object(func(key string) error {
			var err error
			switch key {
			case "id":
				return optString(s, &sp.ID, &sp.Extra, key)
			case "parent_id":
				return optString(s, &sp.ParentID, &sp.Extra, key)
			case "name":
				return optString(s, &sp.Name, &sp.Extra, key)
			case "kind":
				return optString(s, &sp.Kind, &sp.Extra, key)
			case "status":
				return optString(s, &sp.Status, &sp.Extra, key)
			case "status_message":
				return optString(s, &sp.StatusMessage, &sp.Extra, key)
			case "execution":
				return optString(s, &sp.Execution, &sp.Extra, key)
			case "start_time", "end_time":
				var v string
				s.Peek() // skip space so the error points at the value
				at := s.Offset()
				if v, err = s.String(key); err != nil {
					return err
				}
				tm, perr := time.Parse(time.RFC3339Nano, v)
				if perr != nil {
					return s.ErrorAt(at, "%s must be an RFC 3339 time, not %q", key, v)
				}
				// Times are kept in UTC; an offset must not push the year
				// out of the four digits RFC 3339 can write back.
				if y := tm.UTC().Year(); y < 0 || y > 9999 {
					return s.ErrorAt(at, "%s %q is outside the years 0000-9999 in UTC", key, v)
				}
				if key == "start_time" {
					sp.Start = tm
				} else {
					sp.End = tm
				}
			case "attributes":
				sp.Attributes, err = DecodeObject(s, key)
			case "inputs":
				sp.Inputs, err = DecodeRaw(s)
			case "outputs":
				sp.Outputs, err = DecodeRaw(s)
			case "value":
				sp.Value, err = DecodeRaw(s)
			default:
				err = decodeExtra(s, &sp.Extra, key)
			}
			return err
		})
	})
	return spans, err
}

// AppendAnnotations appends a JSON array of annotations.
func AppendAnnotations(b []byte, as []Annotation) []byte {
	b = append(b, '[')
	for i := range as {
		if i > 0 {
			b = append(b, ',')
		}
		w := objWriter{b: append(b, '{')}
		w.key("address")
		w.b = AppendString(w.b, as[i].Address)
		w.key("content")
		w.b = AppendString(w.b, as[i].Content)
		w.extra(as[i].Extra)
		b = append(w.b, '}')
	}
	return append(b, ']')
}

// DecodeAnnotations reads a list of {address, content, ...} objects; both
// members are required strings, as in Invariant's Explorer.
func DecodeAnnotations(s *jsonscan.Scanner) ([]Annotation, error) {
	if err := s.Expect(jsonscan.Array, "annotations"); err != nil {
		return nil, err
	}
	as := []Annotation{}
	err := s.Array(func(int) error {
		if err := s.Expect(jsonscan.Object, "annotation"); err != nil {
			return err
		}
		start := s.Offset()
		var a Annotation
		var hasAddr, hasContent bool
		err := s.Object(func(key string) error {
			var err error
			switch key {
			case "address":
				a.Address, err = s.String("annotation address")
				hasAddr = true
			case "content":
				a.Content, err = s.String("annotation content")
				hasContent = true
			default:
				err = decodeExtra(s, &a.Extra, key)
			}
			return err
		})
		if err != nil {
			return err
		}
		if !hasAddr || !hasContent {
			return s.ErrorAt(start, `failed to parse annotation: it needs both "address" and "content"`)
		}
		as = append(as, a)
		return nil
	})
	return as, err
}

// DecodeObject reads a JSON object (or null, giving nil) as compact raw JSON.
func DecodeObject(s *jsonscan.Scanner, what string) (json.RawMessage, error) {
	if s.Peek() == jsonscan.Null {
		return nil, s.Null()
	}
	if err := s.Expect(jsonscan.Object, what); err != nil {
		return nil, err
	}
	return DecodeRaw(s)
}

// DecodeRaw reads any value as compact raw JSON that does not alias the input.
func DecodeRaw(s *jsonscan.Scanner) (json.RawMessage, error) {
	raw, err := s.Raw()
	if err != nil {
		return nil, err
	}
	return Compact(raw), nil
}

// Compact returns a compact copy of a valid JSON value.
func Compact(raw []byte) json.RawMessage {
	return jsonscan.AppendCompact(make(json.RawMessage, 0, len(raw)), raw)
}

func decodeExtra(s *jsonscan.Scanner, f *Fields, key string) error {
	raw, err := s.Raw()
	if err != nil {
		return err
	}
	*f = append(*f, Field{Key: key, Value: Compact(raw)})
	return nil
}

func keepRaw(f *Fields, key string, raw []byte) error {
	*f = append(*f, Field{Key: key, Value: Compact(raw)})
	return nil
}

// objWriter writes object members, placing commas. It remembers the first
// keys it wrote (without allocating) so extra can skip colliding members.
type objWriter struct {
	b       []byte
	n       int
	written [16]string
}

func (w *objWriter) key(k string) {
	if w.n > 0 {
		w.b = append(w.b, ',')
	}
	if w.n < len(w.written) {
		w.written[w.n] = k
	}
	w.n++
	w.b = AppendString(w.b, k)
	w.b = append(w.b, ':')
}

// extra writes unknown members, skipping any whose key the model already
// wrote (a caller may have set a field that was also kept verbatim).
func (w *objWriter) extra(f Fields) {
	modelKeys := w.n
	if modelKeys > len(w.written) {
		modelKeys = len(w.written)
	}
outer:
	for _, x := range f {
		for _, k := range w.written[:modelKeys] {
			if x.Key == k {
				continue outer
			}
		}
		w.key(x.Key)
		w.b = append(w.b, x.Value...)
	}
}

const hexDigits = "0123456789abcdef"

// AppendString appends s as a JSON string. Invalid UTF-8 becomes U+FFFD;
// U+2028 and U+2029 are escaped so the output is also valid JavaScript.
func AppendString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i = jsonscan.PlainEndString(s, i+1)
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hexDigits[r&0xf])
			i += size
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}
