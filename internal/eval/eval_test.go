package eval

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"

	"github.com/lookout-dev/lookout/internal/chat"
	"github.com/lookout-dev/lookout/internal/chat/chattest"
	"github.com/lookout-dev/lookout/internal/formats"
	"github.com/lookout-dev/lookout/internal/policy"
	"github.com/lookout-dev/lookout/internal/testcorpus"
	"github.com/lookout-dev/lookout/internal/trace"
)

// sample is a flat trace: a question, a tool call, its output and an answer.
func sample(t *testing.T) *trace.Trace {
	t.Helper()
	return sampleTrace()
}

func sampleTrace() *trace.Trace {
	var tr trace.Trace
	src := `{"events": [
	  {"role": "user", "content": "What is 6 times 7? Then cancel my booking."},
	  {"role": "assistant", "content": null, "tool_calls": [{"id": "1", "type": "function", "function": {"name": "calc", "arguments": {"expr": "6*7"}}},
	                                                       {"id": "2", "type": "function", "function": {"name": "cancel_reservation", "arguments": {"id": "X1"}}}]},
	  {"role": "tool", "tool_call_id": "1", "content": "42"},
	  {"role": "assistant", "content": "The answer is 42."}],
	  "metadata": {"reward": 1, "reference": "42", "pattern": "^The answer is \\d+\\.$", "exact": "The answer is 42."}}`
	if err := tr.UnmarshalJSON([]byte(src)); err != nil {
		panic(err)
	}
	return &tr
}

func one(t *testing.T, c Criterion, tr *trace.Trace, llm *LLM) []Result {
	t.Helper()
	e, err := Compile(c, llm)
	if err != nil {
		t.Fatalf("Compile(%+v): %v", c, err)
	}
	out, err := e.Evaluate(context.Background(), tr)
	if err != nil {
		t.Fatalf("Evaluate(%s): %v", c.Name, err)
	}
	return out
}

func values(rs []Result) string {
	var b []string
	for _, r := range rs {
		b = append(b, r.Address+"="+string(r.Value))
	}
	return strings.Join(b, " ")
}

