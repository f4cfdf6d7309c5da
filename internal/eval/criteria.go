// Package eval grades traces: criteria with their evaluators (human, rule,
// code, llm), targets (the whole trace or every step of a kind), runs of
// criteria over a dataset that are resumable and cancellable (Runner, and
// Runs, which keeps a server's runs going in the background), and
// benchmarks made from a dataset's traces and scored against others
// (Benchmarks). It reaches the store through the few methods it calls
// (RunnerStore, RunStore, BenchmarkStore).
package eval

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
)

// Criterion is one entry of a criteria file:
//
//	name: solved          # unique in the set
//	evaluator: code       # human, rule, code or llm
//	type: bool            # bool (default), number or label
//	choices: [good, bad]  # the labels of a label criterion
//	target: trace         # trace (default), step:<KIND> (every span or step of that kind), tool_call
//	policy: ...           # rule: a guardrail policy; a violation fails the target
//	expr: ...             # code: an expression of the rule language
//	compare: exact        # code: exact, contains, regex or numeric, against reference
//	reference: answer     # code: the metadata key of the reference answer (default "reference")
//	tolerance: 0.01       # code, numeric compare
//	prompt: ...           # llm: the judge's instructions
//	model: ...            # llm: overrides the configured model
//	required: true        # lookout eval fails when the pass rate (or mean) is below threshold
//	threshold: 0.5        # default 1 for required criteria
type Criterion struct {
	Name      string   `json:"name"`
	Evaluator string   `json:"evaluator"`
	Type      string   `json:"type,omitempty"`
	Choices   []string `json:"choices,omitempty"`
	Target    string   `json:"target,omitempty"`
	Policy    string   `json:"policy,omitempty"`
	Expr      string   `json:"expr,omitempty"`
	Compare   string   `json:"compare,omitempty"`
	Reference string   `json:"reference,omitempty"`
	Tolerance float64  `json:"tolerance,omitempty"`
	Prompt    string   `json:"prompt,omitempty"`
	Model     string   `json:"model,omitempty"`
	Required  bool     `json:"required,omitempty"`
	Threshold *float64 `json:"threshold,omitempty"`
}

// Value types of criteria.
const (
	TypeBool   = "bool"
	TypeNumber = "number"
	TypeLabel  = "label"
)

// ParseCriteria reads a JSON criteria document: {"criteria": [...]} or a
// bare list. Unknown members are errors (a typo should not silently do
// nothing); each error names the criterion's place.
func ParseCriteria(data []byte) ([]Criterion, error) {
	data = bytes.TrimSpace(data)
	var list []json.RawMessage
	if len(data) > 0 && data[0] == '[' {
		if err := json.Unmarshal(data, &list); err != nil {
			return nil, fmt.Errorf("criteria: %w", err)
		}
	} else {
		var doc struct {
			Criteria []json.RawMessage `json:"criteria"`
		}
		dec := json.NewDecoder(bytes.NewReader(data))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&doc); err != nil {
			return nil, fmt.Errorf("criteria: %w", err)
		}
		if doc.Criteria == nil {
			return nil, errors.New(`criteria: want {"criteria": [...]}`)
		}
		list = doc.Criteria
	}
	out := make([]Criterion, len(list))
	seen := map[string]bool{}
	for i, raw := range list {
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&out[i]); err != nil {
			return nil, fmt.Errorf("criteria[%d]: %w", i, err)
		}
		if err := out[i].Check(); err != nil {
			return nil, fmt.Errorf("criteria[%d]: %w", i, err)
		}
		if seen[out[i].Name] {
			return nil, fmt.Errorf("criteria[%d]: a second criterion named %q", i, out[i].Name)
		}
		seen[out[i].Name] = true
	}
	if len(out) == 0 {
		return nil, errors.New("criteria: the list is empty")
	}
	return out, nil
}

// Check checks a criterion and fills in defaults.
func (c *Criterion) Check() error {
	if strings.TrimSpace(c.Name) == "" {
		return errors.New("a criterion needs a name")
	}
	if c.Type == "" {
		c.Type = TypeBool
	}
	switch c.Type {
	case TypeBool, TypeNumber:
	case TypeLabel:
		if len(c.Choices) == 0 {
			return fmt.Errorf("%s: a label criterion needs choices", c.Name)
		}
	default:
		return fmt.Errorf("%s: type %q: want bool, number or label", c.Name, c.Type)
	}
	if c.Target == "" {
		c.Target = "trace"
	}
	if _, _, err := parseTarget(c.Target); err != nil {
		return fmt.Errorf("%s: %w", c.Name, err)
	}
	if c.Threshold != nil && (math.IsNaN(*c.Threshold) || math.IsInf(*c.Threshold, 0)) {
		return fmt.Errorf("%s: threshold must be a number", c.Name)
	}
	switch c.Evaluator {
	case "human":
	case "rule":
		if c.Type != TypeBool {
			return fmt.Errorf("%s: a rule criterion is pass/fail (type bool)", c.Name)
		}
		if _, err := parsePolicy(c.Name, c.Policy); err != nil {
			return fmt.Errorf("%s: policy: %w", c.Name, err)
		}
	case "code":
		if (c.Expr == "") == (c.Compare == "") {
			return fmt.Errorf("%s: a code criterion needs expr or compare (one of them)", c.Name)
		}
		if c.Expr != "" {
			if _, err := compileExpr(c.Expr); err != nil {
				return fmt.Errorf("%s: %w", c.Name, err)
			}
		}
		switch c.Compare {
		case "", "exact", "contains", "numeric":
		case "regex":
		default:
			return fmt.Errorf("%s: compare %q: want exact, contains, regex or numeric", c.Name, c.Compare)
		}
		if c.Compare != "" && c.Type != TypeBool {
			return fmt.Errorf("%s: a comparison is pass/fail (type bool)", c.Name)
		}
	case "llm":
		if strings.TrimSpace(c.Prompt) == "" {
			return fmt.Errorf("%s: an llm criterion needs a prompt", c.Name)
		}
	case "":
		return fmt.Errorf("%s: no evaluator (human, rule, code or llm)", c.Name)
	default:
		return fmt.Errorf("%s: evaluator %q: want human, rule, code or llm", c.Name, c.Evaluator)
	}
	return nil
}

// Pass tells whether a value passes: true for a boolean true. Numbers and
// labels have no pass/fail (nil).
func Pass(v json.RawMessage) *bool {
	switch string(bytes.TrimSpace(v)) {
	case "true":
		t := true
		return &t
	case "false":
		f := false
		return &f
	}
	return nil
}

// parseTarget reads "trace", "step:<KIND>" or "tool_call".
func parseTarget(t string) (kind, arg string, err error) {
	switch {
	case t == "trace" || t == "tool_call":
		return t, "", nil
	case strings.HasPrefix(t, "step:") && len(t) > 5:
		return "step", t[5:], nil
	}
	return "", "", fmt.Errorf("target %q: want trace, step:<KIND> (such as step:AI_RESPONSE or step:TOOL) or tool_call", t)
}
