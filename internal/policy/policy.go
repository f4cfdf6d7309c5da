package policy

import (
	"context"
	"encoding/json"
	"fmt"
	"runtime/debug"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/lookout-dev/lookout/internal/trace"
)

// Policy is a parsed and checked policy. It is safe for concurrent use.
type Policy struct {
	name   string
	src    string
	li     *lineIndex
	stmts  []Stmt
	rules  []*rule
	consts []*DeclStmt
	preds  []*DeclStmt
	limits Limits
	model  *DetectorModel
}

type rule struct {
	idx  int
	stmt *RaiseStmt
	body *bodyScope
	open []int // slots of the variables that range over the whole trace
}

// Limits bound the work of one analysis (one call of Analyze). A rule that
// exceeds them fails with a RuntimeError of class BudgetExceeded; past
// Violations the result is truncated instead (budget.go).
type Limits struct {
	// Steps counts evaluation steps (expression evaluations, candidate
	// values, characters scanned by regular expressions in units of 16).
	Steps int64
	// Time is a wall-clock limit for the whole analysis, regular
	// expression matching included; zero means none (the context's
	// deadline still applies).
	Time time.Duration
	// Memory bounds the bytes of the values the analysis builds; zero
	// means DefaultLimits.Memory.
	Memory int64
	// Violations caps the violations returned; past it the result is
	// Truncated. Zero means DefaultLimits.Violations.
	Violations int
}

// DefaultLimits allow far more work than any reasonable rule needs on large
// traces (Invariant itself stops at 100 candidate combinations), while
// stopping runaway rules within seconds.
var DefaultLimits = Limits{Steps: 100_000_000, Time: 60 * time.Second, Memory: 1 << 30, Violations: 1000}

// Parse parses and checks a policy. On failure the error is a *LoadError
// listing every problem with its line and column.
func Parse(src string) (*Policy, error) { return ParseFile("", src) }

// ParseFile is Parse for a policy read from a file; name appears in error
// messages ("rules.iv:3:7: ...").
func ParseFile(name, src string) (*Policy, error) {
	return ParseContext(context.Background(), name, src)
}

// MaxPolicySize bounds the source of a policy (Invariant's are a few KB):
// its tokens are read at once, before the deadline is first checked.
const MaxPolicySize = 1 << 20

// ParseContext is ParseFile stopped when ctx is done: loading then fails
// with a *LoadError whose one diagnostic has class BudgetExceeded. Loading
// takes time linear in the policy's size.
func ParseContext(ctx context.Context, name, src string) (p *Policy, err error) {
	p = &Policy{name: name, src: src, li: newLineIndex(src), limits: DefaultLimits}
	b := &parseBudget{ctx: ctx, done: ctx.Done()}
	defer func() {
		if r := recover(); r != nil {
			if _, ok := r.(parseStopped); !ok {
				panic(r)
			}
			p, err = nil, &LoadError{Name: name, src: src, Diagnostics: []Diagnostic{{
				Msg: stopError(ctx, "loading the policy").Msg, Class: ClassBudget}}}
		}
	}()
	b.check()
	if len(src) > MaxPolicySize {
		return nil, &LoadError{Name: name, src: src[:0], Diagnostics: []Diagnostic{{Pos: Pos{Line: 1, Col: 1}, Class: ClassBudget,
			Msg: fmt.Sprintf("the policy is %d bytes; at most %d are loaded", len(src), MaxPolicySize)}}}
	}
	stmts, serr := parsePolicyBudget(src, b)
	if serr != nil {
		return nil, &LoadError{Name: name, src: src, Diagnostics: []Diagnostic{{Pos: p.li.pos(serr.off), Msg: serr.msg, Class: ClassSyntax}}}
	}
	p.stmts = stmts
	c := &checker{src: src, li: p.li, budget: b}
	c.check(p, stmts)
	if len(c.diags) > 0 {
		sort.SliceStable(c.diags, func(i, j int) bool {
			if c.diags[i].Line != c.diags[j].Line {
				return c.diags[i].Line < c.diags[j].Line
			}
			return c.diags[i].Col < c.diags[j].Col
		})
		return nil, &LoadError{Name: name, src: src, Diagnostics: c.diags}
	}
	return p, nil
}

// SetLimits changes the limits of later analyses.
func (p *Policy) SetLimits(l Limits) { p.limits = l }

// SetDetectorModel makes later analyses answer the model-backed detectors
// (prompt_injection, moderated, pii's named entities, llm, llm_confirm)
// with m; nil leaves them unavailable.
func (p *Policy) SetDetectorModel(m *DetectorModel) { p.model = m }

