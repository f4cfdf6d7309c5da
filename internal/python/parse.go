package python

import (
	"fmt"
	"strings"
)

// This file is a recursive-descent parser for Python 3.12's grammar. It
// builds a small AST (node) with children in the field order of Python's
// ast module, so that a visitor sees them in the order ast.NodeVisitor does,
// and it reports the syntax errors ast.parse reports (including the checks
// on assignment targets, argument order and parameter order), not the
// errors only the compiler raises (return outside a function, and so on).

type nodeKind uint8

const (
	nModule     nodeKind = iota
	nStmt                // any statement without special handling; kids in field order
	nImport              // names: imported modules
	nImportFrom          // name: module ("" for "from . import x")
	nName
	nConst
	nJoinedStr
	nFormatted
	nAttr
	nSubscript
	nSlice
	nCall
	nKeyword
	nStarred
	nBinOp
	nUnary
	nBoolOp
	nCompare
	nIfExp
	nLambda
	nNamedExpr
	nTuple
	nList
	nSet
	nDict
	nListComp
	nSetComp
	nGenExp
	nDictComp
	nComprehension
	nAwait
	nYield
	nYieldFrom
	nArguments
	nArg
	nPattern // match patterns: kids are the expressions and sub-patterns
)

type constKind uint8

const (
	cStr constKind = iota
	cBytes
	cInt
	cFloat
	cComplex
	cTrue
	cFalse
	cNone
	cEllipsis
)

type node struct {
	kind    nodeKind
	name    string   // Name id, attribute, keyword name, operator, module
	names   []string // Import names; Compare operators
	ckind   constKind
	sval    string // constant value (string/bytes) or number text
	kids    []*node
	conv    rune // FormattedValue conversion
	paren   bool // parenthesised (tuples, names in targets)
	uprefix bool // string constant whose first literal has a u prefix
	async   bool // comprehension
	line    int
	nkeys   int // Dict: number of keys (kids = keys..., values...); nil key = **
	ncalls  int // Call: number of positional args (kids = func, args..., keywords...)
}

type parser struct {
	lastSig string
	toks    []token
	pos     int
	err     *syntaxError
	depth   int
}

func parse(toks []token) (*node, *syntaxError) {
	p := &parser{toks: toks}
	mod := &node{kind: nModule}
	for p.err == nil && p.peek().kind != tkEnd {
		mod.kids = append(mod.kids, p.statement()...)
	}
	if p.err != nil {
		return nil, p.err
	}
	return mod, nil
}

func (p *parser) peek() token {
	if p.pos < len(p.toks) {
		return p.toks[p.pos]
	}
	return token{kind: tkEnd}
}

func (p *parser) peekAt(k int) token {
	if p.pos+k < len(p.toks) {
		return p.toks[p.pos+k]
	}
	return token{kind: tkEnd}
}

func (p *parser) advance() token {
	t := p.peek()
	if p.pos < len(p.toks) {
		p.pos++
	}
	return t
}

func (p *parser) fail(format string, args ...any) {
	if p.err == nil {
		p.err = &syntaxError{msg: fmt.Sprintf(format, args...), line: p.peek().line}
	}
	// jump to the end so that loops stop
	p.pos = len(p.toks)
}

func (p *parser) isOp(v string) bool {
	t := p.peek()
	return t.kind == tkOp && t.val == v
}

func (p *parser) isKw(v string) bool {
	t := p.peek()
	return t.kind == tkName && t.val == v
}

func (p *parser) acceptOp(v string) bool {
	if p.isOp(v) {
		p.advance()
		return true
	}
	return false
}

func (p *parser) acceptKw(v string) bool {
	if p.isKw(v) {
		p.advance()
		return true
	}
	return false
}

func (p *parser) expectOp(v string) {
	if !p.acceptOp(v) {
		p.fail("expected '%s'", v)
	}
}

func (p *parser) expectKw(v string) {
	if !p.acceptKw(v) {
		p.fail("expected '%s'", v)
	}
}

var keywords = map[string]bool{
	"False": true, "None": true, "True": true, "and": true, "as": true, "assert": true, "async": true,
	"await": true, "break": true, "class": true, "continue": true, "def": true, "del": true, "elif": true,
	"else": true, "except": true, "finally": true, "for": true, "from": true, "global": true, "if": true,
	"import": true, "in": true, "is": true, "lambda": true, "nonlocal": true, "not": true, "or": true,
	"pass": true, "raise": true, "return": true, "try": true, "while": true, "with": true, "yield": true,
}

func (p *parser) isName() bool {
	t := p.peek()
	return t.kind == tkName && !keywords[t.val]
}

func (p *parser) expectName() string {
	if !p.isName() {
		p.fail("invalid syntax: expected a name")
		return ""
	}
	return p.advance().val
}

func (p *parser) enter() bool {
	p.depth++
	if p.depth > maxParseDepth {
		p.fail("too many nested expressions or statements")
		return false
	}
	return true
}

func (p *parser) leave() { p.depth-- }

// --- statements

func (p *parser) statement() []*node {
	if !p.enter() {
		return nil
	}
	defer p.leave()
	t := p.peek()
	switch t.kind {
	case tkIndent:
		p.fail("unexpected indent")
		return nil
	case tkDedent:
		p.fail("unindent does not match any outer indentation level")
		return nil
	case tkNewline:
		p.fail("invalid syntax")
		return nil
	}
	if t.kind == tkOp && t.val == "@" {
		return []*node{p.decorated()}
	}
	if t.kind == tkName {
		switch t.val {
		case "if":
			return []*node{p.ifStmt()}
		case "while":
			return []*node{p.whileStmt()}
		case "for":
			return []*node{p.forStmt()}
		case "try":
			return []*node{p.tryStmt()}
		case "with":
			return []*node{p.withStmt()}
		case "def":
			return []*node{p.funcDef(nil)}
		case "class":
			return []*node{p.classDef(nil)}
		case "async":
			next := p.peekAt(1)
			if next.kind == tkName {
				switch next.val {
				case "def":
					p.advance()
					return []*node{p.funcDef(nil)}
				case "for":
					p.advance()
					return []*node{p.forStmt()}
				case "with":
					p.advance()
					return []*node{p.withStmt()}
				}
			}
			p.fail("invalid syntax")
			return nil
		case "match":
			if s := p.tryMatch(); s != nil {
				return []*node{s}
			}
		}
	}
	return p.simpleStmts()
}

