package otlp

import (
	"encoding/base64"
	"encoding/hex"
	"errors"
	"math"
	"strconv"
	"unicode/utf8"
	"unsafe"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"

	"github.com/lookout-dev/lookout/internal/trace"
)

// DecodeTraces reads an OTLP ExportTraceServiceRequest (or TracesData) in
// protobuf and converts its spans as FromResourceSpans does, with the same
// spans, problems and errors. It reads the wire format itself, into the
// spans directly: unmarshalling into tracepb's messages first allocated
// every key, value and wrapper of every attribute, and with the conversion
// was 7% of OTLP ingest's CPU. A request it does not read the common way
// (a field given twice where protobuf would merge or override it, a field
// it does not know, a string that is not UTF-8, a malformed message,
// nesting past maxValueDepth) goes through proto.Unmarshal and
// FromResourceSpans instead, which say what protobuf says. The error of
// proto.Unmarshal is returned wrapped in *UnmarshalError.
func DecodeTraces(body []byte) ([]Span, error) {
	if spans, err, ok := decodeWire(body); ok {
		return spans, err
	}
	var req tracepb.TracesData // the wire form of ExportTraceServiceRequest
	if err := proto.Unmarshal(body, &req); err != nil {
		return nil, &UnmarshalError{err}
	}
	return FromResourceSpans(req.GetResourceSpans())
}

// UnmarshalError is a request that is not protobuf of the right shape.
type UnmarshalError struct{ Err error }

func (e *UnmarshalError) Error() string { return e.Err.Error() }
func (e *UnmarshalError) Unwrap() error { return e.Err }

// errUnusual stops the wire reader: proto.Unmarshal reads the request.
var errUnusual = errors.New("not read on the wire")

// decodeWire is DecodeTraces' own reader; ok is false when it left the
// request to proto.Unmarshal.
func decodeWire(body []byte) (spans []Span, err error, ok bool) {
	d := wireDecoder{values: make([]byte, 0, len(body)), keys: map[string]string{}}
	if err := d.fields(body, func(num protowire.Number, typ protowire.Type, v []byte) error {
		if num != 1 || typ != protowire.BytesType {
			return errUnusual
		}
		return d.resourceSpans(v)
	}); err != nil {
		return nil, nil, false
	}
	if d.probs != nil {
		return d.out, &Error{Problems: d.probs}, true
	}
	return d.out, nil, true
}

type wireDecoder struct {
	out   []Span
	probs []*Problem
	pos   int // the last span's position among all spans of the request
	// values holds the attributes' values, one after the other: an
	// allocation a request rather than one a value.
	values []byte
	// keys: the attribute keys met (spans repeat theirs), each allocated
	// once.
	keys map[string]string
}

// maxKeys bounds the keys a request's decoder keeps.
const maxKeys = 4096

// fields calls fn with each field of the message b. The fields that can
// be given once are the caller's to check (once).
func (d *wireDecoder) fields(b []byte, fn func(num protowire.Number, typ protowire.Type, v []byte) error) error {
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return errUnusual
		}
		b = b[n:]
		var v []byte
		switch typ {
		case protowire.BytesType:
			v, n = protowire.ConsumeBytes(b)
		case protowire.VarintType:
			_, n = protowire.ConsumeVarint(b)
			v = b[:max(n, 0)]
		case protowire.Fixed64Type:
			_, n = protowire.ConsumeFixed64(b)
			v = b[:max(n, 0)]
		case protowire.Fixed32Type:
			_, n = protowire.ConsumeFixed32(b)
			v = b[:max(n, 0)]
		default:
			return errUnusual
		}
		if n < 0 {
			return errUnusual
		}
		b = b[n:]
		if err := fn(num, typ, v); err != nil {
			return err
		}
	}
	return nil
}

// once marks field num of a message seen, failing when it was (or is
// past the fields of OTLP's messages).
func once(seen *uint32, num protowire.Number) error {
	if num >= 32 || *seen&(1<<num) != 0 {
		return errUnusual
	}
	*seen |= 1 << num
	return nil
}

