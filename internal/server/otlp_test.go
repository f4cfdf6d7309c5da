package server

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
	"time"

	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	resourcepb "go.opentelemetry.io/proto/otlp/resource/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	grpcgzip "google.golang.org/grpc/encoding/gzip"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"github.com/lookout-dev/lookout/internal/formats/otlp"
	"github.com/lookout-dev/lookout/internal/store"
)

// The OTLP receiver's scenarios live here, with their own coverage check.
func init() {
	othersTest = append(othersTest, "POST /v1/traces")
	notApplicable["POST /v1/traces"] = map[string]string{
		kPrivate: "spans go to a dataset of the caller's (created on first use)",
		kUnknown: "an unknown dataset is created on first use",
	}
}

// tspan is a test span: ids in hex, times in ns, string or int attributes.
type tspan struct {
	trace, id, parent, name string
	start, end              uint64
	attrs                   [][2]string // value "int:N" is an integer
}

const otelTrace = "5b8efff798038103d269b633813fc60c"

// agentSpans is one agent run: the agent, a chat turn calling a tool, the
// tool.
func agentSpans() []tspan {
	return []tspan{
		{otelTrace, "eee19b7ec3c1b174", "", "invoke_agent support", 1_000_000_000, 5_000_000_000, [][2]string{{"gen_ai.operation.name", "invoke_agent"}, {"gen_ai.agent.name", "support"}}},
		{otelTrace, "aaa19b7ec3c1b175", "eee19b7ec3c1b174", "chat gpt-4o", 1_100_000_000, 2_000_000_000, [][2]string{
			{"gen_ai.operation.name", "chat"}, {"gen_ai.request.model", "gpt-4o"}, {"gen_ai.usage.input_tokens", "int:12"},
			{"gen_ai.input.messages", `[{"role":"user","parts":[{"type":"text","content":"Cancel reservation ABC"}]}]`},
			{"gen_ai.output.messages", `[{"role":"assistant","parts":[{"type":"tool_call","id":"call_1","name":"cancel_reservation","arguments":{"id":"ABC"}}]}]`},
		}},
		{otelTrace, "bbb19b7ec3c1b176", "eee19b7ec3c1b174", "execute_tool cancel_reservation", 2_100_000_000, 2_500_000_000, [][2]string{
			{"gen_ai.operation.name", "execute_tool"}, {"gen_ai.tool.name", "cancel_reservation"}, {"gen_ai.tool.call.id", "call_1"},
			{"gen_ai.tool.call.arguments", `{"id":"ABC"}`}, {"gen_ai.tool.call.result", "cancelled"},
		}},
	}
}

func mustHex(s string) []byte {
	b, err := hex.DecodeString(s)
	if err != nil {
		panic(err)
	}
	return b
}

// otlpProto encodes spans as an ExportTraceServiceRequest of one resource.
func otlpProto(service string, spans []tspan) []byte {
	var ps []*tracepb.Span
	for _, s := range spans {
		sp := &tracepb.Span{TraceId: mustHex(s.trace), SpanId: mustHex(s.id), Name: s.name, StartTimeUnixNano: s.start, EndTimeUnixNano: s.end,
			Kind: tracepb.Span_SPAN_KIND_INTERNAL}
		if s.parent != "" {
			sp.ParentSpanId = mustHex(s.parent)
		}
		for _, a := range s.attrs {
			v := &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: a[1]}}
			if n, ok := strings.CutPrefix(a[1], "int:"); ok {
				var i int64
				fmt.Sscan(n, &i)
				v = &commonpb.AnyValue{Value: &commonpb.AnyValue_IntValue{IntValue: i}}
			}
			sp.Attributes = append(sp.Attributes, &commonpb.KeyValue{Key: a[0], Value: v})
		}
		ps = append(ps, sp)
	}
	req := &tracepb.TracesData{ResourceSpans: []*tracepb.ResourceSpans{{
		Resource:   &resourcepb.Resource{Attributes: []*commonpb.KeyValue{{Key: "service.name", Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: service}}}}},
		ScopeSpans: []*tracepb.ScopeSpans{{Scope: &commonpb.InstrumentationScope{Name: "test"}, Spans: ps}},
	}}}
	b, err := proto.Marshal(req)
	if err != nil {
		panic(err)
	}
	return b
}

