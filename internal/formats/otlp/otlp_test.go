package otlp

import (
	"bytes"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	resourcepb "go.opentelemetry.io/proto/otlp/resource/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"

	"github.com/lookout-dev/lookout/internal/formats/decoding"
	"github.com/lookout-dev/lookout/internal/formats/internal/golden"
	"github.com/lookout-dev/lookout/internal/jsonscan"
	"github.com/lookout-dev/lookout/internal/trace"
)

const (
	tid  = "5b8efff798038103d269b633813fc60c"
	root = "eee19b7ec3c1b174"
	chat = "eee19b7ec3c1b175"
	tool = "eee19b7ec3c1b176"
)

// otlpJSON is one agent run as an OTLP/JSON request, as the OTLP/HTTP
// exporter writes it: hex ids, 64-bit integers as strings, enums as
// integers.
const otlpJSON = `{"resourceSpans": [{
  "resource": {"attributes": [{"key": "service.name", "value": {"stringValue": "weather-agent"}}]},
  "scopeSpans": [{
    "scope": {"name": "opentelemetry.instrumentation.openai", "version": "0.1"},
    "spans": [
      {"traceId": "` + tid + `", "spanId": "` + tool + `", "parentSpanId": "` + root + `", "name": "execute_tool get_weather",
       "kind": 1, "startTimeUnixNano": "1700000002000000000", "endTimeUnixNano": "1700000002500000000",
       "attributes": [
         {"key": "gen_ai.operation.name", "value": {"stringValue": "execute_tool"}},
         {"key": "gen_ai.tool.name", "value": {"stringValue": "get_weather"}},
         {"key": "gen_ai.tool.call.id", "value": {"stringValue": "call_1"}},
         {"key": "gen_ai.tool.call.arguments", "value": {"stringValue": "{\"city\": \"Paris\"}"}},
         {"key": "gen_ai.tool.call.result", "value": {"stringValue": "sunny"}}]},
      {"traceId": "` + tid + `", "spanId": "` + chat + `", "parentSpanId": "` + root + `", "name": "chat gpt-4o",
       "kind": 3, "startTimeUnixNano": "1700000001000000000", "endTimeUnixNano": "1700000001500000000",
       "status": {"code": 1},
       "attributes": [
         {"key": "gen_ai.operation.name", "value": {"stringValue": "chat"}},
         {"key": "gen_ai.request.model", "value": {"stringValue": "gpt-4o"}},
         {"key": "gen_ai.usage.input_tokens", "value": {"intValue": "9223372036854775807"}},
         {"key": "gen_ai.request.temperature", "value": {"doubleValue": 0.5}},
         {"key": "gen_ai.request.stream", "value": {"boolValue": false}},
         {"key": "gen_ai.response.finish_reasons", "value": {"arrayValue": {"values": [{"stringValue": "tool_calls"}]}}},
         {"key": "x.kv", "value": {"kvlistValue": {"values": [{"key": "a", "value": {"intValue": 1}}, {"key": "b", "value": {}}]}}},
         {"key": "x.bytes", "value": {"bytesValue": "AAEC"}},
         {"key": "gen_ai.system_instructions", "value": {"stringValue": "[{\"type\": \"text\", \"content\": \"Be brief.\"}]"}},
         {"key": "gen_ai.input.messages", "value": {"stringValue": "[{\"role\": \"user\", \"parts\": [{\"type\": \"text\", \"content\": \"Weather in Paris?\"}]}]"}},
         {"key": "gen_ai.output.messages", "value": {"stringValue": "[{\"role\": \"assistant\", \"parts\": [{\"type\": \"tool_call\", \"id\": \"call_1\", \"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}], \"finish_reason\": \"tool_call\"}]"}}],
       "events": [{"timeUnixNano": "1700000001200000000", "name": "first_token", "attributes": [{"key": "n", "value": {"intValue": "1"}}]}],
       "links": [{"traceId": "0af7651916cd43dd8448eb211c80319c", "spanId": "b7ad6b7169203331"}]},
      {"traceId": "` + tid + `", "spanId": "` + root + `", "name": "invoke_agent weather",
       "startTimeUnixNano": "1700000000000000000", "endTimeUnixNano": "1700000003000000000",
       "traceState": "vendor=1",
       "attributes": [{"key": "gen_ai.operation.name", "value": {"stringValue": "invoke_agent"}}]}
    ]}]}]}`

