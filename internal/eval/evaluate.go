package eval

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/lookout-dev/lookout/internal/policy"
	"github.com/lookout-dev/lookout/internal/trace"
)

// Limits bound each rule or code evaluation (one trace), so that a runaway
// expression ends with an error instead of holding a core: the same budget
// (steps, time, memory, violations) as the server's policy checks. Loading
// a criterion's policy or expression gets Limits.Time too.
var Limits = policy.Limits{Steps: 50_000_000, Time: 10 * time.Second, Memory: 256 << 20, Violations: 1000}

// parsePolicy loads a criterion's policy within Limits.Time.
func parsePolicy(name, src string) (*policy.Policy, error) {
	ctx, cancel := policy.WithTimeBudget(context.Background(), Limits.Time)
	defer cancel()
	return policy.ParseContext(ctx, name, src)
}

// Result is one grade an evaluator gives: of the whole trace (Address "")
// or of one target in it.
type Result struct {
	Address string
	Value   json.RawMessage
	Comment string
	Extra   json.RawMessage // a JSON object or nil
}

// Evaluator grades a trace on one criterion.
type Evaluator struct {
	C      Criterion
	kind   string // trace, step, tool_call
	arg    string // the step kind
	pol    *policy.Policy
	expr   *policy.Policy
	llm    *LLM
	params paramNeeds
}

// SetDetectorModel gives a rule criterion's policy the model that answers
// its model-backed detectors (prompt_injection, moderated, pii's named
// entities, llm); without one they fail as unavailable.
func (e *Evaluator) SetDetectorModel(m *policy.DetectorModel) {
	if e.pol != nil {
		e.pol.SetDetectorModel(m)
	}
}

// ErrHuman is returned by Evaluate for a human criterion: people grade it.
var ErrHuman = errors.New("a human criterion is graded by people")

// Compile prepares a checked criterion. llm may be nil when no criterion is
// an llm one (an llm criterion without it is an error).
func Compile(c Criterion, llm *LLM) (*Evaluator, error) {
	if err := c.Check(); err != nil {
		return nil, err
	}
	e := &Evaluator{C: c}
	e.kind, e.arg, _ = parseTarget(c.Target)
	var err error
	switch c.Evaluator {
	case "rule":
		if e.pol, err = parsePolicy(c.Name, c.Policy); err != nil {
			return nil, err
		}
		e.pol.SetLimits(Limits)
	case "code":
		if c.Expr != "" {
			if e.expr, err = compileExpr(c.Expr); err != nil {
				return nil, fmt.Errorf("%s: %w", c.Name, err)
			}
			e.params = needs(c.Expr)
		}
	case "llm":
		if llm == nil {
			return nil, fmt.Errorf("%s: no LLM endpoint is configured (lookout serve --llm-url)", c.Name)
		}
		e.llm = llm
	}
	return e, nil
}

// exprPrefix wraps an expression into a one-rule policy whose single
// violation carries the expression's value; the names a criterion reads are
// constants bound to policy parameters.
const exprPrefix = `raise PolicyViolation("value", value=(`

func compileExpr(expr string) (*policy.Policy, error) {
	if strings.ContainsAny(expr, "\n\r") {
		return nil, errors.New("expr: an expression is one line")
	}
	src := exprPrefix + expr + ")) if:\n    True\n" +
		"metadata := input.metadata\nmessages := input.messages\ntool_calls := input.tool_calls\nname := input.name\nstep := input.step\ncall := input.call\nanswer := input.answer\n"
	p, err := parsePolicy("expr", src)
	if err != nil {
		var le *policy.LoadError
		if errors.As(err, &le) && len(le.Diagnostics) > 0 {
			d := le.Diagnostics[0]
			col := d.Col - len(exprPrefix)
			if d.Line != 1 || col < 1 {
				col = 1
			}
			if d.Line == 1 && col > len(expr) {
				// The parser reached the closing brackets the expression is
				// wrapped in: the expression itself stopped short.
				return nil, fmt.Errorf("expr: column %d: the expression ends too soon (after %q)", len(expr)+1, strings.TrimSpace(expr))
			}
			return nil, fmt.Errorf("expr: column %d: %s", col, d.Msg)
		}
		return nil, fmt.Errorf("expr: %w", err)
	}
	p.SetLimits(Limits)
	return p, nil
}