func (p *parser) block() []*node {
	p.expectOp(":")
	if p.err != nil {
		return nil
	}
	if p.peek().kind == tkNewline {
		p.advance()
		if p.peek().kind != tkIndent {
			p.fail("expected an indented block")
			return nil
		}
		p.advance()
		var body []*node
		for p.err == nil && p.peek().kind != tkDedent && p.peek().kind != tkEnd {
			body = append(body, p.statement()...)
		}
		if p.err == nil && p.peek().kind == tkDedent {
			p.advance()
		}
		return body
	}
	return p.simpleStmts()
}

func stmt(kids ...*node) *node { return &node{kind: nStmt, kids: kids} }

func (p *parser) simpleStmts() []*node {
	var out []*node
	for p.err == nil {
		out = append(out, p.simpleStmt())
		if p.acceptOp(";") {
			if p.peek().kind == tkNewline {
				break
			}
			continue
		}
		break
	}
	if p.err == nil && p.peek().kind != tkNewline {
		p.fail("invalid syntax")
	}
	p.advance()
	return out
}

func (p *parser) simpleStmt() *node {
	t := p.peek()
	if t.kind == tkName {
		switch t.val {
		case "pass", "break", "continue":
			p.advance()
			return stmt()
		case "return":
			p.advance()
			if p.atStmtEnd() {
				return stmt()
			}
			return stmt(p.starExpressions())
		case "raise":
			p.advance()
			if p.atStmtEnd() {
				return stmt()
			}
			e := p.expression()
			if p.acceptKw("from") {
				return stmt(e, p.expression())
			}
			return stmt(e)
		case "global", "nonlocal":
			p.advance()
			p.expectName()
			for p.acceptOp(",") {
				p.expectName()
			}
			return stmt()
		case "del":
			p.advance()
			var targets []*node
			for {
				e := p.starOrBitwise(false)
				if p.err != nil {
					return nil
				}
				if msg := delTargetError(e); msg != "" {
					p.fail("%s", msg)
					return nil
				}
				targets = append(targets, e)
				if !p.acceptOp(",") || p.atStmtEnd() {
					break
				}
			}
			return stmt(targets...)
		case "assert":
			p.advance()
			e := p.expression()
			if p.acceptOp(",") {
				return stmt(e, p.expression())
			}
			return stmt(e)
		case "import":
			return p.importStmt()
		case "from":
			return p.fromImport()
		case "type":
			if n1, n2 := p.peekAt(1), p.peekAt(2); n1.kind == tkName && !keywords[n1.val] && n2.kind == tkOp && (n2.val == "=" || n2.val == "[") {
				p.advance()
				p.advance()
				var kids []*node
				if p.isOp("[") {
					kids = append(kids, p.typeParams()...)
				}
				p.expectOp("=")
				return stmt(append(kids, p.expression())...)
			}
		case "yield":
			return stmt(p.yieldExpr())
		}
	}
	// expressions and assignments
	lhs := p.starExpressions()
	if p.err != nil {
		return nil
	}
	if p.isOp(":") {
		if msg := annTargetError(lhs); msg != "" {
			p.fail("%s", msg)
			return nil
		}
		p.advance()
		ann := p.expression()
		if p.acceptOp("=") {
			return stmt(lhs, ann, p.assignValue())
		}
		return stmt(lhs, ann)
	}
	if t := p.peek(); t.kind == tkOp && isAugAssign(t.val) {
		if msg := augTargetError(lhs); msg != "" {
			p.fail("%s", msg)
			return nil
		}
		p.advance()
		return stmt(lhs, p.assignValue())
	}
	if p.isOp("=") {
		targets := []*node{lhs}
		var value *node
		for p.acceptOp("=") {
			value = p.assignValue()
			if p.err != nil {
				return nil
			}
			if p.isOp("=") {
				targets = append(targets, value)
			}
		}
		for _, tg := range targets {
			if msg := assignTargetError(tg, "assign to"); msg != "" {
				p.fail("%s", msg)
				return nil
			}
		}
		return stmt(append(targets, value)...)
	}
	return stmt(lhs)
}

func isAugAssign(op string) bool {
	switch op {
	case "+=", "-=", "*=", "/=", "//=", "%=", "@=", "&=", "|=", "^=", ">>=", "<<=", "**=":
		return true
	}
	return false
}

func (p *parser) assignValue() *node {
	if p.isKw("yield") {
		return p.yieldExpr()
	}
	return p.starExpressions()
}

func (p *parser) atStmtEnd() bool {
	t := p.peek()
	return t.kind == tkNewline || t.kind == tkEnd || t.kind == tkOp && t.val == ";"
}

func (p *parser) dottedName() string {
	name := p.expectName()
	for p.err == nil && p.acceptOp(".") {
		name += "." + p.expectName()
	}
	return name
}

func (p *parser) importStmt() *node {
	p.advance()
	n := &node{kind: nImport}
	for {
		n.names = append(n.names, p.dottedName())
		if p.acceptKw("as") {
			p.expectName()
		}
		if !p.acceptOp(",") {
			break
		}
	}
	return n
}

func (p *parser) fromImport() *node {
	p.advance()
	level := 0
	for {
		if p.acceptOp(".") {
			level++
		} else if p.acceptOp("...") {
			level += 3
		} else {
			break
		}
	}
	n := &node{kind: nImportFrom}
	if !p.isKw("import") {
		n.name = p.dottedName()
	} else if level == 0 {
		p.fail("invalid syntax")
		return nil
	}
	p.expectKw("import")
	if p.acceptOp("*") {
		return n
	}
	paren := p.acceptOp("(")
	for p.err == nil {
		p.expectName()
		if p.acceptKw("as") {
			p.expectName()
		}
		if !p.acceptOp(",") {
			break
		}
		if paren && p.isOp(")") {
			break
		}
		if !paren && p.atStmtEnd() {
			p.fail("trailing comma not allowed without surrounding parentheses")
			return nil
		}
	}
	if paren {
		p.expectOp(")")
	}
	return n
}

func (p *parser) ifStmt() *node {
	p.advance()
	test := p.namedExpression()
	body := p.block()
	n := stmt(append([]*node{test}, body...)...)
	if p.isKw("elif") {
		n.kids = append(n.kids, p.ifStmt())
	} else if p.acceptKw("else") {
		n.kids = append(n.kids, p.block()...)
	}
	return n
}

func (p *parser) whileStmt() *node {
	p.advance()
	test := p.namedExpression()
	n := stmt(append([]*node{test}, p.block()...)...)
	if p.acceptKw("else") {
		n.kids = append(n.kids, p.block()...)
	}
	return n
}

