package policy_test

import "testing"

func TestViolationText(t *testing.T) {
	tests := []struct{ rule, want string }{
		{`raise "plain" if:
    (m: Message)
`, "plain"},
		{`raise PolicyViolation("with kwargs", m, who="bob", n=2) if:
    (m: Message)
`, `with kwargs (n=2, who="bob")`},
		{`raise PolicyViolation(3, "x") if:
    (m: Message)
`, "PolicyViolation(3 x)"},
	}
	for _, tc := range tests {
		res, err := mustParse(t, tc.rule).Analyze(events(t, `[{"role":"user","content":"hi"}]`), nil)
		if err != nil || len(res.Violations) != 1 {
			t.Fatalf("%s: %v %v", tc.rule, res, err)
		}
		if got := res.Violations[0].Text(); got != tc.want {
			t.Errorf("Text() = %q, want %q", got, tc.want)
		}
	}
}