func pbStr(k, v string) *commonpb.KeyValue {
	return &commonpb.KeyValue{Key: k, Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: v}}}
}

func hexBytes(t testing.TB, s string) []byte {
	b, err := hex.DecodeString(s)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// otlpProto is otlpJSON as protobuf.
func otlpProto(t testing.TB) []*tracepb.ResourceSpans {
	av := func(v *commonpb.AnyValue) *commonpb.AnyValue { return v }
	return []*tracepb.ResourceSpans{{
		Resource: &resourcepb.Resource{Attributes: []*commonpb.KeyValue{pbStr("service.name", "weather-agent")}},
		ScopeSpans: []*tracepb.ScopeSpans{{
			Scope: &commonpb.InstrumentationScope{Name: "opentelemetry.instrumentation.openai", Version: "0.1"},
			Spans: []*tracepb.Span{
				{TraceId: hexBytes(t, tid), SpanId: hexBytes(t, tool), ParentSpanId: hexBytes(t, root), Name: "execute_tool get_weather",
					Kind: tracepb.Span_SPAN_KIND_INTERNAL, StartTimeUnixNano: 1700000002000000000, EndTimeUnixNano: 1700000002500000000,
					Attributes: []*commonpb.KeyValue{pbStr("gen_ai.operation.name", "execute_tool"), pbStr("gen_ai.tool.name", "get_weather"),
						pbStr("gen_ai.tool.call.id", "call_1"), pbStr("gen_ai.tool.call.arguments", `{"city": "Paris"}`), pbStr("gen_ai.tool.call.result", "sunny")}},
				{TraceId: hexBytes(t, tid), SpanId: hexBytes(t, chat), ParentSpanId: hexBytes(t, root), Name: "chat gpt-4o",
					Kind: tracepb.Span_SPAN_KIND_CLIENT, StartTimeUnixNano: 1700000001000000000, EndTimeUnixNano: 1700000001500000000,
					Status: &tracepb.Status{Code: tracepb.Status_STATUS_CODE_OK},
					Attributes: []*commonpb.KeyValue{
						pbStr("gen_ai.operation.name", "chat"), pbStr("gen_ai.request.model", "gpt-4o"),
						{Key: "gen_ai.usage.input_tokens", Value: av(&commonpb.AnyValue{Value: &commonpb.AnyValue_IntValue{IntValue: 9223372036854775807}})},
						{Key: "gen_ai.request.temperature", Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_DoubleValue{DoubleValue: 0.5}}},
						{Key: "gen_ai.request.stream", Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_BoolValue{BoolValue: false}}},
						{Key: "gen_ai.response.finish_reasons", Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_ArrayValue{ArrayValue: &commonpb.ArrayValue{
							Values: []*commonpb.AnyValue{{Value: &commonpb.AnyValue_StringValue{StringValue: "tool_calls"}}}}}}},
						{Key: "x.kv", Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_KvlistValue{KvlistValue: &commonpb.KeyValueList{Values: []*commonpb.KeyValue{
							{Key: "a", Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_IntValue{IntValue: 1}}}, {Key: "b", Value: &commonpb.AnyValue{}}}}}}},
						{Key: "x.bytes", Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_BytesValue{BytesValue: []byte{0, 1, 2}}}},
						pbStr("gen_ai.system_instructions", `[{"type": "text", "content": "Be brief."}]`),
						pbStr("gen_ai.input.messages", `[{"role": "user", "parts": [{"type": "text", "content": "Weather in Paris?"}]}]`),
						pbStr("gen_ai.output.messages", `[{"role": "assistant", "parts": [{"type": "tool_call", "id": "call_1", "name": "get_weather", "arguments": {"city": "Paris"}}], "finish_reason": "tool_call"}]`),
					},
					Events: []*tracepb.Span_Event{{TimeUnixNano: 1700000001200000000, Name: "first_token",
						Attributes: []*commonpb.KeyValue{{Key: "n", Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_IntValue{IntValue: 1}}}}}},
					Links: []*tracepb.Span_Link{{TraceId: hexBytes(t, "0af7651916cd43dd8448eb211c80319c"), SpanId: hexBytes(t, "b7ad6b7169203331")}}},
				{TraceId: hexBytes(t, tid), SpanId: hexBytes(t, root), Name: "invoke_agent weather",
					StartTimeUnixNano: 1700000000000000000, EndTimeUnixNano: 1700000003000000000, TraceState: "vendor=1",
					Attributes: []*commonpb.KeyValue{pbStr("gen_ai.operation.name", "invoke_agent")}},
			},
		}},
	}}
}

