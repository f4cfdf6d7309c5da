package bedrock

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"os"
	"sort"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/lookout-dev/lookout/internal/testcorpus"
	"github.com/lookout-dev/lookout/internal/trace"
)

// corpusFiles are the bedrock-agent-events rows of shared/corpus/MANIFEST.md.
var corpusFiles = []string{
	"bedrock/test_invoke_inline_agent.json",
	"bedrock/test_knowledge_base_results.json",
	"bedrock/test_multi_agent_collaborator.json",
	"bedrock/test_post_processing_trace.json",
	"bedrock/test_preprocessing_trace.json",
	"bedrock/test_routing_classifier_trace.json",
	"bedrock/test_streaming_with_guardrails.json",
	"bedrock/test_tool_calls_with_input_params.json",
	"seeds/bedrock-raw-mlflow-blog.json",
	"seeds/bedrock-grouped-mlflow-blog.json",
}

func readCorpus(t testing.TB, name string) []byte {
	t.Helper()
	data, err := os.ReadFile(testcorpus.File(t, name))
	if err != nil {
		t.Fatalf("the shared corpus must sit beside the repository: %v", err)
	}
	return data
}

// decodeOne decodes data, which must hold exactly one trace.
func decodeOne(t testing.TB, data []byte, name string) *trace.Trace {
	t.Helper()
	dec := NewDecoder(bytes.NewReader(data), name)
	tr, err := dec.Next()
	if err != nil {
		t.Fatalf("decode: %v", err)
	}
	if _, err := dec.Next(); !errors.Is(err, io.EOF) {
		t.Fatalf("want exactly one trace, second Next gave %v", err)
	}
	if dec.DatasetMetadata() != nil {
		t.Errorf("dataset metadata %s, want none", dec.DatasetMetadata())
	}
	return tr
}

// genStep is one trace event read with encoding/json, independently of the
// decoder.
type genStep struct {
	name    string         // step name, "" when the phase object is the step (guardrail)
	phase   string         // the key inside "trace" ("" in the grouped form)
	body    map[string]any // the innermost step object
	traceID string
	top     bool // from the invoked agent, not a collaborator
	order   float64
}

type genStream struct {
	steps  []genStep
	chunks []string // chunk bytes as given
}

// genRead reads a Bedrock stream in any of the three forms with generic maps.
func genRead(t *testing.T, data []byte) genStream {
	t.Helper()
	var v any
	if err := json.Unmarshal(data, &v); err != nil {
		t.Fatal(err)
	}
	var gs genStream
	switch x := v.(type) {
	case []any:
		for _, el := range x {
			m := el.(map[string]any)
			typ, payload := "", map[string]any(nil)
			if h, ok := m["headers"].(map[string]any); ok {
				typ, payload = h[":event-type"].(string), m["payload"].(map[string]any)
			} else {
				for _, k := range []string{"trace", "chunk"} {
					if p, ok := m[k].(map[string]any); ok {
						typ, payload = k, p
					}
				}
			}
			switch typ {
			case "chunk":
				gs.chunks = append(gs.chunks, payload["bytes"].(string))
			case "trace":
				chain, _ := payload["callerChain"].([]any)
				_, collab := payload["collaboratorName"]
				tr := payload["trace"].(map[string]any)
				if len(tr) != 1 {
					t.Fatalf("trace with %d kinds", len(tr))
				}
				for phase, po := range tr {
					obj := po.(map[string]any)
					st := genStep{phase: phase, top: !collab && len(chain) <= 1}
					if _, ok := obj["traceId"]; ok {
						st.body = obj
					} else {
						if len(obj) != 1 {
							t.Fatalf("%s with %d steps", phase, len(obj))
						}
						for name, b := range obj {
							st.name, st.body = name, b.(map[string]any)
						}
					}
					st.traceID, _ = st.body["traceId"].(string)
					gs.steps = append(gs.steps, st)
				}
			default:
				t.Fatalf("unexpected event %v", m)
			}
		}
	case map[string]any:
		for key, list := range x {
			for _, it := range list.([]any) {
				m := it.(map[string]any)
				gs.steps = append(gs.steps, genStep{name: m["type"].(string), body: m["data"].(map[string]any),
					traceID: key, top: true, order: m["event_order"].(float64)})
			}
		}
		sort.Slice(gs.steps, func(i, j int) bool { return gs.steps[i].order < gs.steps[j].order })
	}
	return gs
}

