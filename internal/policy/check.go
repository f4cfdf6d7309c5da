package policy

import (
	"fmt"
	"sort"
	"strings"

	"github.com/lookout-dev/lookout/internal/pyre"
)

// The checker resolves every name before any trace is read: variables get a
// frame slot, imports are matched against the builtin modules and the
// detector registry, types of (x: Type) declarations must exist, attributes
// of typed event variables are checked, semantic patterns and literal regular
// expressions are compiled. Everything it finds is reported at once.

type symKind uint8

const (
	sVar       symKind = iota // quantified variable (x: Type)
	sLocal                    // name := value in a body
	sParam                    // predicate parameter
	sCompVar                  // list comprehension variable
	sConst                    // top-level constant
	sPred                     // top-level predicate
	sBuiltin                  // builtin function
	sType                     // type name
	sModule                   // imported module
	sDetector                 // registered detector
	sInput                    // input (policy parameters)
	sQuant                    // count / forall
	sViolation                // PolicyViolation / Violation
)

type symbol struct {
	kind  symKind
	name  string
	off   int
	slot  int
	scope *bodyScope
	typ   string // declared type of a variable or parameter
	decl  *DeclStmt
	fn    *builtinFn
	det   *Detector
	mod   *module
	val   value // the value of callables, modules and types
}

// bodyScope is a body that owns a frame of slots: a rule, a predicate, a
// constant, a quantifier block or a list comprehension.
type bodyScope struct {
	kind        string
	parent      *bodyScope
	names       map[string]*symbol
	nslots      int
	exprs       []Expr
	locals      []int     // slots of := locals, reset before each evaluation
	vars        []*symbol // quantified variables, in declaration order
	flows       []flowInfo
	actionSlots []int
	captured    []capRef
}

// flowInfo is a top-level condition a -> b or a ~> b where at least one
// side is a variable of the body, used to enumerate only candidates in the
// right order. The other side may be a variable of an enclosing body (a
// quantifier block relating its variable to the rule's).
type flowInfo struct {
	a, b      varRef
	immediate bool
}

// varRef is a variable slot, up frames above the body's frame.
type varRef struct{ up, slot int }

type capRef struct{ up, slot int }

func newBodyScope(kind string, parent *bodyScope) *bodyScope {
	return &bodyScope{kind: kind, parent: parent, names: map[string]*symbol{}}
}

func (bs *bodyScope) declare(sym *symbol) {
	sym.scope = bs
	sym.slot = bs.nslots
	bs.nslots++
	bs.names[sym.name] = sym
}

type checker struct {
	src    string
	li     *lineIndex
	diags  []Diagnostic
	module map[string]*symbol
	policy map[string]*symbol
	quants []*bodyScope // enclosing quantifier scopes while resolving
	// budget stops the check when the parse's context is done.
	budget *parseBudget
	// dropped is set once errorf drops a diagnostic (maxDiagnostics).
	dropped bool
}

// maxDiagnostics bounds the problems one load reports (a compiler's "too
// many errors"): a hostile policy could otherwise make the report, which
// quotes the line of each, as large as the policy times its problems.
const maxDiagnostics = 100

func (c *checker) errorf(off int, class, format string, args ...any) {
	if len(c.diags) >= maxDiagnostics {
		c.dropped = true
		return
	}
	c.diags = append(c.diags, Diagnostic{Pos: c.li.pos(off), Msg: fmt.Sprintf(format, args...), Class: class})
}

// check resolves the statements and fills in the policy's rules, constants
// and predicates.
func (c *checker) check(p *Policy, stmts []Stmt) {
	c.module = map[string]*symbol{}
	c.policy = map[string]*symbol{}
	for _, s := range stmts {
		if imp, ok := s.(*ImportStmt); ok {
			c.importStmt(imp)
		}
	}
	for _, s := range stmts {
		if d, ok := s.(*DeclStmt); ok {
			c.declareTop(p, d, c.policy)
		}
	}
	for _, s := range stmts {
		switch s := s.(type) {
		case *DeclStmt:
			c.decl(s)
		case *RaiseStmt:
			c.raise(s)
			p.rules = append(p.rules, &rule{idx: len(p.rules), stmt: s, body: s.body, open: openVars(s.body)})
		case *DefStmt:
			c.def(p, s)
		}
	}
}

