package otlp

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"strconv"
	"testing"

	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	resourcepb "go.opentelemetry.io/proto/otlp/resource/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"github.com/lookout-dev/lookout/bench/otelgen"
	"github.com/lookout-dev/lookout/internal/trace"
)

// referenceDecode is what DecodeTraces must give: proto.Unmarshal, then
// FromResourceSpans.
func referenceDecode(body []byte) ([]Span, error) {
	var req tracepb.TracesData
	if err := proto.Unmarshal(body, &req); err != nil {
		return nil, &UnmarshalError{err}
	}
	return FromResourceSpans(req.GetResourceSpans())
}

// sameDecode fails t unless DecodeTraces gives body's reference result.
func sameDecode(t *testing.T, body []byte) {
	t.Helper()
	got, gerr := DecodeTraces(body)
	want, werr := referenceDecode(body)
	if (gerr == nil) != (werr == nil) || gerr != nil && gerr.Error() != werr.Error() {
		t.Fatalf("%x: error %v, want %v", body, gerr, werr)
	}
	var gu, wu *UnmarshalError
	if errors.As(gerr, &gu) != errors.As(werr, &wu) {
		t.Fatalf("%x: error %T, want %T", body, gerr, werr)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("%x: spans differ:\n got %+v\nwant %+v", body, got, want)
	}
}

func anyStr(s string) *commonpb.AnyValue {
	return &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: s}}
}

