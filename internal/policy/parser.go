package policy

import (
	"fmt"
	"strconv"
)

// parser is a recursive-descent parser over the laid-out token stream.
//
// Operator precedence, loosest first (Python's, which is also what
// Invariant's grammar produces for every policy in its test-suite):
//
//	x if c else y
//	or
//	and
//	not
//	== != < <= > >= in, not in, is, is not, contains_only, ->, ~>   (left to right)
//	+ -
//	* / %
//	unary - +
//	**
//	x.name  x[key]  f(args)
type parser struct {
	src    string
	toks   []token
	i      int
	depth  int
	links  int          // chained operations in the current statement
	budget *parseBudget // nil: no deadline
}

// maxNesting bounds how deeply expressions nest, so that hostile input
// cannot exhaust the stack of the parser or the evaluator.
const maxNesting = 200

// maxChain bounds the chained operations (attributes, indexes, calls,
// binary operators) of one statement: each is a level of the syntax tree,
// which the checker and the evaluator walk recursively, so this bounds their
// stacks as maxNesting does for parentheses.
const maxChain = 50_000

// link counts one chained operation of the current statement.
func (p *parser) link(off int) {
	p.links++
	if p.links > maxChain {
		p.fail(off, "statement too long: more than %d chained operations (attributes, indexes, calls, operators)", maxChain)
	}
	p.budget.tick()
}

type parseBailout struct{ err *syntaxError }

// parsePolicy parses src into statements. It stops at the first syntax error.
func parsePolicy(src string) (stmts []Stmt, err *syntaxError) {
	return parsePolicyBudget(src, nil)
}

// parsePolicyBudget is parsePolicy stopped (by a parseStopped panic) when
// b's context is done.
func parsePolicyBudget(src string, b *parseBudget) (stmts []Stmt, err *syntaxError) {
	toks, lerr := lex(src)
	if lerr != nil {
		return nil, lerr
	}
	b.check()
	p := &parser{src: src, toks: toks, budget: b}
	defer func() {
		if r := recover(); r != nil {
			b, ok := r.(parseBailout)
			if !ok {
				panic(r)
			}
			stmts, err = nil, b.err
		}
	}()
	for {
		switch p.peek().kind {
		case tEOF:
			return stmts, nil
		case tNewline:
			p.i++
			continue
		case tIndent:
			p.fail(p.peek().off, "unexpected indentation")
		case tDedent:
			p.i++
			continue
		}
		p.links = 0
		stmts = append(stmts, p.statement())
	}
}

func (p *parser) peek() token { return p.toks[p.i] }
func (p *parser) peekAt(n int) token {
	if p.i+n < len(p.toks) {
		return p.toks[p.i+n]
	}
	return p.toks[len(p.toks)-1]
}
func (p *parser) next() token {
	t := p.toks[p.i]
	if t.kind != tEOF {
		p.i++
	}
	return t
}

func (p *parser) fail(off int, format string, args ...any) {
	panic(parseBailout{&syntaxError{off, fmt.Sprintf(format, args...)}})
}

func (p *parser) isOp(s string) bool {
	t := p.peek()
	return t.kind == tOp && t.text == s
}

func (p *parser) isName(s string) bool {
	t := p.peek()
	return t.kind == tName && t.text == s
}

func describe(t token) string {
	switch t.kind {
	case tEOF:
		return "end of policy"
	case tNewline:
		return "end of line"
	case tIndent:
		return "indentation"
	case tDedent:
		return "end of indented block"
	case tName:
		return fmt.Sprintf("name %q", t.text)
	case tNumber:
		return fmt.Sprintf("number %s", t.text)
	case tString:
		return "string"
	case tValueRef:
		return fmt.Sprintf("<%s>", t.text)
	}
	return fmt.Sprintf("%q", t.text)
}

func (p *parser) expectOp(s, context string) token {
	if !p.isOp(s) {
		t := p.peek()
		p.fail(t.off, "expected %q %s, found %s", s, context, describe(t))
	}
	return p.next()
}

func (p *parser) expectName(context string) token {
	t := p.peek()
	if t.kind != tName || keywords[t.text] {
		p.fail(t.off, "expected a name %s, found %s", context, describe(t))
	}
	return p.next()
}

func (p *parser) endOfStatement(what string) {
	t := p.peek()
	switch t.kind {
	case tNewline:
		p.next()
	case tEOF, tDedent:
	default:
		p.fail(t.off, "unexpected %s after %s (one statement per line)", describe(t), what)
	}
}