// paramNeeds are the names an expression mentions, so that only those are
// built for each trace.
type paramNeeds struct{ metadata, messages, toolCalls, name, step, call, answer, arguments bool }

func needs(expr string) paramNeeds {
	word := func(w string) bool {
		return regexp.MustCompile(`\b` + w + `\b`).MatchString(expr)
	}
	return paramNeeds{word("metadata"), word("messages"), word("tool_calls"), word("name"), word("step"), word("call"), word("answer"), word("arguments")}
}

// target is one place a criterion grades.
type target struct {
	address string
	span    *trace.Span
	event   int // tool_call: the event and call index
	call    int
}

func (e *Evaluator) targets(t *trace.Trace) []target {
	switch e.kind {
	case "step":
		var out []target
		for i := range t.Spans {
			if t.Spans[i].Kind == e.arg {
				out = append(out, target{address: trace.SpanAddress(t.Spans[i].ID).String(), span: &t.Spans[i]})
			}
		}
		return out
	case "tool_call":
		var out []target
		for i := range t.Events {
			for j := range t.Events[i].ToolCalls {
				out = append(out, target{address: fmt.Sprintf("messages.%d.tool_calls.%d", i, j), event: i, call: j})
			}
		}
		return out
	}
	return []target{{}}
}

// Evaluate grades t: one result per target (none when the trace has no
// target of the criterion's kind).
func (e *Evaluator) Evaluate(ctx context.Context, t *trace.Trace) ([]Result, error) {
	switch e.C.Evaluator {
	case "human":
		return nil, ErrHuman
	case "rule":
		return e.rule(ctx, t)
	}
	var out []Result
	for _, tg := range e.targets(t) {
		var r Result
		var err error
		switch e.C.Evaluator {
		case "code":
			r, err = e.code(ctx, t, tg)
		case "llm":
			r, err = e.llm.judge(ctx, e.C, t, tg)
		}
		if err != nil {
			if tg.address != "" {
				return nil, fmt.Errorf("%s: %w", tg.address, err)
			}
			return nil, err
		}
		r.Address = tg.address
		out = append(out, r)
	}
	return out, nil
}

