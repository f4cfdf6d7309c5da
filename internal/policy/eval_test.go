package policy_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/lookout-dev/lookout/internal/jsonscan"
	"github.com/lookout-dev/lookout/internal/policy"
	"github.com/lookout-dev/lookout/internal/trace"
)

func events(t testing.TB, js string) []trace.Event {
	t.Helper()
	evs, err := trace.DecodeEvents(jsonscan.New([]byte(js)), "trace")
	if err != nil {
		t.Fatal(err)
	}
	return evs
}

func analyze(t *testing.T, src, js string, params map[string]any) (*policy.Result, error) {
	t.Helper()
	return mustParse(t, src).Analyze(events(t, js), params)
}

// summary renders violations compactly: "msg@vars" per violation, where
// vars are name=address.
func summary(r *policy.Result) string {
	var out []string
	for _, v := range r.Violations {
		var vs []string
		for _, b := range v.Vars {
			vs = append(vs, b.Name+"="+b.Address)
		}
		out = append(out, v.Message()+"@"+strings.Join(vs, ","))
	}
	return strings.Join(out, "; ")
}

const agentTrace = `[
 {"role": "user", "content": "Reply to Alice, she is at alice@mail.com"},
 {"role": "assistant", "content": null, "tool_calls": [{"id": "1", "type": "function", "function": {"name": "get_inbox", "arguments": {}}}]},
 {"role": "tool", "tool_call_id": "1", "content": "[{\"from\": \"Alice\"}, {\"from\": \"Bob\"}]"},
 {"role": "assistant", "content": "Sending.", "tool_calls": [
   {"id": "2", "type": "function", "function": {"name": "send_email", "arguments": {"to": "Bob", "body": "hi"}}},
   {"id": "3", "type": "function", "function": {"name": "send_email", "arguments": "{\"to\": \"Alice\", \"cc\": [\"x\", \"y\"]}"}}]},
 {"role": "tool", "tool_call_id": "2", "content": "sent"},
 {"role": "tool", "content": "sent too"},
 {"role": "assistant", "content": "Done. Ünïcode X here."}
]`