func TestCodeEvaluator(t *testing.T) {
	tr := sample(t)
	for _, tc := range []struct {
		c    Criterion
		want string
	}{
		{Criterion{Name: "reward", Evaluator: "code", Expr: "metadata.reward == 1"}, "=true"},
		{Criterion{Name: "reward0", Evaluator: "code", Expr: "metadata.reward == 0"}, "=false"},
		{Criterion{Name: "calls", Evaluator: "code", Expr: "len(tool_calls) <= 1"}, "=false"},
		{Criterion{Name: "calls-n", Evaluator: "code", Type: "number", Expr: "len(tool_calls)"}, "=2"},
		{Criterion{Name: "msgs", Evaluator: "code", Expr: `len(messages) == 4 and messages[3].content == "The answer is 42."`}, "=true"},
		{Criterion{Name: "label", Evaluator: "code", Type: "label", Choices: []string{"short", "long"}, Expr: `"short" if len(messages) < 10 else "long"`}, `="short"`},
		{Criterion{Name: "per-call", Evaluator: "code", Target: "tool_call", Expr: `call.name != "cancel_reservation"`}, "messages.1.tool_calls.0=true messages.1.tool_calls.1=false"},
		{Criterion{Name: "exact", Evaluator: "code", Compare: "exact", Reference: "exact"}, "=true"},
		{Criterion{Name: "contains", Evaluator: "code", Compare: "contains", Reference: "reference"}, "=true"},
		{Criterion{Name: "regex", Evaluator: "code", Compare: "regex", Reference: "pattern"}, "=true"},
		{Criterion{Name: "numeric", Evaluator: "code", Compare: "numeric"}, "=true"},
		{Criterion{Name: "numeric-off", Evaluator: "code", Compare: "numeric", Reference: "reward", Tolerance: 0.5}, "=false"},
	} {
		if got := values(one(t, tc.c, tr, nil)); got != tc.want {
			t.Errorf("%s: got %q, want %q", tc.c.Name, got, tc.want)
		}
	}
	// Errors: a value of the wrong type, a missing reference.
	for _, c := range []Criterion{
		{Name: "notbool", Evaluator: "code", Expr: "len(messages)"},
		{Name: "noref", Evaluator: "code", Compare: "exact", Reference: "missing"},
		{Name: "badlabel", Evaluator: "code", Type: "label", Choices: []string{"a"}, Expr: `"b"`},
	} {
		e, err := Compile(c, nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := e.Evaluate(context.Background(), tr); err == nil {
			t.Errorf("%s: no error", c.Name)
		}
	}
}

// TestCodeReadsWhatTheDoorLetsIn: an expression reads metadata nested as
// deep as the door lets in (jsonscan.MaxDepth; it failed past 64 levels,
// "nested too deeply"), and metadata stored before the door refused a
// number past a float64 is not read as empty.
func TestCodeReadsWhatTheDoorLetsIn(t *testing.T) {
	const depth = 5000
	deep := strings.Repeat(`{"a":`, depth) + "1" + strings.Repeat("}", depth)
	for _, tc := range []struct{ meta, expr string }{
		{`{"deep":` + deep + `,"y":"z"}`, `len(metadata) == 2 and metadata.y == "z"`},
		{`{"big":1e400,"y":"z"}`, `metadata.y == "z"`},
		{`{"n":[1,{"k":true}]}`, `metadata.n[1].k and metadata.n[0] == 1`},
	} {
		tr := sample(t)
		tr.Metadata = json.RawMessage(tc.meta)
		if got := values(one(t, Criterion{Name: "m", Evaluator: "code", Expr: tc.expr}, tr, nil)); got != "=true" {
			t.Errorf("%.40s: %s gave %q, want true", tc.meta, tc.expr, got)
		}
	}
}

func TestRuleEvaluator(t *testing.T) {
	tr := sample(t)
	pol := "raise \"cancel\" if:\n    (call: ToolCall)\n    call is tool:cancel_reservation\n"
	rs := one(t, Criterion{Name: "no-cancel", Evaluator: "rule", Policy: pol}, tr, nil)
	if len(rs) != 1 || string(rs[0].Value) != "false" || !strings.Contains(string(rs[0].Extra), `"ranges":["messages.1.tool_calls.1"]`) || rs[0].Comment != "cancel" {
		t.Fatalf("trace target: %+v (extra %s)", rs, rs[0].Extra)
	}
	// Per tool call: only the offending call fails, with its range.
	rs = one(t, Criterion{Name: "no-cancel", Evaluator: "rule", Policy: pol, Target: "tool_call"}, tr, nil)
	if got := values(rs); got != "messages.1.tool_calls.0=true messages.1.tool_calls.1=false" {
		t.Fatalf("tool_call target: %s", got)
	}
	rs = one(t, Criterion{Name: "ok", Evaluator: "rule", Policy: "raise \"x\" if:\n    (call: ToolCall)\n    call is tool:delete_all\n"}, tr, nil)
	if values(rs) != "=true" || rs[0].Extra != nil {
		t.Fatalf("no violation: %+v", rs)
	}
}

func TestCriteriaErrors(t *testing.T) {
	for _, tc := range []struct{ doc, want string }{
		{`{"criteria": [{"name": "a", "evaluator": "code"}]}`, "criteria[0]: a: a code criterion needs expr or compare"},
		{`{"criteria": [{"name": "a", "evaluator": "code", "expr": "1 +"}]}`, "criteria[0]: a: expr: column 4"},
		// The expression stops short: no mention of the brackets it is wrapped in.
		{`{"criteria": [{"name": "a", "evaluator": "code", "expr": "metadata.reward =="}]}`, `criteria[0]: a: expr: column 19: the expression ends too soon (after "metadata.reward ==")`},
		{`{"criteria": [{"name": "a", "evaluator": "rule", "policy": "raise"}]}`, "criteria[0]: a: policy:"},
		{`{"criteria": [{"name": "a", "evaluator": "human", "colour": 1}]}`, `criteria[0]: json: unknown field "colour"`},
		{`{"criteria": [{"name": "a", "evaluator": "human"}, {"name": "a", "evaluator": "human"}]}`, `criteria[1]: a second criterion named "a"`},
		{`{"criteria": [{"name": "a", "evaluator": "llm"}]}`, "needs a prompt"},
		{`{"criteria": [{"name": "a", "evaluator": "human", "type": "label"}]}`, "needs choices"},
		{`{"criteria": []}`, "empty"},
		{`{"rules": []}`, `unknown field "rules"`},
	} {
		_, err := ParseCriteria([]byte(tc.doc))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want %q", tc.doc, err, tc.want)
		}
	}
}

// fakeJudge is an OpenAI-compatible endpoint that answers PASS unless the
// prompt's trace mentions "cancel_reservation".
func fakeJudge(t *testing.T) *httptest.Server {
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/chat/completions" || r.Header.Get("Authorization") != "Bearer k" {
			http.Error(w, "bad request", 400)
			return
		}
		var req struct {
			Model    string
			Messages []struct{ Role, Content string }
		}
		body, _ := io.ReadAll(r.Body)
		if err := json.Unmarshal(body, &req); err != nil || len(req.Messages) != 2 || req.Model != "judge-1" {
			http.Error(w, "bad body", 400)
			return
		}
		verdict := "PASS\nfine"
		if strings.Contains(req.Messages[1].Content, "cancel_reservation") {
			verdict = "**FAIL**: it cancelled\nbecause"
		}
		json.NewEncoder(w).Encode(map[string]any{"choices": []any{map[string]any{"message": map[string]string{"role": "assistant", "content": verdict}}}})
	}))
	t.Cleanup(hs.Close)
	return hs
}