func mapOne(t *testing.T, spans []Span) *trace.Trace {
	t.Helper()
	traces, err := Map(spans)
	if err != nil {
		t.Fatal(err)
	}
	if len(traces) != 1 {
		t.Fatalf("%d traces, want 1", len(traces))
	}
	return traces[0]
}

func eventsJSON(tr *trace.Trace) string {
	var b []byte
	for i := range tr.Events {
		b = trace.AppendEvent(b, &tr.Events[i])
		b = append(b, '\n')
	}
	return string(b)
}

// The same spans sent as OTLP/JSON (hex ids), as protobuf, and as
// protobuf after a wire round trip map to byte-identical traces.
func TestJSONAndProtobufAgree(t *testing.T) {
	jspans, err := ParseJSON([]byte(otlpJSON))
	if err != nil {
		t.Fatal(err)
	}
	fromJSON := trace.AppendTrace(nil, mapOne(t, jspans))

	rss := otlpProto(t)
	pspans, err := FromResourceSpans(rss)
	if err != nil {
		t.Fatal(err)
	}
	fromProto := trace.AppendTrace(nil, mapOne(t, pspans))
	if !bytes.Equal(fromJSON, fromProto) {
		t.Fatalf("JSON and protobuf differ:\n json  %s\n proto %s", fromJSON, fromProto)
	}
	wire, err := proto.Marshal(&tracepb.TracesData{ResourceSpans: rss})
	if err != nil {
		t.Fatal(err)
	}
	var back tracepb.TracesData
	if err := proto.Unmarshal(wire, &back); err != nil {
		t.Fatal(err)
	}
	wspans, err := FromResourceSpans(back.ResourceSpans)
	if err != nil {
		t.Fatal(err)
	}
	if got := trace.AppendTrace(nil, mapOne(t, wspans)); !bytes.Equal(got, fromJSON) {
		t.Fatalf("after the wire: %s", got)
	}

	tr := mapOne(t, jspans)
	if tr.ID != tid || tr.Name != "invoke_agent weather" {
		t.Errorf("trace %s %q", tr.ID, tr.Name)
	}
	want := []struct{ id, parent, kind string }{{root, "", "AGENT"}, {chat, root, "LLM"}, {tool, root, "TOOL"}}
	for i, w := range want {
		sp := tr.Spans[i]
		if sp.ID != w.id || sp.ParentID != w.parent || sp.Kind != w.kind {
			t.Errorf("span %d: %s parent %q kind %q, want %+v", i, sp.ID, sp.ParentID, sp.Kind, w)
		}
	}
	c := trace.AppendSpans(nil, tr.Spans[1:2])
	for _, s := range []string{`"gen_ai.usage.input_tokens":9223372036854775807`, `"gen_ai.request.temperature":0.5`,
		`"gen_ai.request.stream":false`, `"gen_ai.response.finish_reasons":["tool_calls"]`, `"x.kv":{"a":1,"b":null}`,
		`"x.bytes":"AAEC"`, `"status":"OK"`, `"span_kind":"client"`, `"resource":{"service.name":"weather-agent"}`,
		`"scope":{"name":"opentelemetry.instrumentation.openai","version":"0.1"}`,
		`"events":[{"name":"first_token","time":"2023-11-14T22:13:21.2Z","attributes":{"n":1}}]`,
		`"links":[{"trace_id":"0af7651916cd43dd8448eb211c80319c","span_id":"b7ad6b7169203331"}]`,
		`"start_time":"2023-11-14T22:13:21Z"`} {
		if !strings.Contains(string(c), s) {
			t.Errorf("chat span lacks %s:\n%s", s, c)
		}
	}
	if !strings.Contains(string(trace.AppendSpans(nil, tr.Spans[:1])), `"trace_state":"vendor=1"`) {
		t.Errorf("root span lacks its trace state")
	}
	wantEvents := `{"role":"system","content":"Be brief.","span_id":"` + chat + `"}
{"role":"user","content":"Weather in Paris?","span_id":"` + chat + `"}
{"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function","function":{"name":"get_weather","arguments":{"city":"Paris"}}}],"span_id":"` + chat + `"}
{"role":"tool","content":"sunny","tool_call_id":"call_1","span_id":"` + tool + `"}
`
	if got := eventsJSON(tr); got != wantEvents {
		t.Errorf("events:\n%s\nwant:\n%s", got, wantEvents)
	}
}