func (c *checker) declareTop(p *Policy, d *DeclStmt, into map[string]*symbol) {
	if prev, ok := into[d.Name]; ok {
		c.errorf(d.Off, ClassName, "%q is already declared at %s", d.Name, c.li.pos(prev.off))
		return
	}
	if d.IsPred {
		d.index = len(p.preds)
		p.preds = append(p.preds, d)
		into[d.Name] = &symbol{kind: sPred, name: d.Name, off: d.Off, decl: d, val: value{K: kFunc, p: &predicate{d: d}}}
	} else {
		d.index = len(p.consts)
		p.consts = append(p.consts, d)
		into[d.Name] = &symbol{kind: sConst, name: d.Name, off: d.Off, decl: d}
	}
}

func (c *checker) def(p *Policy, d *DefStmt) {
	// Rules inside def are checked but never run (as in Invariant); names
	// declared inside are visible only there.
	saved := c.policy
	c.policy = map[string]*symbol{}
	for k, v := range saved {
		c.policy[k] = v
	}
	scratch := &Policy{}
	for _, s := range d.Body {
		if imp, ok := s.(*ImportStmt); ok {
			c.importStmt(imp)
		}
	}
	for _, s := range d.Body {
		if dd, ok := s.(*DeclStmt); ok {
			c.declareTop(scratch, dd, c.policy)
		}
	}
	for _, s := range d.Body {
		switch s := s.(type) {
		case *DeclStmt:
			c.decl(s)
		case *RaiseStmt:
			c.raise(s)
		case *DefStmt:
			c.def(p, s)
		}
	}
	c.policy = saved
}

// disallowedModules are Python modules a policy might try to reach the host
// with; importing anything but the invariant modules and json is rejected,
// and these get the same error class as Invariant's sandbox raises.
func (c *checker) importStmt(s *ImportStmt) {
	mod, ok := lookupModule(s.Module)
	if !ok {
		if strings.HasPrefix(s.Module, "invariant") {
			c.errorf(s.Off, ClassImport, "unknown module %q (known: %s)", s.Module, strings.Join(knownModules(), ", "))
		} else {
			c.errorf(s.Off, ClassExcessive, "Excessive Policy: module %q is not available to policies (only the invariant modules and json are)", s.Module)
		}
		return
	}
	if !s.From {
		name := s.Alias
		if name == "" {
			name = strings.SplitN(s.Module, ".", 2)[0]
			if name != s.Module {
				// import a.b binds a; only whole invariant modules can be
				// imported that way, so bind the module itself under its
				// first name only when it is that module.
				if m, ok := lookupModule(name); ok {
					mod = m
				}
			}
		}
		c.module[name] = &symbol{kind: sModule, name: name, off: s.Off, mod: mod, val: value{K: kObj, p: mod}}
		return
	}
	for _, n := range s.Names {
		sym, ok := mod.member(n.Name)
		if !ok {
			c.errorf(n.Off, ClassImport, "module %q has no %q in this build (it has: %s)", s.Module, n.Name, strings.Join(mod.names(), ", "))
			continue
		}
		name := n.Name
		if n.Alias != "" {
			name = n.Alias
		}
		c.module[name] = sym
	}
}

func (c *checker) lookup(name string, bs *bodyScope) (*symbol, int) {
	up := 0
	for s := bs; s != nil; s = s.parent {
		if sym := s.names[name]; sym != nil {
			return sym, up
		}
		up++
	}
	if sym := c.policy[name]; sym != nil {
		return sym, 0
	}
	if sym := c.module[name]; sym != nil {
		return sym, 0
	}
	if sym := universe[name]; sym != nil {
		return sym, 0
	}
	return nil, 0
}

func (c *checker) lookupType(name string, off int, what string) (*symbol, bool) {
	sym := c.module[name]
	if sym == nil {
		sym = universe[name]
	}
	if sym == nil {
		c.errorf(off, ClassName, "unknown type %q for %s (known types: Message, ToolCall, ToolOutput, Tool, ToolParameter, Image, TextChunk, str, int, float, bool, list, dict, or an imported type)", name, what)
		return nil, false
	}
	if sym.kind != sType {
		c.errorf(off, ClassType, "%q is not a type (used for %s)", name, what)
		return nil, false
	}
	return sym, true
}