func (p *parser) forStmt() *node {
	p.advance()
	target := p.starTargets()
	p.expectKw("in")
	iter := p.starExpressions()
	n := stmt(append([]*node{target, iter}, p.block()...)...)
	if p.acceptKw("else") {
		n.kids = append(n.kids, p.block()...)
	}
	return n
}

// starTargets parses for/comprehension targets: star_targets.
func (p *parser) starTargets() *node {
	first := p.starOrBitwise(true)
	if p.err != nil {
		return nil
	}
	t := first
	if p.isOp(",") {
		t = &node{kind: nTuple, kids: []*node{first}}
		for p.acceptOp(",") {
			if p.isKw("in") || p.isOp("=") {
				break
			}
			t.kids = append(t.kids, p.starOrBitwise(true))
		}
	}
	if msg := assignTargetError(t, "assign to"); msg != "" {
		p.fail("%s", msg)
	}
	return t
}

func (p *parser) tryStmt() *node {
	p.advance()
	n := stmt(p.block()...)
	handlers, star, plain := 0, false, false
	for p.err == nil && p.isKw("except") {
		p.advance()
		isStar := p.acceptOp("*")
		h := stmt()
		if p.isOp(":") {
			if isStar {
				p.fail("expected one or more exception types")
				return nil
			}
			// a bare except (CPython checks its position only when compiling)
		} else {
			e := p.expression()
			if p.isOp(",") {
				p.fail("multiple exception types must be parenthesized")
				return nil
			}
			h.kids = append(h.kids, e)
			if p.acceptKw("as") {
				p.expectName()
			}
		}
		if isStar {
			star = true
		} else {
			plain = true
		}
		if star && plain {
			p.fail("cannot have both 'except' and 'except*' on the same 'try'")
			return nil
		}
		h.kids = append(h.kids, p.block()...)
		n.kids = append(n.kids, h)
		handlers++
	}
	hasElse := false
	if handlers > 0 && p.acceptKw("else") {
		hasElse = true
		n.kids = append(n.kids, p.block()...)
	}
	_ = hasElse
	if p.acceptKw("finally") {
		n.kids = append(n.kids, p.block()...)
	} else if handlers == 0 && p.err == nil {
		p.fail("expected 'except' or 'finally' block")
	}
	return n
}

func (p *parser) withStmt() *node {
	p.advance()
	n := stmt()
	if p.isOp("(") {
		save := p.pos
		items := p.withItemsParen()
		if p.err == nil && p.isOp(":") {
			n.kids = append(n.kids, items...)
			n.kids = append(n.kids, p.block()...)
			return n
		}
		p.pos, p.err = save, nil
	}
	for {
		n.kids = append(n.kids, p.withItem()...)
		if !p.acceptOp(",") {
			break
		}
	}
	n.kids = append(n.kids, p.block()...)
	return n
}

func (p *parser) withItemsParen() []*node {
	p.expectOp("(")
	var items []*node
	for p.err == nil {
		items = append(items, p.withItem()...)
		if !p.acceptOp(",") {
			break
		}
		if p.isOp(")") {
			break
		}
	}
	p.expectOp(")")
	return items
}

func (p *parser) withItem() []*node {
	e := p.expression()
	if p.acceptKw("as") {
		t := p.starOrBitwise(true)
		if p.err == nil {
			if msg := assignTargetError(t, "assign to"); msg != "" {
				p.fail("%s", msg)
			}
		}
		return []*node{e, t}
	}
	return []*node{e}
}

func (p *parser) decorated() *node {
	var decos []*node
	for p.err == nil && p.acceptOp("@") {
		decos = append(decos, p.namedExpression())
		if p.peek().kind != tkNewline {
			p.fail("invalid syntax")
			return nil
		}
		p.advance()
	}
	switch {
	case p.isKw("def"):
		return p.funcDef(decos)
	case p.isKw("class"):
		return p.classDef(decos)
	case p.isKw("async") && p.peekAt(1).kind == tkName && p.peekAt(1).val == "def":
		p.advance()
		return p.funcDef(decos)
	}
	p.fail("invalid syntax")
	return nil
}

func (p *parser) funcDef(decos []*node) *node {
	p.advance() // def
	p.expectName()
	var tparams []*node
	if p.isOp("[") {
		tparams = p.typeParams()
	}
	p.expectOp("(")
	args := p.params(")", true)
	p.expectOp(")")
	var returns *node
	if p.acceptOp("->") {
		returns = p.expression()
	}
	body := p.block()
	kids := []*node{args}
	kids = append(kids, body...)
	kids = append(kids, decos...)
	if returns != nil {
		kids = append(kids, returns)
	}
	kids = append(kids, tparams...)
	return stmt(kids...)
}

func (p *parser) classDef(decos []*node) *node {
	p.advance()
	p.expectName()
	var tparams []*node
	if p.isOp("[") {
		tparams = p.typeParams()
	}
	var bases []*node
	if p.acceptOp("(") {
		if !p.isOp(")") {
			call := &node{kind: nCall}
			p.callArgs(call, false)
			bases = call.kids
		}
		p.expectOp(")")
	}
	kids := append(bases, p.block()...)
	kids = append(kids, decos...)
	kids = append(kids, tparams...)
	return stmt(kids...)
}

func (p *parser) typeParams() []*node {
	p.expectOp("[")
	var out []*node
	for p.err == nil {
		if p.acceptOp("*") || p.acceptOp("**") {
			p.expectName()
		} else {
			p.expectName()
			if p.acceptOp(":") {
				out = append(out, p.expression())
			}
		}
		if p.acceptOp("=") { // PEP 696 defaults
			out = append(out, p.expression())
		}
		if !p.acceptOp(",") || p.isOp("]") {
			break
		}
	}
	p.expectOp("]")
	return out
}