// Source is the policy text.
func (p *Policy) Source() string { return p.src }

// Rules is the number of raise rules.
func (p *Policy) Rules() int { return len(p.rules) }

// Violation is one satisfying assignment of a rule: its message arguments,
// keyword arguments and the ranges of the trace it involves.
type Violation struct {
	// Rule is the index of the raise statement (0-based).
	Rule int
	// Key identifies the rule and the assignment, in Invariant's format
	// "(rule, (event indices of the variables sorted by name))", with -1 for
	// values that are not events. Stable across runs; monitors use it to
	// report each violation once.
	Key string
	// Args are the positional arguments of PolicyViolation(...), or the
	// message of raise "...". Strings, numbers and booleans are Go values;
	// events, lists and dictionaries are json.RawMessage.
	Args []any
	// Kwargs are the keyword arguments of PolicyViolation(...).
	Kwargs map[string]any
	// Ranges are addresses relative to the event list, in document order:
	// "0.tool_calls.0" (an object) or "0.content:7-8" (code points [7, 8)).
	Ranges []string
	// Vars are the quantified variables of the rule and what they are bound to.
	Vars []Binding

	text    string
	kwOrder []string
	once    sync.Once
}

// Binding is one variable of a violation's assignment.
type Binding struct {
	Name string
	// Address of the bound object ("2", "2.tool_calls.0", "0.tools.3",
	// "1.content.0"), or "" when the value is not from the trace.
	Address string
	// Event is the index of the event holding the value, or -1.
	Event int
}

// Message is the first argument when it is a string (the usual message).
func (v *Violation) Message() string {
	if len(v.Args) > 0 {
		if s, ok := v.Args[0].(string); ok {
			return s
		}
	}
	return ""
}