// collect declares the variables and locals of a body, in order. Blocks of
// quantifiers and list comprehensions have their own scopes.
func (c *checker) collect(bs *bodyScope, exprs []Expr) {
	for _, e := range exprs {
		walkExpr(e, func(x Expr) bool {
			switch n := x.(type) {
			case *Quantifier, *ListComprehension:
				return false
			case *TypedIdent:
				if prev := bs.names[n.Name]; prev != nil {
					c.errorf(n.Off, ClassName, "variable %q is declared twice (first at %s)", n.Name, c.li.pos(prev.off))
					return true
				}
				sym := &symbol{kind: sVar, name: n.Name, off: n.Off, typ: n.Type}
				bs.declare(sym)
				bs.vars = append(bs.vars, sym)
				if t, ok := c.lookupType(n.Type, n.TypeOff, "variable "+n.Name); ok {
					n.typ = t
				} else {
					// Point at the variable, as Invariant does, and keep going.
					if !c.dropped {
						c.diags[len(c.diags)-1].Pos = c.li.pos(n.Off)
					}
				}
			case *Assign:
				if prev := bs.names[n.Name]; prev != nil {
					c.errorf(n.Off, ClassName, "%q is assigned twice (first at %s)", n.Name, c.li.pos(prev.off))
					return true
				}
				sym := &symbol{kind: sLocal, name: n.Name, off: n.Off}
				bs.declare(sym)
				bs.locals = append(bs.locals, sym.slot)
			}
			return true
		})
	}
}

func (c *checker) body(bs *bodyScope, exprs []Expr) {
	bs.exprs = exprs
	c.collect(bs, exprs)
	for _, e := range exprs {
		c.expr(e, bs, false)
	}
	// top-level flow conditions involving variables of this body
	for _, e := range exprs {
		b, ok := e.(*BinaryExpr)
		if !ok || (b.Op != "->" && b.Op != "~>") {
			continue
		}
		a, aok := varOf(b.L)
		z, zok := varOf(b.R)
		if aok && zok && a != z && (a.up == 0 || z.up == 0) {
			bs.flows = append(bs.flows, flowInfo{a: a, b: z, immediate: b.Op == "~>"})
		}
	}
}

func varOf(e Expr) (varRef, bool) {
	switch n := e.(type) {
	case *Ident:
		if n.sym != nil && (n.sym.kind == sVar || n.sym.kind == sParam || n.sym.kind == sLocal) {
			return varRef{up: n.up, slot: n.sym.slot}, true
		}
	case *TypedIdent:
		if n.sym != nil {
			return varRef{slot: n.sym.slot}, true
		}
	}
	return varRef{}, false
}

func (c *checker) raise(s *RaiseStmt) {
	bs := newBodyScope("rule", nil)
	s.body = bs
	c.body(bs, s.Body)
	switch t := s.Target.(type) {
	case *StringLit:
		c.expr(t, bs, false)
	case *Ident, *CallExpr, *MemberAccess:
		c.expr(t, bs, false)
	default:
		c.errorf(s.Target.pos(), ClassSyntax, "raise needs a message string or PolicyViolation(...)")
	}
	seen := map[int]bool{}
	walkExpr(s.Target, func(x Expr) bool {
		if id, ok := x.(*Ident); ok && id.sym != nil && id.up == 0 && id.sym.scope == bs && !seen[id.sym.slot] {
			seen[id.sym.slot] = true
			bs.actionSlots = append(bs.actionSlots, id.sym.slot)
		}
		return true
	})
	sort.Ints(bs.actionSlots)
}

func (c *checker) decl(d *DeclStmt) {
	if d.IsPred {
		bs := newBodyScope("predicate", nil)
		d.body = bs
		for _, prm := range d.Params {
			if bs.names[prm.Name] != nil {
				c.errorf(prm.Off, ClassName, "parameter %q appears twice", prm.Name)
				continue
			}
			sym := &symbol{kind: sParam, name: prm.Name, off: prm.Off, typ: prm.Type}
			bs.declare(sym)
			c.lookupType(prm.Type, prm.TypeOff, "parameter "+prm.Name)
		}
		c.body(bs, d.Body)
		return
	}
	bs := newBodyScope("constant", nil)
	d.body = bs
	c.body(bs, d.Body)
}