var (
	callKeys = []string{"actionGroupInvocationInput", "knowledgeBaseLookupInput", "agentCollaboratorInvocationInput", "codeInterpreterInvocationInput"}
	outKeys  = []string{"actionGroupInvocationOutput", "knowledgeBaseLookupOutput", "agentCollaboratorInvocationOutput", "codeInterpreterInvocationOutput"}
)

func hasAny(m map[string]any, keys []string) bool {
	for _, k := range keys {
		if _, ok := m[k]; ok {
			return true
		}
	}
	return false
}

type expectation struct {
	traceIDs       []string       // distinct, in stream order
	parts          map[string]int // parts per traceId
	inTok          map[string]float64
	calls, outputs int
	events         int
	final          string
	hasFinal       bool
	chunks         int
}

// genExpect counts what the documented mapping must give.
func genExpect(gs genStream, hasUser bool) expectation {
	e := expectation{parts: map[string]int{}, inTok: map[string]float64{}, chunks: len(gs.chunks)}
	prevAsst, prevTrace := false, ""
	lastFinal, hasFinal := "", false
	for _, st := range gs.steps {
		if e.parts[st.traceID] == 0 {
			e.traceIDs = append(e.traceIDs, st.traceID)
		}
		e.parts[st.traceID]++
		if md, ok := st.body["metadata"].(map[string]any); ok && st.name == "modelInvocationOutput" {
			if u, ok := md["usage"].(map[string]any); ok {
				e.inTok[st.traceID] += u["inputTokens"].(float64)
			}
		}
		switch st.name {
		case "rationale":
			if _, ok := st.body["text"].(string); ok {
				e.events++
				prevAsst, prevTrace = true, st.traceID
			}
		case "invocationInput":
			if hasAny(st.body, callKeys) {
				e.calls++
				if !prevAsst || prevTrace != st.traceID {
					e.events++
				}
				prevAsst, prevTrace = true, st.traceID
			}
		case "observation":
			if hasAny(st.body, outKeys) {
				e.outputs++
				e.events++
				prevAsst = false
			}
			if fr, ok := st.body["finalResponse"].(map[string]any); ok && st.top {
				if txt, ok := fr["text"].(string); ok {
					lastFinal, hasFinal = txt, true
				}
			}
		}
	}
	if len(gs.chunks) > 0 {
		var sb strings.Builder
		for _, c := range gs.chunks {
			if b, err := base64.StdEncoding.DecodeString(c); err == nil && utf8.Valid(b) {
				sb.Write(b)
			} else {
				sb.WriteString(c)
			}
		}
		e.final, e.hasFinal = sb.String(), true
	} else {
		e.final, e.hasFinal = lastFinal, hasFinal
	}
	if e.hasFinal {
		e.events++
	}
	if hasUser {
		e.events++
	}
	return e
}