// otlpJSON encodes spans as OTLP/HTTP JSON: hex ids, 64-bit integers as
// decimal strings.
func otlpJSON(service string, spans []tspan) []byte {
	var js []map[string]any
	for _, s := range spans {
		var attrs []map[string]any
		for _, a := range s.attrs {
			v := map[string]any{"stringValue": a[1]}
			if n, ok := strings.CutPrefix(a[1], "int:"); ok {
				v = map[string]any{"intValue": n}
			}
			attrs = append(attrs, map[string]any{"key": a[0], "value": v})
		}
		sp := map[string]any{"traceId": s.trace, "spanId": s.id, "name": s.name, "kind": 1,
			"startTimeUnixNano": fmt.Sprint(s.start), "endTimeUnixNano": fmt.Sprint(s.end), "attributes": attrs}
		if s.parent != "" {
			sp["parentSpanId"] = s.parent
		}
		js = append(js, sp)
	}
	b, _ := json.Marshal(map[string]any{"resourceSpans": []any{map[string]any{
		"resource":   map[string]any{"attributes": []any{map[string]any{"key": "service.name", "value": map[string]any{"stringValue": service}}}},
		"scopeSpans": []any{map[string]any{"scope": map[string]any{"name": "test"}, "spans": js}},
	}}})
	return b
}

func gz(b []byte) []byte {
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	zw.Write(b)
	zw.Close()
	return buf.Bytes()
}

// partial reads rejected_spans and error_message of a protobuf answer.
func partial(t *testing.T, b []byte) (rejected uint64, msg string) {
	t.Helper()
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 || num != 1 || typ != protowire.BytesType {
			t.Fatalf("not an ExportTraceServiceResponse: %x", b)
		}
		b = b[n:]
		ps, n := protowire.ConsumeBytes(b)
		b = b[n:]
		for len(ps) > 0 {
			num, typ, n := protowire.ConsumeTag(ps)
			ps = ps[n:]
			switch {
			case num == 1 && typ == protowire.VarintType:
				v, n := protowire.ConsumeVarint(ps)
				rejected, ps = v, ps[n:]
			case num == 2 && typ == protowire.BytesType:
				v, n := protowire.ConsumeString(ps)
				msg, ps = v, ps[n:]
			default:
				t.Fatalf("unexpected field %d in partial_success", num)
			}
		}
	}
	return rejected, msg
}

// storedOTel returns the canonical JSON of the dataset's only trace, its id
// taken out so that traces of different datasets compare.
func storedOTel(t *testing.T, f *fixture, dataset string) string {
	t.Helper()
	id, body, n := firstTrace(t, f, dataset)
	if n != 1 {
		t.Fatalf("dataset %s holds %d traces, want 1", dataset, n)
	}
	return strings.Replace(body, `"id":"`+id+`",`, "", 1)
}

