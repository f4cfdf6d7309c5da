// Package search holds Lookout's search query language, the searchable
// pieces of a trace (what the store indexes) and the exact hit ranges a
// query marks in them. The store backends compile a parsed Query to SQL
// over their index; this package knows no database.
//
// The language, by example:
//
//	cancel "I cannot"           both texts occur (case-insensitive substrings)
//	refund OR cancel            either
//	-refund                     the text does not occur
//	(refund OR cancel) role:user
//	role:assistant              an event with that role exists
//	tool:cancel_reservation     a tool call with that name exists
//	kind:RETRIEVAL              a span or step of that kind exists
//	is:annotated  not:annotated annotations other than analyzer results
//	has:violation               an analyzer result exists
//	has:violation:"no refunds"  a result of the saved policy of that name
//	policy:"no refunds"         the same
//	meta:model=gpt-4o           a metadata value equals (case-insensitive; numbers compare as numbers)
//	meta:model!=gpt-4o          no metadata value at the key equals it
//	meta:reward>0.5             also <, >=, <= (numbers only)
//	meta:model%gpt              a metadata value contains the text
//	events>20                   trace length; also <, >=, <=, =
//	dataset:airline             the trace's dataset has that name
//	session:abc  user:u-1       the trace's session / user id (trace.SessionAndUser) is that
//	score:accuracy>0.5          a current score of the criterion is a number that compares so; also <, >=, <=, =
//	verdict:correct=fail        a current score of the criterion is false; =pass: some are true, none false
//
// Terms side by side must all hold (AND, also written explicitly); OR binds
// looser than AND; "-" negates the term or group after it. Parentheses group
// and split words, so quote a text that holds them ("f(x)"). A word of the
// form name:value whose name is not a filter (http://…) is searched as text.
package search

