package otlp

import (
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"math"
	"strconv"
	"time"

	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"

	"github.com/lookout-dev/lookout/internal/trace"
)

// FromResourceSpans converts OTLP protobuf spans (the ResourceSpans of an
// ExportTraceServiceRequest or a TracesData) to neutral spans, ready for
// Map. A span whose ids are not 16 bytes (trace) and 8 bytes (span, and the
// parent when set), or are all zeros, is left out and reported in the
// returned *Error (Problem.Span is then the span's position among all spans
// of the request, counted from 0); the other spans are returned.
func FromResourceSpans(rss []*tracepb.ResourceSpans) ([]Span, error) {
	var out []Span
	var probs []*Problem
	pos := -1
	for _, rs := range rss {
		var res []Attr
		if r := rs.GetResource(); r != nil {
			res = protoAttrs(r.GetAttributes())
		}
		for _, ss := range rs.GetScopeSpans() {
			var sc Scope
			if s := ss.GetScope(); s != nil {
				sc = Scope{Name: s.GetName(), Version: s.GetVersion(), Attributes: protoAttrs(s.GetAttributes())}
			}
			for _, ps := range ss.GetSpans() {
				pos++
				sp, err := fromProtoSpan(ps)
				if err != nil {
					probs = append(probs, &Problem{Span: pos, TraceID: hex.EncodeToString(ps.GetTraceId()), Msg: err.Error()})
					continue
				}
				sp.Resource, sp.Scope = res, sc
				sp.encoded = true
				out = append(out, sp)
			}
		}
	}
	if probs != nil {
		return out, &Error{Problems: probs}
	}
	return out, nil
}

func protoID(b []byte, n int, what string) (string, error) {
	if len(b) != n {
		return "", fmt.Errorf("%s is %d bytes, not %d", what, len(b), n)
	}
	h := hex.EncodeToString(b)
	if allZero(h) {
		return "", fmt.Errorf("%s is all zeros", what)
	}
	return h, nil
}

func fromProtoSpan(ps *tracepb.Span) (Span, error) {
	h := spanHead{traceID: ps.GetTraceId(), spanID: ps.GetSpanId(), parentID: ps.GetParentSpanId(), name: ps.GetName(),
		kind: int32(ps.GetKind()), start: ps.GetStartTimeUnixNano(), end: ps.GetEndTimeUnixNano(), traceState: ps.GetTraceState()}
	if st := ps.GetStatus(); st != nil {
		h.hasStatus, h.statusCode, h.statusMessage = true, int32(st.GetCode()), st.GetMessage()
	}
	events := make([]eventHead, len(ps.GetEvents()))
	for i, e := range ps.GetEvents() {
		events[i] = eventHead{time: e.GetTimeUnixNano(), name: e.GetName(), attrs: protoAttrs(e.GetAttributes())}
	}
	links := make([]linkHead, len(ps.GetLinks()))
	for i, l := range ps.GetLinks() {
		links[i] = linkHead{traceID: l.GetTraceId(), spanID: l.GetSpanId(), attrs: protoAttrs(l.GetAttributes())}
	}
	return h.span(protoAttrs(ps.GetAttributes()), events, links)
}

// spanHead is a span's own fields as the protobuf holds them, whether read
// through tracepb (fromProtoSpan) or from the wire (DecodeTraces).
type spanHead struct {
	traceID, spanID, parentID []byte
	name                      string
	kind                      int32
	start, end                uint64
	hasStatus                 bool
	statusCode                int32
	statusMessage             string
	traceState                string
}

type eventHead struct {
	time  uint64
	name  string
	attrs []Attr
}

type linkHead struct {
	traceID, spanID []byte
	attrs           []Attr
}

