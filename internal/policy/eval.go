package policy

import (
	"context"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/lookout-dev/lookout/internal/pyre"
)

// interp holds the state of one analysis: the trace, parameters, the step
// budget, ranges marked so far and variable domains discovered by the body
// being evaluated.
type interp struct {
	p        *Policy
	st       *traceState
	params   map[string]any
	paramObj *paramsObj

	steps, maxSteps int64
	// ctx is the caller's context and done its Done channel; deadline is
	// the sooner of ctx's deadline and the time budget's. step polls both
	// (budget.go); regexCtx carries them to the backtracking engine.
	ctx         context.Context
	done        <-chan struct{}
	deadline    time.Time
	regexCtx    context.Context
	regexCancel context.CancelFunc
	// mem counts the bytes of values built, up to maxMem; violBytes those
	// of the violations, up to MaxViolationBytes, and maxViol caps their
	// number.
	mem, maxMem int64
	violBytes   int64
	maxViol     int

	marks []mark

	regs     []reg
	regFrame *frame
	regStart int

	consts     []value
	constState []uint8

	argStack  []value
	detCache  map[string]detEntry
	predDepth int
	jsonCache map[string]value
	rule      int

	// Incremental analysis (incremental.go). ruleBody is the body of the
	// rule being run; with track set, its models' search paths are kept in
	// path. restrict, when not nil, limits the rule's open variables (by
	// slot) to events before newFrom or from newFrom on. touched records
	// that a search other than the rule's own ranged over the whole trace,
	// untracked that the rule bound an open variable not in rule.open.
	ruleBody  *bodyScope
	track     bool
	path      []int32
	restrict  []int8
	newFrom   int
	ruleOpen  []int
	touched   bool
	untracked bool
	// closed are the values of the rule's closed blocks (closed.go) this
	// analysis evaluated or took from the snapshot; closedBody is the body
	// of the one being evaluated, whose own search is not a touch;
	// onlyNewBody limits that body's open variables to new events.
	closed      map[*Quantifier]*closedBlock
	closedBody  *bodyScope
	onlyNewBody *bodyScope
	qEarly      bool    // the last quantifier's search stopped before its end
	bodyMarks   *[]mark // when set, a count's counted assignments' own marks go here too
}

// frame holds the slots of one body: quantified variables, locals,
// parameters, comprehension variables.
type frame struct {
	slots  []value
	parent *frame
}

func newFrame(n int, parent *frame) *frame {
	f := &frame{slots: make([]value, n), parent: parent}
	return f // the zero value is kUnknown
}

// reg is a variable domain discovered during evaluation: the variable
// ranges over all objects of a type in the trace (open) or over the values
// of a type inside a given value ((x: T) in expr).
type reg struct {
	slot   int
	typ    string
	values value
	open   bool
}

type detEntry struct {
	v     value
	marks []mark
}

// evalPanic carries a RuntimeError up to the analysis entry point.
type evalPanic struct{ err *RuntimeError }

func (in *interp) fail(off int, class, format string, args ...any) {
	e := &RuntimeError{Class: class, Msg: fmt.Sprintf(format, args...), Rule: in.rule}
	if off > 0 && in.p != nil {
		e.Pos = in.p.li.pos(off)
	}
	panic(evalPanic{e})
}

const timeCheckMask = 1<<12 - 1

func (in *interp) step() {
	in.steps++
	if in.steps > in.maxSteps {
		in.fail(0, ClassBudget, "evaluation exceeded its budget of %d steps; the rule enumerates too many combinations: add conditions that narrow each variable (e.g. 'call is tool:name', a flow a -> b), or raise the limit", in.maxSteps)
	}
	if in.steps&timeCheckMask == 0 {
		in.checkDone()
	}
}

