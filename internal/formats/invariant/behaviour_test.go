package invariant

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/lookout-dev/lookout/internal/trace"
)

// one decodes a valid corpus file.
func one(t *testing.T, name string) decoded {
	t.Helper()
	got := decodeAll(t, readCorpus(t, name), name)
	if len(got.errs) > 0 {
		t.Fatalf("%s: %v", name, got.errs)
	}
	return got
}

func extraKeys(f trace.Fields) []string {
	var ks []string
	for _, x := range f {
		ks = append(ks, x.Key)
	}
	return ks
}

// TestManifestBehaviours holds the behaviours MANIFEST.md names.
func TestManifestBehaviours(t *testing.T) {
	t.Run("string arguments that parse become an object; refusal null kept", func(t *testing.T) {
		tr := one(t, "openai/explorer/trace_with_json_parseable_tool_call_arguments.jsonl").traces[0]
		e := tr.Events[2]
		if got := string(e.ToolCalls[0].Function.Arguments); got != `{"country_name":"France"}` {
			t.Errorf("arguments %s", got)
		}
		if got := string(e.Extra.Get("refusal")); got != "null" {
			t.Errorf("refusal %q, want null kept", got)
		}
		if e.Content.Kind != trace.ContentNull {
			t.Errorf("content kind %v, want null", e.Content.Kind)
		}
	})
	t.Run("non-JSON string arguments kept verbatim", func(t *testing.T) {
		tr := one(t, "openai/explorer/trace_with_non_json_parseable_tool_call_arguments.jsonl").traces[0]
		args := tr.Events[2].ToolCalls[0].Function.Arguments
		var s string
		if err := json.Unmarshal(args, &s); err != nil {
			t.Fatalf("arguments %s are not kept as a string: %v", args, err)
		}
		if s != `["fiction", "mystery"], ["Agatha Christie", "Dan Brown"]` {
			t.Errorf("arguments text %q", s)
		}
	})
	t.Run("indices 5 and 812 kept, role user2 kept, no invented name", func(t *testing.T) {
		got := one(t, "openai/explorer/correct_indices_present.jsonl")
		if len(got.traces) != 2 || got.traces[0].Index == nil || *got.traces[0].Index != 5 || got.traces[1].Index == nil || *got.traces[1].Index != 812 {
			t.Fatalf("indices wrong: %+v", got.traces)
		}
		if r := got.traces[1].Events[0].Role; r != "user2" {
			t.Errorf("role %q, want user2", r)
		}
		for _, tr := range got.traces {
			if tr.Name != "" {
				t.Errorf("name %q invented", tr.Name)
			}
		}
		if !strings.Contains(string(got.meta), "indices are picked from the file") {
			t.Errorf("dataset metadata %s", got.meta)
		}
	})
	t.Run("the 270 KB image line of sample_data.jsonl", func(t *testing.T) {
		got := one(t, "openai/explorer/sample_data.jsonl")
		if len(got.traces) != 3 {
			t.Fatalf("%d traces", len(got.traces))
		}
		img := got.traces[2].Events[3]
		if img.Role != "tool" || !strings.HasPrefix(img.Content.Text, "local_base64_img: ") || len(img.Content.Text) < 270000 {
			t.Errorf("image event: role %q, %d bytes of content starting %.30q", img.Role, len(img.Content.Text), img.Content.Text)
		}
		// Tool calls without an id, arguments as object and as string.
		if c := got.traces[2].Events[1].ToolCalls[0]; c.ID != "" || string(c.Function.Arguments) != `{"url":"https://invariantlabs.ai"}` {
			t.Errorf("call %+v", c)
		}
		if a := string(got.traces[1].Events[1].ToolCalls[0].Function.Arguments); a != `{"category":"different","count":2}` {
			t.Errorf("string arguments not parsed: %s", a)
		}
	})
	t.Run("export record keeps id, index and server keys in order", func(t *testing.T) {
		tr := one(t, "openai/explorer/code.jsonl").traces[0]
		if tr.ID != "899af25c-3888-49b9-8f46-9309c7fa1b8e" || tr.Index == nil || *tr.Index != 1 {
			t.Errorf("id %q index %v", tr.ID, tr.Index)
		}
		if got := strings.Join(extraKeys(tr.Extra), ","); got != "dataset,user_id,user,extra_metadata,time_created" {
			t.Errorf("extra keys %s", got)
		}
	})
	t.Run("metadata line with tool_calls is dataset metadata; tool_calls null kept", func(t *testing.T) {
		got := one(t, "openai/explorer/trace_for_analysis.jsonl")
		if !strings.Contains(string(got.meta), `"tool_calls":{"get_most_recent_transactions"`) {
			t.Errorf("dataset metadata %.200s", got.meta)
		}
		tr := got.traces[0]
		last := tr.Events[len(tr.Events)-1]
		if string(last.Extra.Get("tool_calls")) != "null" {
			t.Errorf("tool_calls null not kept: %v", extraKeys(last.Extra))
		}
		if got := strings.Join(extraKeys(tr.Events[3].Extra), ","); got != "tool_call,error" {
			t.Errorf("tool message extra keys %s", got)
		}
	})
	t.Run("annotations, and an empty list", func(t *testing.T) {
		got := one(t, "openai/explorer/with_annotations.jsonl")
		a := got.traces[0].Annotations
		if len(a) != 1 || a[0].Address != "messages[0]" || a[0].Content != "hi there" || len(got.traces[1].Annotations) != 0 {
			t.Errorf("annotations %+v / %+v", a, got.traces[1].Annotations)
		}
		if got.traces[0].ID != got.traces[1].ID {
			t.Errorf("the shared id is not kept")
		}
	})
	t.Run("tool calls with an extra index key", func(t *testing.T) {
		tr := one(t, "openai/explorer/line_numbers.jsonl").traces[0]
		if got := string(tr.Events[2].ToolCalls[0].Extra.Get("index")); got != "1" {
			t.Errorf("tool call index %q", got)
		}
	})
	t.Run("tau-bench: runs, metadata, string args, tool message names", func(t *testing.T) {
		got := one(t, "openai/tau-bench/gpt-4o-airline.json")
		nulls := 0
		for _, tr := range got.traces {
			for _, e := range tr.Events {
				if e.Content.Kind == trace.ContentNull {
					nulls++
				}
				if e.Role == "tool" && (e.ToolCallID == "" || e.Extra.Get("name") == nil) {
					t.Fatalf("tool message without id or name: %+v", e)
				}
			}
		}
		if nulls != 1074 {
			t.Errorf("%d null contents, manifest says 1074", nulls)
		}
		tr := got.traces[0]
		if !strings.HasPrefix(string(tr.Metadata), `{"task_id":0,"reward":0.0,"info":{`) || !strings.HasSuffix(string(tr.Metadata), `,"trial":0}`) {
			t.Errorf("metadata %.80s ... %s", tr.Metadata, tr.Metadata[len(tr.Metadata)-20:])
		}
		for _, e := range tr.Events {
			for _, c := range e.ToolCalls {
				if c.Function.Arguments[0] != '{' {
					t.Errorf("arguments not parsed to an object: %s", c.Function.Arguments)
				}
			}
		}
	})
	t.Run("seeds: a single event, and an event list", func(t *testing.T) {
		tr := one(t, "seeds/invariant-email-toolcall.json").traces[0]
		c := tr.Events[0].ToolCalls[0]
		if len(tr.Events) != 1 || c.ID != "" || string(c.Function.Arguments) != `{"to":"mom@mail.com","subject":"Running late, sorry!"}` {
			t.Errorf("email trace %+v", tr.Events)
		}
		inbox := one(t, "seeds/invariant-inbox.json").traces[0]
		if inbox.Events[2].ToolCallID != "1" || !strings.Contains(inbox.Events[2].Content.Text, "Date: 2024-01-0,") {
			t.Errorf("inbox tool output %+v", inbox.Events[2])
		}
	})
}