// params parses a parameter list up to (not including) end. Kids of the
// arguments node follow ast.arguments' field order.
func (p *parser) params(end string, annotations bool) *node {
	var posAnn, varAnn, kwAnn, kwDefaults, kwargAnn, defaults []*node
	var sig []string
	defer func() {
		if !annotations && p.err == nil {
			p.lastSig = strings.Join(sig, ", ")
		}
	}()
	seenDefault, seenSlash, seenStar, starNeedsName, seenParam := false, false, false, false, false
	for p.err == nil && !p.isOp(end) {
		switch {
		case p.isOp("/"):
			if seenSlash {
				p.fail("/ may appear only once")
				return nil
			}
			if seenStar {
				p.fail("/ must be ahead of *")
				return nil
			}
			if !seenParam {
				p.fail("at least one argument must precede /")
				return nil
			}
			p.advance()
			seenSlash = true
			sig = append(sig, "/")
		case p.isOp("**"):
			p.advance()
			sig = append(sig, "**"+p.expectName())
			if annotations && p.acceptOp(":") {
				kwargAnn = append(kwargAnn, p.expression())
			}
			if p.isOp("=") {
				p.fail("var-keyword argument cannot have default value")
				return nil
			}
			p.acceptOp(",")
			if !p.isOp(end) {
				p.fail("arguments cannot follow var-keyword argument")
				return nil
			}
			if starNeedsName {
				p.fail("named arguments must follow bare *")
				return nil
			}
			return p.argsNode(posAnn, varAnn, kwAnn, kwDefaults, kwargAnn, defaults)
		case p.isOp("*"):
			if seenStar {
				p.fail("* argument may appear only once")
				return nil
			}
			p.advance()
			seenStar = true
			if p.isOp(",") || p.isOp(end) {
				starNeedsName = true
				sig = append(sig, "*")
			} else {
				sig = append(sig, "*"+p.expectName())
				if annotations && p.acceptOp(":") {
					if p.isOp("*") {
						p.advance()
						varAnn = append(varAnn, &node{kind: nStarred, kids: []*node{p.expression()}})
					} else {
						varAnn = append(varAnn, p.expression())
					}
				}
				if p.isOp("=") {
					p.fail("var-positional argument cannot have default value")
					return nil
				}
			}
		default:
			pname := p.expectName()
			sig = append(sig, pname)
			seenParam = true
			var ann *node
			if annotations && p.acceptOp(":") {
				ann = p.expression()
			}
			if seenStar {
				starNeedsName = false
				if ann != nil {
					kwAnn = append(kwAnn, ann)
				}
				if p.acceptOp("=") {
					d := p.expression()
					kwDefaults = append(kwDefaults, d)
					sig[len(sig)-1] += "=" + unparse(d, precTest)
				}
			} else {
				if ann != nil {
					posAnn = append(posAnn, ann)
				}
				if p.acceptOp("=") {
					d := p.expression()
					defaults = append(defaults, d)
					sig[len(sig)-1] += "=" + unparse(d, precTest)
					seenDefault = true
				} else if seenDefault {
					p.fail("parameter without a default follows parameter with a default")
					return nil
				}
			}
		}
		if p.err != nil {
			return nil
		}
		if !p.acceptOp(",") {
			break
		}
	}
	if starNeedsName {
		p.fail("named arguments must follow bare *")
		return nil
	}
	return p.argsNode(posAnn, varAnn, kwAnn, kwDefaults, kwargAnn, defaults)
}

func (p *parser) argsNode(lists ...[]*node) *node {
	n := &node{kind: nArguments}
	for _, l := range lists {
		n.kids = append(n.kids, l...)
	}
	return n
}

// --- match statements

func (p *parser) tryMatch() *node {
	save := p.pos
	n := p.matchStmt()
	if p.err == nil && n != nil {
		return n
	}
	// not a match statement (or an invalid one): let the caller parse it
	// as an expression statement; keep this error if that fails too
	matchErr := p.err
	p.pos, p.err = save, nil
	if matchErr != nil && p.looksLikeMatch() {
		p.err = matchErr
		p.pos = len(p.toks)
	}
	return nil
}

// looksLikeMatch: "match <expr> :" NEWLINE INDENT "case" – then a failed
// parse is a genuine error inside the match statement.
func (p *parser) looksLikeMatch() bool {
	depth := 0
	for i := p.pos + 1; i < len(p.toks); i++ {
		t := p.toks[i]
		if t.kind == tkNewline || t.kind == tkEnd {
			return false
		}
		if t.kind == tkOp {
			switch t.val {
			case "(", "[", "{":
				depth++
			case ")", "]", "}":
				depth--
			case ":":
				if depth == 0 {
					return i+3 < len(p.toks) && p.toks[i+1].kind == tkNewline && p.toks[i+2].kind == tkIndent &&
						p.toks[i+3].kind == tkName && p.toks[i+3].val == "case"
				}
			}
		}
	}
	return false
}

func (p *parser) matchStmt() *node {
	p.advance() // match
	if p.isOp("=") || p.isOp(".") || p.atStmtEnd() {
		p.fail("not a match statement")
		return nil
	}
	subject := p.namedOrStarList()
	if p.err != nil {
		return nil
	}
	if !p.isOp(":") || p.peekAt(1).kind != tkNewline || p.peekAt(2).kind != tkIndent {
		p.fail("not a match statement")
		return nil
	}
	p.advance()
	p.advance()
	p.advance()
	n := stmt(subject)
	for p.err == nil && p.isKw("case") {
		p.advance()
		c := stmt(p.patterns())
		if p.acceptKw("if") {
			c.kids = append(c.kids, p.namedExpression())
		}
		c.kids = append(c.kids, p.block()...)
		n.kids = append(n.kids, c)
	}
	if p.err == nil {
		if len(n.kids) == 1 {
			p.fail("expected 'case' block")
			return nil
		}
		if p.peek().kind != tkDedent {
			p.fail("invalid syntax")
			return nil
		}
		p.advance()
	}
	return n
}

func (p *parser) namedOrStarList() *node {
	first := p.starNamedExpression()
	if !p.isOp(",") {
		if first != nil && first.kind == nStarred {
			p.fail("invalid syntax")
		}
		return first
	}
	t := &node{kind: nTuple, kids: []*node{first}}
	for p.acceptOp(",") {
		if p.isOp(":") {
			break
		}
		t.kids = append(t.kids, p.starNamedExpression())
	}
	return t
}

func (p *parser) patterns() *node {
	first := p.pattern(true)
	if !p.isOp(",") {
		return first
	}
	seq := &node{kind: nPattern, kids: []*node{first}}
	for p.acceptOp(",") {
		if p.isOp(":") || p.isKw("if") {
			break
		}
		seq.kids = append(seq.kids, p.pattern(true))
	}
	return seq
}

// pattern: or-pattern ['as' NAME]; star patterns allowed in sequences.
func (p *parser) pattern(allowStar bool) *node {
	if !p.enter() {
		return nil
	}
	defer p.leave()
	if allowStar && p.isOp("*") {
		p.advance()
		p.expectName()
		return &node{kind: nPattern}
	}
	n := &node{kind: nPattern}
	n.kids = append(n.kids, p.closedPattern())
	for p.err == nil && p.acceptOp("|") {
		n.kids = append(n.kids, p.closedPattern())
	}
	if p.acceptKw("as") {
		name := p.expectName()
		if name == "_" {
			p.fail("cannot use '_' as a target")
		}
	}
	return n
}