func (in *interp) eval(e Expr, f *frame) value {
	in.step()
	switch n := e.(type) {
	case *Ident:
		return in.ident(n, f)
	case *TypedIdent:
		in.register(n, f, value{}, true)
		return vTrue
	case *StringLit:
		return n.val
	case *NumberLit:
		if n.IsInt {
			return vInt(n.Int)
		}
		return vFloat(n.Float)
	case *BoolLit:
		return vBool(n.value)
	case *NoneLit:
		return none
	case *ListLit:
		items := make([]value, len(n.Elems))
		for i, x := range n.Elems {
			items[i] = in.eval(x, f)
		}
		return value{K: kList, p: &listVal{Items: items, Tuple: n.Tuple}}
	case *ObjectLit:
		d := newDict(len(n.Keys))
		for i, k := range n.Keys {
			d.set(k, in.eval(n.Vals[i], f))
		}
		return value{K: kDict, p: d}
	case *UnaryExpr:
		return in.unary(n, f)
	case *BinaryExpr:
		return in.binary(n, f)
	case *Assign:
		v := in.eval(n.value, f)
		f.slots[n.sym.slot] = v
		return nop
	case *CallExpr:
		return in.call(n, f)
	case *MemberAccess:
		return in.member(n, f)
	case *KeyAccess:
		return in.index(n, f)
	case *ListComprehension:
		return in.comprehension(n, f)
	case *TernaryOp:
		c := in.eval(n.Cond, f)
		if c.K == kUnknown {
			return unknown
		}
		if truthy(c) {
			return in.eval(n.Then, f)
		}
		return in.eval(n.Else, f)
	case *Quantifier:
		return in.quantifier(n, f)
	}
	in.fail(e.pos(), ClassInternal, "cannot evaluate %T here", e)
	return unknown
}

func (in *interp) ident(n *Ident, f *frame) value {
	sym := n.sym
	switch sym.kind {
	case sVar, sLocal, sParam, sCompVar:
		fr := f
		for i := 0; i < n.up; i++ {
			fr = fr.parent
		}
		return fr.slots[sym.slot]
	case sConst:
		return in.constant(sym.decl)
	case sInput:
		return vObj(in.paramObj)
	}
	return sym.val
}

func (in *interp) constant(d *DeclStmt) value {
	switch in.constState[d.index] {
	case 2:
		return in.consts[d.index]
	case 1:
		in.fail(d.Off, ClassValue, "constant %s refers to itself", d.Name)
	}
	in.constState[d.index] = 1
	defer func() {
		if in.constState[d.index] == 1 {
			in.constState[d.index] = 0 // failed: may be retried
		}
	}()
	f := newFrame(d.body.nslots, nil)
	v := in.eval(d.Body[0], f)
	in.consts[d.index] = v
	in.constState[d.index] = 2
	return v
}

// register records the domain of an unbound variable of the body being
// evaluated.
func (in *interp) register(n *TypedIdent, f *frame, values value, open bool) {
	if f != in.regFrame || f.slots[n.sym.slot].K != kUnknown {
		return
	}
	r := reg{slot: n.sym.slot, typ: n.Type, values: values, open: open}
	for i := in.regStart; i < len(in.regs); i++ {
		if in.regs[i].slot == r.slot {
			in.regs[i] = r
			return
		}
	}
	in.regs = append(in.regs, r)
}

func (in *interp) unary(n *UnaryExpr, f *frame) value {
	x := in.eval(n.X, f)
	if x.K == kUnknown {
		return unknown
	}
	switch n.Op {
	case "not":
		return vBool(!truthy(x))
	case "-":
		switch x.K {
		case kInt:
			return vInt(-x.i())
		case kFloat:
			return vFloat(-x.f())
		case kBool:
			if x.b() {
				return vInt(-1)
			}
			return vInt(0)
		}
	case "+":
		switch x.K {
		case kInt, kFloat:
			return x
		case kBool:
			if x.b() {
				return vInt(1)
			}
			return vInt(0)
		}
	}
	in.fail(n.Off, ClassType, "bad operand type for unary %s: '%s'", n.Op, typeName(x))
	return unknown
}