// wireString is a string field's value, which protobuf requires to be UTF-8.
func wireString(v []byte) (string, error) {
	if !utf8.Valid(v) {
		return "", errUnusual
	}
	return string(v), nil
}

func varint(v []byte) uint64 {
	x, _ := protowire.ConsumeVarint(v)
	return x
}

func fixed64(v []byte) uint64 {
	x, _ := protowire.ConsumeFixed64(v)
	return x
}

func (d *wireDecoder) resourceSpans(b []byte) error {
	var res []Attr
	scopes, err := d.listOf(b, func(v []byte) error {
		var err error
		res, err = d.resource(v)
		return err
	})
	if err != nil {
		return err
	}
	for _, v := range scopes {
		if err := d.scopeSpans(v, res); err != nil {
			return err
		}
	}
	return nil
}

// listOf reads the shape ResourceSpans and ScopeSpans share: a message
// that applies to the list (field 1, given to head), the list's messages
// (field 2, returned to be read once the head is, which may come after
// them) and a schema_url (field 3).
func (d *wireDecoder) listOf(b []byte, head func(v []byte) error) ([][]byte, error) {
	var seen uint32
	var items [][]byte
	err := d.fields(b, func(num protowire.Number, typ protowire.Type, v []byte) error {
		if typ != protowire.BytesType {
			return errUnusual
		}
		if num != 2 {
			if err := once(&seen, num); err != nil {
				return err
			}
		}
		switch num {
		case 1:
			return head(v)
		case 2:
			items = append(items, v)
			return nil
		case 3:
			_, err := wireString(v)
			return err
		}
		return errUnusual
	})
	return items, err
}

func (d *wireDecoder) resource(b []byte) ([]Attr, error) {
	var attrs []Attr
	var seen uint32
	err := d.fields(b, func(num protowire.Number, typ protowire.Type, v []byte) error {
		switch {
		case num == 1 && typ == protowire.BytesType:
			return d.appendAttr(&attrs, v)
		case num == 2 && typ == protowire.VarintType: // dropped_attributes_count
			return once(&seen, num)
		}
		return errUnusual
	})
	return attrs, err
}

func (d *wireDecoder) scopeSpans(b []byte, res []Attr) error {
	var sc Scope
	spans, err := d.listOf(b, func(v []byte) error { return d.scope(v, &sc) })
	if err != nil {
		return err
	}
	for _, v := range spans {
		d.pos++
		sp, traceID, err := d.span(v)
		if errors.Is(err, errUnusual) {
			return err
		}
		if err != nil {
			d.probs = append(d.probs, &Problem{Span: d.pos - 1, TraceID: hex.EncodeToString(traceID), Msg: err.Error()})
			continue
		}
		sp.Resource, sp.Scope = res, sc
		sp.encoded = true
		d.out = append(d.out, sp)
	}
	return nil
}

func (d *wireDecoder) scope(b []byte, sc *Scope) error {
	var seen uint32
	return d.fields(b, func(num protowire.Number, typ protowire.Type, v []byte) error {
		var err error
		switch {
		case num == 1 && typ == protowire.BytesType:
			if err = once(&seen, num); err == nil {
				sc.Name, err = wireString(v)
			}
		case num == 2 && typ == protowire.BytesType:
			if err = once(&seen, num); err == nil {
				sc.Version, err = wireString(v)
			}
		case num == 3 && typ == protowire.BytesType:
			err = d.appendAttr(&sc.Attributes, v)
		case num == 4 && typ == protowire.VarintType: // dropped_attributes_count
			err = once(&seen, num)
		default:
			err = errUnusual
		}
		return err
	})
}