// rule checks the policy once over the trace and fails each target that a
// violation's ranges fall in, with those ranges attached.
func (e *Evaluator) rule(ctx context.Context, t *trace.Trace) ([]Result, error) {
	res, err := e.pol.AnalyzeContext(ctx, t.Events, nil)
	if err != nil {
		return nil, err
	}
	var out []Result
	for _, tg := range e.targets(t) {
		var ranges, messages []string
		for _, v := range res.Violations {
			hit := false
			for _, a := range v.Addresses() {
				if e.within(t, tg, a) {
					ranges = append(ranges, a)
					hit = true
				}
			}
			if hit || (tg.address == "" && len(v.Addresses()) == 0) {
				messages = append(messages, v.Text())
			}
		}
		r := Result{Address: tg.address, Value: json.RawMessage("true")}
		if len(messages) > 0 {
			r.Value = json.RawMessage("false")
			r.Comment = strings.Join(messages, "; ")
			extra, _ := json.Marshal(map[string]any{"ranges": nonNil(ranges), "violations": messages})
			r.Extra = extra
		}
		out = append(out, r)
	}
	return out, nil
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// within tells whether address a (messages.i...) lies in target tg.
func (e *Evaluator) within(t *trace.Trace, tg target, a string) bool {
	under := func(prefix string) bool {
		return a == prefix || strings.HasPrefix(a, prefix+".") || strings.HasPrefix(a, prefix+":")
	}
	switch {
	case tg.span != nil:
		for i := range t.Events {
			if t.Events[i].SpanID == tg.span.ID && under("messages."+strconv.Itoa(i)) {
				return true
			}
		}
		return false
	case tg.address != "":
		return under(tg.address)
	}
	return true
}

// code evaluates the expression, or the comparison with the reference.
func (e *Evaluator) code(ctx context.Context, t *trace.Trace, tg target) (Result, error) {
	if e.C.Compare != "" {
		return e.compare(t, tg)
	}
	params := map[string]any{}
	n := e.params
	if n.metadata {
		params["metadata"] = rawValue(t.Metadata, "{}")
	}
	if n.messages {
		params["messages"] = json.RawMessage(trace.AppendEvents(nil, t.Events))
	}
	if n.toolCalls {
		var calls []any
		for i := range t.Events {
			for j := range t.Events[i].ToolCalls {
				c := &t.Events[i].ToolCalls[j]
				calls = append(calls, callValue(c, n.arguments))
			}
		}
		if calls == nil {
			calls = []any{}
		}
		params["tool_calls"] = calls
	}
	if n.name {
		params["name"] = t.Name
	}
	if n.step && tg.span != nil {
		params["step"] = spanValue(tg.span)
	}
	if n.call && tg.span == nil && tg.address != "" {
		params["call"] = callValue(&t.Events[tg.event].ToolCalls[tg.call], n.arguments)
	}
	if n.answer {
		params["answer"] = answerOf(t, tg)
	}
	// The expression reads only its names, never the event list itself.
	res, err := e.expr.AnalyzeContext(ctx, nil, params)
	if err != nil {
		return Result{}, err
	}
	if len(res.Violations) != 1 {
		return Result{}, fmt.Errorf("expr gave %d values", len(res.Violations))
	}
	return valueResult(e.C, res.Violations[0].Kwargs["value"])
}

// valueResult turns an expression's value into the criterion's type.
func valueResult(c Criterion, v any) (Result, error) {
	switch c.Type {
	case TypeBool:
		b, ok := v.(bool)
		if !ok {
			return Result{}, fmt.Errorf("expr: the value %s is not a boolean", show(v))
		}
		return Result{Value: json.RawMessage(strconv.FormatBool(b))}, nil
	case TypeNumber:
		var f float64
		switch x := v.(type) {
		case int64:
			f = float64(x)
		case int:
			f = float64(x)
		case float64:
			f = x
		case bool:
			if x {
				f = 1
			}
		default:
			return Result{}, fmt.Errorf("expr: the value %s is not a number", show(v))
		}
		if math.IsNaN(f) || math.IsInf(f, 0) {
			return Result{}, fmt.Errorf("expr: the value %v is not a finite number", f)
		}
		return Result{Value: json.RawMessage(strconv.FormatFloat(f, 'g', -1, 64))}, nil
	default:
		s, ok := v.(string)
		if !ok {
			return Result{}, fmt.Errorf("expr: the value %s is not a label", show(v))
		}
		return labelResult(c, s)
	}
}

func labelResult(c Criterion, s string) (Result, error) {
	for _, ch := range c.Choices {
		if strings.EqualFold(strings.TrimSpace(s), ch) {
			b, _ := json.Marshal(ch)
			return Result{Value: b}, nil
		}
	}
	return Result{}, fmt.Errorf("%q is not one of the choices %q", s, c.Choices)
}

func show(v any) string {
	switch x := v.(type) {
	case json.RawMessage:
		return string(x)
	case nil:
		return "None"
	}
	return fmt.Sprintf("%v", v)
}

func jsonValue(raw []byte, empty any) any {
	if len(raw) == 0 {
		return empty
	}
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return empty
	}
	return v
}

// rawValue hands stored JSON to the rule language as it is (empty gives
// empty): the language reads it as Python's json module would, with the
// nesting and the numbers the door lets in (decoded into Go values first,
// metadata nested past 64 levels failed as "nested too deeply", and a
// number past a float64 left the metadata empty).
func rawValue(raw []byte, empty string) json.RawMessage {
	if len(raw) == 0 {
		return json.RawMessage(empty)
	}
	return json.RawMessage(raw)
}