func (in *interp) binary(n *BinaryExpr, f *frame) value {
	switch n.Op {
	case "in":
		if ti, ok := n.L.(*TypedIdent); ok {
			rv := in.eval(n.R, f)
			if rv.K != kUnknown {
				in.register(ti, f, rv, false)
			}
			return vTrue
		}
	case "->", "~>":
		return in.flow(n, f)
	case "and":
		// A false left side makes the whole body false, so variables the
		// right side would declare cannot matter: short-circuit always.
		l := in.eval(n.L, f)
		if l.isFalse() {
			return vFalse
		}
		r := in.eval(n.R, f)
		if l.isFalse() || r.isFalse() {
			return vFalse
		}
		if l.K == kUnknown || r.K == kUnknown {
			return unknown
		}
		if truthy(l) {
			return r
		}
		return l
	case "or":
		l := in.eval(n.L, f)
		if l.isTrue() {
			if n.rDecl {
				// Invariant evaluates the right side anyway and the
				// variables it declares join the search; an error there
				// cannot change the (true) result.
				in.tryEval(n.R, f)
			}
			return vTrue
		}
		r := in.eval(n.R, f)
		if l.isTrue() || r.isTrue() {
			return vTrue
		}
		if l.K == kUnknown || r.K == kUnknown {
			return unknown
		}
		if truthy(l) {
			return l
		}
		return r
	case "is", "is not":
		switch r := n.R.(type) {
		case *ToolReference:
			l := in.eval(n.L, f)
			if l.K == kUnknown {
				return unknown
			}
			return vBool(in.matchTool(l, r, nil) == (n.Op == "is"))
		case *SemanticPattern:
			l := in.eval(n.L, f)
			if l.K == kUnknown {
				return unknown
			}
			return vBool(in.matchTool(l, r.Tool, r) == (n.Op == "is"))
		}
	}
	l := in.eval(n.L, f)
	r := in.eval(n.R, f)
	// A list holding an unknown value is unknown too (Invariant only looks
	// at the top level, which makes ['x', unbound] == [...] false before
	// the variable is even bound).
	if deepUnknown(l) || deepUnknown(r) {
		return unknown
	}
	switch n.Op {
	case "==":
		return vBool(equal(l, r))
	case "!=":
		return vBool(!equal(l, r))
	case "<", "<=", ">", ">=":
		c := in.compare(n, l, r)
		switch n.Op {
		case "<":
			return vBool(c < 0)
		case "<=":
			return vBool(c <= 0)
		case ">":
			return vBool(c > 0)
		}
		return vBool(c >= 0)
	case "in":
		return in.contains(n.OpOff, l, r, false)
	case "not in":
		return in.contains(n.OpOff, l, r, true)
	case "is":
		return vBool(identical(l, r))
	case "is not":
		return vBool(!identical(l, r))
	case "contains_only":
		return in.containsOnly(n, l, r)
	}
	return in.arith(n, l, r)
}

// identical approximates Python's 'is': identity for objects, equality of
// the singletons None, True and False, and equality otherwise.
func identical(a, b value) bool {
	if a.K != b.K {
		return false
	}
	switch a.K {
	case kObj, kFunc, kList, kDict:
		return a.p == b.p
	}
	return equal(a, b)
}

// tryEval evaluates e for its side effects on the search (declared
// variables), ignoring runtime errors other than an exhausted budget.
func (in *interp) tryEval(e Expr, f *frame) {
	markStart, argBase := len(in.marks), len(in.argStack)
	defer func() {
		if r := recover(); r != nil {
			ep, ok := r.(evalPanic)
			if !ok || ep.err.Class == ClassBudget {
				panic(r)
			}
			in.marks, in.argStack = in.marks[:markStart], in.argStack[:argBase]
		}
	}()
	in.eval(e, f)
}

func (in *interp) flow(n *BinaryExpr, f *frame) value {
	var vals [2]value
	for i, side := range []Expr{n.L, n.R} {
		switch s := side.(type) {
		case *TypedIdent:
			in.register(s, f, value{}, true)
			vals[i] = f.slots[s.sym.slot]
		case *Ident:
			vals[i] = in.ident(s, f)
		}
	}
	if vals[0].K == kUnknown || vals[1].K == kUnknown {
		return unknown
	}
	a, aok := vals[0].p.(flowObject)
	b, bok := vals[1].p.(flowObject)
	if vals[0].K != kObj || vals[1].K != kObj || !aok || !bok {
		bad := vals[0]
		if aok && vals[0].K == kObj {
			bad = vals[1]
		}
		in.fail(n.OpOff, ClassType, "%s relates events (messages, tool calls, tool outputs, tools), not %s", n.Op, typeName(bad))
	}
	if n.Op == "~>" {
		return vBool(b.flowSeq() == a.flowSeq()+1)
	}
	return vBool(a.flowSeq() < b.flowSeq())
}

func (in *interp) compare(n *BinaryExpr, l, r value) int {
	if a, ok := l.num(); ok {
		if b, ok := r.num(); ok {
			if l.K == kInt && r.K == kInt {
				switch {
				case l.i() < r.i():
					return -1
				case l.i() > r.i():
					return 1
				}
				return 0
			}
			switch {
			case a < b:
				return -1
			case a > b:
				return 1
			}
			return 0
		}
	}
	if l.K == kStr && r.K == kStr {
		return strings.Compare(l.s, r.s)
	}
	if l.K == kList && r.K == kList {
		x, y := l.list().Items, r.list().Items
		for i := 0; i < len(x) && i < len(y); i++ {
			if !equal(x[i], y[i]) {
				return in.compare(n, x[i], y[i])
			}
		}
		return len(x) - len(y)
	}
	in.fail(n.OpOff, ClassType, "'%s' not supported between instances of '%s' and '%s'", n.Op, typeName(l), typeName(r))
	return 0
}