// expr resolves names below e. inPattern is set inside semantic patterns,
// where wildcards and value references are allowed.
func (c *checker) expr(e Expr, bs *bodyScope, inPattern bool) {
	c.budget.tick()
	switch n := e.(type) {
	case *Ident:
		sym, up := c.lookup(n.Name, bs)
		if sym == nil {
			c.errorf(n.Off, ClassName, "unknown name %q (not a variable, declaration, import or builtin)", n.Name)
			return
		}
		n.sym, n.up = sym, up
		c.noteCapture(sym)
	case *TypedIdent:
		sym := bs.names[n.Name]
		if sym == nil || sym.off != n.Off {
			c.errorf(n.Off, ClassSyntax, "(%s: %s) declares a variable; declarations belong on their own in a rule or predicate body", n.Name, n.Type)
			return
		}
		n.sym, n.up = sym, 0
	case *StringLit:
		n.val = vStr(n.value)
	case *NumberLit, *BoolLit, *NoneLit:
	case *ListLit:
		for _, x := range n.Elems {
			c.expr(x, bs, inPattern)
		}
	case *ObjectLit:
		for _, x := range n.Vals {
			c.expr(x, bs, inPattern)
		}
	case *UnaryExpr:
		c.expr(n.X, bs, inPattern)
	case *Assign:
		n.sym = bs.names[n.Name]
		c.expr(n.value, bs, false)
	case *BinaryExpr:
		c.binary(n, bs)
	case *CallExpr:
		c.call(n, bs)
	case *MemberAccess:
		c.expr(n.X, bs, false)
		if t := c.staticType(n.X); t != "" {
			if info := eventTypes[t]; info != nil {
				if _, ok := info.attrs[n.Name]; !ok {
					c.errorf(n.NameOff, ClassAttribute, "Invariant Attribute Error: Attribute %s not found in %s. Available attributes are: %s", n.Name, t, info.list)
				}
			}
		}
	case *KeyAccess:
		c.expr(n.X, bs, false)
		c.expr(n.Key, bs, false)
	case *ListComprehension:
		c.expr(n.Iter, bs, false)
		cs := newBodyScope("comprehension", bs)
		n.body = cs
		n.varSym = &symbol{kind: sCompVar, name: n.Var, off: n.VarOff}
		cs.declare(n.varSym)
		c.expr(n.Elem, cs, false)
		if n.Cond != nil {
			c.expr(n.Cond, cs, false)
		}
	case *TernaryOp:
		c.expr(n.Then, bs, false)
		c.expr(n.Cond, bs, false)
		c.expr(n.Else, bs, false)
	case *ToolReference:
		c.errorf(n.Off, ClassSyntax, "tool:%s can only be used after 'is', as in: call is tool:%s", n.Name, n.Name)
	case *SemanticPattern:
		c.errorf(n.Off, ClassSyntax, "tool:%s(...) can only be used after 'is', as in: call is tool:%s({...})", n.Tool.Name, n.Tool.Name)
	case *Wildcard:
		if !inPattern {
			c.errorf(n.Off, ClassSyntax, "You cannot use wildcards outside of semantic patterns (e.g. tool:abc(*, 12))")
		}
	case *ValueReference:
		if !inPattern {
			c.errorf(n.Off, ClassSyntax, "You cannot use value references outside of semantic patterns (e.g. tool:abc(<VALUE>, 12))")
		} else if _, ok := valueTypes[n.Type]; !ok {
			c.errorf(n.Off, ClassName, "Unsupported value type: %s. Available types: %s", n.Type, strings.Join(sortedKeys(valueTypes), " "))
		}
	case *Quantifier:
		c.quantifier(n, bs)
	}
}

func sortedKeys(m map[string]string) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// noteCapture records, for every quantifier being resolved, the variables of
// enclosing bodies its block uses: the quantifier is unknown until they are
// bound.
func (c *checker) noteCapture(sym *symbol) {
	switch sym.kind {
	case sVar, sLocal, sParam, sCompVar:
	default:
		return
	}
	for _, q := range c.quants {
		up := 0
		for s := q; s != nil; s = s.parent {
			if s == sym.scope {
				break
			}
			up++
		}
		if up == 0 || sym.scope == nil {
			continue // declared in the block itself
		}
		found := false
		for s := q; s != nil; s = s.parent {
			if s == sym.scope {
				found = true
			}
		}
		if !found {
			continue // declared in a scope nested inside the block
		}
		dup := false
		for _, r := range q.captured {
			if r.up == up && r.slot == sym.slot {
				dup = true
			}
		}
		if !dup {
			q.captured = append(q.captured, capRef{up: up, slot: sym.slot})
		}
	}
}