// unusualRequests are requests of every shape the wire reader handles or
// leaves to protobuf.
func unusualRequests(t testing.TB) [][]byte {
	id := func(n int, b byte) []byte { return bytes.Repeat([]byte{b}, n) }
	kv := func(k string, v *commonpb.AnyValue) *commonpb.KeyValue { return &commonpb.KeyValue{Key: k, Value: v} }
	values := []*commonpb.AnyValue{
		anyStr(""), anyStr("text é \u2028"), {}, nil,
		{Value: &commonpb.AnyValue_BoolValue{BoolValue: true}}, {Value: &commonpb.AnyValue_BoolValue{}},
		{Value: &commonpb.AnyValue_IntValue{IntValue: -7}}, {Value: &commonpb.AnyValue_DoubleValue{DoubleValue: math.Inf(1)}},
		{Value: &commonpb.AnyValue_DoubleValue{DoubleValue: 0.1}}, {Value: &commonpb.AnyValue_BytesValue{BytesValue: []byte{0, 1, 2}}},
		{Value: &commonpb.AnyValue_ArrayValue{ArrayValue: &commonpb.ArrayValue{}}},
		{Value: &commonpb.AnyValue_ArrayValue{ArrayValue: &commonpb.ArrayValue{Values: []*commonpb.AnyValue{anyStr("a"), {}, {Value: &commonpb.AnyValue_IntValue{IntValue: 1}}}}}},
		{Value: &commonpb.AnyValue_KvlistValue{KvlistValue: &commonpb.KeyValueList{}}},
		{Value: &commonpb.AnyValue_KvlistValue{KvlistValue: &commonpb.KeyValueList{Values: []*commonpb.KeyValue{kv("a", anyStr("1")), kv("a", anyStr("2")), kv("b", nil)}}}},
	}
	var attrs []*commonpb.KeyValue
	for i, v := range values {
		attrs = append(attrs, kv(string(rune('a'+i)), v))
	}
	good := &tracepb.Span{TraceId: id(16, 1), SpanId: id(8, 2), ParentSpanId: id(8, 3), Name: "chat", Kind: tracepb.Span_SPAN_KIND_CLIENT,
		StartTimeUnixNano: 1e18, EndTimeUnixNano: 1e18 + 5, Attributes: attrs, TraceState: "k=v", Flags: 1, DroppedAttributesCount: 2,
		Events: []*tracepb.Span_Event{{TimeUnixNano: 1e18 + 1, Name: "e", Attributes: attrs[:3]}, {Name: "no time"}},
		Links:  []*tracepb.Span_Link{{TraceId: id(16, 4), SpanId: id(8, 5), TraceState: "x", Attributes: attrs[3:5], Flags: 3}},
		Status: &tracepb.Status{Code: tracepb.Status_STATUS_CODE_ERROR, Message: "failed"}}
	bad := []*tracepb.Span{
		{TraceId: id(15, 1), SpanId: id(8, 2)}, {TraceId: id(16, 0), SpanId: id(8, 2)}, {TraceId: id(16, 1), SpanId: id(8, 2), ParentSpanId: id(3, 1)},
		{TraceId: id(16, 1), SpanId: id(8, 2), StartTimeUnixNano: math.MaxUint64},
		{TraceId: id(16, 1), SpanId: id(8, 2), Events: []*tracepb.Span_Event{{TimeUnixNano: math.MaxUint64}}},
		{TraceId: id(16, 1), SpanId: id(8, 2), Links: []*tracepb.Span_Link{{TraceId: id(16, 1), SpanId: id(7, 1)}}},
		{TraceId: id(16, 1), SpanId: id(8, 9), Kind: 99, Status: &tracepb.Status{Code: 7}},
		{TraceId: id(16, 1), SpanId: id(8, 9), Kind: -1, Status: &tracepb.Status{}},
	}
	req := &tracepb.TracesData{ResourceSpans: []*tracepb.ResourceSpans{
		{Resource: &resourcepb.Resource{Attributes: attrs[:4], DroppedAttributesCount: 1}, SchemaUrl: "s",
			ScopeSpans: []*tracepb.ScopeSpans{{Scope: &commonpb.InstrumentationScope{Name: "n", Version: "v", Attributes: attrs[4:6]}, Spans: append([]*tracepb.Span{good}, bad...)}, {}}},
		{ScopeSpans: []*tracepb.ScopeSpans{{Spans: []*tracepb.Span{good}}}},
		{},
	}}
	body, err := proto.Marshal(req)
	if err != nil {
		t.Fatal(err)
	}
	out := [][]byte{body, nil, {}}
	// Shapes left to protobuf: a field given twice, an unknown field, a
	// string that is not UTF-8, a truncated message, a wrong wire type.
	twice := protowire.AppendTag(nil, 1, protowire.BytesType)
	span := protowire.AppendBytes(protowire.AppendTag(nil, 2, protowire.BytesType), protowire.AppendBytes(protowire.AppendTag(nil, 1, protowire.BytesType), id(16, 1)))
	rs := protowire.AppendBytes(protowire.AppendTag(nil, 2, protowire.BytesType), span)
	out = append(out,
		append(append([]byte(nil), body...), body...), // resource_spans repeated: fine
		protowire.AppendBytes(twice, rs),
		protowire.AppendBytes(protowire.AppendTag(nil, 9, protowire.BytesType), []byte("unknown")),
		append(body, protowire.AppendVarint(protowire.AppendTag(nil, 1, protowire.VarintType), 5)...),
		body[:len(body)-3],
	)
	dup := &tracepb.Span{TraceId: id(16, 1), SpanId: id(8, 2), Name: "first"}
	b1, _ := proto.Marshal(dup)
	b2 := protowire.AppendString(protowire.AppendTag(nil, 5, protowire.BytesType), "second")
	bad8 := protowire.AppendBytes(protowire.AppendTag(nil, 5, protowire.BytesType), []byte{0xff})
	for _, sp := range [][]byte{append(b1, b2...), append(b1, bad8...)} {
		ss := protowire.AppendBytes(protowire.AppendTag(nil, 2, protowire.BytesType), sp)
		r := protowire.AppendBytes(protowire.AppendTag(nil, 2, protowire.BytesType), ss)
		out = append(out, protowire.AppendBytes(protowire.AppendTag(nil, 1, protowire.BytesType), r))
	}
	return out
}

// TestDecodeTraces: the wire reader gives what proto.Unmarshal and
// FromResourceSpans give, and reads bench/peers' load itself.
func TestDecodeTraces(t *testing.T) {
	for _, body := range unusualRequests(t) {
		sameDecode(t, body)
	}
	g := otelgen.NewGenerator(3, "svc", "tok")
	for range 20 {
		body := g.Next().Body
		sameDecode(t, body)
		if _, _, ok := decodeWire(body); !ok {
			t.Fatal("the wire reader left the generator's request to protobuf")
		}
	}
	if _, _, ok := decodeWire(unusualRequests(t)[0]); !ok {
		t.Fatal("the wire reader left the request of every field to protobuf")
	}
}

func FuzzDecodeTraces(f *testing.F) {
	for _, body := range unusualRequests(f) {
		f.Add(body)
	}
	g := otelgen.NewGenerator(4, "svc", "tok")
	f.Add(append([]byte(nil), g.Next().Body[:4000]...))
	f.Fuzz(func(t *testing.T, body []byte) {
		sameDecode(t, body)
	})
}