// contains is Python's 'in', except that 'x in None' is false (as in
// Invariant) and a list on the left gives the list of memberships of its
// elements (so any([...] in x) works). Occurrences of a string in a string
// from the trace are marked as ranges.
func (in *interp) contains(off int, l, r value, negate bool) value {
	if r.K == kNone {
		return vBool(negate)
	}
	if l.K == kList {
		items := l.list().Items
		out := make([]value, len(items))
		for i, x := range items {
			out[i] = in.contains(off, x, r, negate)
		}
		return vList(out)
	}
	var res bool
	switch r.K {
	case kStr:
		if l.K != kStr {
			in.fail(off, ClassType, "'in <string>' requires string as left operand, not %s", typeName(l))
		}
		res = strings.Contains(r.s, l.s)
		if res && l.s != "" {
			if o, ok := r.p.(*origin); ok && o != nil {
				in.markOccurrences(o, r.s, l.s)
			}
		}
	case kList:
		for _, x := range r.list().Items {
			if equal(l, x) {
				res = true
				break
			}
		}
	case kDict:
		if l.K == kStr {
			_, res = r.dict().get(l.s)
		}
	case kObj:
		switch o := r.obj().(type) {
		case *contents:
			if l.K != kStr {
				in.fail(off, ClassType, "'in' on message content requires a string, not %s", typeName(l))
			}
			res = o.contains(l.s)
		case *record:
			if l.K == kStr {
				_, res = o.fields.get(l.s)
			}
		default:
			in.fail(off, ClassType, "argument of type '%s' is not iterable", typeName(r))
		}
	default:
		in.fail(off, ClassType, "argument of type '%s' is not iterable", typeName(r))
	}
	return vBool(res != negate)
}

func (in *interp) markOccurrences(o *origin, hay, needle string) {
	ascii := pyre.IsASCII(hay)
	pos := 0
	for {
		i := strings.Index(hay[pos:], needle)
		if i < 0 {
			return
		}
		start := pos + i
		end := start + len(needle)
		s, e := start, end
		if !ascii {
			s, e = pyre.RuneOffset(hay, start), pyre.RuneOffset(hay, end)
		}
		in.marks = append(in.marks, mark{o: o, start: s, end: e})
		in.step()
		pos = end
	}
}

func (in *interp) containsOnly(n *BinaryExpr, l, r value) value {
	// 'x contains_only allowed': every element of x is among the allowed.
	var elems []value
	switch l.K {
	case kList:
		elems = l.list().Items
	case kStr:
		for _, c := range l.s {
			elems = append(elems, vStr(string(c)))
		}
	default:
		in.fail(n.OpOff, ClassType, "contains_only needs a list on the left, not %s", typeName(l))
	}
	for _, e := range elems {
		if !in.contains(n.OpOff, e, r, false).isTrue() {
			return vFalse
		}
	}
	return vTrue
}

func (in *interp) arith(n *BinaryExpr, l, r value) value {
	op := n.Op
	// sequences
	switch {
	case op == "+" && l.K == kStr && r.K == kStr:
		in.alloc(int64(len(l.s) + len(r.s)))
		return vStr(l.s + r.s)
	case op == "+" && l.K == kList && r.K == kList:
		in.alloc(valueBytes * int64(len(l.list().Items)+len(r.list().Items)))
		items := append(append([]value(nil), l.list().Items...), r.list().Items...)
		return vList(items)
	case op == "*" && (l.K == kStr || l.K == kList) && (r.K == kInt || r.K == kBool):
		return in.repeat(n, l, int64(r.n))
	case op == "*" && (r.K == kStr || r.K == kList) && (l.K == kInt || l.K == kBool):
		return in.repeat(n, r, int64(l.n))
	}
	a, aok := l.num()
	b, bok := r.num()
	if !aok || !bok {
		if op == "+" && (l.K == kStr || r.K == kStr) {
			other := r
			if r.K == kStr {
				other = l
			}
			in.fail(n.OpOff, ClassType, "can only concatenate str (not \"%s\") to str", typeName(other))
		}
		in.fail(n.OpOff, ClassType, "unsupported operand type(s) for %s: '%s' and '%s'", op, typeName(l), typeName(r))
	}
	ints := (l.K == kInt || l.K == kBool) && (r.K == kInt || r.K == kBool)
	x, y := int64(l.n), int64(r.n)
	if l.K == kBool {
		x = int64(l.n)
	}
	switch op {
	case "+":
		if ints {
			return vInt(x + y)
		}
		return vFloat(a + b)
	case "-":
		if ints {
			return vInt(x - y)
		}
		return vFloat(a - b)
	case "*":
		if ints {
			return vInt(x * y)
		}
		return vFloat(a * b)
	case "/":
		if b == 0 {
			in.fail(n.OpOff, ClassZeroDivision, "division by zero")
		}
		return vFloat(a / b)
	case "%":
		if b == 0 {
			in.fail(n.OpOff, ClassZeroDivision, "modulo by zero")
		}
		if ints {
			m := x % y
			if m != 0 && (m < 0) != (y < 0) {
				m += y
			}
			return vInt(m)
		}
		m := math.Mod(a, b)
		if m != 0 && (m < 0) != (b < 0) {
			m += b
		}
		return vFloat(m)
	case "**":
		if ints && y >= 0 {
			res := int64(1)
			for i := int64(0); i < y; i++ {
				in.step()
				res *= x
			}
			return vInt(res)
		}
		return vFloat(math.Pow(a, b))
	}
	in.fail(n.OpOff, ClassType, "unsupported operator %s", op)
	return unknown
}