func TestSWEAgent(t *testing.T) {
	got := one(t, "openai/swe-agent/marshmallow-1867__function_calling.traj")
	tr := got.traces[0]
	if len(tr.Events) != 24 || len(tr.Spans) != 11 {
		t.Fatalf("%d events, %d spans", len(tr.Events), len(tr.Spans))
	}
	call, out := tr.Events[2], tr.Events[3]
	if call.ToolCalls[0].ID != "call_cyI71DYnRdoLHWwtZgIaW2wr" || string(call.ToolCalls[0].Function.Arguments) != `{"filename":"reproduce.py"}` {
		t.Errorf("call %+v", call.ToolCalls[0])
	}
	if out.ToolCallID != call.ToolCalls[0].ID {
		t.Errorf("tool result points to %q, want %q", out.ToolCallID, call.ToolCalls[0].ID)
	}
	if got := strings.Join(extraKeys(out.Extra), ","); got != "message_type,agent,tool_call_ids" {
		t.Errorf("tool result extra %s", got)
	}
	if got := strings.Join(extraKeys(call.Extra), ","); got != "message_type,thought,action,agent" {
		t.Errorf("action extra %s", got)
	}
	sp := tr.Spans[0]
	if sp.ID != "step-0" || sp.Kind != "swe-agent.step" || sp.Name != "create" || sp.ParentID != "" {
		t.Errorf("span %s %s %s", sp.ID, sp.Kind, sp.Name)
	}
	if !strings.HasPrefix(string(sp.Attributes), `{"execution_time":0.2396368359986809,"state":{"open_file":"/testbed/reproduce.py"`) {
		t.Errorf("attributes %s", sp.Attributes)
	}
	if !strings.HasPrefix(string(sp.Inputs), `{"action":"create reproduce.py","response":"Let's first`) || !strings.Contains(string(sp.Inputs), `"thought":"Let's first`) {
		t.Errorf("inputs %.200s", sp.Inputs)
	}
	if string(sp.Outputs) != `"[File: reproduce.py (1 lines total)]\r\n1:"` {
		t.Errorf("outputs %s", sp.Outputs)
	}
	for i, sp := range tr.Spans {
		if sp.ID != "step-"+itoa(int64(i)) {
			t.Errorf("span %d id %s", i, sp.ID)
		}
	}
	meta := string(tr.Metadata)
	for _, k := range []string{`"environment":"main"`, `"submission":"\r\ndiff`, `"exit_status":`, `"model_stats":`, `"replay_config":{`} {
		if !strings.Contains(meta, k) {
			t.Errorf("metadata lacks %s", k)
		}
	}
	for _, k := range []string{`"history"`, `"trajectory"`, `"info"`} {
		if strings.Contains(meta[:min(len(meta), 200)], k) {
			t.Errorf("metadata has %s", k)
		}
	}
	if !strings.HasPrefix(meta, `{"environment":"main","submission":`) {
		t.Errorf("metadata does not keep input order: %.60s", meta)
	}

	// Each step of *_replace_from_source carries the prompt in "messages".
	rs := one(t, "openai/swe-agent/marshmallow-1867__function_calling_replace_from_source.traj").traces[0]
	if !strings.Contains(string(rs.Spans[0].Inputs), `"messages":[{"role":"system"`) || rs.Spans[0].Name != "ls" {
		t.Errorf("step inputs %.100s, name %s", rs.Spans[0].Inputs, rs.Spans[0].Name)
	}
	simple := one(t, "openai/swe-agent/function_calling_simple.traj").traces[0]
	if simple.Metadata != nil || len(simple.Spans) != 0 || len(simple.Events) != 12 {
		t.Errorf("history-only file: metadata %s, %d spans, %d events", simple.Metadata, len(simple.Spans), len(simple.Events))
	}
}
