package invariant

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/lookout-dev/lookout/internal/trace"
)

func ptr(n int64) *int64 { return &n }

func TestEncodeLine(t *testing.T) {
	tr := &trace.Trace{
		ID:       "t1",
		Name:     "Run 1",
		Index:    ptr(7),
		Metadata: json.RawMessage(`{"a":1}`),
		Events: []trace.Event{
			{Role: "user", Content: trace.TextContent("hi\n")},
			{Role: "assistant", Content: trace.Content{Kind: trace.ContentNull}, ToolCalls: []trace.ToolCall{{ID: "c", Type: "function", Function: trace.Function{Name: "f", Arguments: json.RawMessage(`{"x":1}`)}}}},
			{Role: "tool", Content: trace.TextContent("ok"), ToolCallID: "c", SpanID: "s1"},
		},
		Annotations: []trace.Annotation{{Address: "messages.0.content:0-2", Content: "greeting", Extra: trace.Fields{{Key: "source", Value: json.RawMessage(`"rule"`)}}}},
		Spans:       []trace.Span{{ID: "s1", Name: "tool", Kind: "TOOL"}},
		Extra:       trace.Fields{{Key: "user", Value: json.RawMessage(`"me"`)}},
	}
	var buf bytes.Buffer
	enc := NewEncoder(&buf)
	if err := enc.WriteDatasetMetadata(json.RawMessage("{\n \"d\": [1, 2]\n}")); err != nil {
		t.Fatal(err)
	}
	if err := enc.Encode(tr); err != nil {
		t.Fatal(err)
	}
	if buf.Len() != 0 {
		t.Errorf("output written before Flush")
	}
	if err := enc.Flush(); err != nil {
		t.Fatal(err)
	}
	want := `{"metadata":{"d":[1,2]}}
{"messages":[{"role":"user","content":"hi\n"},{"role":"assistant","content":null,"tool_calls":[{"id":"c","type":"function","function":{"name":"f","arguments":{"x":1}}}]},{"role":"tool","content":"ok","tool_call_id":"c","span_id":"s1"}],"metadata":{"a":1},"annotations":[{"address":"messages.0.content:0-2","content":"greeting","source":"rule"}],"index":7,"name":"Run 1","id":"t1","spans":[{"id":"s1","name":"tool","kind":"TOOL"}],"user":"me"}
`
	if buf.String() != want {
		t.Errorf("got\n%s\nwant\n%s", buf.String(), want)
	}
	got := decodeAll(t, buf.Bytes(), "out.jsonl")
	if len(got.errs) > 0 || len(got.traces) != 1 || string(got.meta) != `{"d":[1,2]}` {
		t.Fatalf("%v %s", got.errs, got.meta)
	}
	if a, b := trace.AppendTrace(nil, tr), trace.AppendTrace(nil, got.traces[0]); !bytes.Equal(a, b) {
		t.Errorf("round trip:\n%s\n%s", a, b)
	}
}