// TestCorpus decodes every Bedrock file of the corpus and checks the result
// three ways: against the figures written here, against the counts computed
// from the raw JSON with encoding/json, and against the model's invariants.
func TestCorpus(t *testing.T) {
	const (
		orch = "orchestration"
		coll = "collaborator"
	)
	tests := []struct {
		file                                 string
		spans, events, toolCalls, toolOutput int
		kinds                                []string // kinds of the spans after the root
		user                                 string   // "" when none can be found reliably
	}{
		{"bedrock/test_invoke_inline_agent.json", 2, 3, 0, 0, []string{orch}, "who is US President in 2001?"},
		{"bedrock/test_knowledge_base_results.json", 4, 4, 1, 1, []string{orch, orch, orch}, "What is task decomposition?"},
		{"bedrock/test_multi_agent_collaborator.json", 10, 12, 2, 2, []string{orch, coll, coll, coll, coll, coll, coll, coll, orch}, "Find the sum of 1, 2, 3, 4, 5, 6, 7, 8, 9, and 10."},
		{"bedrock/test_post_processing_trace.json", 3, 3, 0, 0, []string{orch, "post-processing"}, "What is best time to visit the Taj Mahal?"},
		{"bedrock/test_preprocessing_trace.json", 3, 3, 0, 0, []string{"pre-processing", orch}, "What is best time to visit the Taj Mahal?"},
		{"bedrock/test_routing_classifier_trace.json", 3, 3, 0, 0, []string{"routing", orch}, "What is 1 + 1?"},
		{"bedrock/test_streaming_with_guardrails.json", 4, 3, 0, 0, []string{"guardrail", orch, "guardrail"}, "Find the sum of 1, 2, 3, 4, 5, 6, 7, 8, 9, and 10."},
		{"bedrock/test_tool_calls_with_input_params.json", 3, 5, 1, 1, []string{orch, orch}, "Find the sum of 10 and 20"},
		{"seeds/bedrock-raw-mlflow-blog.json", 4, 3, 1, 1, []string{"pre-processing", orch, orch}, ""},
		{"seeds/bedrock-grouped-mlflow-blog.json", 4, 3, 1, 1, []string{"pre-processing", orch, orch}, ""},
	}
	if len(tests) != len(corpusFiles) {
		t.Fatalf("%d cases for %d corpus files", len(tests), len(corpusFiles))
	}
	for _, tc := range tests {
		t.Run(tc.file, func(t *testing.T) {
			data := readCorpus(t, tc.file)
			tr := decodeOne(t, data, tc.file)
			want := genExpect(genRead(t, data), tc.user != "")
			st := tr.Stats()

			// The figures written here agree with the independent count...
			if tc.spans != 1+len(want.traceIDs) || tc.events != want.events || tc.toolCalls != want.calls || tc.toolOutput != want.outputs {
				t.Fatalf("table says spans/events/calls/outputs %d/%d/%d/%d, the raw JSON gives %d/%d/%d/%d",
					tc.spans, tc.events, tc.toolCalls, tc.toolOutput, 1+len(want.traceIDs), want.events, want.calls, want.outputs)
			}
			// ... and with the decoder.
			if st.Spans != tc.spans || st.Events != tc.events || st.ToolCalls != tc.toolCalls || st.ToolOutputs != tc.toolOutput {
				t.Fatalf("decoded spans/events/calls/outputs %d/%d/%d/%d, want %d/%d/%d/%d",
					st.Spans, st.Events, st.ToolCalls, st.ToolOutputs, tc.spans, tc.events, tc.toolCalls, tc.toolOutput)
			}

			// Spans: the root, then one per traceId in stream order, each under the root.
			root := tr.Spans[0]
			if root.ID != "root" || root.ParentID != "" || root.Kind != "invocation" {
				t.Fatalf("first span %+v is not the root", root)
			}
			for i, sp := range tr.Spans[1:] {
				if sp.ParentID != "root" {
					t.Errorf("span %s has parent %q, want root", sp.ID, sp.ParentID)
				}
				if sp.ID != want.traceIDs[i] {
					t.Errorf("span %d is %q, want traceId %q", i+1, sp.ID, want.traceIDs[i])
				}
				if sp.Kind != tc.kinds[i] {
					t.Errorf("span %s kind %q, want %q", sp.ID, sp.Kind, tc.kinds[i])
				}
				if !strings.HasSuffix(sp.Name, " "+want.traceIDs[i]) {
					t.Errorf("span name %q does not name its traceId", sp.Name)
				}
				if n := countList(t, sp.Extra.Get("parts")); n != want.parts[sp.ID] {
					t.Errorf("span %s keeps %d parts, the stream has %d", sp.ID, n, want.parts[sp.ID])
				}
				if got := attrNumber(t, sp.Attributes, "inputTokens"); got != want.inTok[sp.ID] {
					t.Errorf("span %s inputTokens %v, want %v", sp.ID, got, want.inTok[sp.ID])
				}
				if !sp.Start.IsZero() && sp.End.Before(sp.Start) {
					t.Errorf("span %s ends before it starts", sp.ID)
				}
			}
			if n := countList(t, root.Extra.Get("chunks")); n != want.chunks {
				t.Errorf("root keeps %d chunks, the stream has %d", n, want.chunks)
			}
			checkInvariants(t, tr)

			// The user's input first, the final answer last.
			if tc.user != "" {
				if e := tr.Events[0]; e.Role != "user" || e.Content.Text != tc.user {
					t.Errorf("first event %s %q, want the user's %q", e.Role, e.Content.Text, tc.user)
				}
			} else if tr.Events[0].Role == "user" {
				t.Errorf("unexpected user message %q", tr.Events[0].Content.Text)
			}
			if want.hasFinal {
				last := tr.Events[len(tr.Events)-1]
				if last.Role != "assistant" || last.Content.Text != want.final || len(last.ToolCalls) != 0 {
					t.Errorf("last event %s %q, want the final answer %q", last.Role, clip(last.Content.Text), clip(want.final))
				}
			}
			roundTrip(t, tr)
		})
	}
}