// Ids are hex in OTLP/JSON: base64 (what protojson would write), a wrong
// length or all zeros reject the span, with its JSON path, and the others
// are kept.
func TestParseJSONRejectsBadIDs(t *testing.T) {
	cases := []struct{ name, span, msg string }{
		{"base64 trace id", `{"traceId": "W47/95gDgQPSabYzgT/GDA==", "spanId": "` + chat + `"}`, "32 hex digits"},
		{"short span id", `{"traceId": "` + tid + `", "spanId": "eee19b7e"}`, "16 hex digits"},
		{"zero trace id", `{"traceId": "00000000000000000000000000000000", "spanId": "` + chat + `"}`, "all zeros"},
		{"bad parent", `{"traceId": "` + tid + `", "spanId": "` + chat + `", "parentSpanId": "xyz"}`, "16 hex digits"},
		{"no span id", `{"traceId": "` + tid + `"}`, "no spanId"},
		{"int as text", `{"traceId": "` + tid + `", "spanId": "` + chat + `", "attributes": [{"key": "k", "value": {"intValue": "1.5"}}]}`, "64-bit integer"},
		{"two value members", `{"traceId": "` + tid + `", "spanId": "` + chat + `", "attributes": [{"key": "k", "value": {"intValue": "1", "boolValue": true}}]}`, "one member"},
		{"kind out of range", `{"traceId": "` + tid + `", "spanId": "` + chat + `", "kind": 9}`, "0 to 5"},
		{"time not digits", `{"traceId": "` + tid + `", "spanId": "` + chat + `", "startTimeUnixNano": "soon"}`, "nanoseconds"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			body := `{"resourceSpans": [{"scopeSpans": [{"spans": [` + c.span + `, {"traceId": "0af7651916cd43dd8448eb211c80319c", "spanId": "b7ad6b7169203331"}]}]}]}`
			spans, err := ParseJSON([]byte(body))
			var e *Error
			if !errors.As(err, &e) || len(e.Problems) != 1 {
				t.Fatalf("want one problem, got %v", err)
			}
			if !strings.Contains(e.Problems[0].Msg, c.msg) || !strings.Contains(e.Problems[0].Msg, "$.resourceSpans[0].scopeSpans[0].spans[0]") {
				t.Errorf("problem %q does not say %q at the span's path", e.Problems[0].Msg, c.msg)
			}
			if len(spans) != 1 || spans[0].SpanID != "b7ad6b7169203331" {
				t.Errorf("the good span was not kept: %+v", spans)
			}
		})
	}
	if _, err := ParseJSON([]byte(`{"resourceSpans": [`)); err == nil {
		t.Error("truncated JSON parsed")
	}
}