var keywords = map[string]bool{
	"raise": true, "if": true, "else": true, "def": true, "import": true, "from": true,
	"as": true, "not": true, "and": true, "or": true, "in": true, "is": true, "for": true,
	"True": true, "False": true, "None": true,
}

func (p *parser) statement() Stmt {
	t := p.peek()
	if t.kind != tName {
		p.fail(t.off, "expected a statement (import, raise, def or a declaration name := ...), found %s", describe(t))
	}
	switch t.text {
	case "import":
		return p.importStmt()
	case "from":
		return p.fromImport()
	case "raise":
		return p.raiseStmt()
	case "def":
		return p.defStmt()
	}
	if keywords[t.text] {
		p.fail(t.off, "expected a statement (import, raise, def or a declaration name := ...), found %s", describe(t))
	}
	return p.declStmt()
}

func (p *parser) dotted(context string) (string, int) {
	t := p.expectName(context)
	name := t.text
	for p.isOp(".") {
		p.next()
		name += "." + p.expectName("after '.' in a module name").text
	}
	return name, t.off
}

func (p *parser) importStmt() Stmt {
	kw := p.next()
	mod, _ := p.dotted("after 'import'")
	s := &ImportStmt{Off: kw.off, Module: mod}
	if p.isName("as") {
		p.next()
		s.Alias = p.expectName("after 'as'").text
	}
	p.endOfStatement("the import")
	return s
}

func (p *parser) fromImport() Stmt {
	kw := p.next()
	mod, _ := p.dotted("after 'from'")
	if !p.isName("import") {
		p.fail(p.peek().off, "expected 'import' after 'from %s', found %s", mod, describe(p.peek()))
	}
	p.next()
	s := &ImportStmt{Off: kw.off, From: true, Module: mod}
	paren := false
	if p.isOp("(") {
		p.next()
		paren = true
	}
	for {
		n := p.expectName("to import")
		in := ImportName{Off: n.off, Name: n.text}
		if p.isName("as") {
			p.next()
			in.Alias = p.expectName("after 'as'").text
		}
		s.Names = append(s.Names, in)
		if !p.isOp(",") {
			break
		}
		p.next()
		if paren && p.isOp(")") {
			break
		}
	}
	if paren {
		p.expectOp(")", "to close the import list")
	}
	p.endOfStatement("the import")
	return s
}

func (p *parser) raiseStmt() Stmt {
	kw := p.next()
	var target Expr
	t := p.peek()
	switch {
	case t.kind == tString:
		target = p.primary()
	case t.kind == tName && !keywords[t.text]:
		target = p.postfix()
	default:
		p.fail(t.off, "expected a message string or PolicyViolation(...) after 'raise', found %s", describe(t))
	}
	if !p.isName("if") {
		p.fail(p.peek().off, "expected 'if:' after the raised value, found %s", describe(p.peek()))
	}
	p.next()
	p.expectOp(":", "after 'raise ... if'")
	body := p.block("the rule condition")
	return &RaiseStmt{Off: kw.off, Target: target, Body: body}
}

func (p *parser) params() []Param {
	p.expectOp("(", "to start the parameter list")
	var ps []Param
	for !p.isOp(")") {
		n := p.expectName("for a parameter")
		p.expectOp(":", fmt.Sprintf("after parameter %q (parameters need a type, e.g. %s: Message)", n.text, n.text))
		ty := p.expectName("for the parameter type")
		ps = append(ps, Param{Off: n.off, Name: n.text, Type: ty.text, TypeOff: ty.off})
		if !p.isOp(",") {
			break
		}
		p.next()
	}
	p.expectOp(")", "to close the parameter list")
	return ps
}

func (p *parser) defStmt() Stmt {
	kw := p.next()
	name := p.expectName("after 'def'")
	ps := p.params()
	p.expectOp(":", "after the function signature")
	if p.peek().kind != tIndent {
		p.fail(p.peek().off, "expected an indented block after 'def %s(...):'", name.text)
	}
	d := &DefStmt{Off: kw.off, Name: name.text, Params: ps}
	depth := 0
	for {
		switch p.peek().kind {
		case tIndent:
			depth++
			p.next()
			continue
		case tDedent:
			p.next()
			depth--
			if depth == 0 {
				return d
			}
			continue
		case tNewline:
			p.next()
			continue
		case tEOF:
			return d
		}
		d.Body = append(d.Body, p.statement())
	}
}