func (p *parser) closedPattern() *node {
	t := p.peek()
	switch {
	case t.kind == tkNumber || t.kind == tkOp && t.val == "-":
		return p.numberPattern()
	case t.kind == tkString:
		s := p.strings()
		if s != nil && s.kind == nJoinedStr {
			p.fail("patterns may not match formatted string literals")
		}
		return s
	case t.kind == tkName && (t.val == "None" || t.val == "True" || t.val == "False"):
		p.advance()
		return nil
	case t.kind == tkOp && (t.val == "(" || t.val == "["):
		p.advance()
		closer := map[string]string{"(": ")", "[": "]"}[t.val]
		n := &node{kind: nPattern}
		for p.err == nil && !p.isOp(closer) {
			n.kids = append(n.kids, p.pattern(true))
			if !p.acceptOp(",") {
				break
			}
		}
		p.expectOp(closer)
		return n
	case t.kind == tkOp && t.val == "{":
		p.advance()
		n := &node{kind: nPattern}
		for p.err == nil && !p.isOp("}") {
			if p.acceptOp("**") {
				p.expectName()
				p.acceptOp(",")
				break
			}
			// key: literal or value pattern
			k := p.peek()
			switch {
			case k.kind == tkString:
				n.kids = append(n.kids, p.strings())
			case k.kind == tkNumber || k.kind == tkOp && k.val == "-":
				n.kids = append(n.kids, p.numberPattern())
			case k.kind == tkName && (k.val == "None" || k.val == "True" || k.val == "False"):
				p.advance()
			case p.isName():
				v := p.nameOrAttr()
				if v != nil && v.kind == nName {
					p.fail("mapping pattern keys may only match literals and attribute lookups")
				}
				n.kids = append(n.kids, v)
			default:
				p.fail("invalid syntax")
			}
			p.expectOp(":")
			n.kids = append(n.kids, p.pattern(false))
			if !p.acceptOp(",") {
				break
			}
		}
		p.expectOp("}")
		return n
	case p.isName():
		v := p.nameOrAttr()
		if p.isOp("(") {
			p.advance()
			n := &node{kind: nPattern, kids: []*node{v}}
			seenKw := false
			for p.err == nil && !p.isOp(")") {
				if p.isName() && p.peekAt(1).kind == tkOp && p.peekAt(1).val == "=" {
					p.advance()
					p.advance()
					seenKw = true
				} else if seenKw {
					p.fail("positional patterns follow keyword patterns")
					return nil
				}
				n.kids = append(n.kids, p.pattern(false))
				if !p.acceptOp(",") {
					break
				}
			}
			p.expectOp(")")
			return n
		}
		if v != nil && v.kind == nName {
			return nil // capture or wildcard: not a Name node
		}
		return v
	}
	p.fail("invalid pattern")
	return nil
}

func (p *parser) nameOrAttr() *node {
	v := &node{kind: nName, name: p.expectName()}
	for p.err == nil && p.acceptOp(".") {
		v = &node{kind: nAttr, name: p.expectName(), kids: []*node{v}}
	}
	return v
}

func (p *parser) numberPattern() *node {
	neg := p.acceptOp("-")
	if p.peek().kind != tkNumber {
		p.fail("invalid pattern")
		return nil
	}
	n := p.atom()
	if neg {
		n = &node{kind: nUnary, name: "-", kids: []*node{n}}
	}
	if p.isOp("+") || p.isOp("-") {
		op := p.advance().val
		if p.peek().kind != tkNumber || !strings.ContainsAny(p.peek().val, "jJ") {
			p.fail("imaginary number required in complex literal")
			return nil
		}
		n = &node{kind: nBinOp, name: op, kids: []*node{n, p.atom()}}
	}
	return n
}

// --- expressions

func (p *parser) yieldExpr() *node {
	p.advance() // yield
	if p.acceptKw("from") {
		return &node{kind: nYieldFrom, kids: []*node{p.expression()}}
	}
	t := p.peek()
	if t.kind == tkNewline || t.kind == tkEnd || t.kind == tkOp && (t.val == ")" || t.val == "]" || t.val == "}" || t.val == "=" || t.val == ";") {
		return &node{kind: nYield}
	}
	return &node{kind: nYield, kids: []*node{p.starExpressions()}}
}

// starExpressions: star_expression (',' star_expression)* [','].
func (p *parser) starExpressions() *node {
	first := p.starExpression()
	if !p.isOp(",") {
		return first
	}
	t := &node{kind: nTuple, kids: []*node{first}}
	for p.acceptOp(",") {
		if p.exprEnds() {
			break
		}
		t.kids = append(t.kids, p.starExpression())
	}
	return t
}

// exprEnds reports tokens that cannot start an expression (after a
// trailing comma).
func (p *parser) exprEnds() bool {
	t := p.peek()
	switch t.kind {
	case tkNewline, tkEnd, tkIndent, tkDedent:
		return true
	case tkOp:
		switch t.val {
		case "(", "[", "{", "-", "+", "~", "*", "...":
			return false
		}
		return true
	case tkName:
		switch t.val {
		case "in", "for", "if", "else", "and", "or", "is", "as", "from", "import":
			return true
		}
	}
	return false
}

func (p *parser) starExpression() *node {
	if p.isOp("*") {
		p.advance()
		return &node{kind: nStarred, kids: []*node{p.bitwiseOr()}}
	}
	return p.expression()
}

func (p *parser) starNamedExpression() *node {
	if p.isOp("*") {
		p.advance()
		return &node{kind: nStarred, kids: []*node{p.bitwiseOr()}}
	}
	return p.namedExpression()
}

// starOrBitwise parses a target-ish operand: '*' target or a bitwise_or
// expression (targets are validated by the caller).
func (p *parser) starOrBitwise(allowStar bool) *node {
	if allowStar && p.isOp("*") {
		p.advance()
		return &node{kind: nStarred, kids: []*node{p.bitwiseOr()}}
	}
	return p.bitwiseOr()
}

func (p *parser) namedExpression() *node {
	if p.isName() && p.peekAt(1).kind == tkOp && p.peekAt(1).val == ":=" {
		name := &node{kind: nName, name: p.advance().val}
		p.advance()
		return &node{kind: nNamedExpr, kids: []*node{name, p.expression()}}
	}
	e := p.expression()
	if p.isOp(":=") {
		p.fail("cannot use assignment expressions with %s", describe(e))
	}
	return e
}