// span checks the ids and times and makes the span.
func (h *spanHead) span(attrs []Attr, events []eventHead, links []linkHead) (Span, error) {
	var sp Span
	var err error
	if sp.TraceID, err = protoID(h.traceID, 16, "trace_id"); err != nil {
		return sp, err
	}
	if sp.SpanID, err = protoID(h.spanID, 8, "span_id"); err != nil {
		return sp, err
	}
	if len(h.parentID) > 0 {
		if sp.ParentID, err = protoID(h.parentID, 8, "parent_span_id"); err != nil {
			return sp, err
		}
	}
	sp.Name = h.name
	if k := int(h.kind); k > 0 && k < len(spanKinds) {
		sp.Kind = spanKinds[k]
	}
	if sp.Start, err = protoTime(h.start, "start_time_unix_nano"); err != nil {
		return sp, err
	}
	if sp.End, err = protoTime(h.end, "end_time_unix_nano"); err != nil {
		return sp, err
	}
	if h.hasStatus {
		switch tracepb.Status_StatusCode(h.statusCode) {
		case tracepb.Status_STATUS_CODE_OK:
			sp.Status = "OK"
		case tracepb.Status_STATUS_CODE_ERROR:
			sp.Status = "ERROR"
		}
		sp.StatusMessage = h.statusMessage
	}
	sp.Attributes = attrs
	for _, e := range events {
		t, err := protoTime(e.time, "event time_unix_nano")
		if err != nil {
			return sp, err
		}
		sp.Events = append(sp.Events, Event{Name: e.name, Time: t, Attributes: e.attrs})
	}
	for _, l := range links {
		tid, err := protoID(l.traceID, 16, "link trace_id")
		if err != nil {
			return sp, err
		}
		sid, err := protoID(l.spanID, 8, "link span_id")
		if err != nil {
			return sp, err
		}
		sp.Links = append(sp.Links, Link{TraceID: tid, SpanID: sid, Attributes: l.attrs})
	}
	if h.traceState != "" {
		sp.Extra = append(sp.Extra, trace.Field{Key: "trace_state", Value: trace.AppendString(nil, h.traceState)})
	}
	return sp, nil
}

func protoTime(ns uint64, what string) (time.Time, error) {
	if ns == 0 {
		return time.Time{}, nil
	}
	if ns > math.MaxInt64 {
		return time.Time{}, fmt.Errorf("%s %d does not fit in int64", what, ns)
	}
	return time.Unix(0, int64(ns)).UTC(), nil
}

func protoAttrs(kvs []*commonpb.KeyValue) []Attr {
	if len(kvs) == 0 {
		return nil
	}
	out := make([]Attr, 0, len(kvs))
	for _, kv := range kvs {
		out = append(out, Attr{Key: kv.GetKey(), Value: appendProtoValue(nil, kv.GetValue(), 0)})
	}
	return out
}

// maxValueDepth bounds the nesting of arrays and kvlists, as jsonscan bounds
// JSON nesting.
const maxValueDepth = 1000

// appendProtoValue writes an AnyValue as plain JSON.
func appendProtoValue(b []byte, v *commonpb.AnyValue, depth int) []byte {
	if v == nil || depth > maxValueDepth {
		return append(b, "null"...)
	}
	switch x := v.GetValue().(type) {
	case *commonpb.AnyValue_StringValue:
		return trace.AppendString(b, x.StringValue)
	case *commonpb.AnyValue_BoolValue:
		return strconv.AppendBool(b, x.BoolValue)
	case *commonpb.AnyValue_IntValue:
		return strconv.AppendInt(b, x.IntValue, 10)
	case *commonpb.AnyValue_DoubleValue:
		return appendFloat(b, x.DoubleValue)
	case *commonpb.AnyValue_BytesValue:
		return trace.AppendString(b, base64.StdEncoding.EncodeToString(x.BytesValue))
	case *commonpb.AnyValue_ArrayValue:
		b = append(b, '[')
		for i, e := range x.ArrayValue.GetValues() {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendProtoValue(b, e, depth+1)
		}
		return append(b, ']')
	case *commonpb.AnyValue_KvlistValue:
		attrs := make([]Attr, 0, len(x.KvlistValue.GetValues()))
		for _, kv := range x.KvlistValue.GetValues() {
			attrs = append(attrs, Attr{Key: kv.GetKey(), Value: appendProtoValue(nil, kv.GetValue(), depth+1)})
		}
		if o := objectOf(attrs); o != nil {
			return append(b, o...)
		}
		return append(b, "{}"...)
	}
	return append(b, "null"...)
}