func (p *parser) declStmt() Stmt {
	name := p.next()
	d := &DeclStmt{Off: name.off, Name: name.text}
	if p.isOp("(") {
		d.IsPred = true
		d.Params = p.params()
	}
	if !p.isOp(":=") {
		t := p.peek()
		if t.kind == tOp && (t.text == "=" || t.text == ":") {
			p.fail(t.off, "expected ':=' in the declaration of %q, found %q", name.text, t.text)
		}
		p.fail(t.off, "expected ':=' after %q (a top-level statement is an import, a raise rule, a def or a declaration), found %s", name.text, describe(t))
	}
	p.next()
	if p.peek().kind == tIndent {
		d.Body = p.block("the declaration")
		return d
	}
	d.Body = []Expr{p.expr()}
	p.endOfStatement("the declaration")
	return d
}

// block parses INDENT item (NEWLINE item)* DEDENT. Nested blocks (a line
// indented by more than one level right after ':') are flattened into it.
func (p *parser) block(what string) []Expr {
	if p.peek().kind != tIndent {
		p.fail(p.peek().off, "expected an indented block for %s, found %s", what, describe(p.peek()))
	}
	p.next()
	var items []Expr
	for {
		switch p.peek().kind {
		case tNewline:
			p.next()
			continue
		case tDedent:
			p.next()
			if len(items) == 0 {
				p.fail(p.peek().off, "empty block for %s", what)
			}
			return items
		case tIndent:
			p.depth++
			if p.depth > maxNesting {
				p.fail(p.peek().off, "blocks nested too deeply")
			}
			items = append(items, p.block(what)...)
			p.depth--
			continue
		case tEOF:
			if len(items) == 0 {
				p.fail(p.peek().off, "empty block for %s", what)
			}
			return items
		}
		items = append(items, p.item())
		t := p.peek()
		switch {
		case t.kind == tNewline:
			p.next()
		case t.kind == tDedent || t.kind == tEOF || t.kind == tIndent:
		case p.toks[p.i-1].kind == tDedent:
			// the item ended with a block of its own (a quantifier)
		default:
			p.fail(t.off, "unexpected %s; each condition goes on its own line (if this line continues the previous one, end that line with an operator or indent this one)", describe(t))
		}
	}
}

// item is one line of a body: 'name := value' or an expression.
func (p *parser) item() Expr {
	t := p.peek()
	if t.kind == tName && !keywords[t.text] && p.peekAt(1).kind == tOp && p.peekAt(1).text == ":=" {
		p.next()
		p.next()
		return &Assign{Off: t.off, Name: t.text, value: p.expr()}
	}
	return p.expr()
}

func (p *parser) expr() Expr {
	p.depth++
	if p.depth > maxNesting {
		p.fail(p.peek().off, "expression nested too deeply (more than %d levels)", maxNesting)
	}
	e := p.ternary()
	p.depth--
	return e
}

func (p *parser) ternary() Expr {
	x := p.or()
	if p.isName("if") {
		p.next()
		cond := p.or()
		if !p.isName("else") {
			p.fail(p.peek().off, "expected 'else' in 'x if condition else y', found %s", describe(p.peek()))
		}
		p.next()
		els := p.ternary()
		return &TernaryOp{Off: x.pos(), Then: x, Cond: cond, Else: els}
	}
	return x
}

func (p *parser) or() Expr {
	x := p.and()
	for p.isName("or") {
		op := p.next()
		p.link(op.off)
		y := p.and()
		x = &BinaryExpr{Off: x.pos(), OpOff: op.off, Op: "or", L: x, R: y}
	}
	return x
}

func (p *parser) and() Expr {
	x := p.not()
	for p.isName("and") {
		op := p.next()
		p.link(op.off)
		y := p.not()
		x = &BinaryExpr{Off: x.pos(), OpOff: op.off, Op: "and", L: x, R: y}
	}
	return x
}

func (p *parser) not() Expr {
	if p.isName("not") {
		op := p.next()
		p.depth++
		if p.depth > maxNesting {
			p.fail(op.off, "expression nested too deeply (more than %d levels)", maxNesting)
		}
		x := p.not()
		p.depth--
		return &UnaryExpr{Off: op.off, Op: "not", X: x}
	}
	return p.comparison()
}