func TestEncodeRules(t *testing.T) {
	plain := func() *trace.Trace { return &trace.Trace{Events: []trace.Event{{Role: "user"}}} }
	indexed := func(n int64) *trace.Trace { tr := plain(); tr.Index = ptr(n); return tr }
	with := func(tr *trace.Trace, f func(*trace.Trace)) *trace.Trace { f(tr); return tr }
	cases := []struct {
		name   string
		meta   []json.RawMessage // dataset metadata written first
		traces []*trace.Trace
		after  json.RawMessage // dataset metadata written after the traces
		err    string          // error of the last call; "" none
	}{
		{name: "index on some traces only", traces: []*trace.Trace{indexed(1), plain()}, err: "has no index but the traces before it have one"},
		{name: "index after traces without", traces: []*trace.Trace{plain(), indexed(1)}, err: "has an index but the traces before it have none"},
		{name: "duplicate index", traces: []*trace.Trace{indexed(1), indexed(2), indexed(1)}, err: "duplicate index 1 (trace 0 has it too)"},
		{name: "unique indices", traces: []*trace.Trace{indexed(1), indexed(2), indexed(-3)}},
		{name: "metadata twice", meta: []json.RawMessage{json.RawMessage(`{}`), json.RawMessage(`{}`)}, err: "at most once"},
		{name: "metadata after a trace", traces: []*trace.Trace{plain()}, after: json.RawMessage(`{}`), err: "must be the first row"},
		{name: "metadata not an object", meta: []json.RawMessage{json.RawMessage(`[1]`)}, err: "must be a JSON object"},
		{name: "metadata not JSON", meta: []json.RawMessage{json.RawMessage(`{"a":`)}, err: "must be a JSON object"},
		{name: "extra messages", traces: []*trace.Trace{with(plain(), func(tr *trace.Trace) {
			tr.Extra = trace.Fields{{Key: "messages", Value: json.RawMessage(`[]`)}}
		})}, err: `extra member "messages" cannot be written`},
		{name: "extra name without a name", traces: []*trace.Trace{with(plain(), func(tr *trace.Trace) {
			tr.Extra = trace.Fields{{Key: "name", Value: json.RawMessage(`"x"`)}}
		})}, err: `extra member "name" cannot be written`},
		{name: "extra name beside a name is dropped as in canonical JSON", traces: []*trace.Trace{with(plain(), func(tr *trace.Trace) {
			tr.Name = "n"
			tr.Extra = trace.Fields{{Key: "name", Value: json.RawMessage(`"x"`)}, {Key: "events", Value: json.RawMessage(`1`)}}
		})}},
		{name: "trace metadata not an object", traces: []*trace.Trace{with(plain(), func(tr *trace.Trace) {
			tr.Metadata = json.RawMessage(`"m"`)
		})}, err: "metadata must be a JSON object"},
		{name: "span time RFC 3339 cannot write", traces: []*trace.Trace{with(plain(), func(tr *trace.Trace) {
			tr.Spans = []trace.Span{{ID: "s", End: time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)}}
		})}, err: `span "s" has a time outside the years 0000-9999`},
		{name: "raw JSON that is not compact", traces: []*trace.Trace{with(plain(), func(tr *trace.Trace) {
			tr.Metadata = json.RawMessage("{\n}")
		})}, err: "not compact"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var buf bytes.Buffer
			enc := NewEncoder(&buf)
			var err error
			var ok []*trace.Trace
			for _, m := range tc.meta {
				if err = enc.WriteDatasetMetadata(m); err != nil {
					break
				}
			}
			for _, tr := range tc.traces {
				if err != nil {
					break
				}
				if err = enc.Encode(tr); err == nil {
					ok = append(ok, tr)
				}
			}
			if err == nil && tc.after != nil {
				err = enc.WriteDatasetMetadata(tc.after)
			}
			if tc.err == "" {
				if err != nil {
					t.Fatalf("unexpected error %v", err)
				}
			} else if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Fatalf("error %v, want %q", err, tc.err)
			}
			// What was written is still a valid file holding the accepted traces.
			if err := enc.Flush(); err != nil {
				t.Fatal(err)
			}
			got := decodeAll(t, buf.Bytes(), "out.jsonl")
			if len(got.errs) > 0 || len(got.traces) != len(ok) {
				t.Fatalf("output %q: errors %v, %d traces, want %d", buf.String(), got.errs, len(got.traces), len(ok))
			}
			for i := range ok {
				if a, b := trace.AppendTrace(nil, ok[i]), trace.AppendTrace(nil, got.traces[i]); !bytes.Equal(a, b) {
					t.Errorf("trace %d:\n%s\n%s", i, a, b)
				}
			}
		})
	}
}

type failWriter struct{ n int }

func (w *failWriter) Write(p []byte) (int, error) {
	w.n++
	return 0, errors.New("disk full")
}