// Protobuf ids of the wrong length are rejected span by span.
func TestFromResourceSpansRejectsBadIDs(t *testing.T) {
	rss := otlpProto(t)
	rss[0].ScopeSpans[0].Spans[0].SpanId = []byte{1, 2, 3}
	rss[0].ScopeSpans[0].Spans[1].TraceId = make([]byte, 16)
	spans, err := FromResourceSpans(rss)
	var e *Error
	if !errors.As(err, &e) || len(e.Problems) != 2 {
		t.Fatalf("want two problems, got %v", err)
	}
	if e.Problems[0].Span != 0 || !strings.Contains(e.Problems[0].Msg, "span_id is 3 bytes") ||
		e.Problems[1].Span != 1 || !strings.Contains(e.Problems[1].Msg, "all zeros") {
		t.Errorf("problems %v", e.Problems)
	}
	if len(spans) != 1 || spans[0].SpanID != root {
		t.Errorf("kept %+v", spans)
	}
}

// Spans of a trace arriving in any order (as they do over OTLP, in several
// requests) map to the same trace.
func TestMapOrderIndependent(t *testing.T) {
	spans, err := ParseJSON([]byte(otlpJSON))
	if err != nil {
		t.Fatal(err)
	}
	want := trace.AppendTrace(nil, mapOne(t, spans))
	r := rand.New(rand.NewPCG(1, 2))
	for range 20 {
		s := append([]Span(nil), spans...)
		r.Shuffle(len(s), func(i, j int) { s[i], s[j] = s[j], s[i] })
		if got := trace.AppendTrace(nil, mapOne(t, s)); !bytes.Equal(got, want) {
			t.Fatalf("order changed the trace:\n%s\n%s", got, want)
		}
	}
}

// Map rejects a broken trace and keeps the others.
func TestMapProblems(t *testing.T) {
	ok := Span{TraceID: "t1", SpanID: "a", Name: "fine"}
	cases := []struct {
		name  string
		spans []Span
		span  int
		msg   string
	}{
		{"duplicate id", []Span{{TraceID: "t2", SpanID: "x"}, {TraceID: "t2", SpanID: "x"}}, 2, "used twice"},
		{"loop", []Span{{TraceID: "t2", SpanID: "x", ParentID: "y"}, {TraceID: "t2", SpanID: "y", ParentID: "x"}}, 1, "loops"},
		{"dot in id", []Span{{TraceID: "t2", SpanID: "x.y"}}, 1, "'.'"},
		{"empty id", []Span{{TraceID: "t2"}}, 1, "no span id"},
		{"end before start", []Span{{TraceID: "t2", SpanID: "x", Start: time1(5), End: time1(4)}}, 1, "before it starts"},
		{"attribute not JSON", []Span{{TraceID: "t2", SpanID: "x", Attributes: []Attr{{Key: "k", Value: []byte("{")}}}}, 1, "not JSON"},
		{"event attribute not JSON", []Span{{TraceID: "t2", SpanID: "x", Events: []Event{{Attributes: []Attr{{Key: "k"}}}}}}, 1, `event attribute "k"`},
		{"year 10000", []Span{{TraceID: "t2", SpanID: "x", Start: time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)}}, 1, "0000-9999"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			traces, err := Map(append([]Span{ok}, c.spans...))
			var e *Error
			if !errors.As(err, &e) || len(e.Problems) != 1 {
				t.Fatalf("want one problem, got %v", err)
			}
			p := e.Problems[0]
			if p.TraceID != "t2" || p.Span != c.span || !strings.Contains(p.Msg, c.msg) {
				t.Errorf("problem %+v, want span %d saying %q", p, c.span, c.msg)
			}
			if len(traces) != 1 || traces[0].ID != "t1" {
				t.Errorf("the good trace was not kept")
			}
		})
	}
	if _, err := MapTrace([]Span{{TraceID: "a", SpanID: "1"}, {TraceID: "b", SpanID: "2"}}); err == nil || !strings.Contains(err.Error(), "share one trace id") {
		t.Errorf("MapTrace of two traces: %v", err)
	}
}