func (p *parser) cmpOp() (string, int, bool) {
	t := p.peek()
	switch t.kind {
	case tOp:
		switch t.text {
		case "==", "!=", "<", "<=", ">", ">=", "->", "~>":
			p.next()
			return t.text, t.off, true
		}
	case tName:
		switch t.text {
		case "in", "contains_only":
			p.next()
			return t.text, t.off, true
		case "is":
			p.next()
			if p.isName("not") {
				p.next()
				return "is not", t.off, true
			}
			return "is", t.off, true
		case "not":
			if n := p.peekAt(1); n.kind == tName && n.text == "in" {
				p.next()
				p.next()
				return "not in", t.off, true
			}
		}
	}
	return "", 0, false
}

func (p *parser) comparison() Expr {
	x := p.arith()
	for {
		op, off, ok := p.cmpOp()
		if !ok {
			return x
		}
		p.link(off)
		y := p.arith()
		x = &BinaryExpr{Off: x.pos(), OpOff: off, Op: op, L: x, R: y}
	}
}

func (p *parser) arith() Expr {
	x := p.term()
	for p.isOp("+") || p.isOp("-") {
		op := p.next()
		p.link(op.off)
		y := p.term()
		x = &BinaryExpr{Off: x.pos(), OpOff: op.off, Op: op.text, L: x, R: y}
	}
	return x
}

func (p *parser) term() Expr {
	x := p.unary()
	for p.isOp("*") || p.isOp("/") || p.isOp("%") {
		op := p.next()
		p.link(op.off)
		y := p.unary()
		x = &BinaryExpr{Off: x.pos(), OpOff: op.off, Op: op.text, L: x, R: y}
	}
	return x
}

func (p *parser) unary() Expr {
	if p.isOp("-") || p.isOp("+") {
		op := p.next()
		p.depth++
		if p.depth > maxNesting {
			p.fail(op.off, "expression nested too deeply (more than %d levels)", maxNesting)
		}
		x := p.unary()
		p.depth--
		return &UnaryExpr{Off: op.off, Op: op.text, X: x}
	}
	return p.power()
}

func (p *parser) power() Expr {
	x := p.postfix()
	if p.isOp("**") {
		op := p.next()
		p.depth++
		if p.depth > maxNesting {
			p.fail(op.off, "expression nested too deeply (more than %d levels)", maxNesting)
		}
		y := p.unary()
		p.depth--
		return &BinaryExpr{Off: x.pos(), OpOff: op.off, Op: "**", L: x, R: y}
	}
	return x
}

func (p *parser) postfix() Expr {
	x := p.primary()
	for {
		switch {
		case p.isOp("."):
			p.next()
			n := p.peek()
			if n.kind != tName {
				p.fail(n.off, "expected an attribute name after '.', found %s", describe(n))
			}
			p.next()
			p.link(n.off)
			x = &MemberAccess{Off: x.pos(), X: x, Name: n.text, NameOff: n.off}
		case p.isOp("["):
			p.link(p.next().off)
			k := p.expr()
			p.expectOp("]", "to close the index")
			x = &KeyAccess{Off: x.pos(), X: x, Key: k}
		case p.isOp("("):
			p.link(p.peek().off)
			x = p.call(x)
		case p.isOp(":") && p.peekAt(1).kind == tIndent:
			// a quantifier block: count(min=2): / forall:
			p.next()
			body := p.block("the quantifier")
			return &Quantifier{Off: x.pos(), Head: x, Body: body}
		default:
			return x
		}
	}
}

func (p *parser) call(fn Expr) Expr {
	p.next() // (
	c := &CallExpr{Off: fn.pos(), Fn: fn}
	for !p.isOp(")") {
		t := p.peek()
		if t.kind == tName && !keywords[t.text] && p.peekAt(1).kind == tOp && p.peekAt(1).text == "=" {
			p.next()
			p.next()
			c.KwNames = append(c.KwNames, t.text)
			c.KwOffs = append(c.KwOffs, t.off)
			c.KwVals = append(c.KwVals, p.expr())
		} else {
			if len(c.KwNames) > 0 {
				p.fail(t.off, "positional argument after keyword argument")
			}
			c.Args = append(c.Args, p.expr())
		}
		if !p.isOp(",") {
			break
		}
		p.next()
	}
	p.expectOp(")", "to close the argument list")
	if tr, ok := fn.(*ToolReference); ok {
		return &SemanticPattern{Off: c.Off, Tool: tr, Args: c.Args}
	}
	return c
}

