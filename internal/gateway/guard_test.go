package gateway

import (
	"context"
	"strings"
	"testing"

	"github.com/lookout-dev/lookout/internal/policy"
)

func rail(t *testing.T, name, mode, src string) *Guardrail {
	t.Helper()
	p, err := policy.Parse(src)
	if err != nil {
		t.Fatal(err)
	}
	return &Guardrail{ID: "id-" + name, Name: name, Mode: mode, Policy: p}
}

func TestGuard(t *testing.T) {
	events := decodeEvents(t, `[{"role":"user","content":"mail bob"},
		{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"send_email","arguments":{"to":"bob@evil.com"}}}]},
		{"role":"tool","tool_call_id":"c1","content":"sent"},
		{"role":"assistant","content":"done, bob@evil.com has it"}]`)
	noEmail := `raise "no email" if:
    (call: ToolCall)
    call is tool:send_email`
	evilText := `raise "evil domain" if:
    (msg: Message)
    "evil.com" in msg.content`
	g := &Guard{}
	ctx := context.Background()
	tests := []struct {
		name      string
		rails     []*Guardrail
		first     int
		blocked   bool
		findings  int
		newOnes   int
		errs      int
		inMessage string
	}{
		{"block rule fires", []*Guardrail{rail(t, "mail", "block", noEmail)}, 0, true, 1, 1, 0, `blocked by guardrail "mail": no email`},
		{"log rule fires, nothing blocked", []*Guardrail{rail(t, "mail", "log", noEmail)}, 0, false, 1, 1, 0, ""},
		{"an old violation still blocks but is not new", []*Guardrail{rail(t, "mail", "block", noEmail)}, 3, true, 1, 0, 0, "no email"},
		{"only the new event's violation is new", []*Guardrail{rail(t, "evil", "log", evilText)}, 3, false, 1, 1, 0, ""},
		{"a policy that does not load fails closed when it blocks", []*Guardrail{{ID: "x", Name: "broken", Mode: "block"}}, 0, true, 1, 1, 1, "fails closed"},
		{"and open when it logs", []*Guardrail{{ID: "x", Name: "broken", Mode: "log"}}, 0, false, 1, 1, 1, ""},
		{"no rails", nil, 0, false, 0, 0, 0, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			v := g.Check(ctx, tc.rails, events, tc.first, nil)
			newOnes, errs := 0, 0
			for _, f := range v.Findings {
				if f.New {
					newOnes++
				}
				if f.Err != nil {
					errs++
				}
			}
			if v.Blocked != tc.blocked || len(v.Findings) != tc.findings || newOnes != tc.newOnes || errs != tc.errs {
				t.Fatalf("blocked %v, %d findings (%d new, %d failed): %+v", v.Blocked, len(v.Findings), newOnes, errs, v.Findings)
			}
			if tc.inMessage != "" {
				msg := v.Message()
				for _, f := range v.Findings {
					msg += " " + f.Message()
				}
				if !strings.Contains(msg, tc.inMessage) {
					t.Fatalf("message %q lacks %q", msg, tc.inMessage)
				}
			}
		})
	}
}

func TestGuardContextEnded(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	events := decodeEvents(t, `[{"role":"user","content":"hi"}]`)
	r := rail(t, "any", "block", `raise "x" if:
    (msg: Message)
    msg.content == "hi"`)
	v := (&Guard{}).Check(ctx, []*Guardrail{r}, events, 0, nil)
	if !v.Blocked || len(v.Findings) != 1 || v.Findings[0].Err == nil {
		t.Fatalf("a check whose context ended must fail closed: %+v", v)
	}
	r.Mode = "log"
	v = (&Guard{}).Check(ctx, []*Guardrail{r}, events, 0, nil)
	if v.Blocked || len(v.Findings) != 1 || v.Findings[0].Err == nil {
		t.Fatalf("and open in log mode: %+v", v)
	}
}

func TestAnnotations(t *testing.T) {
	events := decodeEvents(t, `[{"role":"user","content":"send it to evil.com"},{"role":"assistant","content":"ok, evil.com"}]`)
	r := rail(t, "evil", "log", `raise "evil domain" if:
    (msg: Message)
    "evil.com" in msg.content`)
	v := (&Guard{}).Check(context.Background(), []*Guardrail{r}, events, 1, nil)
	anns := Annotations(v.Findings, len(events))
	if len(anns) == 0 {
		t.Fatal("no annotations")
	}
	for _, a := range anns {
		if !strings.HasPrefix(a.Address, "messages.1") || a.Source != "analyzer" || a.Content != "evil domain" || !strings.Contains(string(a.Extra), `"policy_id":"id-evil"`) {
			t.Errorf("annotation %+v: want the new event's range, the message and the policy", a)
		}
	}
	// A withheld answer's ranges go to the call's span.
	withheld := annotationsAt(v.Findings, "abc", 1, 1, true)
	if len(withheld) != 1 || withheld[0].Address != "spans.abc" {
		t.Fatalf("withheld: %+v", withheld)
	}
}