// decodeAll reads every trace and error of a file.
func decodeAll(t *testing.T, data, name string) (traces []*trace.Trace, errs []*decoding.Error) {
	t.Helper()
	dec := NewDecoder(strings.NewReader(data), name)
	for range 1000 {
		tr, err := dec.Next()
		if errors.Is(err, io.EOF) {
			return
		}
		if err != nil {
			de := golden.DecodingError(t, err)
			errs = append(errs, de)
			if !de.Recoverable {
				return
			}
			continue
		}
		traces = append(traces, tr)
	}
	t.Fatal("the decoder does not stop")
	return
}

// File errors carry file, line, column and JSON path; a broken span
// rejects its trace only.
func TestDecoderErrors(t *testing.T) {
	good := `{"traceId": "0af7651916cd43dd8448eb211c80319c", "spanId": "b7ad6b7169203331", "name": "ok"}`
	bad := `{"traceId": "` + tid + `", "spanId": "AAAAAAAAAAA="}`
	sibling := `{"traceId": "` + tid + `", "spanId": "` + chat + `"}`
	file := "{\"resourceSpans\": [{\"scopeSpans\": [{\"spans\": [" + good + "]}]}]}\n" +
		"{\"resourceSpans\": [{\"scopeSpans\": [{\"spans\": [" + sibling + ", " + bad + "]}]}]}\n"
	traces, errs := decodeAll(t, file, "export.jsonl")
	if len(traces) != 1 || traces[0].ID != "0af7651916cd43dd8448eb211c80319c" {
		t.Errorf("traces %v", traces)
	}
	if len(errs) != 1 {
		t.Fatalf("errors %v", errs)
	}
	e := errs[0]
	wantCol := 1 + len(`{"resourceSpans": [{"scopeSpans": [{"spans": [`+sibling+`, {"traceId": "`+tid+`", "spanId": `)
	if e.File != "export.jsonl" || e.Line != 2 || e.Col != wantCol || !e.Recoverable ||
		e.Path != "$.resourceSpans[0].scopeSpans[0].spans[1].spanId" || !strings.Contains(e.Msg, "16 hex digits") {
		t.Errorf("error %+v, want line 2 column %d", e, wantCol)
	}
	// In a pretty-printed file the line and column are those of the value.
	pretty := "{\"resourceSpans\": [{\"scopeSpans\": [{\"spans\": [\n  " + sibling + ",\n  " + bad + "\n]}]}]}\n"
	_, errs = decodeAll(t, pretty, "pretty.json")
	if len(errs) != 1 || errs[0].Line != 3 || errs[0].Col != 3+len(`{"traceId": "`+tid+`", "spanId": `) {
		t.Errorf("pretty: %+v", errs)
	}

	// A Langfuse observation with a bad time: the trace is rejected with
	// the observation's path.
	lf := `{"trace": {"id": "t", "name": "n"}, "observations": [{"id": "a", "startTime": "2025-01-01T00:00:00Z"},` + "\n" +
		`{"id": "b", "startTime": "yesterday"}]}`
	traces, errs = decodeAll(t, lf, "lf.json")
	if len(traces) != 0 || len(errs) != 1 || errs[0].Line != 2 || errs[0].Path != "$.observations[1].startTime" || !errs[0].Recoverable {
		t.Errorf("Langfuse: traces %v errors %+v", traces, errs)
	}
	// Two observations with one id.
	_, errs = decodeAll(t, `{"trace": {"id": "t"}, "observations": [{"id": "a"}, {"id": "a"}]}`, "lf.json")
	if len(errs) != 1 || errs[0].Path != "$.observations[1]" || !strings.Contains(errs[0].Msg, "used twice") {
		t.Errorf("duplicate observation: %+v", errs)
	}
	// JSON that does not parse is fatal, with its line.
	_, errs = decodeAll(t, "{\"resourceSpans\": []}\n{\"resourceSpans\": [}\n", "x.json")
	if len(errs) != 1 || errs[0].Recoverable || errs[0].Line != 2 {
		t.Errorf("syntax error: %+v", errs)
	}
	// Not OpenTelemetry data.
	_, errs = decodeAll(t, `{"foo": 1}`, "x.json")
	if len(errs) != 1 || !strings.Contains(errs[0].Msg, "not OpenTelemetry data") || errs[0].Line != 1 {
		t.Errorf("foreign JSON: %+v", errs)
	}
}