func (p *parser) primary() Expr {
	t := p.peek()
	switch t.kind {
	case tName:
		switch t.text {
		case "True", "False":
			p.next()
			return &BoolLit{Off: t.off, value: t.text == "True"}
		case "None":
			p.next()
			return &NoneLit{Off: t.off}
		case "tool":
			if n := p.peekAt(1); n.kind == tOp && n.text == ":" {
				if m := p.peekAt(2); m.kind == tName {
					p.next()
					p.next()
					p.next()
					return &ToolReference{Off: t.off, Name: m.text}
				}
			}
		}
		if keywords[t.text] {
			p.fail(t.off, "expected an expression, found keyword %q", t.text)
		}
		p.next()
		return &Ident{Off: t.off, Name: t.text}
	case tNumber:
		p.next()
		n := &NumberLit{Off: t.off, Text: t.text}
		if v, err := strconv.ParseInt(t.text, 10, 64); err == nil {
			n.IsInt, n.Int = true, v
		} else if f, err := strconv.ParseFloat(t.text, 64); err == nil {
			n.Float = f
			if isAllDigits(t.text) {
				p.fail(t.off, "integer %s is too large", t.text)
			}
		} else {
			p.fail(t.off, "invalid number %s", t.text)
		}
		return n
	case tString:
		p.next()
		return &StringLit{Off: t.off, value: t.text, Mod: t.mod, Multi: t.multi}
	case tValueRef:
		p.next()
		return &ValueReference{Off: t.off, Type: t.text}
	case tOp:
		switch t.text {
		case "*":
			p.next()
			return &Wildcard{Off: t.off}
		case "(":
			// (name: Type) declares a variable
			if a, b, c, d := p.peekAt(1), p.peekAt(2), p.peekAt(3), p.peekAt(4); a.kind == tName && !keywords[a.text] &&
				b.kind == tOp && b.text == ":" && c.kind == tName && d.kind == tOp && d.text == ")" {
				p.i += 5
				return &TypedIdent{Off: a.off, Name: a.text, Type: c.text, TypeOff: c.off}
			}
			p.next()
			if p.isOp(")") {
				p.next()
				return &ListLit{Off: t.off, Tuple: true}
			}
			x := p.expr()
			if p.isOp(",") {
				l := &ListLit{Off: t.off, Tuple: true, Elems: []Expr{x}}
				for p.isOp(",") {
					p.next()
					if p.isOp(")") {
						break
					}
					l.Elems = append(l.Elems, p.expr())
				}
				p.expectOp(")", "to close the tuple")
				return l
			}
			p.expectOp(")", "to close the parenthesis")
			return x
		case "[":
			p.next()
			l := &ListLit{Off: t.off}
			if p.isOp("]") {
				p.next()
				return l
			}
			first := p.expr()
			if p.isName("for") {
				p.next()
				v := p.expectName("after 'for'")
				if !p.isName("in") {
					p.fail(p.peek().off, "expected 'in' in the list comprehension, found %s", describe(p.peek()))
				}
				p.next()
				iter := p.or()
				lc := &ListComprehension{Off: t.off, Elem: first, Var: v.text, VarOff: v.off, Iter: iter}
				if p.isName("if") {
					p.next()
					lc.Cond = p.or()
				}
				p.expectOp("]", "to close the list comprehension")
				return lc
			}
			l.Elems = append(l.Elems, first)
			for p.isOp(",") {
				p.next()
				if p.isOp("]") {
					break
				}
				l.Elems = append(l.Elems, p.expr())
			}
			p.expectOp("]", "to close the list")
			return l
		case "{":
			p.next()
			o := &ObjectLit{Off: t.off}
			for !p.isOp("}") {
				k := p.peek()
				switch {
				case k.kind == tName && !keywords[k.text]:
				case k.kind == tString:
				default:
					p.fail(k.off, "expected a key (a name or a string) in the object, found %s", describe(k))
				}
				p.next()
				p.expectOp(":", "after the object key")
				o.Keys = append(o.Keys, k.text)
				o.KeyOffs = append(o.KeyOffs, k.off)
				o.Vals = append(o.Vals, p.expr())
				if !p.isOp(",") {
					break
				}
				p.next()
			}
			p.expectOp("}", "to close the object")
			return o
		}
	}
	p.fail(t.off, "expected an expression, found %s", describe(t))
	return nil
}

func isAllDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if !isDigit(s[i]) {
			return false
		}
	}
	return s != ""
}