// span reads a Span, and its trace id as given. An error other than
// errUnusual is the span's problem: the span is left out, as
// FromResourceSpans leaves it.
func (d *wireDecoder) span(b []byte) (Span, []byte, error) {
	var h spanHead
	var attrs []Attr
	var events []eventHead
	var links []linkHead
	var seen uint32
	err := d.fields(b, func(num protowire.Number, typ protowire.Type, v []byte) error {
		if num < 1 || num > 16 {
			return errUnusual
		}
		if num != 9 && num != 11 && num != 13 {
			if err := once(&seen, num); err != nil {
				return err
			}
		}
		var err error
		switch {
		case num == 1 && typ == protowire.BytesType:
			h.traceID = v
		case num == 2 && typ == protowire.BytesType:
			h.spanID = v
		case num == 3 && typ == protowire.BytesType:
			h.traceState, err = wireString(v)
		case num == 4 && typ == protowire.BytesType:
			h.parentID = v
		case num == 5 && typ == protowire.BytesType:
			h.name, err = wireString(v)
		case num == 6 && typ == protowire.VarintType:
			h.kind = int32(varint(v))
		case num == 7 && typ == protowire.Fixed64Type:
			h.start = fixed64(v)
		case num == 8 && typ == protowire.Fixed64Type:
			h.end = fixed64(v)
		case num == 9 && typ == protowire.BytesType:
			err = d.appendAttr(&attrs, v)
		case (num == 10 || num == 12 || num == 14) && typ == protowire.VarintType: // dropped counts
		case num == 11 && typ == protowire.BytesType:
			var e eventHead
			if e, err = d.event(v); err == nil {
				events = append(events, e)
			}
		case num == 13 && typ == protowire.BytesType:
			var l linkHead
			if l, err = d.link(v); err == nil {
				links = append(links, l)
			}
		case num == 15 && typ == protowire.BytesType:
			h.hasStatus = true
			err = d.status(v, &h)
		case num == 16 && typ == protowire.Fixed32Type: // flags
		default:
			err = errUnusual
		}
		return err
	})
	if err != nil {
		return Span{}, nil, err
	}
	sp, err := h.span(attrs, events, links)
	return sp, h.traceID, err
}

func (d *wireDecoder) status(b []byte, h *spanHead) error {
	var seen uint32
	return d.fields(b, func(num protowire.Number, typ protowire.Type, v []byte) error {
		if err := once(&seen, num); err != nil {
			return err
		}
		var err error
		switch {
		case num == 2 && typ == protowire.BytesType:
			h.statusMessage, err = wireString(v)
		case num == 3 && typ == protowire.VarintType:
			h.statusCode = int32(varint(v))
		default:
			err = errUnusual
		}
		return err
	})
}

func (d *wireDecoder) event(b []byte) (eventHead, error) {
	var e eventHead
	var seen uint32
	err := d.fields(b, func(num protowire.Number, typ protowire.Type, v []byte) error {
		var err error
		switch {
		case num == 1 && typ == protowire.Fixed64Type:
			if err = once(&seen, num); err == nil {
				e.time = fixed64(v)
			}
		case num == 2 && typ == protowire.BytesType:
			if err = once(&seen, num); err == nil {
				e.name, err = wireString(v)
			}
		case num == 3 && typ == protowire.BytesType:
			err = d.appendAttr(&e.attrs, v)
		case num == 4 && typ == protowire.VarintType: // dropped_attributes_count
			err = once(&seen, num)
		default:
			err = errUnusual
		}
		return err
	})
	return e, err
}

func (d *wireDecoder) link(b []byte) (linkHead, error) {
	var l linkHead
	var seen uint32
	err := d.fields(b, func(num protowire.Number, typ protowire.Type, v []byte) error {
		if num != 4 {
			if err := once(&seen, num); err != nil {
				return err
			}
		}
		var err error
		switch {
		case num == 1 && typ == protowire.BytesType:
			l.traceID = v
		case num == 2 && typ == protowire.BytesType:
			l.spanID = v
		case num == 3 && typ == protowire.BytesType: // trace_state
			_, err = wireString(v)
		case num == 4 && typ == protowire.BytesType:
			err = d.appendAttr(&l.attrs, v)
		case num == 5 && typ == protowire.VarintType: // dropped_attributes_count
		case num == 6 && typ == protowire.Fixed32Type: // flags
		default:
			err = errUnusual
		}
		return err
	})
	return l, err
}

// appendAttr reads a KeyValue into attrs, its value written as JSON as
// appendProtoValue writes it (into d.values).
func (d *wireDecoder) appendAttr(attrs *[]Attr, b []byte) error {
	key, value, err := d.keyValue(b)
	if err != nil {
		return err
	}
	start := len(d.values)
	if d.values, err = d.appendValue(d.values, value, 0); err != nil {
		return err
	}
	*attrs = append(*attrs, Attr{Key: key, Value: d.values[start:len(d.values):len(d.values)]})
	return nil
}