// A trace split over several export requests (lines) is one trace.
func TestDecoderJoinsRequests(t *testing.T) {
	spans, err := ParseJSON([]byte(otlpJSON))
	if err != nil {
		t.Fatal(err)
	}
	want := trace.AppendTrace(nil, mapOne(t, spans))
	// One span per line.
	i := strings.Index(otlpJSON, `"spans": [`) + len(`"spans": [`)
	head := strings.ReplaceAll(otlpJSON[:i], "\n", "")
	var lines []string
	for _, sp := range []string{tool, chat, root} {
		j := strings.Index(otlpJSON, `{"traceId": "`+tid+`", "spanId": "`+sp)
		depth, k := 0, j
		for ; k < len(otlpJSON); k++ {
			if otlpJSON[k] == '{' {
				depth++
			} else if otlpJSON[k] == '}' {
				depth--
				if depth == 0 {
					break
				}
			}
		}
		lines = append(lines, head+strings.ReplaceAll(otlpJSON[j:k+1], "\n", "")+"]}]}]}")
	}
	traces, errs := decodeAll(t, strings.Join(lines, "\n"), "split.jsonl")
	if len(errs) > 0 || len(traces) != 1 {
		t.Fatalf("%d traces, errors %v", len(traces), errs)
	}
	if got := trace.AppendTrace(nil, traces[0]); !bytes.Equal(got, want) {
		t.Errorf("split file:\n%s\nwant\n%s", got, want)
	}
}

// The Python SDK's console exporter writes span objects one after another
// with "0x" hex ids and ISO times.
func TestConsoleExporterDump(t *testing.T) {
	dump := `{
    "name": "chat",
    "context": {"trace_id": "0x` + tid + `", "span_id": "0x` + chat + `", "trace_state": "[]"},
    "kind": "SpanKind.CLIENT",
    "parent_id": "0x` + root + `",
    "start_time": "2025-01-02T03:04:05.123456Z",
    "end_time": "2025-01-02T03:04:06.000000Z",
    "status": {"status_code": "ERROR", "description": "rate limited"},
    "attributes": {"llm.request.type": "chat", "gen_ai.prompt.0.role": "user", "gen_ai.prompt.0.content": "hi",
                   "gen_ai.completion.0.role": "assistant", "gen_ai.completion.0.content": "hello"},
    "events": [], "links": [],
    "resource": {"attributes": {"service.name": "svc"}, "schema_url": ""}
}
{
    "name": "agent",
    "context": {"trace_id": "0x` + tid + `", "span_id": "0x` + root + `", "trace_state": "[]"},
    "kind": "SpanKind.INTERNAL",
    "parent_id": null,
    "start_time": "2025-01-02T03:04:04Z",
    "end_time": "2025-01-02T03:04:07Z",
    "status": {"status_code": "UNSET"},
    "attributes": {},
    "events": [], "links": [],
    "resource": {"attributes": {"service.name": "svc"}, "schema_url": ""}
}
`
	traces, errs := decodeAll(t, dump, "console.txt")
	if len(errs) > 0 || len(traces) != 1 {
		t.Fatalf("%d traces, errors %v", len(traces), errs)
	}
	tr := traces[0]
	if len(tr.Spans) != 2 || tr.Spans[0].ID != root || tr.Spans[1].ParentID != root || tr.Spans[1].Status != "ERROR" ||
		tr.Spans[1].StatusMessage != "rate limited" || tr.Spans[1].Start.Nanosecond() != 123456000 {
		t.Errorf("spans %+v", tr.Spans)
	}
	want := `{"role":"user","content":"hi","span_id":"` + chat + `"}
{"role":"assistant","content":"hello","span_id":"` + chat + `"}
`
	if got := eventsJSON(tr); got != want {
		t.Errorf("events\n%s", got)
	}
}