import (
	"fmt"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Node is a node of a parsed query.
type Node interface {
	node()
	String() string
}

// And holds when every term holds.
type And struct{ Terms []Node }

// Or holds when any term holds.
type Or struct{ Terms []Node }

// Not holds when X does not.
type Not struct{ X Node }

// Text holds when a searchable piece of the trace contains Value
// (lower-cased) as a substring.
type Text struct {
	Value string
	Pos   int // where the term starts in the query, in code points
}

// Filter holds when the trace has a property: Field is one of role, tool,
// kind, session, user, annotated, violation, meta, events, dataset, score,
// verdict.
type Filter struct {
	Field string
	Key   string  // meta: the metadata key (a dotted path); score, verdict: the criterion's name
	Op    string  // meta: = != > < >= <= %; events, score: = > < >= <=; verdict: =
	Value string  // lower-cased for role, tool, kind, session, user, meta; a policy name for violation ("" any); pass or fail for verdict
	Num   float64 // the number for numeric ops, and for = when Value is a number
	IsNum bool
	Pos   int
}

func (And) node()    {}
func (Or) node()     {}
func (Not) node()    {}
func (Text) node()   {}
func (Filter) node() {}

func (n And) String() string  { return list("and", n.Terms) }
func (n Or) String() string   { return list("or", n.Terms) }
func (n Not) String() string  { return "(not " + n.X.String() + ")" }
func (n Text) String() string { return strconv.Quote(n.Value) }
func (f Filter) String() string {
	switch f.Field {
	case "annotated":
		return "is:annotated"
	case "violation":
		if f.Value == "" {
			return "has:violation"
		}
		return "has:violation:" + strconv.Quote(f.Value)
	case "meta":
		return "meta:" + f.Key + f.Op + strconv.Quote(f.Value)
	case "events":
		return "events" + f.Op + f.Value
	case "score", "verdict":
		return f.Field + ":" + strconv.Quote(f.Key) + f.Op + f.Value
	}
	return f.Field + ":" + strconv.Quote(f.Value)
}

func list(op string, ns []Node) string {
	var b strings.Builder
	b.WriteString("(" + op)
	for _, n := range ns {
		b.WriteString(" " + n.String())
	}
	return b.String() + ")"
}

// Query is a parsed query. Root is nil for an empty query (every trace).
type Query struct {
	Source string
	Root   Node
}

// String prints the plan, e.g. (and "refund" (not role:"user")).
func (q *Query) String() string {
	if q.Root == nil {
		return "(all)"
	}
	return q.Root.String()
}

// visit calls fn for every leaf of the query (a Text or a Filter) with
// whether an odd number of negations stands above it.
func (q *Query) visit(fn func(n Node, negated bool)) {
	var walk func(n Node, neg bool)
	walk = func(n Node, neg bool) {
		switch n := n.(type) {
		case And:
			for _, t := range n.Terms {
				walk(t, neg)
			}
		case Or:
			for _, t := range n.Terms {
				walk(t, neg)
			}
		case Not:
			walk(n.X, !neg)
		default:
			fn(n, neg)
		}
	}
	if q.Root != nil {
		walk(q.Root, false)
	}
}

// Words returns the lower-cased texts that appear without a negation above
// them: the ones whose occurrences are hits.
func (q *Query) Words() []string {
	var out []string
	seen := map[string]bool{}
	q.visit(func(n Node, neg bool) {
		if t, ok := n.(Text); ok && !neg && !seen[t.Value] {
			seen[t.Value] = true
			out = append(out, t.Value)
		}
	})
	return out
}

// Policies returns the policy names that has:violation:"name" terms name.
func (q *Query) Policies() []string {
	var out []string
	q.visit(func(n Node, _ bool) {
		if f, ok := n.(Filter); ok && f.Field == "violation" && f.Value != "" {
			out = append(out, f.Value)
		}
	})
	return out
}

// Error is a query that does not parse: Pos counts code points from the
// start of the query.
type Error struct {
	Pos int
	Msg string
}

func (e *Error) Error() string { return fmt.Sprintf("query: column %d: %s", e.Pos+1, e.Msg) }

// MaxLength bounds a query, in bytes; MaxTerms bounds its terms.
const (
	MaxLength = 4096
	MaxTerms  = 64
)

// Parse parses a query.
func Parse(src string) (*Query, error) {
	if len(src) > MaxLength {
		return nil, &Error{Pos: 0, Msg: fmt.Sprintf("the query is %d bytes long; at most %d", len(src), MaxLength)}
	}
	if !utf8.ValidString(src) {
		return nil, &Error{Pos: utf8.RuneCountInString(src[:invalidAt(src)]), Msg: "the query is not valid UTF-8"}
	}
	toks, err := lex(src)
	if err != nil {
		return nil, err
	}
	p := &parser{toks: toks, end: utf8.RuneCountInString(src)}
	q := &Query{Source: src}
	if len(toks) == 0 {
		return q, nil
	}
	if q.Root, err = p.or(0); err != nil {
		return nil, err
	}
	if p.i < len(p.toks) { // only a stray ")" stops the top level early
		return nil, &Error{Pos: p.toks[p.i].pos, Msg: `")" without "("`}
	}
	if p.terms > MaxTerms {
		return nil, &Error{Pos: 0, Msg: fmt.Sprintf("the query has %d terms; at most %d", p.terms, MaxTerms)}
	}
	return q, nil
}

func invalidAt(s string) int {
	for i, r := range s {
		if r == utf8.RuneError {
			if _, n := utf8.DecodeRuneInString(s[i:]); n <= 1 {
				return i
			}
		}
	}
	return len(s)
}

type tokKind uint8

const (
	tWord   tokKind = iota // a bare word, possibly with quoted parts (meta:k="a b")
	tPhrase                // a "quoted phrase" alone
	tOpen
	tClose
	tMinus // "-" right before a term or group
	tOr
	tAnd
)

type token struct {
	kind tokKind
	text string // unquoted text
	raw  string // as written
	pos  int    // code points from the start
	// quotedFrom is the byte offset in text where the first quoted part
	// starts (-1 when none), so that name:"value" keeps its colon.
	quotedFrom int
}

func lex(src string) ([]token, error) {
	var toks []token
	rs := []rune(src)
	i := 0
	for i < len(rs) {
		r := rs[i]
		switch {
		case unicode.IsSpace(r):
			i++
		case r == '(':
			toks = append(toks, token{kind: tOpen, raw: "(", pos: i})
			i++
		case r == ')':
			toks = append(toks, token{kind: tClose, raw: ")", pos: i})
			i++
		case r == '-' && i+1 < len(rs) && !unicode.IsSpace(rs[i+1]) && rs[i+1] != ')' && rs[i+1] != '-':
			toks = append(toks, token{kind: tMinus, raw: "-", pos: i})
			i++
		default:
			start := i
			var text strings.Builder
			quotedFrom := -1
			onlyQuoted := r == '"'
			for i < len(rs) && !unicode.IsSpace(rs[i]) && rs[i] != '(' && rs[i] != ')' {
				if rs[i] != '"' {
					text.WriteRune(rs[i])
					i++
					continue
				}
				if quotedFrom < 0 {
					quotedFrom = text.Len()
				}
				open := i
				i++
				closed := false
				for i < len(rs) {
					if rs[i] == '\\' && i+1 < len(rs) && (rs[i+1] == '"' || rs[i+1] == '\\') {
						text.WriteRune(rs[i+1])
						i += 2
						continue
					}
					if rs[i] == '"' {
						closed = true
						i++
						break
					}
					text.WriteRune(rs[i])
					i++
				}
				if !closed {
					return nil, &Error{Pos: open, Msg: `this quote is never closed: add a closing "`}
				}
				if i < len(rs) && !unicode.IsSpace(rs[i]) && rs[i] != '(' && rs[i] != ')' {
					onlyQuoted = false
				}
			}
			raw := string(rs[start:i])
			tok := token{kind: tWord, text: text.String(), raw: raw, pos: start, quotedFrom: quotedFrom}
			switch {
			case onlyQuoted && quotedFrom == 0:
				tok.kind = tPhrase
			case raw == "OR" || raw == "|" || raw == "||":
				tok.kind = tOr
			case raw == "AND" || raw == "&&":
				tok.kind = tAnd
			}
			toks = append(toks, tok)
		}
	}
	return toks, nil
}

type parser struct {
	toks  []token
	i     int
	end   int // the query's length in code points, for errors at the end
	terms int
}

func (p *parser) peek() *token {
	if p.i < len(p.toks) {
		return &p.toks[p.i]
	}
	return nil
}

func (p *parser) endPos() int { return p.end }

const maxDepth = 32

// or := and ("OR" and)*
func (p *parser) or(depth int) (Node, error) {
	first, err := p.and(depth)
	if err != nil {
		return nil, err
	}
	terms := []Node{first}
	for t := p.peek(); t != nil && t.kind == tOr; t = p.peek() {
		p.i++
		next := p.peek()
		if next == nil || next.kind == tClose || next.kind == tOr || next.kind == tAnd {
			return nil, &Error{Pos: p.posOr(next), Msg: `OR needs a term after it`}
		}
		n, err := p.and(depth)
		if err != nil {
			return nil, err
		}
		terms = append(terms, n)
	}
	if len(terms) == 1 {
		return first, nil
	}
	return Or{Terms: terms}, nil
}

func (p *parser) posOr(t *token) int {
	if t == nil {
		return p.endPos()
	}
	return t.pos
}

// and := unary (["AND"] unary)*
func (p *parser) and(depth int) (Node, error) {
	var terms []Node
	for {
		t := p.peek()
		if t == nil || t.kind == tClose || t.kind == tOr {
			break
		}
		if t.kind == tAnd {
			if len(terms) == 0 {
				return nil, &Error{Pos: t.pos, Msg: t.raw + " needs a term before it"}
			}
			p.i++
			if n := p.peek(); n == nil || n.kind == tClose || n.kind == tOr || n.kind == tAnd {
				return nil, &Error{Pos: p.posOr(n), Msg: t.raw + " needs a term after it"}
			}
			continue
		}
		n, err := p.unary(depth)
		if err != nil {
			return nil, err
		}
		terms = append(terms, n)
	}
	switch len(terms) {
	case 0:
		t := p.peek()
		if t != nil && t.kind == tOr {
			return nil, &Error{Pos: t.pos, Msg: "OR needs a term before it"}
		}
		return nil, &Error{Pos: p.posOr(t), Msg: "a term is missing here"}
	case 1:
		return terms[0], nil
	}
	return And{Terms: terms}, nil
}

func (p *parser) unary(depth int) (Node, error) {
	t := p.peek()
	if depth > maxDepth {
		return nil, &Error{Pos: t.pos, Msg: fmt.Sprintf("groups nest deeper than %d", maxDepth)}
	}
	switch t.kind {
	case tMinus:
		p.i++
		n := p.peek()
		if n == nil || n.kind == tClose || n.kind == tOr || n.kind == tAnd {
			return nil, &Error{Pos: t.pos, Msg: `"-" needs a term right after it`}
		}
		x, err := p.unary(depth + 1)
		if err != nil {
			return nil, err
		}
		if nx, ok := x.(Not); ok {
			return nx.X, nil
		}
		return Not{X: x}, nil
	case tOpen:
		p.i++
		if n := p.peek(); n != nil && n.kind == tClose {
			return nil, &Error{Pos: n.pos, Msg: "empty group: put a term between the parentheses"}
		}
		if p.peek() == nil {
			return nil, &Error{Pos: t.pos, Msg: `this "(" is never closed`}
		}
		x, err := p.or(depth + 1)
		if err != nil {
			return nil, err
		}
		if c := p.peek(); c == nil || c.kind != tClose {
			return nil, &Error{Pos: t.pos, Msg: `this "(" is never closed`}
		}
		p.i++
		return x, nil
	case tPhrase:
		p.i++
		return p.text(t)
	}
	p.i++
	return p.word(t)
}

func (p *parser) text(t *token) (Node, error) {
	p.terms++
	if t.text == "" {
		return nil, &Error{Pos: t.pos, Msg: `an empty phrase matches everything: put text between the quotes`}
	}
	return Text{Value: strings.ToLower(t.text), Pos: t.pos}, nil
}

// filters maps a filter name to whether it is one.
var filters = map[string]bool{
	"role": true, "tool": true, "kind": true, "is": true, "not": true, "has": true,
	"meta": true, "dataset": true, "policy": true, "session": true, "user": true, "score": true, "verdict": true,
}

func (p *parser) word(t *token) (Node, error) {
	colon := strings.IndexByte(t.text, ':')
	if t.quotedFrom >= 0 && colon >= t.quotedFrom {
		colon = -1 // the colon is inside quotes: text
	}
	name := ""
	if colon > 0 {
		name = t.text[:colon]
	}
	if strings.HasPrefix(t.text, "events") && t.quotedFrom < 0 && len(t.text) > 6 && strings.ContainsRune("=<>", rune(t.text[6])) {
		return p.events(t)
	}
	if !filters[name] {
		return p.text(t)
	}
	p.terms++
	rest := t.text[colon+1:]
	valPos := t.pos + utf8.RuneCountInString(t.text[:colon+1])
	f := Filter{Field: name, Pos: t.pos}
	switch name {
	case "score", "verdict":
		return p.criterion(t, f, valPos)
	case "role", "tool", "kind", "dataset", "session", "user":
		if rest == "" {
			return nil, &Error{Pos: valPos, Msg: name + ": needs a value, e.g. " + example[name]}
		}
		f.Value = rest
		if name != "dataset" {
			f.Value = strings.ToLower(rest)
		}
		return f, nil
	case "is", "not":
		if rest != "annotated" {
			return nil, &Error{Pos: valPos, Msg: fmt.Sprintf("%s:%s: the only value is %s:annotated", name, rest, name)}
		}
		f.Field = "annotated"
		if name == "not" {
			return Not{X: f}, nil
		}
		return f, nil
	case "has", "policy":
		f.Field = "violation"
		if name == "has" {
			switch {
			case rest == "violation" || rest == "violations":
				return f, nil
			case strings.HasPrefix(rest, "violation:"):
				rest = rest[len("violation:"):]
				valPos += len("violation:")
			default:
				return nil, &Error{Pos: valPos, Msg: fmt.Sprintf(`has:%s: want has:violation or has:violation:"policy name"`, rest)}
			}
		}
		if rest == "" {
			return nil, &Error{Pos: valPos, Msg: name + `: needs a saved policy's name, e.g. policy:"no refunds"`}
		}
		f.Value = rest
		return f, nil
	}
	return p.meta(t, f, rest, valPos)
}

var example = map[string]string{
	"role": "role:assistant", "tool": "tool:cancel_reservation", "kind": "kind:RETRIEVAL", "dataset": "dataset:airline",
	"session": "session:3f2a-17", "user": "user:mia_li_3668",
}

// criterion parses score:NAME<op>NUMBER and verdict:NAME=pass|fail: NAME
// runs to the first of = < > unless quoted (score:"task success">0.5),
// and is the criterion's name as saved (case counts).
func (p *parser) criterion(t *token, f Filter, at int) (Node, error) {
	raw := []rune(t.raw)[len(f.Field)+1:]
	var name strings.Builder
	i := 0
	if len(raw) > 0 && raw[0] == '"' {
		for i = 1; i < len(raw) && raw[i] != '"'; i++ {
			if raw[i] == '\\' && i+1 < len(raw) && (raw[i+1] == '"' || raw[i+1] == '\\') {
				i++
			}
			name.WriteRune(raw[i])
		}
		i++ // the closing quote (the lexer saw it)
	} else {
		for ; i < len(raw) && !strings.ContainsRune("=<>", raw[i]); i++ {
			name.WriteRune(raw[i])
		}
	}
	f.Key = name.String()
	if (len(raw) == 0 || raw[0] != '"') && strings.HasSuffix(f.Key, "!") && i < len(raw) && raw[i] == '=' {
		return nil, &Error{Pos: at + i - 1, Msg: fmt.Sprintf(`%s: has no "!=": negate the term instead (-%s:%s=...)`, f.Field, f.Field, strings.TrimSuffix(f.Key, "!"))}
	}
	want := "score: needs a criterion's name, an operator (= > < >= <=) and a number, e.g. score:accuracy>0.5"
	if f.Field == "verdict" {
		want = "verdict: needs a criterion's name, = and pass or fail, e.g. verdict:correct=fail"
	}
	if strings.TrimSpace(f.Key) == "" {
		return nil, &Error{Pos: at, Msg: want}
	}
	opAt := at + i
	rest := string(raw[min(i, len(raw)):])
	switch {
	case strings.HasPrefix(rest, ">="), strings.HasPrefix(rest, "<="):
		f.Op = rest[:2]
	case rest != "" && strings.ContainsRune("=<>", rune(rest[0])):
		f.Op = rest[:1]
	default:
		return nil, &Error{Pos: opAt, Msg: want}
	}
	value := rest[len(f.Op):]
	vpos := opAt + len(f.Op)
	if f.Field == "verdict" {
		f.Value = strings.ToLower(value)
		if f.Op != "=" || f.Value != "pass" && f.Value != "fail" {
			if f.Op != "=" {
				vpos = opAt
			}
			return nil, &Error{Pos: vpos, Msg: fmt.Sprintf("verdict:%s takes =pass or =fail", f.Key)}
		}
		return f, nil
	}
	n, err := strconv.ParseFloat(value, 64)
	if err != nil || isNaNOrInf(n) {
		if value == "" {
			return nil, &Error{Pos: vpos, Msg: f.Op + " needs a number after it"}
		}
		return nil, &Error{Pos: vpos, Msg: fmt.Sprintf("%q is not a number; score: compares numbers", value)}
	}
	f.Value, f.Num, f.IsNum = value, n, true
	return f, nil
}

func (p *parser) meta(t *token, f Filter, rest string, at int) (Node, error) {
	// The key runs to the first operator character outside quotes.
	end := len(rest)
	if q := t.quotedFrom - (len(t.text) - len(rest)); q >= 0 && q < end {
		end = q
	}
	k := strings.IndexAny(rest[:end], "=<>!%")
	if k <= 0 {
		if k == 0 {
			return nil, &Error{Pos: at, Msg: "meta: needs a key before the operator, e.g. meta:model=gpt-4o"}
		}
		return nil, &Error{Pos: at, Msg: "meta: needs a key, an operator (= != > < >= <= %) and a value, e.g. meta:reward>0.5"}
	}
	f.Key = rest[:k]
	op := rest[k:]
	switch {
	case strings.HasPrefix(op, ">="), strings.HasPrefix(op, "<="), strings.HasPrefix(op, "!="):
		f.Op = op[:2]
	case op[0] == '=' || op[0] == '<' || op[0] == '>' || op[0] == '%':
		f.Op = op[:1]
	default:
		return nil, &Error{Pos: at + utf8.RuneCountInString(rest[:k]), Msg: `"!" must be followed by "=" (meta:key!=value)`}
	}
	value := op[len(f.Op):]
	vpos := at + utf8.RuneCountInString(rest[:k]) + len(f.Op)
	if err := numeric(&f, value, vpos); err != nil {
		return nil, err
	}
	f.Value = strings.ToLower(value)
	return f, nil
}

func numeric(f *Filter, value string, pos int) error {
	n, err := strconv.ParseFloat(strings.TrimSpace(value), 64)
	isNum := err == nil && !isNaNOrInf(n) && strings.TrimSpace(value) != ""
	switch f.Op {
	case ">", "<", ">=", "<=":
		if !isNum {
			if value == "" {
				return &Error{Pos: pos, Msg: f.Op + " needs a number after it"}
			}
			return &Error{Pos: pos, Msg: fmt.Sprintf("%q is not a number; %s compares numbers", value, f.Op)}
		}
	case "%":
		if value == "" {
			return &Error{Pos: pos, Msg: "% needs the text to look for after it"}
		}
	}
	f.Num, f.IsNum = n, isNum
	return nil
}

func isNaNOrInf(f float64) bool {
	return f != f || f > 1.7976931348623157e308 || f < -1.7976931348623157e308
}

func (p *parser) events(t *token) (Node, error) {
	p.terms++
	rest := t.text[len("events"):]
	f := Filter{Field: "events", Pos: t.pos}
	switch {
	case strings.HasPrefix(rest, ">="), strings.HasPrefix(rest, "<="):
		f.Op = rest[:2]
	default:
		f.Op = rest[:1]
	}
	value := rest[len(f.Op):]
	n, err := strconv.ParseInt(value, 10, 64)
	if err != nil || n < 0 {
		return nil, &Error{Pos: t.pos + 6 + len(f.Op), Msg: fmt.Sprintf("events%s needs a whole number of events, e.g. events>20", f.Op)}
	}
	f.Value, f.Num, f.IsNum = value, float64(n), true
	return f, nil
}