// TestOTLPTransports: the same spans sent as protobuf, as JSON with hex ids,
// gzipped, and split over several requests out of order (children before
// their parent, one span sent twice) give one identical stored trace, with
// the chat events the GenAI conventions describe.
func TestOTLPTransports(t *testing.T) {
	forEachBackend(t, func(t *testing.T, st storeUnderTest) {
		f := newFixture(t, st, Config{})
		f.addUser("alice")
		spans := agentSpans()
		send := func(dataset, ct string, body []byte, extra ...string) response {
			t.Helper()
			h := append([]string{"Content-Type", ct, "X-Lookout-Dataset", dataset}, extra...)
			r := f.do("POST", "/v1/traces", "alice", bytes.NewReader(body), h...)
			if r.status != 200 {
				t.Fatalf("%s: %d %s", dataset, r.status, r.body)
			}
			return r
		}
		r := send("via-proto", "application/x-protobuf", otlpProto("agent", spans))
		if n, msg := partial(t, r.body); n != 0 || msg != "" || r.header.Get("Content-Type") != "application/x-protobuf" {
			t.Errorf("protobuf answer: rejected %d %q, %s", n, msg, r.header.Get("Content-Type"))
		}
		if r := send("via-json", "application/json", otlpJSON("agent", spans)); string(r.body) != "{}" {
			t.Errorf("JSON answer %s", r.body)
		}
		send("via-gzip", "application/x-protobuf", gz(otlpProto("agent", spans)), "Content-Encoding", "gzip")
		send("via-gzip-json", "application/json", gz(otlpJSON("agent", spans)), "Content-Encoding", "gzip")
		// Split: the tool, then the chat turn and the tool again, then the root.
		send("via-split", "application/json", otlpJSON("agent", spans[2:3]))
		send("via-split", "application/x-protobuf", otlpProto("agent", []tspan{spans[1], spans[2]}))
		send("via-split", "application/x-protobuf", gz(otlpProto("agent", spans[0:1])), "Content-Encoding", "gzip")
		// Without the header the dataset is the service name.
		r = f.do("POST", "/v1/traces", "alice", bytes.NewReader(otlpProto("billing-agent", spans)), "Content-Type", "application/x-protobuf")
		if r.status != 200 {
			t.Fatalf("by service.name: %d %s", r.status, r.body)
		}

		// gRPC: the same spans in two calls, children first.
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		var protocols http.Protocols
		protocols.SetUnencryptedHTTP2(true)
		gs := &http.Server{Handler: f.srv.OTLPGRPC(), Protocols: &protocols}
		go gs.Serve(ln)
		defer gs.Close()
		conn, err := grpc.NewClient(ln.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		tc := coltracepb.NewTraceServiceClient(conn)
		export := func(ctx context.Context, sp []tspan) (*coltracepb.ExportTraceServiceResponse, error) {
			var req coltracepb.ExportTraceServiceRequest
			if err := proto.Unmarshal(otlpProto("agent", sp), &req); err != nil {
				t.Fatal(err)
			}
			return tc.Export(ctx, &req)
		}
		authed := metadata.AppendToOutgoingContext(context.Background(), "authorization", "Bearer "+f.keys["alice"], "x-lookout-dataset", "via-grpc")
		for _, part := range [][]tspan{spans[1:], spans[:1]} {
			resp, err := export(authed, part)
			if err != nil || resp.GetPartialSuccess() != nil {
				t.Fatalf("gRPC export: %v %v", resp, err)
			}
		}
		if _, err := export(metadata.AppendToOutgoingContext(context.Background(), "x-lookout-dataset", "via-grpc-anon"), spans); status.Code(err) != codes.Unauthenticated {
			t.Errorf("gRPC export without a key: %v, want Unauthenticated", err)
		}
		// Compressed with gzip, into its own dataset.
		var req coltracepb.ExportTraceServiceRequest
		if err := proto.Unmarshal(otlpProto("agent", spans), &req); err != nil {
			t.Fatal(err)
		}
		gzCtx := metadata.AppendToOutgoingContext(context.Background(), "authorization", "Bearer "+f.keys["alice"], "x-lookout-dataset", "via-grpc-gzip")
		if resp, err := tc.Export(gzCtx, &req, grpc.UseCompressor(grpcgzip.Name)); err != nil || resp.GetPartialSuccess() != nil {
			t.Fatalf("gRPC export with gzip: %v %v", resp, err)
		}
		// A span with a bad id among good ones: a partial success.
		bad := agentSpans()
		bad[0].id = "0102"
		resp, err := export(metadata.AppendToOutgoingContext(context.Background(), "authorization", "Bearer "+f.keys["alice"], "x-lookout-dataset", "via-grpc-partial"), bad)
		if err != nil || resp.GetPartialSuccess().GetRejectedSpans() != 1 || !strings.Contains(resp.GetPartialSuccess().GetErrorMessage(), "span_id is 2 bytes") {
			t.Errorf("gRPC partial success: %v %v", resp, err)
		}
		// Every span bad: InvalidArgument, nothing stored.
		for i := range bad {
			bad[i].id = "0102"
		}
		if _, err := export(metadata.AppendToOutgoingContext(context.Background(), "authorization", "Bearer "+f.keys["alice"], "x-lookout-dataset", "via-grpc-bad"), bad); status.Code(err) != codes.InvalidArgument || !strings.Contains(status.Convert(err).Message(), "no span could be taken") {
			t.Errorf("gRPC export of only bad spans: %v", err)
		}

		want := storedOTel(t, f, "via-proto")
		if other := storedOTel(t, f, "billing-agent"); other != strings.ReplaceAll(want, `"service.name":"agent"`, `"service.name":"billing-agent"`) {
			t.Errorf("by service.name stored\n%s", other)
		}
		for _, ds := range []string{"via-json", "via-gzip", "via-gzip-json", "via-split", "via-grpc", "via-grpc-gzip"} {
			if got := storedOTel(t, f, ds); got != want {
				t.Errorf("%s stored\n%s\nvia protobuf\n%s", ds, got, want)
			}
		}
		var tr struct {
			Events []struct {
				Role      string
				Content   any
				ToolCalls []struct{ Function struct{ Name string } } `json:"tool_calls"`
			}
			Spans []struct{ ID string }
		}
		if err := json.Unmarshal([]byte(want), &tr); err != nil {
			t.Fatal(err)
		}
		var roles []string
		for _, e := range tr.Events {
			roles = append(roles, e.Role)
		}
		if len(tr.Spans) != 3 || !strings.Contains(strings.Join(roles, ","), "user,assistant,tool") {
			t.Fatalf("stored trace: %d spans, events %v\n%s", len(tr.Spans), roles, want)
		}
		if !strings.Contains(want, `"cancel_reservation"`) || !strings.Contains(want, "Cancel reservation ABC") || !strings.Contains(want, `"metadata":{"otel_trace_id":"`+otelTrace+`"}`) {
			t.Errorf("stored trace lacks the tool call, the user message or the trace id:\n%s", want)
		}
	})
}

// TestOTLPSpansStoredUnmapped: a span an earlier Lookout stored as it was
// received (Span's binary form; spans are stored mapped now) builds, with
// spans received now, the trace that all of them received now make.
func TestOTLPSpansStoredUnmapped(t *testing.T) {
	forEachBackend(t, func(t *testing.T, st storeUnderTest) {
		f := newFixture(t, st, Config{})
		alice := f.addUser("alice")
		spans := agentSpans()
		send := func(dataset string, sp []tspan) {
			t.Helper()
			if r := f.do("POST", "/v1/traces", "alice", bytes.NewReader(otlpProto("agent", sp)), "Content-Type", "application/x-protobuf", "X-Lookout-Dataset", dataset); r.status != 200 {
				t.Fatalf("%s: %d %s", dataset, r.status, r.body)
			}
		}
		send("now", spans)
		var req tracepb.TracesData
		if err := proto.Unmarshal(otlpProto("agent", spans[1:2]), &req); err != nil {
			t.Fatal(err)
		}
		old, err := otlp.FromResourceSpans(req.GetResourceSpans())
		if err != nil {
			t.Fatal(err)
		}
		d := f.createDataset("alice", "upgraded", false)
		if _, err := st.AcceptSpans(context.Background(), alice.ID, d, []store.SpanGroup{{OTelTraceID: otelTrace,
			Spans: []store.StoredSpan{{SpanID: old[0].SpanID, Data: otlp.AppendBinary(nil, &old[0])}}}}); err != nil {
			t.Fatal(err)
		}
		send("upgraded", append([]tspan{spans[0]}, spans[2:]...))
		if got, want := storedOTel(t, f, "upgraded"), storedOTel(t, f, "now"); got != want || !strings.Contains(got, `"tool_call_id":"call_1"`) {
			t.Errorf("with a span stored unmapped:\n%s\nall received now:\n%s", got, want)
		}
	})
}

// TestOTLPBadPayloads: each bad request gets its 4xx and stores nothing; a
// request with some bad spans stores the others and says which it rejected.
func TestOTLPBadPayloads(t *testing.T) {
	forEachBackend(t, func(t *testing.T, st storeUnderTest) {
		f := newFixture(t, st, Config{MaxBody: 1 << 20})
		f.addUser("alice")
		good := otlpProto("agent", agentSpans())
		badIDs := agentSpans()
		for i := range badIDs {
			badIDs[i].id = badIDs[i].id[:12] // 6 bytes, not 8
		}
		bomb := gz(bytes.Repeat([]byte{0}, 3<<20)) // inflates past the limit
		cases := []struct {
			name   string
			body   []byte
			header []string
			status int
			want   string
		}{
			{"truncated protobuf", good[:len(good)-7], []string{"Content-Type", "application/x-protobuf"}, 400, "not an OTLP ExportTraceServiceRequest"},
			{"wrong content type", good, []string{"Content-Type", "text/plain"}, 415, "application/x-protobuf or application/json"},
			{"no content type", good, nil, 415, "Content-Type must be"},
			{"unknown encoding", good, []string{"Content-Type", "application/x-protobuf", "Content-Encoding", "br"}, 415, "Content-Encoding must be gzip"},
			{"gzip that is not", good, []string{"Content-Type", "application/x-protobuf", "Content-Encoding", "gzip"}, 400, "not: gzip"},
			{"ids of the wrong length", otlpProto("agent", badIDs), []string{"Content-Type", "application/x-protobuf"}, 400, "span_id is 6 bytes, not 8"},
			{"hex ids of the wrong length in JSON", otlpJSON("agent", badIDs), []string{"Content-Type", "application/json"}, 400, "no span could be taken"},
			{"JSON that does not parse", []byte(`{"resourceSpans": [`), []string{"Content-Type", "application/json"}, 400, "invalid JSON at line 1, column 20"},
			{"no dataset", otlpProto("", agentSpans()), []string{"Content-Type", "application/x-protobuf"}, 400, "X-Lookout-Dataset header or set the service.name"},
			{"a body over the limit", bytes.Repeat([]byte{0x0a}, 2<<20), []string{"Content-Type", "application/x-protobuf"}, 413, "larger than"},
			{"a gzip body inflating over the limit", bomb, []string{"Content-Type", "application/x-protobuf", "Content-Encoding", "gzip"}, 413, "larger than"},
		}
		for _, c := range cases {
			r := f.do("POST", "/v1/traces", "alice", bytes.NewReader(c.body), c.header...)
			if r.status != c.status || !strings.Contains(r.String(), c.want) {
				t.Errorf("%s: %d %s, want %d with %q", c.name, r.status, r.body, c.status, c.want)
			}
		}
		// 100 MB against the default limit (64 MiB), streamed: refused
		// before it is read.
		big := New(Config{Store: st})
		hs := httptest.NewServer(big)
		defer hs.Close()
		req, _ := http.NewRequest("POST", hs.URL+"/v1/traces", io.LimitReader(repeatReader(0x0a), 100<<20))
		req.ContentLength = 100 << 20
		req.Header.Set("Content-Type", "application/x-protobuf")
		req.Header.Set("Authorization", "Bearer "+f.keys["alice"])
		if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != 413 {
			t.Errorf("a 100 MB body: %v %v, want 413", resp, err)
		} else {
			resp.Body.Close()
		}
		var list struct{ Datasets []json.RawMessage }
		f.must(200, "GET", "/api/v1/datasets", "alice", "").json(t, &list)
		if len(list.Datasets) != 0 {
			t.Fatalf("bad requests stored datasets: %s", list.Datasets)
		}
		// Partial success: a span with a bad id and a trace whose parent
		// chain loops are rejected; the good trace is stored.
		loop := []tspan{
			{"11111111111111111111111111111111", "1111111111111111", "2222222222222222", "a", 1, 2, nil},
			{"11111111111111111111111111111111", "2222222222222222", "1111111111111111", "b", 1, 2, nil},
		}
		mixed := append(append(agentSpans(), badIDs[0]), loop...)
		r := f.do("POST", "/v1/traces", "alice", bytes.NewReader(otlpProto("agent", mixed)), "Content-Type", "application/x-protobuf")
		n, msg := partial(t, r.body)
		if r.status != 200 || n != 3 || !strings.Contains(msg, "span_id is 6 bytes") || !strings.Contains(msg, "loops") {
			t.Errorf("partial success: %d, rejected %d, %q", r.status, n, msg)
		}
		rj := f.do("POST", "/v1/traces", "alice", bytes.NewReader(otlpJSON("agent", mixed)), "Content-Type", "application/json")
		if rj.status != 200 || !regexp.MustCompile(`^\{"partialSuccess":\{"errorMessage":"(?:[^"\\]|\\.)*loops(?:[^"\\]|\\.)*","rejectedSpans":"3"\}\}$`).Match(rj.body) {
			t.Errorf("partial success in JSON: %d %s", rj.status, rj.body)
		}
		storedOTel(t, f, "agent") // exactly one trace: the good one
	})
}

// TestOTLPScenarios runs the receiver through the cases every endpoint
// meets.
func TestOTLPScenarios(t *testing.T) {
	forEachBackend(t, func(t *testing.T, st storeUnderTest) {
		f := newFixture(t, st, Config{MaxBody: smallLimit})
		f.addUser("alice")
		js := string(otlpJSON("agent", agentSpans()))
		scenarios := []scenario{
			{name: "otlp: spans as JSON", kind: kSuccess, method: "POST", path: "/v1/traces", user: "alice", body: js, status: 200, want: []string{`^\{\}$`}},
			{name: "otlp: bad JSON", kind: kBadJSON, method: "POST", path: "/v1/traces", user: "alice", body: `{"resourceSpans": [}`, status: 400, want: []string{`line 1, column 20`}},
			{name: "otlp: an id of the wrong type", kind: kTypes, method: "POST", path: "/v1/traces", user: "alice",
				body: `{"resourceSpans": [{"scopeSpans": [{"spans": [{"traceId": 5, "spanId": "eee19b7ec3c1b174"}]}]}]}`, status: 400, want: []string{`no span could be taken`, `traceId`}},
			{name: "otlp: one span of the wrong type among good ones", method: "POST", path: "/v1/traces", user: "alice",
				body: strings.Replace(js, `"spanId":"eee19b7ec3c1b174"`, `"spanId":42`, 1), status: 200, want: []string{`"rejectedSpans":"1"`}},
			{name: "otlp: a span member given twice (the rule at the door: 422 at its place)", method: "POST", path: "/v1/traces", user: "alice",
				body: strings.Replace(js, `"spanId":"eee19b7ec3c1b174"`, `"spanId":"eee19b7ec3c1b174","spanId":"eee19b7ec3c1b174"`, 1), status: 422,
				want: []string{`"path":"\$\.resourceSpans\[0\]\.scopeSpans\[0\]\.spans\[0\]\.spanId"`, `member \\"spanId\\" is given twice`}},
			{name: "otlp: a number past a float64", method: "POST", path: "/v1/traces", user: "alice",
				body: strings.Replace(js, `"spanId":"eee19b7ec3c1b174"`, `"spanId":"eee19b7ec3c1b174","x":1e400`, 1), status: 422,
				want: []string{`spans\[0\]\.x"`, `out of the range of a 64-bit float`}},
			{name: "otlp: bytes that are not UTF-8", method: "POST", path: "/v1/traces", user: "alice",
				body: strings.Replace(js, `"spanId":"eee19b7ec3c1b174"`, "\"spanId\":\"eee19b7ec3c1b174\",\"x2\":\"\xff\"", 1), status: 422,
				want: []string{`spans\[0\]\.x2"`, `invalid UTF-8`}},
			{name: "otlp: without auth", kind: kNoAuth, method: "POST", path: "/v1/traces", user: "", body: js, status: 401},
			{name: "otlp: too large", kind: kTooLarge, method: "POST", path: "/v1/traces", user: "alice", body: `{"resourceSpans": [], "x": "` + strings.Repeat("x", smallLimit) + `"}`, status: 413},
		}
		covered := map[string]bool{}
		for _, sc := range scenarios {
			covered[sc.kind] = true
			t.Run(sc.name, func(t *testing.T) {
				r := f.do(sc.method, sc.path, sc.user, io.Reader(strings.NewReader(sc.body)), "Content-Type", "application/json")
				if r.status != sc.status {
					t.Fatalf("status %d, want %d\n%s", r.status, sc.status, r.body)
				}
				checkHeaders(t, r)
				for _, re := range sc.want {
					if !regexp.MustCompile(re).Match(r.body) {
						t.Errorf("body does not match %s:\n%s", re, r.body)
					}
				}
				checkKind(t, sc, r)
			})
		}
		for _, k := range kinds {
			if applies("POST /v1/traces", k) && !covered[k] {
				t.Errorf("POST /v1/traces has no %q scenario", k)
			}
		}
	})
}

// TestLiveTrace: a listener of a trace hears "ready", then "changed" when
// spans of the trace arrive, events are appended or an annotation is made,
// and nothing for changes to another trace.
func TestLiveTrace(t *testing.T) {
	forEachBackend(t, func(t *testing.T, st storeUnderTest) {
		f := newFixture(t, st, Config{})
		f.addUser("alice")
		spans := agentSpans()
		post := func(sp []tspan) {
			t.Helper()
			r := f.do("POST", "/v1/traces", "alice", bytes.NewReader(otlpProto("agent", sp)), "Content-Type", "application/x-protobuf", "X-Lookout-Dataset", "live")
			if r.status != 200 {
				t.Fatalf("spans: %d %s", r.status, r.body)
			}
		}
		post(spans[1:2])
		var list struct{ Datasets []struct{ ID string } }
		f.must(200, "GET", "/api/v1/datasets?name=live", "alice", "").json(t, &list)
		var page struct{ Traces []struct{ ID string } }
		f.must(200, "GET", "/api/v1/datasets/"+list.Datasets[0].ID+"/traces", "alice", "").json(t, &page)
		id := page.Traces[0].ID
		other := f.push("alice", `{"dataset": "live", "messages": [[{"role": "user", "content": "another trace"}]]}`)[0]

		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		req, _ := http.NewRequestWithContext(ctx, "GET", f.hs.URL+"/api/v1/traces/"+id+"/live", nil)
		req.Header.Set("Authorization", "Bearer "+f.keys["alice"])
		resp, err := http.DefaultClient.Do(req)
		if err != nil || resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/event-stream" {
			t.Fatalf("live: %v %v", resp, err)
		}
		defer resp.Body.Close()
		events := make(chan string, 16)
		go func() {
			sc := bufio.NewScanner(resp.Body)
			for sc.Scan() {
				if name, ok := strings.CutPrefix(sc.Text(), "event: "); ok {
					events <- name
				}
			}
			close(events)
		}()
		next := func(what string) string {
			t.Helper()
			select {
			case e := <-events:
				return e
			case <-time.After(10 * time.Second):
				t.Fatalf("%s: no event", what)
				return ""
			}
		}
		quiet := func(what string) {
			t.Helper()
			select {
			case e := <-events:
				t.Fatalf("%s: event %q", what, e)
			case <-time.After(200 * time.Millisecond):
			}
		}
		if e := next("connect"); e != "ready" {
			t.Fatalf("first event %q", e)
		}
		post(spans[2:])
		if e := next("more spans"); e != "changed" {
			t.Errorf("after more spans: %q", e)
		}
		f.must(200, "POST", "/api/v1/traces/"+other+"/events", "alice", `[{"role": "assistant", "content": "elsewhere"}]`)
		quiet("a change to another trace")
		f.must(201, "POST", "/api/v1/traces/"+id+"/annotations", "alice", `{"address": "messages.0", "content": "look"}`)
		if e := next("an annotation"); e != "changed" {
			t.Errorf("after an annotation: %q", e)
		}
		post(spans[:1])
		if e := next("the root span"); e != "changed" {
			t.Errorf("after the root span: %q", e)
		}
		cancel()
		for range events {
		}
		// The listener is gone once the stream ends.
		deadline := time.Now().Add(5 * time.Second)
		for {
			f.srv.live.mu.Lock()
			n := len(f.srv.live.subs)
			f.srv.live.mu.Unlock()
			if n == 0 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%d traces still have listeners", n)
			}
			time.Sleep(10 * time.Millisecond)
		}
	})
}

