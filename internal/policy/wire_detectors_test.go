package policy_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/lookout-dev/lookout/internal/policy"
)

// TestWiredDetectors calls the model-free detectors through the policy
// language, with the optional arguments the conformance suite does not use.
func TestWiredDetectors(t *testing.T) {
	tests := []struct {
		name, rule, trace string
		ranges            []string // of the one violation; nil: no violation
		class             string   // a runtime error of this class instead
	}{
		{"secrets: default families", `from invariant.detectors import secrets
raise "x" if:
    (m: Message)
    "GITHUB_TOKEN" in secrets(m)`, `[{"role":"user","content":"token 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"}]`,
			[]string{"0", "0.content:6-46"}, ""},
		{"secrets: high entropy only when asked", `from invariant.detectors import secrets
raise "x" if:
    (m: Message)
    any(secrets(m))`, `[{"role":"user","content":"key = 'c3VwZXJzZWNyZXRrZXkxMjM0NTY3ODkwYWJjZGVmZ2hpams='"}]`,
			nil, ""},
		{"secrets: asked for high entropy", `from invariant.detectors import secrets
raise "x" if:
    (m: Message)
    "BASE64_HIGH_ENTROPY_STRING" in secrets(m, ["BASE64_HIGH_ENTROPY_STRING"])`, `[{"role":"user","content":"key = 'c3VwZXJzZWNyZXRrZXkxMjM0NTY3ODkwYWJjZGVmZ2hpams='"}]`,
			[]string{"0", "0.content:7-55"}, ""},
		{"secrets: unknown kind", `from invariant.detectors import secrets
raise "x" if:
    (m: Message)
    any(secrets(m, ["NO_SUCH_SECRET"]))`, `[{"role":"user","content":"hi"}]`, nil, policy.ClassDetectorFailed},
		{"unicode: one category", `from invariant.detectors import unicode
raise "x" if:
    (m: Message)
    "Cf" in unicode(m, ["Cf"])`, `[{"role":"user","content":"a\u200bb"}]`, []string{"0", "0.content:1-2"}, ""},
		{"pii: an entity that needs a model", `from invariant.detectors import pii
raise "x" if:
    (m: Message)
    "PERSON" in pii(m, ["PERSON"])`, `[{"role":"user","content":"Bob"}]`, nil, policy.ClassUnavailable},
		{"pii: email", `from invariant.detectors import pii
raise "x" if:
    (m: Message)
    "EMAIL_ADDRESS" in pii(m)`, `[{"role":"user","content":"mail bob@example.com"}]`, []string{"0", "0.content:5-20"}, ""},
		{"a model detector", `from invariant.detectors import moderated
raise "x" if:
    (m: Message)
    moderated(m)`, `[{"role":"user","content":"hi"}]`, nil, policy.ClassUnavailable},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res, err := mustParse(t, tc.rule).Analyze(events(t, tc.trace), nil)
			if tc.class != "" {
				var re *policy.RuntimeError
				if !errors.As(err, &re) || re.Class != tc.class {
					t.Fatalf("error %v, want class %s", err, tc.class)
				}
				if tc.class == policy.ClassUnavailable && !strings.Contains(re.Msg, "not available in this build") {
					t.Errorf("message %q", re.Msg)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if tc.ranges == nil {
				if len(res.Violations) != 0 {
					t.Fatalf("violations %v", res.Violations[0].Ranges)
				}
				return
			}
			if len(res.Violations) != 1 || strings.Join(res.Violations[0].Ranges, " ") != strings.Join(tc.ranges, " ") {
				for _, v := range res.Violations {
					t.Logf("ranges %v", v.Ranges)
				}
				t.Fatalf("%d violations, want 1 with ranges %v", len(res.Violations), tc.ranges)
			}
		})
	}
}
