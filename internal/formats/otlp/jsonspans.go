package otlp

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math"
	"math/big"
	"strconv"
	"strings"
	"time"

	"github.com/lookout-dev/lookout/internal/jsonscan"
	"github.com/lookout-dev/lookout/internal/trace"
)

// located is a span read from JSON with where it starts.
type located struct {
	Span
	off  int    // byte offset of the span object in the document
	path string // its JSON path
}

// sub runs fn on a scanner over data[start:end], whose errors are placed in
// the whole document and under root.
func sub(data []byte, start, end int, root string, fn func(*jsonscan.Scanner) error) error {
	s := jsonscan.NewStrict(data[start:end])
	s.SetRoot(root)
	err := fn(s)
	if err == nil {
		err = s.End()
	}
	if e, ok := err.(*jsonscan.Error); ok {
		e.Offset += start
		return e
	}
	return err
}

// ---- OTLP JSON ----

// ParseJSON reads an OTLP/JSON ExportTraceServiceRequest
// ({"resourceSpans": [...]}) as the OTLP/HTTP JSON encoding writes it: ids
// as hex strings (not base64), 64-bit integers as decimal strings or
// numbers, enums as integers or their names. Field names may be lowerCamelCase
// or the proto's snake_case. A span that breaks a rule (an id of the wrong
// length, a value of the wrong type) is left out and reported in the
// returned *Error with its JSON path; the other spans are returned.
// JSON that does not parse gives a *jsonscan.Error and no spans.
func ParseJSON(data []byte) ([]Span, error) {
	var spans []Span
	var probs []*Problem
	s := jsonscan.NewStrict(data)
	err := parseOTLP(s, func(l located) { spans = append(spans, l.Span) }, func(e *jsonscan.Error, traceID string) {
		probs = append(probs, &Problem{Span: -1, TraceID: traceID, Msg: e.Path + ": " + e.Msg})
	})
	if err == nil {
		err = s.End()
	}
	if err != nil {
		return nil, err
	}
	if probs != nil {
		return spans, &Error{Problems: probs}
	}
	return spans, nil
}

func oneOf(key string, names ...string) bool {
	for _, n := range names {
		if key == n {
			return true
		}
	}
	return false
}

// parseOTLP reads an export request. add receives each span; bad receives
// a span that broke a rule (with its trace id when that was read).
func parseOTLP(s *jsonscan.Scanner, add func(located), bad func(*jsonscan.Error, string)) error {
	if err := s.Expect(jsonscan.Object, "an OTLP export request"); err != nil {
		return err
	}
	return s.Object(func(key string) error {
		if !oneOf(key, "resourceSpans", "resource_spans") {
			return s.Skip()
		}
		if s.Peek() == jsonscan.Null {
			return s.Null()
		}
		if err := s.Expect(jsonscan.Array, key); err != nil {
			return err
		}
		return s.Array(func(int) error { return resourceSpans(s, add, bad) })
	})
}