// checkInvariants holds for every decoded trace.
func checkInvariants(t *testing.T, tr *trace.Trace) {
	t.Helper()
	ids := map[string]bool{}
	for _, sp := range tr.Spans {
		if strings.ContainsAny(sp.ID, ".:[]") || sp.ID == "" {
			t.Errorf("span id %q cannot stand in an address", sp.ID)
		}
		if ids[sp.ID] {
			t.Errorf("span id %q twice", sp.ID)
		}
		if sp.ParentID != "" && !ids[sp.ParentID] {
			t.Errorf("span %q comes before its parent %q", sp.ID, sp.ParentID)
		}
		ids[sp.ID] = true
	}
	calls := map[string]bool{}
	for i, e := range tr.Events {
		if !ids[e.SpanID] {
			t.Errorf("event %d names span %q, which does not exist", i, e.SpanID)
		}
		for _, c := range e.ToolCalls {
			if calls[c.ID] {
				t.Errorf("tool call id %q twice", c.ID)
			}
			calls[c.ID] = true
			if !json.Valid(c.Function.Arguments) || c.Function.Arguments[0] != '{' {
				t.Errorf("tool call %s arguments %s are not an object", c.ID, c.Function.Arguments)
			}
		}
		if e.Role == "tool" && e.ToolCallID != "" && !calls[e.ToolCallID] {
			t.Errorf("event %d answers %q, which was not called before", i, e.ToolCallID)
		}
	}
}

// roundTrip requires canonical JSON to read back to the same bytes.
func roundTrip(t testing.TB, tr *trace.Trace) {
	t.Helper()
	a := trace.AppendTrace(nil, tr)
	var back trace.Trace
	if err := back.UnmarshalJSON(a); err != nil {
		t.Fatalf("canonical JSON does not read back: %v\n%s", err, clip(string(a)))
	}
	if b := trace.AppendTrace(nil, &back); !bytes.Equal(a, b) {
		t.Fatalf("canonical round trip changed the trace:\n%s\n%s", clip(string(a)), clip(string(b)))
	}
}

func countList(t *testing.T, raw json.RawMessage) int {
	t.Helper()
	if raw == nil {
		return 0
	}
	var l []json.RawMessage
	if err := json.Unmarshal(raw, &l); err != nil {
		t.Fatalf("not a list: %s", clip(string(raw)))
	}
	return len(l)
}

func attrNumber(t *testing.T, attrs json.RawMessage, key string) float64 {
	t.Helper()
	if attrs == nil {
		return 0
	}
	var m map[string]any
	if err := json.Unmarshal(attrs, &m); err != nil {
		t.Fatal(err)
	}
	f, _ := m[key].(float64)
	return f
}

func attrs(t *testing.T, raw json.RawMessage) map[string]any {
	t.Helper()
	m := map[string]any{}
	if raw != nil {
		if err := json.Unmarshal(raw, &m); err != nil {
			t.Fatal(err)
		}
	}
	return m
}

func clip(s string) string {
	if len(s) > 300 {
		return s[:300] + "..."
	}
	return s
}

// TestBlogRawMatchesGrouped: the raw SDK list of the MLflow blog and its
// grouped form give the same groups, with the same parts in the same order.
func TestBlogRawMatchesGrouped(t *testing.T) {
	raw := decodeOne(t, readCorpus(t, "seeds/bedrock-raw-mlflow-blog.json"), "raw")
	grouped := decodeOne(t, readCorpus(t, "seeds/bedrock-grouped-mlflow-blog.json"), "grouped")
	if len(raw.Spans) != len(grouped.Spans) {
		t.Fatalf("%d spans from the raw list, %d from the grouped form", len(raw.Spans), len(grouped.Spans))
	}
	for i := 1; i < len(raw.Spans); i++ {
		r, g := raw.Spans[i], grouped.Spans[i]
		if r.ID != g.ID || r.Kind != g.Kind {
			t.Errorf("span %d: raw %s (%s), grouped %s (%s)", i, r.ID, r.Kind, g.ID, g.Kind)
		}
		ro, go_ := partOrders(t, r.Extra.Get("parts"), true), partOrders(t, g.Extra.Get("parts"), false)
		if len(ro) == 0 || !equalInts(ro, go_) {
			t.Errorf("span %s: raw parts in order %v, grouped %v", r.ID, ro, go_)
		}
	}
	if raw.ID != grouped.ID || raw.ID != "ca9880a2-dae7-46ac-a480-f38ca7e2d99f" {
		t.Errorf("trace ids %q and %q", raw.ID, grouped.ID)
	}
	rs, gs := raw.Stats(), grouped.Stats()
	if rs != gs {
		t.Errorf("raw stats %+v, grouped %+v", rs, gs)
	}
	// The raw list's final answer is its chunk, given as plain text.
	var doc []map[string]json.RawMessage
	if err := json.Unmarshal(readCorpus(t, "seeds/bedrock-raw-mlflow-blog.json"), &doc); err != nil {
		t.Fatal(err)
	}
	var chunk struct{ Bytes string }
	if err := json.Unmarshal(doc[len(doc)-1]["chunk"], &chunk); err != nil || chunk.Bytes == "" {
		t.Fatalf("last element is not a chunk: %v", err)
	}
	last := raw.Events[len(raw.Events)-1]
	if last.Role != "assistant" || last.Content.Text != chunk.Bytes {
		t.Errorf("final answer %q, want the chunk text %q", last.Content.Text, chunk.Bytes)
	}
	// The grouped form has no chunk; its answer is the finalResponse, the same text.
	if g := grouped.Events[len(grouped.Events)-1]; g.Content.Text != chunk.Bytes {
		t.Errorf("grouped final answer %q, want %q", g.Content.Text, chunk.Bytes)
	}
}