// keyValue reads a KeyValue: its key and its AnyValue's bytes (nil when
// it has none).
func (d *wireDecoder) keyValue(b []byte) (key string, value []byte, err error) {
	var seen uint32
	err = d.fields(b, func(num protowire.Number, typ protowire.Type, v []byte) error {
		if err := once(&seen, num); err != nil {
			return err
		}
		switch {
		case num == 1 && typ == protowire.BytesType:
			if !utf8.Valid(v) {
				return errUnusual
			}
			key = d.key(v)
		case num == 2 && typ == protowire.BytesType:
			value = v
		default:
			return errUnusual
		}
		return nil
	})
	return key, value, err
}

// key is the string of an attribute key, kept once.
func (d *wireDecoder) key(v []byte) string {
	if k, ok := d.keys[string(v)]; ok {
		return k
	}
	k := string(v)
	if len(d.keys) < maxKeys {
		d.keys[k] = k
	}
	return k
}

// appendValue appends an AnyValue as JSON (appendProtoValue's JSON).
// b is nil for a KeyValue without a value.
func (d *wireDecoder) appendValue(out, b []byte, depth int) ([]byte, error) {
	if depth > maxValueDepth {
		return nil, errUnusual // protobuf still reads what appendProtoValue leaves out
	}
	if len(b) == 0 {
		return append(out, "null"...), nil
	}
	num, typ, n := protowire.ConsumeTag(b)
	if n < 0 {
		return nil, errUnusual
	}
	v := b[n:]
	// One field (a oneof member given twice, or two members, is left to
	// protobuf's rules).
	switch typ {
	case protowire.BytesType:
		var m int
		v, m = protowire.ConsumeBytes(v)
		if m < 0 || n+m != len(b) {
			return nil, errUnusual
		}
	case protowire.VarintType:
		x, m := protowire.ConsumeVarint(v)
		if m < 0 || n+m != len(b) {
			return nil, errUnusual
		}
		switch num {
		case 2:
			return strconv.AppendBool(out, x != 0), nil
		case 3:
			return strconv.AppendInt(out, int64(x), 10), nil
		}
		return nil, errUnusual
	case protowire.Fixed64Type:
		x, m := protowire.ConsumeFixed64(v)
		if m < 0 || n+m != len(b) || num != 4 {
			return nil, errUnusual
		}
		return appendFloat(out, math.Float64frombits(x)), nil
	default:
		return nil, errUnusual
	}
	switch num {
	case 1:
		if !utf8.Valid(v) {
			return nil, errUnusual
		}
		return trace.AppendString(out, unsafe.String(unsafe.SliceData(v), len(v))), nil
	case 5: // array_value
		out = append(out, '[')
		first := true
		err := d.fields(v, func(num protowire.Number, typ protowire.Type, e []byte) error {
			if num != 1 || typ != protowire.BytesType {
				return errUnusual
			}
			if !first {
				out = append(out, ',')
			}
			first = false
			var err error
			out, err = d.appendValue(out, e, depth+1)
			return err
		})
		if err != nil {
			return nil, err
		}
		return append(out, ']'), nil
	case 6: // kvlist_value
		var attrs []Attr
		err := d.fields(v, func(num protowire.Number, typ protowire.Type, kv []byte) error {
			if num != 1 || typ != protowire.BytesType {
				return errUnusual
			}
			key, value, err := d.keyValue(kv)
			if err != nil {
				return err
			}
			val, err := d.appendValue(nil, value, depth+1)
			attrs = append(attrs, Attr{Key: key, Value: val})
			return err
		})
		if err != nil {
			return nil, err
		}
		if o := objectOf(attrs); o != nil {
			return append(out, o...), nil
		}
		return append(out, "{}"...), nil
	case 7: // bytes_value
		return trace.AppendString(out, base64.StdEncoding.EncodeToString(v)), nil
	}
	return nil, errUnusual
}
