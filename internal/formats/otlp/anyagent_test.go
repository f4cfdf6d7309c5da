package otlp

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/big"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/lookout-dev/lookout/internal/testcorpus"
	"github.com/lookout-dev/lookout/internal/trace"
)

// rawAnyAgent is an any-agent dump read with encoding/json, numbers kept as
// text so that math/big can read the ids.
type rawAnyAgent struct {
	Spans []struct {
		Name    string `json:"name"`
		Context struct {
			TraceID json.Number `json:"trace_id"`
			SpanID  json.Number `json:"span_id"`
		} `json:"context"`
		Parent *struct {
			SpanID *json.Number `json:"span_id"`
		} `json:"parent"`
		Attributes map[string]any `json:"attributes"`
	} `json:"spans"`
}

func bigHex(t *testing.T, n json.Number, digits int) string {
	t.Helper()
	b, ok := new(big.Int).SetString(n.String(), 10)
	if !ok {
		t.Fatalf("id %s is not an integer", n)
	}
	return fmt.Sprintf("%0*x", digits, b)
}

// TestAnyAgentExact: the any-agent span dumps import with exact ids (128-bit
// trace ids and 64-bit span ids beyond float64's precision), exact parents,
// and one tool call and one tool output per tool the model called, in
// order, with the ids of the tool spans. The expectations are computed
// from the raw JSON with encoding/json and math/big, independently of the
// decoder.
func TestAnyAgentExact(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join(testcorpus.Dir(t), "otel/any-agent/*.json"))
	if len(files) != 7 {
		t.Fatalf("found %d any-agent dumps, want 7", len(files))
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			data, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			var raw rawAnyAgent
			jd := json.NewDecoder(bytes.NewReader(data))
			jd.UseNumber()
			if err := jd.Decode(&raw); err != nil {
				t.Fatal(err)
			}
			wantTrace := ""
			wantParent := map[string]string{}
			var wantCalls []string         // tool names the models called, in order
			wantOutputs := 0               // execute_tool spans
			callIDs := map[string]string{} // tool name -> gen_ai.tool.call.id, when given
			for _, sp := range raw.Spans {
				tid := bigHex(t, sp.Context.TraceID, 32)
				if wantTrace == "" {
					wantTrace = tid
				} else if tid != wantTrace {
					t.Fatalf("the dump holds two traces")
				}
				parent := ""
				if sp.Parent != nil && sp.Parent.SpanID != nil {
					parent = bigHex(t, *sp.Parent.SpanID, 16)
				}
				wantParent[bigHex(t, sp.Context.SpanID, 16)] = parent
				switch sp.Attributes["gen_ai.operation.name"] {
				case "call_llm":
					if sp.Attributes["gen_ai.output.type"] != "json" {
						continue
					}
					var out any
					if json.Unmarshal([]byte(sp.Attributes["gen_ai.output"].(string)), &out) != nil {
						continue
					}
					if l, ok := out.([]any); ok {
						for _, c := range l {
							wantCalls = append(wantCalls, c.(map[string]any)["tool.name"].(string))
						}
					}
				case "execute_tool":
					wantOutputs++
					if id, ok := sp.Attributes["gen_ai.tool.call.id"].(string); ok {
						callIDs[sp.Attributes["gen_ai.tool.name"].(string)] = id
					}
				}
			}
			if len(wantCalls) == 0 || wantOutputs == 0 {
				t.Fatalf("the dump has no tool calls (%d) or outputs (%d)", len(wantCalls), wantOutputs)
			}

			dec := NewDecoder(bytes.NewReader(data), filepath.Base(f))
			tr, err := dec.Next()
			if err != nil {
				t.Fatal(err)
			}
			if _, err := dec.Next(); !errors.Is(err, io.EOF) {
				t.Fatalf("a second trace or an error: %v", err)
			}
			if tr.ID != wantTrace {
				t.Errorf("trace id %s, want %s", tr.ID, wantTrace)
			}
			if len(tr.Spans) != len(wantParent) {
				t.Errorf("%d spans, want %d", len(tr.Spans), len(wantParent))
			}
			for _, sp := range tr.Spans {
				p, ok := wantParent[sp.ID]
				if !ok {
					t.Errorf("span id %s is not in the dump", sp.ID)
				} else if sp.ParentID != p {
					t.Errorf("span %s: parent %q, want %q", sp.ID, sp.ParentID, p)
				}
			}
			var gotCalls []string
			ids := map[string]bool{}
			outputs := 0
			for i, e := range tr.Events {
				if _, ok := wantParent[e.SpanID]; !ok {
					t.Errorf("event %d names span %q, not in the dump", i, e.SpanID)
				}
				for _, c := range e.ToolCalls {
					gotCalls = append(gotCalls, c.Function.Name)
					if c.ID == "" || ids[c.ID] {
						t.Errorf("tool call %s has id %q: empty or used twice", c.Function.Name, c.ID)
					}
					ids[c.ID] = true
					if id, ok := callIDs[c.Function.Name]; ok && c.ID != id {
						t.Errorf("tool call %s has id %q, the tool span says %q", c.Function.Name, c.ID, id)
					}
				}
				if e.IsToolOutput() {
					outputs++
					if !ids[e.ToolCallID] {
						t.Errorf("event %d answers %q, which no earlier tool call has", i, e.ToolCallID)
					}
				}
			}
			if !slices.Equal(gotCalls, wantCalls) {
				t.Errorf("tool calls %v, want %v", gotCalls, wantCalls)
			}
			if outputs != wantOutputs {
				t.Errorf("%d tool outputs, want %d", outputs, wantOutputs)
			}
			roles := []string{}
			for _, e := range tr.Events {
				roles = append(roles, e.Role)
			}
			if len(roles) < 3 || roles[0] != "system" || roles[1] != "user" {
				t.Errorf("events %v: want the system prompt and the user's task first", roles)
			}
			if tr.Metadata == nil || !strings.Contains(string(tr.Metadata), `"final_output"`) {
				t.Errorf("metadata %s lacks final_output", tr.Metadata)
			}
			var c trace.Trace
			if err := c.UnmarshalJSON(trace.AppendTrace(nil, tr)); err != nil {
				t.Fatal(err)
			}
		})
	}
}