// TestOTLPPendingBuild: a request's spans are answered before their trace
// is built; the builder builds it once quiet, a read builds it at once, and
// while too many traces wait, span requests are refused with Retry-After
// and store nothing.
func TestOTLPPendingBuild(t *testing.T) {
	forEachBackend(t, func(t *testing.T, st storeUnderTest) {
		// Never quiet within the test: only reads and buildQuiet with
		// the time moved on build.
		f := newFixture(t, st, Config{SpanQuiet: time.Hour, SpanMaxDelay: time.Hour, SpanBacklog: 1})
		f.addUser("alice")
		ctx := context.Background()
		post := func(dataset string, spans []tspan) response {
			return f.do("POST", "/v1/traces", "alice", bytes.NewReader(otlpProto("agent", spans)),
				"Content-Type", "application/x-protobuf", "X-Lookout-Dataset", dataset)
		}
		spans := agentSpans()
		if r := post("a", spans); r.status != 200 {
			t.Fatalf("first request: %d %s", r.status, r.body)
		}
		other := append([]tspan{}, spans...)
		for i := range other {
			other[i].trace = strings.Repeat("7", 32)
		}
		if r := post("a", other); r.status != 200 {
			t.Fatalf("second request: %d %s", r.status, r.body)
		}
		if n, err := st.PendingSpanTraces(ctx); err != nil || n != 2 {
			t.Fatalf("pending after two requests: %d, %v; want 2", n, err)
		}
		// Counting them puts the backlog over the limit of 1: refused.
		f.srv.buildQuiet(ctx)
		r := post("b", spans)
		if r.status != 503 || r.header.Get("Retry-After") != "1" || !strings.Contains(r.String(), "2 traces wait") {
			t.Errorf("over the backlog: %d %q %s", r.status, r.header.Get("Retry-After"), r.body)
		}
		var list struct{ Datasets []json.RawMessage }
		if f.must(200, "GET", "/api/v1/datasets?name=b", "alice", "").json(t, &list); len(list.Datasets) != 0 {
			t.Errorf("a refused request stored a dataset")
		}
		// A read of the dataset builds its traces first: the same trace
		// as a request built at once would give.
		_, got, _ := firstTrace(t, f, "a")
		if !strings.Contains(got, `"role":"assistant"`) || !strings.Contains(got, `"otel_trace_id"`) {
			t.Errorf("read of a pending trace: %.300s", got)
		}
		if n, _ := st.PendingSpanTraces(ctx); n != 0 {
			t.Errorf("after reading the dataset, %d traces still pending", n)
		}
		f.srv.buildQuiet(ctx)
		if r := post("b", spans); r.status != 200 {
			t.Errorf("with the backlog built: %d %s", r.status, r.body)
		}
	})
}

// firstTrace reads the id and the body of a dataset's first trace, and how
// many it lists (the list builds what is pending first).
func firstTrace(t *testing.T, f *fixture, dataset string) (id, body string, n int) {
	t.Helper()
	var page struct{ Traces []struct{ ID string } }
	f.must(200, "GET", "/api/v1/datasets/"+datasetID(t, f, dataset)+"/traces", "alice", "").json(t, &page)
	if len(page.Traces) == 0 {
		t.Fatalf("dataset %s holds no traces", dataset)
	}
	return page.Traces[0].ID, f.must(200, "GET", "/api/v1/traces/"+page.Traces[0].ID, "alice", "").String(), len(page.Traces)
}

func datasetID(t *testing.T, f *fixture, dataset string) string {
	t.Helper()
	var list struct{ Datasets []struct{ ID string } }
	f.must(200, "GET", "/api/v1/datasets?name="+dataset, "alice", "").json(t, &list)
	if len(list.Datasets) != 1 {
		t.Fatalf("dataset %s: %+v", dataset, list)
	}
	return list.Datasets[0].ID
}