func (in *interp) repeat(n *BinaryExpr, seq value, times int64) value {
	if times <= 0 {
		if seq.K == kStr {
			return vStr("")
		}
		return vList(nil)
	}
	size := int64(len(seq.s))
	if seq.K == kList {
		size = int64(len(seq.list().Items))
	}
	if size*times > 1<<24 {
		in.fail(n.OpOff, ClassBudget, "repetition would build a value of %d elements", size*times)
	}
	in.steps += size * times / 64
	if seq.K == kStr {
		in.alloc(size * times)
	} else {
		in.alloc(valueBytes * size * times)
	}
	if seq.K == kStr {
		return vStr(strings.Repeat(seq.s, int(times)))
	}
	var items []value
	for i := int64(0); i < times; i++ {
		items = append(items, seq.list().Items...)
	}
	return vList(items)
}

func (in *interp) member(n *MemberAccess, f *frame) value {
	x := in.eval(n.X, f)
	if x.K == kUnknown {
		return unknown
	}
	return in.attr(n.NameOff, x, n.Name)
}

// strMethods and dictMethods are the only methods policies may call, as in
// Invariant's sandbox.
var strMethods = map[string]bool{"strip": true, "lower": true, "upper": true, "splitlines": true,
	"split": true, "format": true, "join": true}
var dictMethods = map[string]bool{"keys": true, "values": true, "items": true, "get": true}

func (in *interp) attr(off int, x value, name string) value {
	switch x.K {
	case kObj:
		switch o := x.p.(type) {
		case *paramsObj:
			return in.param(off, name)
		case *module:
			if sym, ok := o.member(name); ok {
				if sym.kind == sInput {
					return vObj(in.paramObj)
				}
				return sym.val
			}
			in.fail(off, ClassAttributePy, "module %s has no attribute %s", o.path, name)
		}
		o := x.obj()
		if v, ok := o.attr(in, name); ok {
			return v
		}
		if _, ok := x.p.(*record); ok {
			in.fail(off, ClassAttributePy, "%s has no attribute %s (it has: %s)", o.typeName(), name, o.attrList())
		}
		in.fail(off, ClassAttribute, "Invariant Attribute Error: Attribute %s not found in %s. Available attributes are: %s", name, o.typeName(), o.attrList())
	case kStr:
		// member access on a JSON object kept as a string reads its key
		if d, ok := in.jsonObject(x.s); ok {
			if v, ok := d.get(name); ok {
				return v
			}
			if !strMethods[name] {
				in.fail(off, ClassKey, "Object %s has no key %s", truncate(x.s, 200), name)
			}
		}
		if strMethods[name] {
			return value{K: kFunc, p: &boundMethod{recv: x, method: name}}
		}
		in.fail(off, ClassExcessive, "Excessive Policy: Unavailable attribute %s for str values.", name)
	case kDict:
		if v, ok := x.dict().get(name); ok {
			return v
		}
		if dictMethods[name] {
			return value{K: kFunc, p: &boundMethod{recv: x, method: name}}
		}
		in.fail(off, ClassExcessive, "Excessive Policy: Unavailable attribute %s for dict values. (The dictionary has no key %q; its keys are: %s. Use .get(%q) for keys that may be missing.)",
			name, name, truncate(joinKeys(x.dict()), 200), name)
	case kNone:
		in.fail(off, ClassAttributePy, "Attribute %s not found on None.", name)
	case kList:
		in.fail(off, ClassAttributePy, "Attribute %s not found on list. Use list[index] to access elements.", name)
	}
	in.fail(off, ClassType, "object %s of type %s does not support member access (e.g. %s)", truncate(pyRepr(x), 100), typeName(x), name)
	return unknown
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}