func (p *parser) expression() *node {
	if !p.enter() {
		return nil
	}
	defer p.leave()
	if p.isKw("lambda") {
		return p.lambda()
	}
	e := p.disjunction()
	if p.isKw("if") {
		p.advance()
		test := p.disjunction()
		if !p.acceptKw("else") {
			p.fail("expected 'else' after 'if' expression")
			return nil
		}
		return &node{kind: nIfExp, kids: []*node{test, e, p.expression()}}
	}
	return e
}

func (p *parser) lambda() *node {
	p.advance()
	args := p.params(":", false)
	if args != nil {
		args.sval = p.lastSig
	}
	p.expectOp(":")
	return &node{kind: nLambda, kids: []*node{args, p.expression()}}
}

func (p *parser) disjunction() *node {
	e := p.conjunction()
	if !p.isKw("or") {
		return e
	}
	n := &node{kind: nBoolOp, name: "or", kids: []*node{e}}
	for p.acceptKw("or") {
		n.kids = append(n.kids, p.conjunction())
	}
	return n
}

func (p *parser) conjunction() *node {
	e := p.inversion()
	if !p.isKw("and") {
		return e
	}
	n := &node{kind: nBoolOp, name: "and", kids: []*node{e}}
	for p.acceptKw("and") {
		n.kids = append(n.kids, p.inversion())
	}
	return n
}

func (p *parser) inversion() *node {
	if p.isKw("not") {
		if !p.enter() {
			return nil
		}
		defer p.leave()
		p.advance()
		return &node{kind: nUnary, name: "not", kids: []*node{p.inversion()}}
	}
	return p.comparison()
}

func (p *parser) compareOp() string {
	t := p.peek()
	if t.kind == tkOp {
		switch t.val {
		case "==", "!=", "<", "<=", ">", ">=":
			p.advance()
			return t.val
		}
		return ""
	}
	if t.kind == tkName {
		switch t.val {
		case "in":
			p.advance()
			return "in"
		case "not":
			if n := p.peekAt(1); n.kind == tkName && n.val == "in" {
				p.advance()
				p.advance()
				return "not in"
			}
		case "is":
			p.advance()
			if p.acceptKw("not") {
				return "is not"
			}
			return "is"
		}
	}
	return ""
}

func (p *parser) comparison() *node {
	e := p.bitwiseOr()
	var n *node
	for p.err == nil {
		op := p.compareOp()
		if op == "" {
			break
		}
		if n == nil {
			n = &node{kind: nCompare, kids: []*node{e}}
		}
		n.names = append(n.names, op)
		n.kids = append(n.kids, p.bitwiseOr())
	}
	if n != nil {
		return n
	}
	return e
}

var binLevels = [][]string{{"|"}, {"^"}, {"&"}, {"<<", ">>"}, {"+", "-"}, {"*", "/", "//", "%", "@"}}

func (p *parser) bitwiseOr() *node { return p.binary(0) }

func (p *parser) binary(level int) *node {
	if level == len(binLevels) {
		return p.factor()
	}
	e := p.binary(level + 1)
	for p.err == nil {
		t := p.peek()
		if t.kind != tkOp || !containsStr(binLevels[level], t.val) {
			break
		}
		p.advance()
		e = &node{kind: nBinOp, name: t.val, kids: []*node{e, p.binary(level + 1)}}
	}
	return e
}