func TestEncodeWriteErrorSticks(t *testing.T) {
	w := &failWriter{}
	enc := NewEncoder(w)
	if err := enc.Encode(&trace.Trace{}); err != nil {
		t.Fatal(err)
	}
	if err := enc.Flush(); err == nil || !strings.Contains(err.Error(), "disk full") {
		t.Fatalf("Flush: %v", err)
	}
	if err := enc.Encode(&trace.Trace{}); err == nil {
		t.Fatalf("Encode after a write error succeeded")
	}
	if err := enc.Flush(); err == nil || w.n != 1 {
		t.Fatalf("Flush again: %v after %d writes", err, w.n)
	}
}

// TestEncodeAnyFormat round-trips traces of the kinds every format decoder
// produces: events derived from spans, trees with times and statuses, list
// content with images, annotations, extra members everywhere.
func TestEncodeAnyFormat(t *testing.T) {
	t0 := time.Date(2025, 6, 11, 9, 30, 0, 123456789, time.UTC)
	traces := []*trace.Trace{
		{ // a hierarchical trace (MLflow, Bedrock, Snorkel): spans and derived events
			ID: "tr-1", Name: "agent run", Metadata: json.RawMessage(`{"model":"m","tokens":12}`),
			Spans: []trace.Span{
				{ID: "root", Name: "agent", Kind: "AGENT", Start: t0, End: t0.Add(time.Second), Status: "OK", Attributes: json.RawMessage(`{"a":[1,2]}`), Inputs: json.RawMessage(`"q"`), Outputs: json.RawMessage(`{"answer":"x"}`), Execution: "parallel"},
				{ID: "tool-1", ParentID: "root", Name: "search", Kind: "TOOL", Start: t0.Add(10 * time.Millisecond), Status: "ERROR", StatusMessage: "timeout", Value: json.RawMessage(`3.5`), Extra: trace.Fields{{Key: "parts", Value: json.RawMessage(`[{"x":1}]`)}}},
			},
			Events: []trace.Event{
				{Role: "user", Content: trace.TextContent("q"), SpanID: "root"},
				{Role: "assistant", ToolCalls: []trace.ToolCall{{ID: "c1", Type: "function", Function: trace.Function{Name: "search", Arguments: json.RawMessage(`"not json"`), Extra: trace.Fields{{Key: "strict", Value: json.RawMessage(`true`)}}}, Extra: trace.Fields{{Key: "index", Value: json.RawMessage(`0`)}}}}, SpanID: "tool-1"},
				{Role: "tool", Content: trace.Content{Kind: trace.ContentParts, Parts: []trace.Part{{Type: "text", Text: "found"}, {Type: "image", Extra: trace.Fields{{Key: "image_url", Value: json.RawMessage(`{"url":"data:image/png;base64,AAAA"}`)}}}}}, ToolCallID: "c1", SpanID: "tool-1"},
				{Role: "assistant", Content: trace.TextContent("a\u2028b \x01 \"q\" é"), Extra: trace.Fields{{Key: "refusal", Value: json.RawMessage(`null`)}}},
			},
			Annotations: []trace.Annotation{{Address: "spans.tool-1.attributes.a", Content: "slow"}, {Address: "messages.1", Content: "", Extra: trace.Fields{{Key: "extra_metadata", Value: json.RawMessage(`{"source":"policy"}`)}}}},
			Extra:       trace.Fields{{Key: "hierarchy_path", Value: json.RawMessage(`["a","b"]`)}, {Key: "x", Value: json.RawMessage(`null`)}},
		},
		{ // a trace with no events and no metadata
			Spans: []trace.Span{{ID: "only"}},
		},
		{ // an empty trace
		},
		{ // empty containers that canonical JSON leaves out
			Events:      []trace.Event{{Role: "user", Content: trace.Content{Kind: trace.ContentParts, Parts: []trace.Part{}}, Extra: trace.Fields{{Key: "tool_calls", Value: json.RawMessage(`[]`)}}}},
			Annotations: []trace.Annotation{}, Spans: []trace.Span{}, Metadata: json.RawMessage(`{}`),
		},
	}
	roundTrip(t, traces, json.RawMessage(`{"source":"test"}`))
	roundTrip(t, traces[:1], nil)
	roundTrip(t, traces[2:3], nil)
}