func TestEvaluation(t *testing.T) {
	cases := []struct {
		name   string
		policy string
		want   string // summary(), or "error:<Class>:<substring>"
	}{
		{"one variable", `
raise "send" if:
    (c: ToolCall)
    c is tool:send_email`, "send@c=3.tool_calls.0; send@c=3.tool_calls.1"},
		{"flow any distance", `
raise "inbox then send" if:
    (o: ToolOutput) -> (c: ToolCall)
    o is tool:get_inbox
    c is tool:send_email({to: "Alice"})`, "inbox then send@o=2,c=3.tool_calls.1"},
		{"flow is strict and ordered", `
raise "f" if:
    (a: ToolCall) -> (b: ToolCall)`, "f@a=1.tool_calls.0,b=3.tool_calls.0; f@a=1.tool_calls.0,b=3.tool_calls.1; f@a=3.tool_calls.0,b=3.tool_calls.1"},
		{"message flows to its own calls", `
raise "m" if:
    (m: Message) -> (c: ToolCall)
    m.content == "Sending."`, "m@m=3,c=3.tool_calls.0; m@m=3,c=3.tool_calls.1"},
		{"immediate successor", `
raise "i" if:
    (a: ToolCall) ~> (b: ToolCall)`, "i@a=3.tool_calls.0,b=3.tool_calls.1"},
		{"immediate successor of a message is its first call", `
raise "i" if:
    (m: Message) ~> (c: ToolCall)`, "i@m=1,c=1.tool_calls.0; i@m=3,c=3.tool_calls.0"},
		{"flow written backwards", `
raise "b" if:
    (c: ToolCall)
    (o: ToolOutput)
    o -> c
    c is tool:send_email
    o.content == "sent"`, ""},
		{"output without id answers the last call", `
raise "o" if:
    (o: ToolOutput)
    o is tool:send_email({to: "Alice"})
    o.tool_call_id == "3"`, "o@o=5"},
		{"derived variable", `
raise PolicyViolation("cc", x) if:
    (c: ToolCall)
    (x: str) in c.function.arguments.get("cc", [])
    x != "y"`, "cc@c=3.tool_calls.1,x=3.tool_calls.1.function.arguments.cc.0"},
		{"unused derived variable is dropped", `
raise "u" if:
    (c: ToolCall)
    c is tool:send_email
    (x: str) in c.function.arguments.get("cc", [])`, "u@c=3.tool_calls.0; u@c=3.tool_calls.1"},
		{"a rule without conditions on its variables fires once (as in Invariant)", `
raise "u" if:
    (c: ToolCall)`, "u@"},
		{"guarding a missing key with and", `
raise "g" if:
    (c: ToolCall)
    "cc" in c.function.arguments and (x: str) in c.function.arguments.cc
    x == "x"`, "g@c=3.tool_calls.1,x=3.tool_calls.1.function.arguments.cc.0"},
		{"missing dict key", `
raise "m" if:
    (c: ToolCall)
    c.function.arguments.cc == 1`, "error:ExcessivePolicyError:has no key \"cc\""},
		{"or keeps the variables of its right side", `
raise PolicyViolation("o", x) if:
    (c: ToolCall)
    c.function.name == "send_email" or (x: str) in c.function.arguments.get("cc", [])
    x == "y"`, "o@c=3.tool_calls.1,x=3.tool_calls.1.function.arguments.cc.1"},
		{"count", `
from invariant import count
raise "two sends" if:
    count(min=2, max=2):
        (c: ToolCall)
        c is tool:send_email`, "two sends@"},
		{"count max exceeded", `
raise "x" if:
    count(max=1):
        (c: ToolCall)
        c is tool:send_email`, ""},
		{"forall", `
raise "all tool outputs say sent" if:
    forall:
        (o: ToolOutput)
        o.tool_call_id != "1"
        "sent" in o.content`, ""},
		{"not forall with closure", `
raise "x" if:
    (m: Message)
    m.role == "assistant"
    not forall:
        (c: ToolCall)
        m -> c`, "x@m=3; x@m=6"},
		{"predicate with its own variable", `
mentions(m: Message, who: str) :=
    (w: str) in m.content.split(" ")
    w == who
raise PolicyViolation("mentions", m) if:
    (m: Message)
    m.role == "user"
    mentions(m, "Alice,")`, "mentions@m=0"},
		{"constant and parameter", `
NAME := "Bo" + "b"
raise "to" if:
    (c: ToolCall)
    c is tool:send_email
    c.function.arguments.to == NAME or c.function.arguments.to == input.other`, "to@c=3.tool_calls.0"},
		{"list comprehension and ternary", `
raise "lc" if:
    (m: Message)
    m.role == "user"
    any([w in m.content for w in ["Bob", "Alice"] if len(w) > 3])
    (1 if m.content else 2) == 1`, "lc@m=0"},
		{"json member on string content", `
raise "from" if:
    (o: ToolOutput)
    o is tool:get_inbox
    (d: dict) in json_loads(o.content)
    d.from == "Bob"`, "from@o=2,d="},
		{"semantic pattern on list with wildcard", `
raise "cc" if:
    (c: ToolCall)
    c is tool:send_email({cc: [*, "y"]})`, "cc@c=3.tool_calls.1"},
		{"lists holding unbound values are unknown", `
raise "l" if:
    (m: Message)
    [m.role] == ["user"]`, "l@m=0"},
		{"non-boolean condition never fires", `
raise "n" if:
    (m: Message)
    m.content`, ""},
		{"None membership is false", `
raise "n" if:
    (m: Message)
    "Sending" in m.content`, "n@m=3"},
		{"missing parameter", `
raise "p" if:
    (m: Message)
    input.nope in m.content`, "error:MissingPolicyParameter:input.nope"},
		{"disallowed str method", `
raise "p" if:
    (m: Message)
    m.role.replace("a", "b") == "x"`, "error:ExcessivePolicyError:Unavailable attribute replace"},
		{"dict key error", `
raise "p" if:
    (c: ToolCall)
    c.function.arguments["missing"] == 1`, "error:KeyError:has no key"},
		{"attribute of a derived object", `
raise "p" if:
    (o: ToolOutput)
    x := tool_call(o)
    x.bogus == 1`, "error:InvariantAttributeError:Attribute bogus not found in ToolCall"},
		{"flow needs events", `
raise "p" if:
    (c: ToolCall)
    (s: str) in c.function.arguments.get("cc", [])
    s -> c`, "error:TypeError:relates events"},
		{"division by zero", `
raise "p" if:
    (m: Message)
    1 / 0 > 1`, "error:ZeroDivisionError:division by zero"},
		{"type error", `
raise "p" if:
    (m: Message)
    m.role + 1 == 2`, "error:TypeError:can only concatenate str"},
		{"unavailable detector fails loudly", `
from invariant.detectors import prompt_injection
raise "p" if:
    (o: ToolOutput)
    prompt_injection(o)`, "error:DetectorUnavailable:not available in this build"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r, err := analyze(t, c.policy, agentTrace, map[string]any{"other": "zzz"})
			if strings.HasPrefix(c.want, "error:") {
				parts := strings.SplitN(c.want, ":", 3)
				var re *policy.RuntimeError
				if !errors.As(err, &re) || re.Class != parts[1] || !strings.Contains(re.Msg, parts[2]) {
					t.Fatalf("want %s error containing %q, got %v", parts[1], parts[2], err)
				}
				if re.Pos.Line == 0 && re.Class != policy.ClassMissingParameter {
					t.Errorf("runtime error without a position: %v", re)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := summary(r); got != c.want {
				t.Errorf("got  %s\nwant %s", got, c.want)
			}
		})
	}
}

func TestViolationShape(t *testing.T) {
	r, err := analyze(t, `
raise PolicyViolation("found", m, n=1, s="x") if:
    (m: Message)
    (c: ToolCall)
    m -> c
    "X" in m.content`, `[{"role": "user", "content": "X"}, {"role": "assistant", "content": null, "tool_calls": [{"id": "1", "type": "function", "function": {"name": "f", "arguments": {}}}]}]`, nil)
	if err != nil {
		t.Fatal(err)
	}
	v := r.Violations[0]
	if v.Key != "(0, (1, 0))" {
		t.Errorf("key %q", v.Key)
	}
	b, _ := json.Marshal(v)
	want := `{"args":["found",{"role":"user","content":"X"}],"key":"(0, (1, 0))","kwargs":{"n":1,"s":"x"},"ranges":["messages.0","messages.0.content:0-1","messages.1.tool_calls.0"]}`
	if string(b) != want {
		t.Errorf("json\n got %s\nwant %s", b, want)
	}
	if s := v.String(); s != `PolicyViolation(found {"role":"user","content":"X"}, n=1, s=x)` {
		t.Errorf("String() = %s", s)
	}
}

func TestPendingAndMonitor(t *testing.T) {
	p := mustParse(t, `
raise PolicyViolation("assistant", m) if:
    (m: Message)
    m.role == "assistant"`)
	tr := events(t, `[{"role": "user", "content": "a"}, {"role": "assistant", "content": "b"}, {"role": "assistant", "content": "c"}]`)
	r, err := p.AnalyzePending(tr[:2], tr[2:], nil)
	if err != nil || summary(r) != "assistant@m=2" {
		t.Fatalf("pending: %v %v", summary(r), err)
	}
	m := policy.NewMonitor(p, nil)
	for i, want := range []string{"", "assistant@m=1", "assistant@m=2", ""} {
		n := i + 1
		if n > len(tr) {
			n = len(tr)
		}
		r, err := m.Analyze(tr[:n])
		if err != nil {
			t.Fatal(err)
		}
		if got := summary(r); got != want {
			t.Errorf("step %d: got %q want %q", i, got, want)
		}
	}
	// a copy of the trace reports nothing new; Reset forgets
	r, _ = m.Analyze(append([]trace.Event(nil), tr...))
	if len(r.Violations) != 0 {
		t.Errorf("copy reported again: %s", summary(r))
	}
	m.Reset()
	r, _ = m.Analyze(tr)
	if len(r.Violations) != 2 {
		t.Errorf("after reset: %s", summary(r))
	}
}

func TestPythonBuiltins(t *testing.T) {
	cases := []struct{ expr, want string }{
		{`"a b  c ".split()`, `["a","b","c"]`},
		{`"a,b,,c".split(",")`, `["a","b","","c"]`},
		{`"a b c".split(" ", 1)`, `["a","b c"]`},
		{`"x\ny\r\nz".splitlines()`, `["x\\ny\\r\\nz"]`}, // no escapes in policy strings
		{`"""x
y""".splitlines()`, `["x","y"]`},
		{`"  hi  ".strip()`, `"hi"`},
		{`"xxhixx".strip("x")`, `"hi"`},
		{`"{} and {name} and {0}".format(1, name="n")`, `"1 and n and 1"`},
		{`"-".join(["a", "b"])`, `"a-b"`},
		{`"AbC".lower() + "AbC".upper() + lower("Q")`, `"abcABCq"`},
		{`len("äbc")`, `3`},
		{`min(3, 1, 2) + max([4, 9]) + sum([1, 2], 10)`, `23`},
		{`[1, 2] in [1, 3]`, `[true,false]`},
		{`any(["a", "z"] in "abc")`, `true`},
		{`{"a": 1}.get("b", 5)`, `5`},
		{`{"a": 1, "b": 2}.items()`, `[["a",1],["b",2]]`},
		{`str(1.0) + str(None) + str([1, "a"])`, `"1.0None[1, 'a']"`},
		{`int("12") + float("1.5")`, `13.5`},
		{`7 % -3`, `-2`},
		{`2 ** 10`, `1024`},
		{`json_loads('{"a": [1, 2.5, null]}')`, `{"a":[1,2.5,null]}`},
		{`["Lu", "Ll"] contains_only ["Lu", "Ll", "Nd"]`, `true`},
		{`["Lu", "Sc"] contains_only ["Lu", "Ll"]`, `false`},
		{`1 == 1.0 and True == 1 and "a" != 1`, `true`},
		{`(1, 2) == [1, 2]`, `true`},
		{`"abc"[-1] + "abc"[0]`, `"ca"`},
		{`[x * 2 for x in [1, 2, 3] if x != 2]`, `[2,6]`},
		{`text("a", ["b", None])`, `["a","b"]`},
		{`image("data:image/png;base64,AA", "nope")`, `["data:image/png;base64,AA"]`},
		{`empty([]) and not empty("x")`, `true`},
		{`should_allow_rbac(None, "internal", "bob", {"bob": ["admin"]}, {"admin": {"internal": True}})`, `true`},
	}
	for _, c := range cases {
		src := "from invariant.access_control import should_allow_rbac\nraise PolicyViolation(\"r\", v) if:\n    v := " + c.expr + "\n    True\n"
		p, err := policy.Parse(src)
		if err != nil {
			t.Errorf("%s: %v", c.expr, err)
			continue
		}
		r, err := p.Analyze(nil, nil)
		if err != nil {
			t.Errorf("%s: %v", c.expr, err)
			continue
		}
		got, _ := json.Marshal(r.Violations[0].Args[1])
		if string(got) != c.want {
			t.Errorf("%s = %s, want %s", c.expr, got, c.want)
		}
	}
}

func TestRegexSemantics(t *testing.T) {
	cases := []struct {
		pattern, subject string
		match            bool
		find             string
	}{
		{`\d+`, "x ٣٤ 5", false, "٣٤|5"},            // \d is Unicode, as in Python
		{`^abc$`, "abc\n", true, "abc"},             // $ matches before a final newline
		{`^(?!Peter$).*$`, "Peter", false, ""},      // lookahead (backtracking engine)
		{`^(?!Peter$).*$`, "Petra", true, "Petra"},  //
		{`(\w)\1`, "abccd", false, "cc"},            // backreference
		{`\bcat\b`, "a cat! concat", false, "cat"},  // word boundary
		{`(?P<w>o)(?P=w)`, "foo", false, "oo"},      // Python named groups
		{`(?i)HELLO`, "hello there", true, "hello"}, // inline flags
		{`a{,2}`, "aaa", true, "aa|a|"},             // {,n} is {0,n}
		{`\w+`, "héllo wörld", true, "héllo|wörld"}, // \w is Unicode
		{`x\Z`, "x\n", false, ""},                   // \Z is the very end
		{`.`, "\n", false, ""},                      // . does not match newline
		{`[\w-]+`, "a-b_c d", true, "a-b_c|d"},      // '-' after a class escape
		{`[\d-z]+`, "1-z9 y", true, "1-z9"},         //
	}
	for _, c := range cases {
		src := fmt.Sprintf("raise PolicyViolation(\"r\", m, f) if:\n    m := match(%q, input.s)\n    f := find(%q, input.s)\n    True\n", c.pattern, c.pattern)
		src = strings.ReplaceAll(src, `\\`, `\`) // policy strings keep backslashes as written
		p, err := policy.Parse(src)
		if err != nil {
			t.Errorf("%s: %v", c.pattern, err)
			continue
		}
		r, err := p.Analyze(nil, map[string]any{"s": c.subject})
		if err != nil {
			t.Errorf("%s: %v", c.pattern, err)
			continue
		}
		a := r.Violations[0].Args
		var found []string
		json.Unmarshal(a[2].(json.RawMessage), &found)
		if a[1] != c.match || strings.Join(found, "|") != c.find {
			t.Errorf("%s on %q: match %v find %q, want %v %q", c.pattern, c.subject, a[1], strings.Join(found, "|"), c.match, c.find)
		}
	}
}

func TestBudget(t *testing.T) {
	// five unconstrained variables over 40 messages: 10^8 combinations
	var evs []string
	for i := 0; i < 40; i++ {
		evs = append(evs, fmt.Sprintf(`{"role": "user", "content": "m%d"}`, i))
	}
	tr := "[" + strings.Join(evs, ",") + "]"
	p := mustParse(t, `
raise "x" if:
    (a: Message)
    (b: Message)
    (c: Message)
    (d: Message)
    (e: Message)
    a.content + b.content + c.content + d.content + e.content == "nope"`)
	// the steps budget: testdata/lookout/budgets.json
	var re *policy.RuntimeError
	p.SetLimits(policy.Limits{Steps: 1 << 62, Time: 50 * time.Millisecond})
	start := time.Now()
	_, err := p.Analyze(events(t, tr), nil)
	if !errors.As(err, &re) || re.Class != policy.ClassBudget || !strings.Contains(re.Msg, "time budget") {
		t.Fatalf("want a time budget error, got %v", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("time budget error took %v", d)
	}
}

// TestFlowIsNotQuadratic checks that the work of a two-variable flow rule
// grows with the trace and the number of matching pairs, not with the
// square of the trace length.
func TestFlowIsNotQuadratic(t *testing.T) {
	p := mustParse(t, benchRules["flow"])
	steps := map[int]int64{}
	for _, n := range []int{1000, 4000} {
		r, err := p.Analyze(syntheticTrace(n), nil)
		if err != nil {
			t.Fatal(err)
		}
		steps[n] = r.Steps
		t.Logf("%d events: %d violations, %d steps", n, len(r.Violations), r.Steps)
	}
	if ratio := float64(steps[4000]) / float64(steps[1000]); ratio > 5 {
		t.Errorf("4x the events took %.1fx the steps", ratio)
	}
}

// TestDetectors exercises the registration API with detectors that exist
// only in this test (under a test module, so the conformance accounting is
// unaffected).
func TestDetectors(t *testing.T) {
	calls := 0
	policy.RegisterDetector(policy.Detector{
		Name:    "shout",
		Modules: []string{"lookout.testing"},
		Func: func(c *policy.DetectorCall) (any, error) {
			calls++
			var found []string
			for _, tx := range c.Arg(0).Texts() {
				for i := 0; i < len(tx.S); i++ {
					if tx.S[i] == '!' {
						c.Mark(tx, i, i+1)
						found = append(found, "BANG")
					}
				}
			}
			return found, nil
		},
	})
	policy.RegisterDetector(policy.Detector{Name: "Issue", Modules: []string{"lookout.testing"}, Type: true})
	policy.RegisterDetector(policy.Detector{
		Name:    "first_two",
		Modules: []string{"lookout.testing"},
		Func: func(c *policy.DetectorCall) (any, error) {
			for _, tx := range c.Arg(0).Texts() {
				c.MarkRunes(tx, 0, 2) // code points
			}
			return true, nil
		},
	})
	policy.RegisterDetector(policy.Detector{
		Name:    "analyze_code",
		Modules: []string{"lookout.testing"},
		Func: func(c *policy.DetectorCall) (any, error) {
			s, _ := c.Arg(0).Str()
			if s == "boom" {
				return nil, errors.New("cannot parse")
			}
			if s == "panic" {
				panic("oops")
			}
			return policy.Record{Type: "Program", Fields: map[string]any{
				"imports": []string{"os", "sys"},
				"issues":  []policy.Record{{Type: "Issue", Fields: map[string]any{"severity": "error"}}},
			}}, nil
		},
	})
	r, err := analyze(t, `
from lookout.testing import shout, analyze_code, Issue
raise PolicyViolation("bang", m) if:
    (m: Message)
    "BANG" in shout(m)
    "os" in analyze_code(m.content).imports
    (i: Issue) in analyze_code(m.content).issues
    i.severity == "error"
    shout(m) == shout(m)`, `[{"role": "user", "content": "hé! there!"}, {"role": "user", "content": "quiet"}]`, nil)
	if err != nil {
		t.Fatal(err)
	}
	if summary(r) != "bang@m=0,i=" {
		t.Fatalf("got %s", summary(r))
	}
	if got := strings.Join(r.Violations[0].Ranges, " "); got != "0 0.content:2-3 0.content:9-10" {
		t.Errorf("ranges %s", got)
	}
	if calls != 2 {
		t.Errorf("detector called %d times; results should be cached per argument", calls)
	}
	r, err = analyze(t, `
from lookout.testing import first_two
raise "x" if:
    (m: Message)
    first_two(m)`, `[{"role": "user", "content": [{"type": "text", "text": "éé!"}]}]`, nil)
	if err != nil || len(r.Violations) != 1 || strings.Join(r.Violations[0].Ranges, " ") != "0 0.content.0.text:0-2" {
		t.Errorf("MarkRunes: %v %v", summary(r), err)
	}
	for _, input := range []string{"boom", "panic"} {
		_, err := analyze(t, `
from lookout.testing import analyze_code
raise "x" if:
    analyze_code(input.code)`, `[]`, map[string]any{"code": input})
		var re *policy.RuntimeError
		if !errors.As(err, &re) || re.Class != policy.ClassDetectorFailed {
			t.Errorf("%s: want DetectorError, got %v", input, err)
		}
	}
	if !policy.DetectorAvailable("shout") || policy.DetectorAvailable("prompt_injection") {
		t.Error("DetectorAvailable")
	}
	var names []string
	for _, d := range policy.RegisteredDetectors() {
		names = append(names, d.Name)
	}
	sort.Strings(names)
	for _, want := range []string{"llm", "moderated", "ocr", "prompt_injection", "semgrep", "shout"} {
		if i := sort.SearchStrings(names, want); i >= len(names) || names[i] != want {
			t.Errorf("%s not registered: %v", want, names)
		}
	}
}

func TestRecursionIsBounded(t *testing.T) {
	_, err := analyze(t, `
loop(m: Message) :=
    loop(m)
raise "x" if:
    (m: Message)
    loop(m)`, `[{"role": "user", "content": "a"}]`, nil)
	var re *policy.RuntimeError
	if !errors.As(err, &re) || !strings.Contains(re.Msg, "nested more than") {
		t.Fatalf("want a recursion error, got %v", err)
	}
	deep := strings.Repeat("(", 5000) + "1" + strings.Repeat(")", 5000)
	_, err = policy.Parse("raise \"x\" if:\n    " + deep + " == 1\n")
	if err == nil || !strings.Contains(err.Error(), "nested too deeply") {
		t.Fatalf("want a nesting error, got %v", err)
	}
}

func TestConcurrentAnalyze(t *testing.T) {
	p := mustParse(t, `
raise PolicyViolation("x", m) if:
    (m: Message)
    (c: ToolCall)
    m -> c
    any(find("[A-Z]\w+", m.content))`)
	tr := events(t, agentTrace)
	want, err := p.Analyze(tr, nil)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan string)
	for i := 0; i < 8; i++ {
		go func() {
			r, err := p.Analyze(tr, nil)
			if err != nil {
				done <- err.Error()
				return
			}
			done <- summary(r)
		}()
	}
	for i := 0; i < 8; i++ {
		if got := <-done; got != summary(want) {
			t.Errorf("concurrent analysis: %s, want %s", got, summary(want))
		}
	}
}