// Text is the violation for people: its message followed by its keyword
// arguments as JSON, sorted by name ("secret in a message (kind="AWS")"),
// or String() when the first argument is not a message.
func (v *Violation) Text() string {
	msg := v.Message()
	if msg == "" {
		return v.String()
	}
	if len(v.Kwargs) == 0 {
		return msg
	}
	keys := make([]string, 0, len(v.Kwargs))
	for k := range v.Kwargs {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	b.WriteString(msg)
	b.WriteString(" (")
	for i, k := range keys {
		if i > 0 {
			b.WriteString(", ")
		}
		j, err := json.Marshal(v.Kwargs[k])
		if err != nil {
			j = []byte("?")
		}
		b.WriteString(k)
		b.WriteByte('=')
		b.Write(j)
	}
	b.WriteByte(')')
	return b.String()
}

// String renders the violation as Invariant does:
// PolicyViolation(<args joined by spaces>, key=value, ...).
func (v *Violation) String() string {
	v.once.Do(func() {
		if v.text == "" {
			v.text = renderArgs(v.Args, v.kwOrder, v.Kwargs)
		}
	})
	return v.text
}

// Addresses are the ranges in the long form of the API
// ("messages.0.content:7-8").
func (v *Violation) Addresses() []string {
	out := make([]string, len(v.Ranges))
	for i, r := range v.Ranges {
		out[i] = "messages." + r
	}
	return out
}

// ToDict is the shape of Invariant's ErrorInformation.to_dict():
// {"key", "args", "kwargs", "ranges"} with ranges in the long form.
func (v *Violation) ToDict() map[string]any {
	args := v.Args
	if args == nil {
		args = []any{}
	}
	kw := v.Kwargs
	if kw == nil {
		kw = map[string]any{}
	}
	return map[string]any{"key": v.Key, "args": args, "kwargs": kw, "ranges": v.Addresses()}
}

// MarshalJSON writes ToDict.
func (v *Violation) MarshalJSON() ([]byte, error) { return json.Marshal(v.ToDict()) }

// Result is the outcome of an analysis.
type Result struct {
	Violations []*Violation
	// Truncated is set when the analysis stopped at its cap of violations
	// (Limits.Violations, MaxViolationBytes): there are more than these.
	Truncated bool
	// Steps is the work the analysis took, in the unit of Limits.Steps.
	Steps int64
}

// ToDict is {"errors": [violation.ToDict(), ...]}, Invariant's
// AnalysisResult.to_dict().
func (r *Result) ToDict() map[string]any {
	errs := make([]any, len(r.Violations))
	for i, v := range r.Violations {
		errs[i] = v.ToDict()
	}
	d := map[string]any{"errors": errs}
	if r.Truncated {
		d["truncated"] = true
	}
	return d
}

// Analyze checks a trace (a list of events) and returns every violation.
// params are the policy parameters (input.<name>); values are Go values as
// encoding/json produces them. A failure of the evaluation itself is a
// *RuntimeError.
func (p *Policy) Analyze(events []trace.Event, params map[string]any) (*Result, error) {
	return p.analyze(context.Background(), events, len(events), params)
}

// AnalyzePending checks past+pending as one trace and returns only the
// violations whose assignment involves at least one pending event, as a
// guardrail checking the next step of an agent does.
func (p *Policy) AnalyzePending(past, pending []trace.Event, params map[string]any) (*Result, error) {
	return p.AnalyzePendingContext(context.Background(), past, pending, params)
}

// AnalyzeContext is Analyze stopped when ctx is done: a cancelled or
// expired context ends the check, within milliseconds, with a
// BudgetExceeded RuntimeError. The check's time budget (Limits.Time) runs
// from the call; the sooner of it and ctx's deadline applies.
func (p *Policy) AnalyzeContext(ctx context.Context, events []trace.Event, params map[string]any) (*Result, error) {
	return p.analyze(ctx, events, len(events), params)
}

// AnalyzePendingContext is AnalyzePending stopped when ctx is done.
func (p *Policy) AnalyzePendingContext(ctx context.Context, past, pending []trace.Event, params map[string]any) (*Result, error) {
	all := make([]trace.Event, 0, len(past)+len(pending))
	all = append(append(all, past...), pending...)
	return p.analyze(ctx, all, len(past), params)
}

func (p *Policy) analyze(ctx context.Context, events []trace.Event, firstPending int, params map[string]any) (res *Result, err error) {
	return p.analyzeState(ctx, newTraceState(events), firstPending, params)
}

func (p *Policy) analyzeState(ctx context.Context, st *traceState, firstPending int, params map[string]any) (res *Result, err error) {
	return p.run(ctx, st, firstPending, params, func(in *interp, res *Result) {
		for _, r := range p.rules {
			in.rule = r.idx
			in.runRule(r, res)
			if res.Truncated {
				break
			}
		}
	})
}

// run sets up an analysis of events and runs body in it, turning the
// evaluation's failures into the error returned.
func (p *Policy) run(ctx context.Context, st *traceState, firstPending int, params map[string]any, body func(in *interp, res *Result)) (res *Result, err error) {
	in := &interp{
		p:          p,
		st:         st,
		params:     params,
		paramObj:   &paramsObj{vals: map[string]value{}},
		maxSteps:   p.limits.Steps,
		maxMem:     p.limits.Memory,
		maxViol:    p.limits.Violations,
		ctx:        ctx,
		done:       ctx.Done(),
		deadline:   checkDeadline(ctx, p.limits.Time),
		consts:     make([]value, len(p.consts)),
		constState: make([]uint8, len(p.consts)),
		rule:       -1,
	}
	if in.maxSteps <= 0 {
		in.maxSteps = DefaultLimits.Steps
	}
	if in.maxMem <= 0 {
		in.maxMem = DefaultLimits.Memory
	}
	if in.maxViol <= 0 {
		in.maxViol = DefaultLimits.Violations
	}
	in.st.pending = firstPending
	defer func() {
		if in.regexCancel != nil {
			in.regexCancel()
		}

		if r := recover(); r != nil {
			if ep, ok := r.(evalPanic); ok {
				ep.err.Name = p.name
				res, err = nil, ep.err
				return
			}
			res, err = nil, &RuntimeError{Class: ClassInternal, Rule: in.rule,
				Msg: fmt.Sprintf("internal error: %v\n%s", r, debug.Stack())}
		}
	}()
	in.checkDone()
	res = &Result{}
	body(in, res)
	res.Steps = in.steps
	return res, nil
}

func (in *interp) runRule(r *rule, res *Result) {
	f := newFrame(r.body.nslots, nil)
	ctl := &searchCtl{
		checkAction: true,
		onTrue: func(f *frame, markStart int) bool {
			marks := append([]mark(nil), in.marks[markStart:]...)
			in.marks = in.marks[:markStart]
			if !in.involvesPending(r, f) {
				return true
			}
			if len(res.Violations) >= in.maxViol || in.violBytes >= MaxViolationBytes {
				res.Truncated = true
				return false
			}
			v := in.violation(r, f, marks)
			n := v.size()
			in.violBytes += n
			in.alloc(n)
			res.Violations = append(res.Violations, v)
			return true
		},
	}
	in.search(r.body, f, ctl)
}

func (in *interp) involvesPending(r *rule, f *frame) bool {
	if in.st.pending >= len(in.st.events) {
		return true
	}
	for _, v := range f.slots {
		if fo, ok := v.p.(flowObject); ok && v.K == kObj && fo.eventIndex() >= in.st.pending {
			return true
		}
	}
	return false
}

// violation builds the violation of a model of rule r.
func (in *interp) violation(r *rule, f *frame, marks []mark) *Violation {
	v := &Violation{Rule: r.idx}
	// the raise expression, with the model's bindings
	markStart := len(in.marks)
	var args []value
	var kw []kwArg
	tv := in.eval(r.stmt.Target, f)
	in.marks = in.marks[:markStart]
	switch tv.K {
	case kObj:
		if vv, ok := tv.p.(*violationVal); ok {
			args, kw = vv.args, vv.kw
			break
		}
		args = []value{vStr(pyStr(tv))}
	case kUnknown:
		in.fail(r.stmt.Target.pos(), ClassValue, "the raised value refers to a variable without a value")
	default:
		args = []value{vStr(pyStr(tv))}
	}
	for _, a := range args {
		v.Args = append(v.Args, goArg(a))
	}
	if len(kw) > 0 {
		v.Kwargs = make(map[string]any, len(kw))
		for _, k := range kw {
			v.Kwargs[k.name] = goArg(k.v)
			v.kwOrder = append(v.kwOrder, k.name)
		}
	}
	// object ranges of everything bound, then the ranges marked while
	// evaluating the conditions
	for _, s := range f.slots {
		if o := s.origin(); o != nil && s.K != kUnknown {
			marks = append(marks, mark{o: o, start: -1})
		}
	}
	v.Ranges = rangeStrings(marks)
	// key: (rule, (index of each bound name, sorted by name))
	type kv struct {
		name string
		key  string
	}
	var keys []kv
	for name, sym := range r.body.names {
		val := f.slots[sym.slot]
		if val.K == kUnknown {
			continue
		}
		keys = append(keys, kv{name, keyOf(val)})
	}
	slices.SortFunc(keys, func(a, b kv) int { return strings.Compare(a.name, b.name) })
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = k.key
	}
	inner := "(" + strings.Join(parts, ", ")
	if len(parts) == 1 {
		inner += ","
	}
	inner += ")"
	v.Key = "(" + strconv.Itoa(r.idx) + ", " + inner + ")"
	for _, sym := range r.body.vars {
		val := f.slots[sym.slot]
		if val.K == kUnknown {
			continue
		}
		b := Binding{Name: sym.name, Event: -1}
		if o := val.origin(); o != nil {
			b.Address = o.path()
		}
		if fo, ok := val.p.(flowObject); ok && val.K == kObj {
			b.Event = fo.eventIndex()
		}
		v.Vars = append(v.Vars, b)
	}
	return v
}