// jsonObject parses s when it is a JSON object (cached per analysis).
func (in *interp) jsonObject(s string) (*dictVal, bool) {
	t := strings.TrimLeft(s, " \t\r\n")
	if t == "" || t[0] != '{' {
		return nil, false
	}
	if v, ok := in.jsonCache[s]; ok {
		return v.dict(), v.K == kDict
	}
	in.steps += int64(len(s) / 64)
	in.alloc(jsonBytesFactor * int64(len(s)))
	v, err := parseJSON([]byte(s), nil)
	if err != nil {
		v = none
	}
	if in.jsonCache == nil {
		in.jsonCache = map[string]value{}
	}
	if len(in.jsonCache) < 4096 {
		in.jsonCache[s] = v
	}
	return v.dict(), v.K == kDict
}

func (in *interp) param(off int, name string) value {
	if v, ok := in.paramObj.vals[name]; ok {
		return v
	}
	raw, ok := in.params[name]
	if !ok {
		in.fail(off, ClassMissingParameter, "Missing Policy Parameter: '%s' (policy relies on `input.%s`), which is required for evaluation of a rule.", name, name)
	}
	v, err := fromGo(raw, 0)
	if err != nil {
		in.fail(off, ClassValue, "policy parameter %s: %v", name, err)
	}
	in.paramObj.vals[name] = v
	return v
}

func (in *interp) index(n *KeyAccess, f *frame) value {
	x := in.eval(n.X, f)
	k := in.eval(n.Key, f)
	if x.K == kUnknown || k.K == kUnknown {
		return unknown
	}
	return in.indexValue(n.Off, x, k)
}

func (in *interp) indexValue(off int, x, k value) value {
	switch x.K {
	case kList:
		items := x.list().Items
		if k.K != kInt && k.K != kBool {
			in.fail(off, ClassType, "list indices must be integers, not %s", typeName(k))
		}
		i := int64(k.n)
		if i < 0 {
			i += int64(len(items))
		}
		if i < 0 || i >= int64(len(items)) {
			in.fail(off, "IndexError", "list index out of range")
		}
		return items[i]
	case kStr:
		if k.K == kInt {
			rs := []rune(x.s)
			i := k.i()
			if i < 0 {
				i += int64(len(rs))
			}
			if i < 0 || i >= int64(len(rs)) {
				in.fail(off, "IndexError", "string index out of range")
			}
			return vStr(string(rs[i]))
		}
		if k.K == kStr {
			if d, ok := in.jsonObject(x.s); ok {
				if v, ok := d.get(k.s); ok {
					return v
				}
			}
			in.fail(off, ClassKey, "Object %s has no key %s", truncate(x.s, 200), k.s)
		}
	case kDict:
		if k.K == kStr {
			if v, ok := x.dict().get(k.s); ok {
				return v
			}
		}
		in.fail(off, ClassKey, "Object %s has no key %s", truncate(pyStr(x), 200), pyRepr(k))
	case kObj:
		switch o := x.obj().(type) {
		case *contents:
			if k.K == kInt {
				return in.indexValue(off, vList(o.parts), k)
			}
		case *record:
			if k.K == kStr {
				if v, ok := o.fields.get(k.s); ok {
					return v
				}
			}
			in.fail(off, ClassKey, "%s has no key %s", o.typ, pyRepr(k))
		}
	}
	in.fail(off, ClassType, "'%s' object is not subscriptable", typeName(x))
	return unknown
}

func (in *interp) comprehension(n *ListComprehension, f *frame) value {
	it := in.eval(n.Iter, f)
	if it.K == kUnknown {
		return unknown
	}
	if it.K == kNone {
		return vList(nil)
	}
	items := in.iterate(n.Iter.pos(), it)
	in.alloc(valueBytes * int64(len(items)))
	cf := newFrame(n.body.nslots, f)
	out := make([]value, 0, len(items))
	for _, x := range items {
		cf.slots[n.varSym.slot] = x
		if n.Cond != nil {
			c := in.eval(n.Cond, cf)
			if c.K == kUnknown {
				out = append(out, unknown)
				continue
			}
			if !c.isTrue() {
				continue
			}
		}
		out = append(out, in.eval(n.Elem, cf))
	}
	return vList(out)
}

