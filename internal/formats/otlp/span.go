package otlp

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/lookout-dev/lookout/internal/trace"
)

// Span is one OpenTelemetry span in a form neutral to where it came from:
// OTLP protobuf (FromResourceSpans), OTLP JSON (ParseJSON), an SDK span
// dump or a Langfuse export (NewDecoder). Map turns spans into canonical
// traces.
type Span struct {
	TraceID  string // 32 lowercase hex digits
	SpanID   string // 16 lowercase hex digits
	ParentID string // the parent's span id; "" for a root
	Name     string
	// Kind is the OpenTelemetry span kind: "internal", "server", "client",
	// "producer", "consumer", or "" when unspecified.
	Kind          string
	Start, End    time.Time // zero when unknown
	Status        string    // "OK", "ERROR", or "" when unset
	StatusMessage string
	// Attributes in the order given; a value is JSON: strings, numbers,
	// booleans, arrays and objects (an OTLP kvlist), null for an empty value,
	// and bytes as a base64 string.
	Attributes []Attr
	Events     []Event
	Links      []Link
	Resource   []Attr // resource attributes
	Scope      Scope  // instrumentation scope
	// Input and Output are payloads a source took out of the attributes
	// before us (a Langfuse observation's input and output); nil when none.
	Input, Output json.RawMessage
	// Type is the source's own class of the span when it has one (a
	// Langfuse observation type: GENERATION, TOOL, AGENT, CHAIN, SPAN...).
	Type string
	// Extra holds other members of the source, kept on the canonical span.
	Extra trace.Fields

	// encoded: every value was written by appendProtoValue (FromResourceSpans),
	// so each is JSON that keeps the rule at the door (valid UTF-8 strings,
	// unique members, bounded nesting, finite numbers) and mapping need not
	// scan it again to know.
	encoded bool
}

// Attr is one attribute: a key and its value as compact JSON.
type Attr struct {
	Key   string
	Value json.RawMessage
}

// Scope is the instrumentation scope of a span.
type Scope struct {
	Name, Version string
	Attributes    []Attr
}

// Event is a span event.
type Event struct {
	Name       string
	Time       time.Time
	Attributes []Attr
}

// Link is a span link.
type Link struct {
	TraceID, SpanID string
	Attributes      []Attr
}

// Problem is one span or trace that could not be mapped.
type Problem struct {
	Span    int    // index of the span in the input slice; -1 for a whole trace
	TraceID string // the trace concerned, when known
	SpanID  string // the span concerned, when known
	Msg     string
}

func (p *Problem) Error() string {
	var b strings.Builder
	if p.TraceID != "" {
		fmt.Fprintf(&b, "trace %s: ", p.TraceID)
	}
	if p.SpanID != "" {
		fmt.Fprintf(&b, "span %s: ", p.SpanID)
	} else if p.Span >= 0 {
		fmt.Fprintf(&b, "span #%d: ", p.Span)
	}
	b.WriteString(p.Msg)
	return b.String()
}

// Error lists what could not be mapped. What could was mapped all the same.
type Error struct {
	Problems []*Problem
}

func (e *Error) Error() string {
	if len(e.Problems) == 1 {
		return e.Problems[0].Error()
	}
	return fmt.Sprintf("%s (and %d more problems)", e.Problems[0].Error(), len(e.Problems)-1)
}

// Unwrap gives the problems, for errors.As.
func (e *Error) Unwrap() []error {
	out := make([]error, len(e.Problems))
	for i, p := range e.Problems {
		out[i] = p
	}
	return out
}

// spanReserved are the members of a canonical span; Extra keys that
// collide with them are written "otel_<key>".
var spanReserved = []string{"id", "parent_id", "name", "kind", "start_time", "end_time", "status", "status_message",
	"attributes", "inputs", "outputs", "value", "execution"}

func reservedKey(key string) string {
	for _, r := range spanReserved {
		if key == r {
			return "otel_" + key
		}
	}
	return key
}

// isHex reports whether s is n lowercase or uppercase hex digits.
func isHex(s string, n int) bool {
	if len(s) != n {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F') {
			return false
		}
	}
	return true
}

func allZero(s string) bool { return strings.Trim(s, "0") == "" }

// CheckIDs checks a trace id (32 hex digits) and a span id (16 hex
// digits), neither all zeros, as OTLP requires. Receivers call it on what
// they decode; the mapping itself accepts any id without '.'.
func CheckIDs(traceID, spanID string) error {
	if !isHex(traceID, 32) {
		return fmt.Errorf("trace id %q is not 32 hex digits", traceID)
	}
	if allZero(traceID) {
		return fmt.Errorf("trace id is all zeros")
	}
	if !isHex(spanID, 16) {
		return fmt.Errorf("span id %q is not 16 hex digits", spanID)
	}
	if allZero(spanID) {
		return fmt.Errorf("span id is all zeros")
	}
	return nil
}