// callValue is a tool call as an expression sees it; the arguments are
// decoded only when the expression mentions them (they are most of a
// call's size).
func callValue(c *trace.ToolCall, args bool) map[string]any {
	fn := map[string]any{"name": c.Function.Name}
	v := map[string]any{"id": c.ID, "name": c.Function.Name, "function": fn}
	if args {
		a := rawValue(c.Function.Arguments, "{}")
		fn["arguments"], v["arguments"] = a, a
	}
	return v
}

func spanValue(s *trace.Span) map[string]any {
	return map[string]any{"id": s.ID, "name": s.Name, "kind": s.Kind, "status": s.Status,
		"attributes": rawValue(s.Attributes, "{}"), "metadata": rawValue(s.Attributes, "{}"),
		"inputs": rawValue(s.Inputs, "null"), "outputs": rawValue(s.Outputs, "null"), "value": rawValue(s.Value, "null")}
}

// answerOf is what a comparison reads: the trace's final answer (the text of
// its last assistant message that has text), a step's value (or outputs),
// or a tool call's arguments.
func answerOf(t *trace.Trace, tg target) string {
	switch {
	case tg.span != nil:
		raw := tg.span.Value
		if len(raw) == 0 {
			raw = tg.span.Outputs
		}
		var s string
		if json.Unmarshal(raw, &s) == nil {
			return s
		}
		return string(raw)
	case tg.address != "":
		return string(t.Events[tg.event].ToolCalls[tg.call].Function.Arguments)
	}
	for i := len(t.Events) - 1; i >= 0; i-- {
		ev := &t.Events[i]
		if ev.Role == "assistant" {
			if s := ev.Content.String(); strings.TrimSpace(s) != "" {
				return s
			}
		}
	}
	return ""
}

// compare checks the answer against the reference in the trace metadata.
func (e *Evaluator) compare(t *trace.Trace, tg target) (Result, error) {
	key := e.C.Reference
	if key == "" {
		key = "reference"
	}
	meta, _ := jsonValue(t.Metadata, map[string]any{}).(map[string]any)
	refV, ok := meta[key]
	if !ok {
		return Result{}, fmt.Errorf("the trace metadata has no reference %q", key)
	}
	ref, ok := refV.(string)
	if !ok {
		b, _ := json.Marshal(refV)
		ref = string(b)
	}
	ans := answerOf(t, tg)
	var pass bool
	switch e.C.Compare {
	case "exact":
		pass = strings.TrimSpace(ans) == strings.TrimSpace(ref)
	case "contains":
		pass = strings.Contains(strings.ToLower(ans), strings.ToLower(ref))
	case "regex":
		re, err := regexp.Compile(ref)
		if err != nil {
			return Result{}, fmt.Errorf("reference %q: %w", key, err)
		}
		pass = re.MatchString(ans)
	case "numeric":
		r, err := strconv.ParseFloat(strings.TrimSpace(ref), 64)
		if err != nil {
			return Result{}, fmt.Errorf("reference %q is not a number: %q", key, ref)
		}
		a, ok := lastNumber(ans)
		pass = ok && math.Abs(a-r) <= e.C.Tolerance
	}
	c := ""
	if !pass {
		c = fmt.Sprintf("answer %.200q, reference %.200q", ans, ref)
	}
	return Result{Value: json.RawMessage(strconv.FormatBool(pass)), Comment: c}, nil
}

var numberRE = regexp.MustCompile(`-?\d[\d,]*(?:\.\d+)?(?:[eE][-+]?\d+)?`)

// lastNumber is the last number written in s (the usual place of a final
// answer), with thousands separators dropped.
func lastNumber(s string) (float64, bool) {
	ms := numberRE.FindAllString(s, -1)
	if len(ms) == 0 {
		return 0, false
	}
	f, err := strconv.ParseFloat(strings.ReplaceAll(ms[len(ms)-1], ",", ""), 64)
	return f, err == nil
}