// partOrders lists the event_order of kept parts: in the raw list it sits in
// the trace payload, in the grouped form beside data.
func partOrders(t *testing.T, parts json.RawMessage, rawForm bool) []int {
	t.Helper()
	var l []struct {
		Trace struct {
			EventOrder *int `json:"event_order"`
		} `json:"trace"`
		EventOrder *int `json:"event_order"`
	}
	if err := json.Unmarshal(parts, &l); err != nil {
		t.Fatal(err)
	}
	var out []int
	for _, p := range l {
		o := p.EventOrder
		if rawForm {
			o = p.Trace.EventOrder
		}
		if o == nil {
			t.Fatalf("part without event_order")
		}
		out = append(out, *o)
	}
	return out
}

func equalInts(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestStreamingChunks: the five chunks of the streaming file, base64-decoded
// and concatenated, are the final assistant message.
func TestStreamingChunks(t *testing.T) {
	data := readCorpus(t, "bedrock/test_streaming_with_guardrails.json")
	var frames []struct {
		Headers map[string]string
		Payload struct{ Bytes string }
	}
	if err := json.Unmarshal(data, &frames); err != nil {
		t.Fatal(err)
	}
	var want strings.Builder
	n := 0
	for _, f := range frames {
		if f.Headers[":event-type"] != "chunk" {
			continue
		}
		b, err := base64.StdEncoding.DecodeString(f.Payload.Bytes)
		if err != nil {
			t.Fatalf("chunk %d is not base64: %v", n, err)
		}
		want.Write(b)
		n++
	}
	if n != 5 {
		t.Fatalf("%d chunks, the manifest says 5", n)
	}
	tr := decodeOne(t, data, "streaming")
	last := tr.Events[len(tr.Events)-1]
	if last.Role != "assistant" || last.Content.Text != want.String() {
		t.Fatalf("final message %q, want %q", last.Content.Text, want.String())
	}
	if want.String() != "The sum of 1, 2, 3, 4, 5, 6, 7, 8, 9, and 10 is 55.\n" {
		t.Errorf("chunks decode to %q", want.String())
	}
	// It equals the orchestration's finalResponse, so it is given once, in that span.
	if last.SpanID != "9197b92e-e3c6-4cc6-9df4-9fc7cc00c4bb-0" {
		t.Errorf("final message in span %q", last.SpanID)
	}
	for _, e := range tr.Events[:len(tr.Events)-1] {
		if e.Content.Text == want.String() {
			t.Errorf("the final answer appears twice")
		}
	}
}

// TestPostProcessedAnswer: when post-processing rewrote the answer, the final
// message is what the user received (the chunk), in the post-processing span,
// and the orchestration's own answer stays in its span's attributes.
func TestPostProcessedAnswer(t *testing.T) {
	tr := decodeOne(t, readCorpus(t, "bedrock/test_post_processing_trace.json"), "post")
	last := tr.Events[len(tr.Events)-1]
	post := tr.Spans[2]
	if post.Kind != "post-processing" || last.SpanID != post.ID {
		t.Fatalf("final message in span %q, want the post-processing span %q", last.SpanID, post.ID)
	}
	if got := attrs(t, post.Attributes)["response"]; got != last.Content.Text {
		t.Errorf("post-processing response %q differs from the final message", got)
	}
	orch := attrs(t, tr.Spans[1].Attributes)["finalResponse"].(string)
	if orch == last.Content.Text || !strings.HasPrefix(orch, "The best time to visit the Taj Mahal") {
		t.Errorf("orchestration finalResponse %q", clip(orch))
	}
}

// TestKnowledgeBase checks the KB lookup tool call and its output, and that
// the chunk's citations are kept.
func TestKnowledgeBase(t *testing.T) {
	tr := decodeOne(t, readCorpus(t, "bedrock/test_knowledge_base_results.json"), "kb")
	call := tr.Events[1].ToolCalls[0]
	if call.Function.Name != "knowledge_base__SSGLURQ9A5" || string(call.Function.Arguments) != `{"query":"What is task decomposition?"}` {
		t.Errorf("KB call %s %s", call.Function.Name, call.Function.Arguments)
	}
	if call.ID != "7fc9fdb8-204f-4ef9-bc55-59257d478f30-0-call-0" {
		t.Errorf("call id %q", call.ID)
	}
	out := tr.Events[2]
	var refs []struct {
		Content struct{ Text string }
	}
	if err := json.Unmarshal([]byte(out.Content.Text), &refs); err != nil || len(refs) == 0 || !strings.HasPrefix(refs[0].Content.Text, "Fig. 1.") {
		t.Errorf("KB output is not the references' JSON: %v %s", err, clip(out.Content.Text))
	}
	if out.ToolCallID != call.ID {
		t.Errorf("output answers %q", out.ToolCallID)
	}
	var md struct {
		Attribution struct {
			Citations []json.RawMessage
		}
	}
	if err := json.Unmarshal(tr.Metadata, &md); err != nil || len(md.Attribution.Citations) == 0 {
		t.Errorf("metadata lacks the chunk's citations: %v %s", err, clip(string(tr.Metadata)))
	}
}

// TestMultiAgent checks collaborator spans, their tool calls and outputs.
func TestMultiAgent(t *testing.T) {
	tr := decodeOne(t, readCorpus(t, "bedrock/test_multi_agent_collaborator.json"), "multi")
	var md map[string]any
	if err := json.Unmarshal(tr.Metadata, &md); err != nil {
		t.Fatal(err)
	}
	if md["agentId"] != "2X9SRVPLWB" || md["sessionId"] != "12345680" {
		t.Errorf("metadata %v: want the top-level agent", md)
	}
	if s, _ := md["sessionIds"].([]any); len(s) != 2 {
		t.Errorf("sessionIds %v, want 2", md["sessionIds"])
	}
	c := attrs(t, tr.Spans[2].Attributes)
	if c["collaboratorName"] != "SimpleSupervisor" || c["agentId"] != "KZJDL3ZYQR" || c["phase"] != "orchestration" {
		t.Errorf("collaborator span attributes %v", c)
	}
	var names []string
	answered := map[string]string{}
	for _, e := range tr.Events {
		for _, tc := range e.ToolCalls {
			names = append(names, tc.Function.Name)
		}
		if e.Role == "tool" {
			answered[e.ToolCallID] = e.Content.Text
		}
	}
	if strings.Join(names, ",") != "collaborator__SimpleSupervisor,collaborator__MathSolverAgent" {
		t.Errorf("tool calls %v", names)
	}
	if answered["203bd987-ced4-4ddd-a370-633c8b668e7f-0-call-0"] != "The sum of the numbers 1, 2, 3, 4, 5, 6, 7, 8, 9, and 10 is 55." {
		t.Errorf("supervisor call answered with %q", answered["203bd987-ced4-4ddd-a370-633c8b668e7f-0-call-0"])
	}
}

// TestRoundTripCorpus: decode → AppendTrace → UnmarshalJSON → AppendTrace is
// byte-identical for every file.
func TestRoundTripCorpus(t *testing.T) {
	for _, f := range corpusFiles {
		roundTrip(t, decodeOne(t, readCorpus(t, f), f))
	}
}

func BenchmarkDecode(b *testing.B) {
	var inputs [][]byte
	total := 0
	for _, f := range corpusFiles {
		data := readCorpus(b, f)
		inputs = append(inputs, data)
		total += len(data)
	}
	b.SetBytes(int64(total))
	b.ReportAllocs()
	for b.Loop() {
		for _, data := range inputs {
			dec := NewDecoder(bytes.NewReader(data), "bench")
			if _, err := dec.Next(); err != nil {
				b.Fatal(err)
			}
		}
	}
}
