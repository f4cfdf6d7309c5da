package eval

import (
	"context"
	"testing"
)

// FuzzParseCriteria checks that any criteria document either loads or is
// refused with an error, never a panic, and that a loaded one compiles and
// grades a trace without panicking.
func FuzzParseCriteria(f *testing.F) {
	for _, s := range []string{
		`{"criteria": [{"name": "solved", "evaluator": "code", "expr": "metadata.reward == 1", "required": true, "threshold": 0.5}]}`,
		`[{"name": "r", "evaluator": "rule", "policy": "raise \"x\" if:\n    (call: ToolCall)\n    call is tool:a\n", "target": "tool_call"}]`,
		`[{"name": "c", "evaluator": "code", "compare": "numeric", "tolerance": 0.1}]`,
		`[{"name": "l", "evaluator": "code", "type": "label", "choices": ["a"], "expr": "\"a\"", "target": "step:AI_RESPONSE"}]`,
		`[{"name": "h", "evaluator": "human", "type": "number"}]`,
		`{"criteria": [{"name": "x"}]}`,
	} {
		f.Add(s)
	}
	tr := sampleTrace()
	f.Fuzz(func(t *testing.T, doc string) {
		cs, err := ParseCriteria([]byte(doc))
		if err != nil {
			return
		}
		for _, c := range cs {
			if c.Evaluator == "llm" {
				continue
			}
			e, err := Compile(c, nil)
			if err != nil {
				t.Fatalf("a criterion that checks does not compile: %v", err)
			}
			e.Evaluate(context.Background(), tr)
		}
	})
}