func keyOf(v value) string {
	if v.K == kObj {
		switch o := v.p.(type) {
		case *tool:
			return strconv.Quote(o.o.path())
		case flowObject:
			return strconv.Itoa(o.eventIndex())
		}
	}
	return "-1"
}

// goArg converts a violation argument for the API.
func goArg(v value) any {
	switch v.K {
	case kNone, kUnknown, kNop:
		return nil
	case kBool:
		return v.b()
	case kInt:
		return v.i()
	case kFloat:
		return v.f()
	case kStr:
		return v.s
	}
	return json.RawMessage(appendJSON(nil, v))
}

// renderArgs renders a violation as Invariant's str(error) does:
// PolicyViolation(<args joined by spaces>, key=value, ...), with events as
// their JSON.
func renderArgs(args []any, kwOrder []string, kw map[string]any) string {
	var b strings.Builder
	b.WriteString("PolicyViolation(")
	for i, a := range args {
		if i > 0 {
			b.WriteByte(' ')
		}
		writeArg(&b, a)
	}
	for _, k := range kwOrder {
		b.WriteString(", ")
		b.WriteString(k)
		b.WriteByte('=')
		writeArg(&b, kw[k])
	}
	b.WriteByte(')')
	return b.String()
}

func writeArg(b *strings.Builder, a any) {
	switch x := a.(type) {
	case nil:
		b.WriteString("None")
	case string:
		b.WriteString(x)
	case bool:
		if x {
			b.WriteString("True")
		} else {
			b.WriteString("False")
		}
	case int64:
		b.WriteString(strconv.FormatInt(x, 10))
	case float64:
		b.WriteString(formatFloat(x))
	case json.RawMessage:
		b.Write(x)
	default:
		fmt.Fprint(b, x)
	}
}