func (c *checker) quantifier(q *Quantifier, bs *bodyScope) {
	var head *Ident
	switch h := q.Head.(type) {
	case *Ident:
		head = h
	case *CallExpr:
		if id, ok := h.Fn.(*Ident); ok {
			head = id
		}
		for _, a := range h.Args {
			c.expr(a, bs, false)
		}
		for i, a := range h.KwVals {
			c.expr(a, bs, false)
			if head != nil && head.Name == "count" && h.KwNames[i] != "min" && h.KwNames[i] != "max" {
				c.errorf(h.KwOffs[i], ClassType, "count takes min= and max=, not %s=", h.KwNames[i])
			}
		}
		if len(h.Args) > 0 {
			c.errorf(h.Args[0].pos(), ClassType, "quantifier arguments must be given by name, e.g. count(min=2, max=4)")
		}
	}
	if head == nil {
		c.errorf(q.Off, ClassSyntax, "a block 'name:' inside a rule must be a quantifier: count(min=..., max=...): or forall:")
		return
	}
	sym, _ := c.lookup(head.Name, bs)
	if sym == nil || sym.kind != sQuant {
		c.errorf(head.Off, ClassName, "%q is not a quantifier (use count(min=..., max=...): or forall:)", head.Name)
		return
	}
	head.sym = sym
	qs := newBodyScope("quantifier", bs)
	q.body = qs
	c.quants = append(c.quants, qs)
	c.body(qs, q.Body)
	c.quants = c.quants[:len(c.quants)-1]
}

func containsDecl(e Expr) bool {
	found := false
	walkExpr(e, func(x Expr) bool {
		switch x.(type) {
		case *TypedIdent:
			found = true
		case *Quantifier, *ListComprehension:
			return false
		}
		return !found
	})
	return found
}

func (c *checker) binary(n *BinaryExpr, bs *bodyScope) {
	switch n.Op {
	case "->", "~>":
		for _, side := range []Expr{n.L, n.R} {
			switch side.(type) {
			case *Ident, *TypedIdent:
				c.expr(side, bs, false)
			default:
				c.errorf(side.pos(), ClassSyntax, "the %s operator relates two variables, as in (a: ToolOutput) %s (b: ToolCall)", n.Op, n.Op)
			}
		}
		for _, side := range []Expr{n.L, n.R} {
			if id, ok := side.(*Ident); ok && id.sym != nil {
				switch id.sym.kind {
				case sVar, sParam, sLocal, sCompVar:
				default:
					c.errorf(id.Off, ClassType, "%q is not a variable; %s relates events bound to variables", id.Name, n.Op)
				}
			}
		}
		return
	case "is", "is not":
		c.expr(n.L, bs, false)
		switch r := n.R.(type) {
		case *ToolReference:
			r.re = c.toolNameRegexp(r)
			return
		case *SemanticPattern:
			r.Tool.re = c.toolNameRegexp(r.Tool)
			r.m = c.patternArgs(r)
			return
		}
		c.expr(n.R, bs, false)
		return
	}
	c.expr(n.L, bs, false)
	c.expr(n.R, bs, false)
	if n.Op == "and" || n.Op == "or" {
		n.rDecl = containsDecl(n.R)
	}
}

func (c *checker) toolNameRegexp(t *ToolReference) *pyre.Regexp {
	// Tool names are matched as regular expressions (anchored), as in
	// Invariant; plain names are compared directly.
	if isPlainName(t.Name) {
		return nil
	}
	re, err := pyre.Compile(t.Name + "$")
	if err != nil {
		c.errorf(t.Off, ClassRegex, "tool name pattern %q: %v", t.Name, err)
		return nil
	}
	return re
}

func isPlainName(s string) bool {
	for i := 0; i < len(s); i++ {
		if !isNameChar(s[i]) {
			return false
		}
	}
	return true
}