// iterate lists the elements of an iterable the way Python's for does.
func (in *interp) iterate(off int, v value) []value {
	switch v.K {
	case kList:
		return v.list().Items
	case kDict:
		keys := v.dict().keys
		out := make([]value, len(keys))
		for i, k := range keys {
			out[i] = vStr(k)
		}
		return out
	case kStr:
		in.alloc(valueBytes * int64(len(v.s)))
		out := make([]value, 0, len(v.s))
		for _, r := range v.s {
			out = append(out, vStr(string(r)))
		}
		return out
	case kObj:
		if c, ok := v.p.(*contents); ok {
			return c.parts
		}
	}
	in.fail(off, ClassType, "'%s' object is not iterable", typeName(v))
	return nil
}

// deepUnknown reports whether v is unknown or a list holding an unknown;
// functions are only called once all their arguments are known.
func deepUnknown(v value) bool {
	switch v.K {
	case kUnknown:
		return true
	case kList:
		for _, x := range v.list().Items {
			if deepUnknown(x) {
				return true
			}
		}
	case kDict:
		for _, x := range v.dict().vals {
			if deepUnknown(x) {
				return true
			}
		}
	}
	return false
}

type kwArg struct {
	name string
	v    value
}

func (in *interp) call(n *CallExpr, f *frame) value {
	fn := in.eval(n.Fn, f)
	// Arguments live on a stack owned by the analysis, so calls do not
	// allocate; callees that keep arguments copy them.
	base := len(in.argStack)
	for _, a := range n.Args {
		v := in.eval(a, f)
		in.argStack = append(in.argStack, v)
	}
	args := in.argStack[base:len(in.argStack):len(in.argStack)]
	defer func() { in.argStack = in.argStack[:base] }()
	var kw []kwArg
	if len(n.KwNames) > 0 {
		kw = make([]kwArg, len(n.KwNames))
		for i, k := range n.KwNames {
			kw[i] = kwArg{k, in.eval(n.KwVals[i], f)}
		}
	}
	if fn.K == kUnknown {
		return unknown
	}
	for _, a := range args {
		if deepUnknown(a) {
			return unknown
		}
	}
	for _, k := range kw {
		if deepUnknown(k.v) {
			return unknown
		}
	}
	if fn.K != kFunc {
		in.fail(n.Off, ClassType, "'%s' object is not callable", typeName(fn))
	}
	switch c := fn.p.(type) {
	case *builtinFn:
		if len(args) < c.minArgs || (c.maxArgs >= 0 && len(args) > c.maxArgs) {
			in.fail(n.Off, ClassType, "%s takes %s, got %d", c.fname, c.arity(), len(args))
		}
		return c.call(in, n, args, kw)
	case *predicate:
		return in.callPredicate(n, c.d, args, kw)
	case *boundMethod:
		return in.callMethod(n, c, args, kw)
	case *detectorFn:
		return in.runDetector(c.d, args, kw, n.Off)
	case *typeConv:
		return c.call(in, n, args, kw)
	case *violationCtor:
		return vObj(&violationVal{args: append([]value(nil), args...), kw: kw})
	}
	in.fail(n.Off, ClassType, "value is not callable")
	return unknown
}

// maxPredicateDepth bounds predicates calling predicates (recursion).
const maxPredicateDepth = 100

func (in *interp) callPredicate(n *CallExpr, d *DeclStmt, args []value, kw []kwArg) value {
	in.predDepth++
	defer func() { in.predDepth-- }()
	if in.predDepth > maxPredicateDepth {
		in.fail(n.Off, ClassValue, "predicate %s: calls nested more than %d deep (recursive predicate?)", d.Name, maxPredicateDepth)
	}
	pf := newFrame(d.body.nslots, nil)
	if len(args)+len(kw) != len(d.Params) {
		in.fail(n.Off, ClassType, "predicate %s takes %d argument(s), got %d", d.Name, len(d.Params), len(args)+len(kw))
	}
	copy(pf.slots, args)
	for _, k := range kw {
		for i, p := range d.Params {
			if p.Name == k.name {
				pf.slots[i] = k.v
			}
		}
	}
	found := false
	ctl := &searchCtl{onTrue: func(f *frame, markStart int) bool {
		found = true
		return false // keep the marks of the satisfying evaluation
	}}
	in.search(d.body, pf, ctl)
	return vBool(found)
}