func time1(s int64) (t timeT) { return timeT(timeUnix(s)) }

type timeT = time.Time

func timeUnix(s int64) time.Time { return time.Unix(s, 0) }

// TestProtoValuesKeepTheRule: whatever a protobuf request holds (strings
// that are not UTF-8, NaN, kvlists naming a key twice, nesting past the
// bound), the values FromResourceSpans writes keep the rule at the door,
// which is why mapping does not check them again (Span.encoded).
func TestProtoValuesKeepTheRule(t *testing.T) {
	str := func(s string) *commonpb.AnyValue {
		return &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: s}}
	}
	deep := str("bottom")
	for range maxValueDepth + 50 {
		deep = &commonpb.AnyValue{Value: &commonpb.AnyValue_ArrayValue{ArrayValue: &commonpb.ArrayValue{Values: []*commonpb.AnyValue{deep}}}}
	}
	kv := func(k string, v *commonpb.AnyValue) *commonpb.KeyValue { return &commonpb.KeyValue{Key: k, Value: v} }
	values := []*commonpb.AnyValue{
		str("\xff\xfe not UTF-8"), str("\xed\xa0\x80 a surrogate's bytes"), str("\u2028 \x00 \x1f \"quoted\" \\"),
		{Value: &commonpb.AnyValue_DoubleValue{DoubleValue: math.NaN()}}, {Value: &commonpb.AnyValue_DoubleValue{DoubleValue: math.Inf(-1)}},
		{Value: &commonpb.AnyValue_DoubleValue{DoubleValue: math.MaxFloat64}}, {Value: &commonpb.AnyValue_IntValue{IntValue: math.MinInt64}},
		{Value: &commonpb.AnyValue_BytesValue{BytesValue: []byte{0xff, 0}}}, {},
		{Value: &commonpb.AnyValue_KvlistValue{KvlistValue: &commonpb.KeyValueList{Values: []*commonpb.KeyValue{
			kv("a", str("1")), kv("a", str("2")), kv("\xff", str("bad key")), kv("", nil)}}}},
		deep,
	}
	var attrs []*commonpb.KeyValue
	for i, v := range values {
		if err := jsonscan.CheckStrict(appendProtoValue(nil, v, 0)); err != nil {
			t.Errorf("value %d: %v", i, err)
		}
		attrs = append(attrs, kv(fmt.Sprintf("k%d", i), v))
	}
	spans, err := FromResourceSpans([]*tracepb.ResourceSpans{{
		Resource: &resourcepb.Resource{Attributes: attrs},
		ScopeSpans: []*tracepb.ScopeSpans{{Spans: []*tracepb.Span{{TraceId: bytes.Repeat([]byte{1}, 16), SpanId: bytes.Repeat([]byte{2}, 8),
			Name: "s", Attributes: attrs, TraceState: "\xff"}}}}}})
	if err != nil || len(spans) != 1 || !spans[0].encoded {
		t.Fatalf("FromResourceSpans: %d spans, %v", len(spans), err)
	}
	checked := spans[0]
	checked.encoded = false
	if where, key, why := invalidJSON(&checked); where != "" {
		t.Fatalf("the full check refuses %s %q: %s", where, key, why)
	}
	if _, err := MapSpans(spans); err != nil {
		t.Fatal(err)
	}
}