// BenchmarkDecodeTraces reads bench/peers' requests (512 spans) on the
// wire and, for comparison, through tracepb.
func BenchmarkDecodeTraces(b *testing.B) {
	g := otelgen.NewGenerator(5, "svc", "tok")
	var bodies [][]byte
	spans := 0
	for range 8 {
		bt := g.Next()
		bodies = append(bodies, append([]byte(nil), bt.Body...))
		spans += bt.Spans
	}
	for _, c := range []struct {
		name   string
		decode func([]byte) ([]Span, error)
	}{{"wire", DecodeTraces}, {"tracepb", referenceDecode}} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			n := 0
			for b.Loop() {
				for _, body := range bodies {
					if _, err := c.decode(body); err != nil {
						b.Fatal(err)
					}
				}
				n += spans
			}
			b.ReportMetric(b.Elapsed().Seconds()*1e9/float64(n), "ns/span")
		})
	}
}

// BenchmarkMapGenAI maps bench/peers' spans as a receiver does: each
// request's spans of one trace together (MapSpans).
func BenchmarkMapGenAI(b *testing.B) {
	g := otelgen.NewGenerator(6, "svc", "tok")
	var groups [][]Span
	spans := 0
	for range 8 {
		s, err := DecodeTraces(g.Next().Body)
		if err != nil {
			b.Fatal(err)
		}
		byTrace := map[string]int{}
		for _, sp := range s {
			i, ok := byTrace[sp.TraceID]
			if !ok {
				i = len(groups)
				byTrace[sp.TraceID] = i
				groups = append(groups, nil)
			}
			groups[i] = append(groups[i], sp)
		}
		spans += len(s)
	}
	b.ReportAllocs()
	n := 0
	for b.Loop() {
		for _, g := range groups {
			if _, err := MapSpans(g); err != nil {
				b.Fatal(err)
			}
		}
		n += spans
	}
	b.ReportMetric(b.Elapsed().Seconds()*1e9/float64(n), "ns/span")
}

// TestObjectOf: a key given twice keeps its first position and its last
// value, in short lists (looked at pair by pair) and long ones (a map).
func TestObjectOf(t *testing.T) {
	reference := func(attrs []Attr) string {
		if len(attrs) == 0 {
			return ""
		}
		lastValue := map[string]string{}
		var order []string
		for _, a := range attrs {
			if _, ok := lastValue[a.Key]; !ok {
				order = append(order, a.Key)
			}
			v := string(a.Value)
			if v == "" {
				v = "null"
			}
			lastValue[a.Key] = v
		}
		var b []byte
		for i, k := range order {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(trace.AppendString(b, k), ':')
			b = append(b, lastValue[k]...)
		}
		return "{" + string(b) + "}"
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for n := range 60 {
		for range 20 {
			attrs := make([]Attr, n)
			for i := range attrs {
				attrs[i] = Attr{Key: fmt.Sprintf("k%d\"", rng.IntN(n/2+1)), Value: []byte(strconv.Itoa(rng.IntN(100)))}
				if rng.IntN(10) == 0 {
					attrs[i].Value = nil
				}
			}
			if got, want := string(objectOf(attrs)), reference(attrs); got != want {
				t.Fatalf("%d attributes: %s, want %s", n, got, want)
			}
		}
	}
}

// TestUniqueFields: the last value of a key at its first place, in short
// lists (pair by pair) and long ones (a map).
func TestUniqueFields(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for n := range 40 {
		for range 20 {
			f := make(trace.Fields, n)
			for i := range f {
				f[i] = trace.Field{Key: strconv.Itoa(rng.IntN(n/2 + 1)), Value: []byte(strconv.Itoa(i))}
			}
			last, first := map[string]string{}, map[string]int{}
			var order []string
			for i, x := range f {
				if _, ok := first[x.Key]; !ok {
					first[x.Key] = i
					order = append(order, x.Key)
				}
				last[x.Key] = string(x.Value)
			}
			got := uniqueFields(append(trace.Fields(nil), f...))
			if len(got) != len(order) {
				t.Fatalf("%d fields: %d kept, want %d", n, len(got), len(order))
			}
			for i, k := range order {
				if got[i].Key != k || string(got[i].Value) != last[k] {
					t.Fatalf("%d fields: #%d is %s=%s, want %s=%s", n, i, got[i].Key, got[i].Value, k, last[k])
				}
			}
		}
	}
}