func (in *interp) quantifier(q *Quantifier, f *frame) value {
	kind := ""
	minN, maxN := int64(-1), int64(-1)
	switch h := q.Head.(type) {
	case *Ident:
		kind = h.Name
		if h.sym != nil {
			kind = h.sym.name
		}
	case *CallExpr:
		id := h.Fn.(*Ident)
		kind = id.sym.name
		for i, k := range h.KwNames {
			v := in.eval(h.KwVals[i], f)
			if v.K == kUnknown {
				return unknown
			}
			if v.K == kNone {
				continue
			}
			if v.K != kInt {
				in.fail(h.KwOffs[i], ClassType, "%s=%s must be an integer", k, pyRepr(v))
			}
			if k == "min" {
				minN = v.i()
			} else {
				maxN = v.i()
			}
		}
	}
	for _, c := range q.body.captured {
		fr := f
		for i := 1; i < c.up && fr != nil; i++ {
			fr = fr.parent
		}
		if fr == nil || fr.slots[c.slot].K == kUnknown {
			return unknown
		}
	}
	if len(q.body.captured) == 0 && in.track {
		if c := in.closedQuantifier(q, kind, minN, maxN); c != nil {
			if outer := boundOuterOrigins(q.body, f); outer != nil {
				start := len(in.marks)
				in.marks = keepWithin(append(in.marks, c.bodyMarks...), start, outer)
			} else {
				in.marks = append(in.marks, c.marks...)
			}
			return c.v
		}
	}
	return in.quantify(q, f, kind, minN, maxN)
}

// quantify evaluates a quantifier block of the given kind and bounds.
func (in *interp) quantify(q *Quantifier, f *frame, kind string, minN, maxN int64) value {
	qf := newFrame(q.body.nslots, f)
	switch kind {
	case "forall":
		ok := true
		ctl := &searchCtl{
			wantFalse: true,
			onTrue: func(f *frame, markStart int) bool {
				in.marks = in.marks[:markStart]
				return true
			},
			onFalse: func() bool { ok = false; return false },
		}
		in.search(q.body, qf, ctl)
		in.qEarly = !ok
		return vBool(ok)
	default: // count
		n := int64(0)
		result := -1 // undecided
		outer := boundOuterOrigins(q.body, f)
		bodyMarks := in.bodyMarks
		in.bodyMarks = nil // not those of blocks inside this one
		defer func() { in.bodyMarks = bodyMarks }()
		ctl := &searchCtl{onTrue: func(f *frame, markStart int) bool {
			n++
			if bodyMarks != nil {
				*bodyMarks = append(*bodyMarks, in.marks[markStart:]...)
			}
			if outer == nil {
				// ranges of counted assignments go to the enclosing violation
				for _, s := range f.slots {
					if o := s.origin(); o != nil {
						in.marks = append(in.marks, mark{o: o, start: -1})
					}
				}
			} else {
				in.marks = keepWithin(in.marks, markStart, outer)
			}
			if maxN >= 0 && n > maxN {
				result = 0
				return false
			}
			if minN >= 0 && maxN < 0 && n >= minN {
				result = 1
				return false
			}
			return true
		}}
		in.search(q.body, qf, ctl)
		in.qEarly = result != -1
		switch result {
		case 0:
			return vFalse
		case 1:
			return vTrue
		}
		if minN >= 0 && n < minN {
			return vFalse
		}
		return vTrue
	}
}

// boundOuterOrigins returns the places of the variables of the bodies
// enclosing a count block (the rule's, enclosing quantifiers') that are
// bound in f and its parents, or nil if none is.
//
// With none bound, a count block's counted assignments and their ranges go
// to the violation: they are what it is about, and Invariant's analyzer,
// which then evaluates the block once, reports them too. With some bound,
// the violation names those variables and only ranges inside their objects
// are kept: the analyzer reports no counted assignment there, because
// count.eval adds their ranges to whichever interpreter is on top of its
// shared stack, that of the candidate evaluated last, not to the
// violation's (invariant/analyzer/stdlib/invariant/quantifiers.py and
// Interpreter.current() in runtime/evaluation.py).
func boundOuterOrigins(bs *bodyScope, f *frame) []*origin {
	var out []*origin
	for s, fr := bs.parent, f; s != nil && fr != nil; s, fr = s.parent, fr.parent {
		for _, v := range s.vars {
			if v.slot < len(fr.slots) && fr.slots[v.slot].K != kUnknown {
				if o := fr.slots[v.slot].origin(); o != nil {
					out = append(out, o)
				}
			}
		}
	}
	return out
}

// keepWithin drops the marks from start on that do not lie inside one of
// the objects at outer.
func keepWithin(marks []mark, start int, outer []*origin) []mark {
	kept := marks[:start]
	for _, m := range marks[start:] {
		for _, o := range outer {
			if m.o.within(o) {
				kept = append(kept, m)
				break
			}
		}
	}
	return kept
}