func containsStr(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func (p *parser) factor() *node {
	t := p.peek()
	if t.kind == tkOp && (t.val == "+" || t.val == "-" || t.val == "~") {
		if !p.enter() {
			return nil
		}
		defer p.leave()
		p.advance()
		return &node{kind: nUnary, name: t.val, kids: []*node{p.factor()}}
	}
	return p.power()
}

func (p *parser) power() *node {
	e := p.awaitPrimary()
	if p.acceptOp("**") {
		return &node{kind: nBinOp, name: "**", kids: []*node{e, p.factor()}}
	}
	return e
}

func (p *parser) awaitPrimary() *node {
	if p.acceptKw("await") {
		if !p.enter() {
			return nil
		}
		defer p.leave()
		return &node{kind: nAwait, kids: []*node{p.primary()}}
	}
	return p.primary()
}

func (p *parser) primary() *node {
	e := p.atom()
	for p.err == nil {
		switch {
		case p.isOp("."):
			p.advance()
			e = &node{kind: nAttr, name: p.expectName(), kids: []*node{e}}
		case p.isOp("("):
			p.advance()
			call := &node{kind: nCall, kids: []*node{e}}
			if !p.isOp(")") {
				p.callArgs(call, true)
			}
			p.expectOp(")")
			e = call
		case p.isOp("["):
			p.advance()
			s := p.slices()
			p.expectOp("]")
			e = &node{kind: nSubscript, kids: []*node{e, s}}
		default:
			return e
		}
	}
	return e
}

// callArgs parses call arguments into call (kids after the function:
// positional arguments, then keywords).
func (p *parser) callArgs(call *node, allowGen bool) {
	var args, kws []*node
	seenKw, seenKwUnpack := false, false
	for p.err == nil && !p.isOp(")") {
		switch {
		case p.isOp("*"):
			p.advance()
			if seenKwUnpack {
				p.fail("iterable argument unpacking follows keyword argument unpacking")
				return
			}
			args = append(args, &node{kind: nStarred, kids: []*node{p.expression()}})
		case p.isOp("**"):
			p.advance()
			kws = append(kws, &node{kind: nKeyword, kids: []*node{p.expression()}})
			seenKwUnpack = true
		case p.peek().kind == tkName && p.peekAt(1).kind == tkOp && p.peekAt(1).val == "=":
			name := p.advance().val
			p.advance()
			if name == "True" || name == "False" || name == "None" {
				p.fail("cannot assign to %s", name)
				return
			}
			if keywords[name] {
				p.fail("invalid syntax")
				return
			}
			kws = append(kws, &node{kind: nKeyword, name: name, kids: []*node{p.expression()}})
			seenKw = true
		default:
			e := p.namedExpression()
			if p.err != nil {
				return
			}
			if p.isOp("=") {
				p.fail("expression cannot contain assignment, perhaps you meant \"==\"?")
				return
			}
			if p.isKw("for") || p.isKw("async") {
				gen := p.comprehension(nGenExp, e, nil)
				if !allowGen {
					p.fail("invalid syntax")
					return
				}
				if len(args) > 0 || len(kws) > 0 || !p.isOp(")") {
					p.fail("Generator expression must be parenthesized")
					return
				}
				args = append(args, gen)
				continue
			}
			if seenKwUnpack {
				p.fail("positional argument follows keyword argument unpacking")
				return
			}
			if seenKw {
				p.fail("positional argument follows keyword argument")
				return
			}
			args = append(args, e)
		}
		if !p.acceptOp(",") {
			break
		}
	}
	call.ncalls = len(args)
	call.kids = append(call.kids, args...)
	call.kids = append(call.kids, kws...)
}

func (p *parser) slices() *node {
	first := p.slice()
	if !p.isOp(",") {
		return first
	}
	t := &node{kind: nTuple, kids: []*node{first}}
	for p.acceptOp(",") {
		if p.isOp("]") {
			break
		}
		t.kids = append(t.kids, p.slice())
	}
	return t
}

func (p *parser) slice() *node {
	if p.isOp("*") {
		return p.starNamedExpression()
	}
	var lower *node
	if !p.isOp(":") {
		lower = p.namedExpression()
		if !p.isOp(":") {
			return lower
		}
	}
	n := &node{kind: nSlice}
	p.advance() // ':'
	var upper, step *node
	if !p.isOp(":") && !p.isOp("]") && !p.isOp(",") {
		upper = p.expression()
	}
	if p.acceptOp(":") {
		if !p.isOp("]") && !p.isOp(",") {
			step = p.expression()
		}
	}
	n.kids = []*node{lower, upper, step}
	return n
}

func (p *parser) atom() *node {
	if !p.enter() {
		return nil
	}
	defer p.leave()
	t := p.peek()
	switch t.kind {
	case tkName:
		switch t.val {
		case "True":
			p.advance()
			return &node{kind: nConst, ckind: cTrue}
		case "False":
			p.advance()
			return &node{kind: nConst, ckind: cFalse}
		case "None":
			p.advance()
			return &node{kind: nConst, ckind: cNone}
		}
		if keywords[t.val] {
			if t.val == "print" {
				p.fail("Missing parentheses in call to 'print'")
			}
			p.fail("invalid syntax")
			return nil
		}
		p.advance()
		if t.val == "print" || t.val == "exec" {
			if n := p.peek(); n.kind == tkString || n.kind == tkName && !keywords[n.val] || n.kind == tkNumber {
				p.fail("Missing parentheses in call to '%s'", t.val)
				return nil
			}
		}
		return &node{kind: nName, name: t.val, line: t.line}
	case tkNumber:
		p.advance()
		ck := cInt
		v := strings.ToLower(t.val)
		switch {
		case strings.HasSuffix(v, "j"):
			ck = cComplex
		case strings.HasPrefix(v, "0x") || strings.HasPrefix(v, "0o") || strings.HasPrefix(v, "0b"):
			ck = cInt
		case strings.ContainsAny(v, ".e"):
			ck = cFloat
		}
		return &node{kind: nConst, ckind: ck, sval: t.val}
	case tkString:
		return p.strings()
	case tkOp:
		switch t.val {
		case "...":
			p.advance()
			return &node{kind: nConst, ckind: cEllipsis}
		case "(":
			return p.parenAtom()
		case "[":
			return p.listAtom()
		case "{":
			return p.braceAtom()
		}
	}
	p.fail("invalid syntax")
	return nil
}

// strings concatenates adjacent string literals.
func (p *parser) strings() *node {
	var lits []*strLit
	for p.peek().kind == tkString {
		lits = append(lits, p.advance().str)
	}
	hasBytes, hasStr, hasF := false, false, false
	for _, l := range lits {
		if l.bytes {
			hasBytes = true
		} else {
			hasStr = true
		}
		if l.fstr {
			hasF = true
		}
	}
	if hasBytes && hasStr {
		p.fail("cannot mix bytes and nonbytes literals")
		return nil
	}
	if !hasF {
		var b strings.Builder
		for _, l := range lits {
			b.WriteString(l.value)
		}
		ck := cStr
		if hasBytes {
			ck = cBytes
		}
		return &node{kind: nConst, ckind: ck, sval: b.String(), uprefix: lits[0].u}
	}
	js := &node{kind: nJoinedStr}
	var lit strings.Builder
	flush := func() {
		if lit.Len() > 0 {
			js.kids = append(js.kids, &node{kind: nConst, ckind: cStr, sval: lit.String()})
			lit.Reset()
		}
	}
	for _, l := range lits {
		if !l.fstr {
			lit.WriteString(l.value)
			continue
		}
		for _, part := range l.parts {
			if !part.isExpr {
				lit.WriteString(part.lit)
				continue
			}
			if part.debug != "" {
				lit.WriteString(part.debug)
			}
			flush()
			js.kids = append(js.kids, p.fieldNode(part))
			if p.err != nil {
				return nil
			}
		}
	}
	flush()
	return js
}

// fieldNode parses the expression of an f-string replacement field.
func (p *parser) fieldNode(part fpart) *node {
	sub := &parser{toks: part.expr, depth: p.depth}
	e := sub.fstringExpr()
	if sub.err != nil {
		p.err = sub.err
		p.pos = len(p.toks)
		return nil
	}
	n := &node{kind: nFormatted, kids: []*node{e}, conv: part.conv}
	if part.debug != "" && part.conv == 0 && part.spec == nil {
		n.conv = 'r'
	}
	if part.spec != nil {
		spec := &node{kind: nJoinedStr}
		for _, sp := range part.spec {
			if !sp.isExpr {
				spec.kids = append(spec.kids, &node{kind: nConst, ckind: cStr, sval: sp.lit})
				continue
			}
			spec.kids = append(spec.kids, p.fieldNode(sp))
			if p.err != nil {
				return nil
			}
		}
		n.kids = append(n.kids, spec)
	}
	return n
}

// fstringExpr: (yield_expr | star_expressions) filling the whole field.
func (p *parser) fstringExpr() *node {
	var e *node
	if p.isKw("yield") {
		e = p.yieldExpr()
	} else {
		e = p.starExpressions()
	}
	if p.err == nil && p.peek().kind != tkEnd {
		if p.isKw("lambda") || p.isOp(":") {
			p.fail("f-string: lambda expressions are not allowed without parentheses")
		} else {
			p.fail("f-string: invalid syntax")
		}
	}
	return e
}

func (p *parser) parenAtom() *node {
	p.advance() // (
	if p.acceptOp(")") {
		return &node{kind: nTuple, paren: true}
	}
	if p.isKw("yield") {
		y := p.yieldExpr()
		p.expectOp(")")
		return y
	}
	first := p.starNamedExpression()
	if p.err != nil {
		return nil
	}
	if p.isKw("for") || p.isKw("async") {
		if first.kind == nStarred {
			p.fail("iterable unpacking cannot be used in comprehension")
			return nil
		}
		g := p.comprehension(nGenExp, first, nil)
		p.expectOp(")")
		return g
	}
	if p.acceptOp(")") {
		if first.kind == nStarred {
			p.fail("cannot use starred expression here")
			return nil
		}
		c := *first
		c.paren = true
		return &c
	}
	t := &node{kind: nTuple, paren: true, kids: []*node{first}}
	for p.acceptOp(",") {
		if p.isOp(")") {
			break
		}
		t.kids = append(t.kids, p.starNamedExpression())
	}
	p.expectOp(")")
	return t
}

func (p *parser) listAtom() *node {
	p.advance() // [
	if p.acceptOp("]") {
		return &node{kind: nList}
	}
	first := p.starNamedExpression()
	if p.err != nil {
		return nil
	}
	if p.isKw("for") || p.isKw("async") {
		if first.kind == nStarred {
			p.fail("iterable unpacking cannot be used in comprehension")
			return nil
		}
		c := p.comprehension(nListComp, first, nil)
		p.expectOp("]")
		return c
	}
	l := &node{kind: nList, kids: []*node{first}}
	for p.acceptOp(",") {
		if p.isOp("]") {
			break
		}
		l.kids = append(l.kids, p.starNamedExpression())
	}
	p.expectOp("]")
	return l
}

func (p *parser) braceAtom() *node {
	p.advance() // {
	if p.acceptOp("}") {
		return &node{kind: nDict}
	}
	var keys, values []*node
	if p.acceptOp("**") {
		keys = append(keys, nil)
		values = append(values, p.bitwiseOr())
	} else {
		first := p.starNamedExpression()
		if p.err != nil {
			return nil
		}
		if p.acceptOp(":") {
			if first.kind == nStarred {
				p.fail("cannot use a starred expression in a dictionary value")
				return nil
			}
			v := p.expression()
			if p.isKw("for") || p.isKw("async") {
				c := p.comprehension(nDictComp, first, v)
				p.expectOp("}")
				return c
			}
			keys = append(keys, first)
			values = append(values, v)
		} else {
			// a set
			if p.isKw("for") || p.isKw("async") {
				if first.kind == nStarred {
					p.fail("iterable unpacking cannot be used in comprehension")
					return nil
				}
				c := p.comprehension(nSetComp, first, nil)
				p.expectOp("}")
				return c
			}
			s := &node{kind: nSet, kids: []*node{first}}
			for p.acceptOp(",") {
				if p.isOp("}") {
					break
				}
				s.kids = append(s.kids, p.starNamedExpression())
			}
			p.expectOp("}")
			return s
		}
	}
	for p.err == nil && p.acceptOp(",") {
		if p.isOp("}") {
			break
		}
		if p.acceptOp("**") {
			keys = append(keys, nil)
			values = append(values, p.bitwiseOr())
			continue
		}
		k := p.expression()
		p.expectOp(":")
		keys = append(keys, k)
		values = append(values, p.expression())
	}
	p.expectOp("}")
	d := &node{kind: nDict, nkeys: len(keys)}
	d.kids = append(d.kids, keys...)
	d.kids = append(d.kids, values...)
	return d
}

// comprehension parses the for/if clauses after elt (and value for dicts).
func (p *parser) comprehension(kind nodeKind, elt, value *node) *node {
	n := &node{kind: kind, kids: []*node{elt}}
	if value != nil {
		n.kids = append(n.kids, value)
	}
	for p.err == nil && (p.isKw("for") || p.isKw("async")) {
		c := &node{kind: nComprehension}
		if p.acceptKw("async") {
			c.async = true
		}
		p.expectKw("for")
		target := p.starTargets()
		p.expectKw("in")
		iter := p.disjunction()
		c.kids = []*node{target, iter}
		for p.err == nil && p.isKw("if") {
			p.advance()
			c.kids = append(c.kids, p.disjunction())
		}
		n.kids = append(n.kids, c)
	}
	return n
}

// --- target validation

func describe(e *node) string {
	if e == nil {
		return "expression"
	}
	switch e.kind {
	case nName:
		return "name"
	case nConst:
		switch e.ckind {
		case cTrue:
			return "True"
		case cFalse:
			return "False"
		case cNone:
			return "None"
		case cEllipsis:
			return "ellipsis"
		}
		return "literal"
	case nCall:
		return "function call"
	case nAttr:
		return "attribute"
	case nSubscript:
		return "subscript"
	case nTuple:
		return "tuple"
	case nList:
		return "list"
	case nLambda:
		return "lambda"
	case nCompare:
		return "comparison"
	case nIfExp:
		return "conditional expression"
	case nNamedExpr:
		return "named expression"
	case nJoinedStr:
		return "f-string expression"
	case nAwait:
		return "await expression"
	case nYield, nYieldFrom:
		return "yield expression"
	case nDict:
		return "dict literal"
	case nSet:
		return "set display"
	case nListComp:
		return "list comprehension"
	case nSetComp:
		return "set comprehension"
	case nDictComp:
		return "dict comprehension"
	case nGenExp:
		return "generator expression"
	case nStarred:
		return "starred"
	}
	return "expression"
}

func assignTargetError(e *node, verb string) string {
	if e == nil {
		return "invalid syntax"
	}
	switch e.kind {
	case nName, nAttr, nSubscript:
		return ""
	case nStarred:
		return assignTargetError(e.kids[0], verb)
	case nTuple, nList:
		for _, k := range e.kids {
			if msg := assignTargetError(k, verb); msg != "" {
				return msg
			}
		}
		return ""
	}
	return fmt.Sprintf("cannot %s %s", verb, describe(e))
}

func delTargetError(e *node) string {
	if e == nil {
		return "invalid syntax"
	}
	switch e.kind {
	case nName, nAttr, nSubscript:
		return ""
	case nTuple, nList:
		for _, k := range e.kids {
			if msg := delTargetError(k); msg != "" {
				return msg
			}
		}
		return ""
	}
	return "cannot delete " + describe(e)
}

func augTargetError(e *node) string {
	if e == nil {
		return "invalid syntax"
	}
	switch e.kind {
	case nName, nAttr, nSubscript:
		return ""
	}
	return fmt.Sprintf("'%s' is an illegal expression for augmented assignment", describe(e))
}

func annTargetError(e *node) string {
	if e == nil {
		return "invalid syntax"
	}
	switch e.kind {
	case nName, nAttr, nSubscript:
		return ""
	case nTuple:
		return "only single target (not tuple) can be annotated"
	case nList:
		return "only single target (not list) can be annotated"
	}
	return "illegal target for annotation"
}