func (c *checker) call(n *CallExpr, bs *bodyScope) {
	c.expr(n.Fn, bs, false)
	for _, a := range n.Args {
		c.expr(a, bs, false)
	}
	for _, a := range n.KwVals {
		c.expr(a, bs, false)
	}
	id, ok := n.Fn.(*Ident)
	if !ok || id.sym == nil {
		return
	}
	switch id.sym.kind {
	case sPred:
		d := id.sym.decl
		nargs := len(n.Args) + len(n.KwNames)
		if nargs != len(d.Params) {
			c.errorf(n.Off, ClassType, "predicate %s takes %d argument(s) (%s), got %d", d.Name, len(d.Params), paramList(d.Params), nargs)
		}
		for i, k := range n.KwNames {
			found := false
			for _, p := range d.Params {
				if p.Name == k {
					found = true
				}
			}
			if !found {
				c.errorf(n.KwOffs[i], ClassType, "predicate %s has no parameter %q", d.Name, k)
			}
		}
	case sBuiltin:
		f := id.sym.fn
		if len(n.Args) < f.minArgs || (f.maxArgs >= 0 && len(n.Args) > f.maxArgs) {
			c.errorf(n.Off, ClassType, "%s takes %s, got %d", f.fname, f.arity(), len(n.Args))
		}
		if (f.fname == "match" || f.fname == "find") && len(n.Args) >= 1 {
			if s, ok := n.Args[0].(*StringLit); ok {
				re, err := pyre.Compile(s.value)
				if err != nil {
					c.errorf(s.Off, ClassRegex, "invalid regular expression %q: %v", s.value, err)
				} else {
					n.re = re
				}
			}
		}
	case sQuant:
		c.errorf(n.Off, ClassSyntax, "%s(...) starts a block: write %s(...): and indent its conditions below", id.Name, id.Name)
	}
}

func paramList(ps []Param) string {
	var s []string
	for _, p := range ps {
		s = append(s, p.Name+": "+p.Type)
	}
	return strings.Join(s, ", ")
}

// staticType is the known type of an expression, or "".
func (c *checker) staticType(e Expr) string {
	switch n := e.(type) {
	case *Ident:
		if n.sym != nil && (n.sym.kind == sVar || n.sym.kind == sParam) {
			return n.sym.typ
		}
	case *TypedIdent:
		return n.Type
	case *MemberAccess:
		// Memoized: each access of a chain a.b.c... asks the type of the
		// one below it, which without the memo took n²/2 steps.
		if !n.typed {
			if info := eventTypes[c.staticType(n.X)]; info != nil {
				n.styp = info.attrs[n.Name]
			}
			n.typed = true
		}
		return n.styp
	case *CallExpr:
		if id, ok := n.Fn.(*Ident); ok && id.sym != nil && id.sym.kind == sBuiltin && id.sym.fn.fname == "tool_call" {
			return "ToolCall"
		}
	}
	return ""
}

type typeInfo struct {
	attrs map[string]string // attribute -> its type when known
	list  string
}

// eventTypes are the object types whose attributes are checked statically.
var eventTypes = map[string]*typeInfo{
	"Message":       {map[string]string{"role": "", "content": "", "tool_calls": "", "metadata": ""}, "role, content, tool_calls, metadata"},
	"ToolOutput":    {map[string]string{"role": "", "content": "", "tool_call_id": "", "metadata": ""}, "role, content, tool_call_id, metadata"},
	"ToolCall":      {map[string]string{"function": "Function", "type": "", "id": "", "metadata": ""}, "function, type, id, metadata"},
	"Function":      {map[string]string{"name": "", "arguments": ""}, "name, arguments"},
	"Tool":          {map[string]string{"name": "", "description": "", "inputSchema": "", "server": ""}, "name, description, inputSchema, server"},
	"ToolParameter": {map[string]string{"type": "", "name": "", "description": "", "required": "", "properties": "", "additionalProperties": "", "items": "ToolParameter", "enum": ""}, "type, name, description, required, properties, additionalProperties, items, enum"},
	"TextChunk":     {map[string]string{"type": "", "text": ""}, "type, text"},
	"Image":         {map[string]string{"type": "", "image_url": ""}, "type, image_url"},
}