func TestLLMEvaluator(t *testing.T) {
	hs := fakeJudge(t)
	llm := &LLM{URL: hs.URL + "/v1", APIKey: "k", Model: "judge-1"}
	tr := sample(t)
	rs := one(t, Criterion{Name: "judge", Evaluator: "llm", Prompt: "Did it avoid cancelling?"}, tr, llm)
	if values(rs) != "=false" {
		t.Fatalf("judge: %s", values(rs))
	}
	rs = one(t, Criterion{Name: "judge", Evaluator: "llm", Prompt: "ok?", Target: "tool_call"}, tr, llm)
	if values(rs) != "messages.1.tool_calls.0=true messages.1.tool_calls.1=false" {
		t.Fatalf("judge per call: %s", values(rs))
	}
	// A wrong key is a clear error.
	e, _ := Compile(Criterion{Name: "judge", Evaluator: "llm", Prompt: "x"}, &LLM{URL: hs.URL + "/v1", APIKey: "wrong", Model: "judge-1"})
	if _, err := e.Evaluate(context.Background(), tr); err == nil || !strings.Contains(err.Error(), "status 400") {
		t.Errorf("wrong key: %v", err)
	}
	for _, tc := range []struct {
		c    Criterion
		text string
		want string
	}{
		{Criterion{Type: "bool"}, "Yes.", "true"},
		{Criterion{Type: "number"}, "0.75\nclose", "0.75"},
		{Criterion{Type: "label", Choices: []string{"Good", "Bad"}}, "bad", `"Bad"`},
	} {
		r, err := ParseVerdict(tc.c, tc.text)
		if err != nil || string(r.Value) != tc.want {
			t.Errorf("ParseVerdict(%q) = %s, %v; want %s", tc.text, r.Value, err, tc.want)
		}
	}
	if _, err := ParseVerdict(Criterion{Type: "bool"}, "maybe"); err == nil {
		t.Error("ParseVerdict(maybe): no error")
	}
}

// TestStepTargets grades every AI_RESPONSE step of the Snorkel seed.
func TestStepTargets(t *testing.T) {
	f, err := os.Open(testcorpus.File(t, "seeds/snorkel-example.json"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	dec, _, err := formats.Open(f, "snorkel-example.json", "")
	if err != nil {
		t.Fatal(err)
	}
	var spans, responses int
	for {
		tr, err := dec.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		want := 0
		for _, s := range tr.Spans {
			if s.Kind == "AI_RESPONSE" {
				want++
			}
		}
		rs := one(t, Criterion{Name: "summary", Evaluator: "code", Target: "step:AI_RESPONSE", Expr: `"summary" in step.value`}, tr, nil)
		if len(rs) != want {
			t.Fatalf("%d results for %d AI_RESPONSE steps", len(rs), want)
		}
		for _, r := range rs {
			a, err := trace.ParseAddress(r.Address)
			if err != nil {
				t.Fatal(err)
			}
			res, err := tr.Resolve(a)
			if err != nil {
				t.Fatalf("%s: %v", r.Address, err)
			}
			wantV := strings.Contains(string(res.Value), "summary")
			if string(r.Value) != map[bool]string{true: "true", false: "false"}[wantV] {
				t.Errorf("%s = %s; the step is %s", r.Address, r.Value, res.Value)
			}
		}
		spans += len(tr.Spans)
		responses += want
	}
	if responses != 3 {
		t.Errorf("%d AI_RESPONSE steps in the seed, want 3", responses)
	}
}

// TestRuleDetectorModel: a rule criterion whose policy calls a model-backed
// detector asks the detector model it is given, and fails without one.
func TestRuleDetectorModel(t *testing.T) {
	fake := chattest.New(t, func(r *chattest.Request) chattest.Reply {
		if r.System() == policy.PromptInjectionPrompt && strings.Contains(r.User(), "cancel my booking") {
			return chattest.Reply{Content: `{"label": "injection", "score": 0.95, "spans": [{"text": "Then cancel my booking."}]}`}
		}
		return chattest.Reply{Content: `{"label": "benign", "score": 0.01, "spans": []}`}
	})
	m, err := policy.NewDetectorModel(policy.DetectorModelConfig{Endpoint: chat.Endpoint{URL: fake.URL, Model: "m"}})
	if err != nil {
		t.Fatal(err)
	}
	c := Criterion{Name: "no-injection", Evaluator: "rule", Policy: `from invariant.detectors import prompt_injection
raise "injection" if:
    (msg: Message)
    prompt_injection(msg)`}
	e, err := Compile(c, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.Evaluate(context.Background(), sample(t)); err == nil || !strings.Contains(err.Error(), "not available in this build") {
		t.Fatalf("without a model: %v", err)
	}
	e.SetDetectorModel(m)
	rs, err := e.Evaluate(context.Background(), sample(t))
	if err != nil || values(rs) != "=false" || !strings.Contains(string(rs[0].Extra), "messages.0.content:19-42") {
		t.Fatalf("%s %s, %v", values(rs), rs[0].Extra, err)
	}
	if fake.Count() != 2 { // the user message and the answer; the tool call has no text
		t.Errorf("%d requests", fake.Count())
	}
}