func resourceSpans(s *jsonscan.Scanner, add func(located), bad func(*jsonscan.Error, string)) error {
	if err := s.Expect(jsonscan.Object, "resourceSpans element"); err != nil {
		return err
	}
	var res []Attr
	type scopeRange struct{ start, end int }
	var scopes []scopeRange
	var scopeKey string
	err := s.Object(func(key string) error {
		switch {
		case key == "resource":
			if s.Peek() == jsonscan.Null {
				return s.Null()
			}
			if err := s.Expect(jsonscan.Object, "resource"); err != nil {
				return err
			}
			return s.Object(func(k string) error {
				if k == "attributes" {
					var err error
					res, err = keyValues(s, k)
					return err
				}
				return s.Skip()
			})
		case oneOf(key, "scopeSpans", "scope_spans", "instrumentationLibrarySpans", "instrumentation_library_spans"):
			// Read after the resource, which may come later in the object.
			if s.Peek() == jsonscan.Null {
				return s.Null()
			}
			if err := s.Expect(jsonscan.Array, key); err != nil {
				return err
			}
			scopeKey = s.Path()
			start := s.Offset()
			if err := s.Skip(); err != nil {
				return err
			}
			scopes = append(scopes, scopeRange{start, s.Offset()})
			return nil
		}
		return s.Skip()
	})
	if err != nil {
		return err
	}
	for _, r := range scopes {
		base := r.start
		err := sub(s.Data(), r.start, r.end, scopeKey, func(ss *jsonscan.Scanner) error {
			return ss.Array(func(int) error { return scopeSpans(ss, base, res, add, bad) })
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// scopeSpans reads one scopeSpans element from s, which scans the document
// from offset base.
func scopeSpans(s *jsonscan.Scanner, base int, res []Attr, add func(located), bad func(*jsonscan.Error, string)) error {
	if err := s.Expect(jsonscan.Object, "scopeSpans element"); err != nil {
		return err
	}
	var sc Scope
	type spanRange struct {
		start, end int
		path       string
	}
	var spans []spanRange
	err := s.Object(func(key string) error {
		switch {
		case oneOf(key, "scope", "instrumentationLibrary", "instrumentation_library"):
			if s.Peek() == jsonscan.Null {
				return s.Null()
			}
			if err := s.Expect(jsonscan.Object, key); err != nil {
				return err
			}
			return s.Object(func(k string) error {
				var err error
				switch k {
				case "name":
					sc.Name, err = optString(s, k)
				case "version":
					sc.Version, err = optString(s, k)
				case "attributes":
					sc.Attributes, err = keyValues(s, k)
				default:
					err = s.Skip()
				}
				return err
			})
		case key == "spans":
			if s.Peek() == jsonscan.Null {
				return s.Null()
			}
			if err := s.Expect(jsonscan.Array, key); err != nil {
				return err
			}
			return s.Array(func(int) error {
				path := s.Path()
				if k := s.Peek(); k != jsonscan.Object {
					return s.Errorf("a span must be an object, not %s", jsonscan.Article(k))
				}
				start := s.Offset()
				if err := s.Skip(); err != nil {
					return err
				}
				spans = append(spans, spanRange{start, s.Offset(), path})
				return nil
			})
		}
		return s.Skip()
	})
	if err != nil {
		return err
	}
	for _, r := range spans {
		var l located
		l.off, l.path = base+r.start, r.path
		l.Resource, l.Scope = res, sc
		err := sub(s.Data(), r.start, r.end, r.path, func(ss *jsonscan.Scanner) error { return otlpSpan(ss, &l.Span) })
		if e, ok := err.(*jsonscan.Error); ok {
			e.Offset += base
			bad(e, l.TraceID)
			continue
		}
		if err != nil {
			return err
		}
		add(l)
	}
	return nil
}

// otlpSpan reads one OTLP/JSON span.
func otlpSpan(s *jsonscan.Scanner, sp *Span) error {
	start := s.Offset()
	var hasTrace, hasSpan bool
	err := s.Object(func(key string) error {
		var err error
		switch key {
		case "traceId", "trace_id":
			sp.TraceID, err = hexID(s, key, 32)
			hasTrace = true
		case "spanId", "span_id":
			sp.SpanID, err = hexID(s, key, 16)
			hasSpan = true
		case "parentSpanId", "parent_span_id":
			if s.Peek() == jsonscan.String {
				off := s.Offset()
				v, err := s.String(key)
				if err != nil || v == "" {
					return err
				}
				if !isHex(v, 16) {
					return s.ErrorAt(off, "%s must be 16 hex digits (OTLP JSON writes ids as hex, not base64), not %q", key, v)
				}
				sp.ParentID = strings.ToLower(v)
				return nil
			}
			if s.Peek() == jsonscan.Null {
				return s.Null()
			}
			return s.Errorf("%s must be a string of hex digits, not %s", key, jsonscan.Article(s.Peek()))
		case "name":
			sp.Name, err = optString(s, key)
		case "kind":
			sp.Kind, err = spanKind(s, key)
		case "startTimeUnixNano", "start_time_unix_nano":
			sp.Start, err = unixNano(s, key)
		case "endTimeUnixNano", "end_time_unix_nano":
			sp.End, err = unixNano(s, key)
		case "attributes":
			sp.Attributes, err = keyValues(s, key)
		case "events":
			err = list(s, key, func() error {
				var e Event
				err := object(s, "event", func(k string) error {
					var err error
					switch k {
					case "name":
						e.Name, err = optString(s, k)
					case "timeUnixNano", "time_unix_nano":
						e.Time, err = unixNano(s, k)
					case "attributes":
						e.Attributes, err = keyValues(s, k)
					default:
						err = s.Skip()
					}
					return err
				})
				sp.Events = append(sp.Events, e)
				return err
			})
		case "links":
			err = list(s, key, func() error {
				var l Link
				err := object(s, "link", func(k string) error {
					var err error
					switch k {
					case "traceId", "trace_id":
						l.TraceID, err = hexID(s, k, 32)
					case "spanId", "span_id":
						l.SpanID, err = hexID(s, k, 16)
					case "attributes":
						l.Attributes, err = keyValues(s, k)
					default:
						err = s.Skip()
					}
					return err
				})
				sp.Links = append(sp.Links, l)
				return err
			})
		case "status":
			err = object(s, "status", func(k string) error {
				switch k {
				case "code":
					var err error
					sp.Status, err = statusCode(s, k)
					return err
				case "message":
					var err error
					sp.StatusMessage, err = optString(s, k)
					return err
				}
				return s.Skip()
			})
		case "traceState", "trace_state":
			var ts string
			ts, err = optString(s, key)
			if ts != "" {
				sp.Extra = append(sp.Extra, trace.Field{Key: "trace_state", Value: trace.AppendString(nil, ts)})
			}
		default:
			err = s.Skip()
		}
		return err
	})
	if err != nil {
		return err
	}
	if !hasTrace || sp.TraceID == "" {
		return s.ErrorAt(start, "the span has no traceId")
	}
	if !hasSpan || sp.SpanID == "" {
		return s.ErrorAt(start, "the span has no spanId")
	}
	return nil
}

// hexID reads an id of n hex digits, lowercased; it must not be all zeros.
func hexID(s *jsonscan.Scanner, key string, n int) (string, error) {
	off := s.Offset()
	if s.Peek() != jsonscan.String {
		return "", s.Errorf("%s must be a string of %d hex digits, not %s", key, n, jsonscan.Article(s.Peek()))
	}
	v, err := s.String(key)
	if err != nil {
		return "", err
	}
	if !isHex(v, n) {
		return "", s.ErrorAt(off, "%s must be %d hex digits (OTLP JSON writes ids as hex, not base64), not %q", key, n, v)
	}
	if allZero(v) {
		return "", s.ErrorAt(off, "%s must not be all zeros", key)
	}
	return strings.ToLower(v), nil
}

func optString(s *jsonscan.Scanner, key string) (string, error) {
	switch s.Peek() {
	case jsonscan.Null:
		return "", s.Null()
	case jsonscan.String:
		return s.String(key)
	}
	return "", s.Errorf("%s must be a string, not %s", key, jsonscan.Article(s.Peek()))
}

func object(s *jsonscan.Scanner, what string, fn func(string) error) error {
	if s.Peek() == jsonscan.Null {
		return s.Null()
	}
	if err := s.Expect(jsonscan.Object, what); err != nil {
		return err
	}
	return s.Object(fn)
}

func list(s *jsonscan.Scanner, what string, fn func() error) error {
	if s.Peek() == jsonscan.Null {
		return s.Null()
	}
	if err := s.Expect(jsonscan.Array, what); err != nil {
		return err
	}
	return s.Array(func(int) error { return fn() })
}

var spanKinds = []string{"", "internal", "server", "client", "producer", "consumer"}

// spanKind reads SpanKind: 0-5, or SPAN_KIND_INTERNAL..., or "internal",
// "SpanKind.INTERNAL" as the Python SDK writes it.
func spanKind(s *jsonscan.Scanner, key string) (string, error) {
	off := s.Offset()
	switch s.Peek() {
	case jsonscan.Null:
		return "", s.Null()
	case jsonscan.Number:
		n, err := s.Int64(key)
		if err != nil {
			return "", err
		}
		if n < 0 || n >= int64(len(spanKinds)) {
			return "", s.ErrorAt(off, "%s must be 0 to 5, not %d", key, n)
		}
		return spanKinds[n], nil
	case jsonscan.String:
		v, err := s.String(key)
		if err != nil {
			return "", err
		}
		k := strings.ToLower(v)
		k = strings.TrimPrefix(k, "span_kind_")
		k = strings.TrimPrefix(k, "spankind.")
		if k == "unspecified" {
			return "", nil
		}
		for _, name := range spanKinds {
			if k == name {
				return name, nil
			}
		}
		return "", s.ErrorAt(off, "%s %q is not a span kind (INTERNAL, SERVER, CLIENT, PRODUCER, CONSUMER)", key, v)
	}
	return "", s.Errorf("%s must be a number or a name, not %s", key, jsonscan.Article(s.Peek()))
}

// statusCode reads a status code: 0-2 or STATUS_CODE_UNSET/OK/ERROR, or
// "ok", "unset", "error" in any case.
func statusCode(s *jsonscan.Scanner, key string) (string, error) {
	off := s.Offset()
	switch s.Peek() {
	case jsonscan.Null:
		return "", s.Null()
	case jsonscan.Number:
		n, err := s.Int64(key)
		if err != nil {
			return "", err
		}
		switch n {
		case 0:
			return "", nil
		case 1:
			return "OK", nil
		case 2:
			return "ERROR", nil
		}
		return "", s.ErrorAt(off, "%s must be 0 (unset), 1 (ok) or 2 (error), not %d", key, n)
	case jsonscan.String:
		v, err := s.String(key)
		if err != nil {
			return "", err
		}
		switch strings.TrimPrefix(strings.ToUpper(v), "STATUS_CODE_") {
		case "UNSET", "":
			return "", nil
		case "OK":
			return "OK", nil
		case "ERROR":
			return "ERROR", nil
		}
		return "", s.ErrorAt(off, "%s must be UNSET, OK or ERROR, not %q", key, v)
	}
	return "", s.Errorf("%s must be a number or a name, not %s", key, jsonscan.Article(s.Peek()))
}

// unixNano reads nanoseconds since the epoch: a decimal string (as OTLP
// JSON writes 64-bit integers) or an integer. 0 is no time.
func unixNano(s *jsonscan.Scanner, key string) (time.Time, error) {
	off := s.Offset()
	var text string
	switch s.Peek() {
	case jsonscan.Null:
		return time.Time{}, s.Null()
	case jsonscan.Number:
		t, err := s.NumberText(key)
		if err != nil {
			return time.Time{}, err
		}
		text = t
	case jsonscan.String:
		t, err := s.String(key)
		if err != nil {
			return time.Time{}, err
		}
		text = t
	default:
		return time.Time{}, s.Errorf("%s must be nanoseconds since 1970 (a string of digits or an integer), not %s", key, jsonscan.Article(s.Peek()))
	}
	n, err := strconv.ParseUint(text, 10, 64)
	if err != nil || n > math.MaxInt64 {
		return time.Time{}, s.ErrorAt(off, "%s must be a non-negative integer number of nanoseconds that fits in int64, not %s", key, text)
	}
	if n == 0 {
		return time.Time{}, nil
	}
	return time.Unix(0, int64(n)).UTC(), nil
}

// keyValues reads a list of OTLP KeyValue {key, value: AnyValue}.
func keyValues(s *jsonscan.Scanner, what string) ([]Attr, error) {
	var out []Attr
	err := list(s, what, func() error {
		var a Attr
		hasKey := false
		start := s.Offset()
		err := object(s, "attribute", func(k string) error {
			switch k {
			case "key":
				v, err := s.String("key")
				a.Key, hasKey = v, true
				return err
			case "value":
				v, err := anyValue(s, nil)
				a.Value = v
				return err
			}
			return s.Skip()
		})
		if err != nil {
			return err
		}
		if !hasKey {
			return s.ErrorAt(start, "an attribute needs a key")
		}
		if a.Value == nil {
			a.Value = json.RawMessage("null")
		}
		out = append(out, a)
		return nil
	})
	return out, err
}

// anyValue reads an OTLP AnyValue and appends it to b as plain JSON.
func anyValue(s *jsonscan.Scanner, b []byte) ([]byte, error) {
	if s.Peek() == jsonscan.Null {
		return append(b, "null"...), s.Null()
	}
	if err := s.Expect(jsonscan.Object, "value"); err != nil {
		return nil, err
	}
	n := 0
	start := len(b)
	err := s.Object(func(k string) error {
		n++
		if n > 1 {
			return s.Errorf("a value has one member (stringValue, intValue, ...), not several")
		}
		off := s.Offset()
		switch k {
		case "stringValue", "string_value":
			v, err := s.String(k)
			b = trace.AppendString(b, v)
			return err
		case "boolValue", "bool_value":
			v, err := s.Bool(k)
			b = strconv.AppendBool(b, v)
			return err
		case "intValue", "int_value":
			text := ""
			switch s.Peek() {
			case jsonscan.String:
				t, err := s.String(k)
				if err != nil {
					return err
				}
				text = t
			case jsonscan.Number:
				t, err := s.NumberText(k)
				if err != nil {
					return err
				}
				text = t
			default:
				return s.Errorf("%s must be an integer (a string of digits or a number), not %s", k, jsonscan.Article(s.Peek()))
			}
			v, err := strconv.ParseInt(text, 10, 64)
			if err != nil {
				return s.ErrorAt(off, "%s must be a 64-bit integer, not %q", k, text)
			}
			b = strconv.AppendInt(b, v, 10)
			return nil
		case "doubleValue", "double_value":
			switch s.Peek() {
			case jsonscan.Number:
				f, err := s.Float64(k)
				if err != nil {
					return err
				}
				b = appendFloat(b, f)
				return nil
			case jsonscan.String:
				t, err := s.String(k)
				if err != nil {
					return err
				}
				switch t {
				case "NaN", "Infinity", "-Infinity":
					b = trace.AppendString(b, t)
					return nil
				}
				f, perr := strconv.ParseFloat(t, 64)
				if perr != nil {
					return s.ErrorAt(off, "%s must be a number, not %q", k, t)
				}
				b = appendFloat(b, f)
				return nil
			}
			return s.Errorf("%s must be a number, not %s", k, jsonscan.Article(s.Peek()))
		case "bytesValue", "bytes_value":
			t, err := s.String(k)
			if err != nil {
				return err
			}
			if _, derr := base64.StdEncoding.DecodeString(t); derr != nil {
				return s.ErrorAt(off, "%s must be base64, not %q", k, t)
			}
			b = trace.AppendString(b, t)
			return nil
		case "arrayValue", "array_value":
			b = append(b, '[')
			i := 0
			err := object(s, k, func(kk string) error {
				if kk != "values" {
					return s.Skip()
				}
				return list(s, kk, func() error {
					if i > 0 {
						b = append(b, ',')
					}
					i++
					var err error
					b, err = anyValue(s, b)
					return err
				})
			})
			b = append(b, ']')
			return err
		case "kvlistValue", "kvlist_value":
			var kvs []Attr
			err := object(s, k, func(kk string) error {
				if kk != "values" {
					return s.Skip()
				}
				var err error
				kvs, err = keyValues(s, kk)
				return err
			})
			if o := objectOf(kvs); o != nil {
				b = append(b, o...)
			} else {
				b = append(b, "{}"...)
			}
			return err
		}
		return s.Errorf("unknown value member %q (want stringValue, boolValue, intValue, doubleValue, arrayValue, kvlistValue or bytesValue)", k)
	})
	if err != nil {
		return nil, err
	}
	if len(b) == start {
		b = append(b, "null"...)
	}
	return b, nil
}

// appendFloat writes a finite float as JSON; infinities and NaN (which
// JSON cannot hold) as the strings OTLP JSON uses for them.
func appendFloat(b []byte, f float64) []byte {
	switch {
	case math.IsNaN(f):
		return append(b, `"NaN"`...)
	case math.IsInf(f, 1):
		return append(b, `"Infinity"`...)
	case math.IsInf(f, -1):
		return append(b, `"-Infinity"`...)
	}
	return strconv.AppendFloat(b, f, 'g', -1, 64)
}

// ---- SDK span dumps ----

// sdkSpan reads a span as the OpenTelemetry Python SDK writes it
// (ReadableSpan.to_json, the console exporter) or as any-agent dumps its
// AgentSpan: context {trace_id, span_id} as "0x" hex strings or as
// integers, parent {span_id} or parent_id, kind "SpanKind.INTERNAL" or
// "internal", times as ISO text or nanosecond integers, status
// {status_code, description}, attributes as a plain object, events,
// links and resource {attributes}.
func sdkSpan(s *jsonscan.Scanner, sp *Span) error {
	start := s.Offset()
	err := s.Object(func(key string) error {
		var err error
		switch key {
		case "name":
			sp.Name, err = optString(s, key)
		case "context":
			err = sdkContext(s, key, sp)
		case "parent":
			err = object(s, key, func(k string) error {
				if k == "span_id" {
					v, err := intID(s, k, 64)
					sp.ParentID = v
					return err
				}
				return s.Skip()
			})
		case "parent_id":
			sp.ParentID, err = intID(s, key, 64)
		case "kind":
			sp.Kind, err = spanKind(s, key)
		case "start_time":
			sp.Start, err = sdkTime(s, key)
		case "end_time":
			sp.End, err = sdkTime(s, key)
		case "status":
			err = sdkStatus(s, key, sp)
		case "attributes":
			sp.Attributes, err = plainAttrs(s, key)
		case "events":
			err = list(s, key, func() error {
				e, err := sdkEvent(s)
				sp.Events = append(sp.Events, e)
				return err
			})
		case "links":
			err = list(s, key, func() error {
				l, err := sdkLink(s)
				sp.Links = append(sp.Links, l)
				return err
			})
		case "resource":
			err = object(s, key, func(k string) error {
				if k == "attributes" {
					var err error
					sp.Resource, err = plainAttrs(s, k)
					return err
				}
				return s.Skip()
			})
		case "instrumentation_scope", "instrumentation_info":
			err = sdkScope(s, key, &sp.Scope)
		default:
			var raw []byte
			raw, err = s.Raw()
			if err == nil {
				sp.Extra = append(sp.Extra, trace.Field{Key: key, Value: trace.Compact(raw)})
			}
		}
		return err
	})
	if err != nil {
		return err
	}
	if sp.TraceID == "" {
		return s.ErrorAt(start, "the span has no context.trace_id")
	}
	if sp.SpanID == "" {
		return s.ErrorAt(start, "the span has no context.span_id")
	}
	return nil
}

// sdkContext reads a span's context: its ids, and a trace state kept in
// Extra when there is one.
func sdkContext(s *jsonscan.Scanner, key string, sp *Span) error {
	return object(s, key, func(k string) error {
		switch k {
		case "trace_id":
			v, err := intID(s, k, 128)
			sp.TraceID = v
			return err
		case "span_id":
			v, err := intID(s, k, 64)
			sp.SpanID = v
			return err
		case "trace_state":
			if s.Peek() == jsonscan.String {
				v, err := s.String(k)
				if v != "" && v != "[]" {
					sp.Extra = append(sp.Extra, trace.Field{Key: "trace_state", Value: trace.AppendString(nil, v)})
				}
				return err
			}
		}
		return s.Skip()
	})
}

// sdkStatus reads {status_code, description}.
func sdkStatus(s *jsonscan.Scanner, key string, sp *Span) error {
	return object(s, key, func(k string) error {
		var err error
		switch k {
		case "status_code":
			sp.Status, err = statusCode(s, k)
		case "description":
			sp.StatusMessage, err = optString(s, k)
		default:
			err = s.Skip()
		}
		return err
	})
}

// sdkEvent reads one span event {name, timestamp, attributes}.
func sdkEvent(s *jsonscan.Scanner) (Event, error) {
	var e Event
	err := object(s, "event", func(k string) error {
		var err error
		switch k {
		case "name":
			e.Name, err = optString(s, k)
		case "timestamp":
			e.Time, err = sdkTime(s, k)
		case "attributes":
			e.Attributes, err = plainAttrs(s, k)
		default:
			err = s.Skip()
		}
		return err
	})
	return e, err
}

// sdkLink reads one span link {context: {trace_id, span_id}, attributes}.
func sdkLink(s *jsonscan.Scanner) (Link, error) {
	var l Link
	err := object(s, "link", func(k string) error {
		switch k {
		case "context":
			return object(s, k, func(kk string) error {
				var err error
				switch kk {
				case "trace_id":
					l.TraceID, err = intID(s, kk, 128)
				case "span_id":
					l.SpanID, err = intID(s, kk, 64)
				default:
					err = s.Skip()
				}
				return err
			})
		case "attributes":
			var err error
			l.Attributes, err = plainAttrs(s, k)
			return err
		}
		return s.Skip()
	})
	return l, err
}

// sdkScope reads the instrumentation scope's name and version.
func sdkScope(s *jsonscan.Scanner, key string, sc *Scope) error {
	return object(s, key, func(k string) error {
		var err error
		switch k {
		case "name":
			sc.Name, err = optString(s, k)
		case "version":
			sc.Version, err = optString(s, k)
		default:
			err = s.Skip()
		}
		return err
	})
}

// intID reads an id given as an integer (any-agent writes the 128-bit trace
// id and 64-bit span id as JSON numbers, beyond what float64 holds exactly)
// or as a hex string with or without "0x"; it returns bits/4 lowercase hex
// digits. null is no id.
func intID(s *jsonscan.Scanner, key string, bits int) (string, error) {
	off := s.Offset()
	digits := bits / 4
	switch s.Peek() {
	case jsonscan.Null:
		return "", s.Null()
	case jsonscan.Number:
		text, err := s.NumberText(key)
		if err != nil {
			return "", err
		}
		n, ok := new(big.Int).SetString(text, 10)
		if !ok || n.Sign() < 0 || n.BitLen() > bits {
			return "", s.ErrorAt(off, "%s must be an unsigned %d-bit integer, not %s", key, bits, text)
		}
		if n.Sign() == 0 {
			return "", s.ErrorAt(off, "%s must not be 0", key)
		}
		return fmt.Sprintf("%0*x", digits, n), nil
	case jsonscan.String:
		v, err := s.String(key)
		if err != nil {
			return "", err
		}
		h := strings.TrimPrefix(strings.TrimPrefix(v, "0x"), "0X")
		if !isHex(h, digits) || allZero(h) {
			return "", s.ErrorAt(off, "%s must be %d hex digits (with or without 0x) and not all zeros, not %q", key, digits, v)
		}
		return strings.ToLower(h), nil
	}
	return "", s.Errorf("%s must be an integer or a hex string, not %s", key, jsonscan.Article(s.Peek()))
}

// sdkTime reads a time: nanoseconds since the epoch (an integer), or ISO
// 8601 text as the Python SDK writes it.
func sdkTime(s *jsonscan.Scanner, key string) (time.Time, error) {
	if s.Peek() == jsonscan.String {
		off := s.Offset()
		v, err := s.String(key)
		if err != nil {
			return time.Time{}, err
		}
		t, ok := parseISO(v)
		if !ok {
			return time.Time{}, s.ErrorAt(off, "%s must be an ISO 8601 time or nanoseconds, not %q", key, v)
		}
		return t, nil
	}
	return unixNano(s, key)
}

// parseISO reads RFC 3339 text; a space may stand for the 'T', and a time
// without a zone is UTC. The year must be 0000-9999 in UTC.
func parseISO(v string) (time.Time, bool) {
	v = strings.Replace(v, " ", "T", 1)
	t, err := time.Parse(time.RFC3339Nano, v)
	if err != nil {
		t, err = time.Parse("2006-01-02T15:04:05.999999999", v)
		if err != nil {
			return time.Time{}, false
		}
	}
	t = t.UTC()
	if y := t.Year(); y < 0 || y > 9999 {
		return time.Time{}, false
	}
	return t, true
}

// plainAttrs reads attributes given as a plain JSON object.
func plainAttrs(s *jsonscan.Scanner, what string) ([]Attr, error) {
	var out []Attr
	err := object(s, what, func(k string) error {
		raw, err := s.Raw()
		if err == nil {
			out = append(out, Attr{Key: k, Value: trace.Compact(raw)})
		}
		return err
	})
	return out, err
}
