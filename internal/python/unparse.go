package python

import (
	"fmt"
	"math"
	"math/big"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Rendering of expressions, after Python's ast.unparse: the function calls
// are reported as unparse renders the called expression.

const (
	precNamedExpr = iota
	precTuple
	precYield
	precTest
	precOr
	precAnd
	precNot
	precCmp
	precExpr
	precBor
	precBxor
	precBand
	precShift
	precArith
	precTerm
	precFactor
	precPower
	precAwait
	precAtom
)

var binPrec = map[string]int{
	"|": precBor, "^": precBxor, "&": precBand, "<<": precShift, ">>": precShift,
	"+": precArith, "-": precArith, "*": precTerm, "/": precTerm, "//": precTerm, "%": precTerm, "@": precTerm,
	"**": precPower,
}

func paren(cond bool, s string) string {
	if cond {
		return "(" + s + ")"
	}
	return s
}

func unparseList(ns []*node, prec int) string {
	parts := make([]string, len(ns))
	for i, k := range ns {
		parts[i] = unparse(k, prec)
	}
	return strings.Join(parts, ", ")
}

// unparse renders an expression; prec is the precedence of the context.
func unparse(n *node, prec int) string {
	if n == nil {
		return ""
	}
	switch n.kind {
	case nName:
		return n.name
	case nConst:
		return unparseConst(n)
	case nJoinedStr:
		return "f" + repr(joinedBody(n))
	case nAttr:
		base := unparse(n.kids[0], precAtom)
		if c := n.kids[0]; c.kind == nConst && (c.ckind == cInt || c.ckind == cTrue || c.ckind == cFalse) {
			base += " "
		}
		return base + "." + n.name
	case nSubscript:
		s := n.kids[1]
		var inner string
		if s != nil && s.kind == nTuple && len(s.kids) > 0 {
			inner = unparseList(s.kids, precTest)
			if len(s.kids) == 1 {
				inner += ","
			}
		} else {
			inner = unparse(s, precTuple)
		}
		return unparse(n.kids[0], precAtom) + "[" + inner + "]"
	case nSlice:
		s := unparse(n.kids[0], precTest) + ":" + unparse(n.kids[1], precTest)
		if n.kids[2] != nil {
			s += ":" + unparse(n.kids[2], precTest)
		}
		return s
	case nCall:
		var args []string
		for i, k := range n.kids[1:] {
			if i < n.ncalls {
				args = append(args, unparse(k, precTest))
			} else if k.name == "" {
				args = append(args, "**"+unparse(k.kids[0], precTest))
			} else {
				args = append(args, k.name+"="+unparse(k.kids[0], precTest))
			}
		}
		return unparse(n.kids[0], precAtom) + "(" + strings.Join(args, ", ") + ")"
	case nStarred:
		return "*" + unparse(n.kids[0], precExpr)
	case nBinOp:
		p := binPrec[n.name]
		lp, rp := p, p+1
		if n.name == "**" {
			lp, rp = p+1, p
		}
		return paren(prec > p, unparse(n.kids[0], lp)+" "+n.name+" "+unparse(n.kids[1], rp))
	case nUnary:
		if n.name == "not" {
			return paren(prec > precNot, "not "+unparse(n.kids[0], precNot))
		}
		return paren(prec > precFactor, n.name+unparse(n.kids[0], precFactor))
	case nBoolOp:
		p := precOr
		if n.name == "and" {
			p = precAnd
		}
		parts := make([]string, len(n.kids))
		for i, k := range n.kids {
			parts[i] = unparse(k, p+1)
		}
		return paren(prec > p, strings.Join(parts, " "+n.name+" "))
	case nCompare:
		s := unparse(n.kids[0], precCmp+1)
		for i, op := range n.names {
			if i+1 < len(n.kids) {
				s += " " + op + " " + unparse(n.kids[i+1], precCmp+1)
			}
		}
		return paren(prec > precCmp, s)
	case nIfExp:
		return paren(prec > precTest, unparse(n.kids[1], precTest+1)+" if "+unparse(n.kids[0], precTest+1)+" else "+unparse(n.kids[2], precTest))
	case nLambda:
		args := unparseArgs(n.kids[0])
		if args != "" {
			args = " " + args
		}
		return paren(prec > precTest, "lambda"+args+": "+unparse(n.kids[1], precTest))
	case nNamedExpr:
		return paren(prec > precNamedExpr, unparse(n.kids[0], precAtom)+" := "+unparse(n.kids[1], precAtom))
	case nTuple:
		if len(n.kids) == 1 {
			return "(" + unparse(n.kids[0], precTest) + ",)"
		}
		return "(" + unparseList(n.kids, precTest) + ")"
	case nList:
		return "[" + unparseList(n.kids, precTest) + "]"
	case nSet:
		if len(n.kids) == 0 {
			return "{*()}"
		}
		return "{" + unparseList(n.kids, precTest) + "}"
	case nDict:
		var parts []string
		for i := 0; i < n.nkeys && n.nkeys+i < len(n.kids); i++ {
			k, val := n.kids[i], n.kids[n.nkeys+i]
			if k == nil {
				parts = append(parts, "**"+unparse(val, precExpr))
			} else {
				parts = append(parts, unparse(k, precTest)+": "+unparse(val, precTest))
			}
		}
		return "{" + strings.Join(parts, ", ") + "}"
	case nListComp, nSetComp, nGenExp, nDictComp:
		open, close := "[", "]"
		switch n.kind {
		case nSetComp, nDictComp:
			open, close = "{", "}"
		case nGenExp:
			open, close = "(", ")"
		}
		s := unparse(n.kids[0], precTest)
		gens := n.kids[1:]
		if n.kind == nDictComp && len(n.kids) > 1 {
			s += ": " + unparse(n.kids[1], precTest)
			gens = n.kids[2:]
		}
		for _, g := range gens {
			if g == nil || len(g.kids) < 2 {
				continue
			}
			if g.async {
				s += " async"
			}
			s += " for " + unparseTarget(g.kids[0]) + " in " + unparse(g.kids[1], precTest+1)
			for _, c := range g.kids[2:] {
				s += " if " + unparse(c, precTest+1)
			}
		}
		return open + s + close
	case nAwait:
		return paren(prec > precAwait, "await "+unparse(n.kids[0], precAtom))
	case nYield:
		if len(n.kids) == 0 {
			return paren(prec > precYield, "yield")
		}
		return paren(prec > precYield, "yield "+unparse(n.kids[0], precTuple))
	case nYieldFrom:
		return paren(prec > precYield, "yield from "+unparse(n.kids[0], precTest))
	}
	return ""
}

func unparseTarget(n *node) string {
	if n != nil && n.kind == nTuple && len(n.kids) > 0 {
		if len(n.kids) == 1 {
			return unparse(n.kids[0], precTest) + ","
		}
		return unparseList(n.kids, precTest)
	}
	return unparse(n, precTuple)
}

// unparseArgs renders lambda parameters approximately (names are not kept
// in the AST; defaults are).
func unparseArgs(args *node) string {
	if args == nil {
		return ""
	}
	return args.sval
}

func joinedBody(n *node) string {
	var b strings.Builder
	for _, k := range n.kids {
		if k.kind == nConst {
			b.WriteString(strings.ReplaceAll(strings.ReplaceAll(k.sval, "{", "{{"), "}", "}}"))
			continue
		}
		b.WriteString("{")
		inner := unparse(k.kids[0], precTest+1)
		if strings.HasPrefix(inner, "{") {
			b.WriteString(" ")
		}
		b.WriteString(inner)
		if k.conv != 0 {
			b.WriteString("!" + string(k.conv))
		}
		if len(k.kids) > 1 {
			b.WriteString(":" + joinedBody(k.kids[1]))
		}
		b.WriteString("}")
	}
	return b.String()
}

func unparseConst(n *node) string {
	switch n.ckind {
	case cStr:
		if n.uprefix {
			return "u" + repr(n.sval)
		}
		return repr(n.sval)
	case cBytes:
		return "b" + bytesRepr(n.sval)
	case cTrue:
		return "True"
	case cFalse:
		return "False"
	case cNone:
		return "None"
	case cEllipsis:
		return "..."
	case cInt:
		return intRepr(n.sval)
	case cFloat:
		return floatRepr(n.sval)
	case cComplex:
		return strings.TrimSuffix(floatRepr(strings.TrimRight(n.sval, "jJ")), ".0") + "j"
	}
	return ""
}

func intRepr(lit string) string {
	s := strings.ReplaceAll(strings.ToLower(lit), "_", "")
	b := new(big.Int)
	base := 10
	switch {
	case strings.HasPrefix(s, "0x"):
		base, s = 16, s[2:]
	case strings.HasPrefix(s, "0o"):
		base, s = 8, s[2:]
	case strings.HasPrefix(s, "0b"):
		base, s = 2, s[2:]
	}
	if _, ok := b.SetString(s, base); !ok {
		return lit
	}
	return b.String()
}

func floatRepr(lit string) string {
	f, err := strconv.ParseFloat(strings.ReplaceAll(lit, "_", ""), 64)
	if err != nil && !math.IsInf(f, 0) {
		return lit
	}
	if math.IsInf(f, 0) {
		return "1e309"
	}
	// Python's repr: shortest digits, fixed notation for exponents -4..15
	e := strconv.FormatFloat(f, 'e', -1, 64)
	mant, expStr, _ := strings.Cut(e, "e")
	exp, _ := strconv.Atoi(expStr)
	digits := strings.Replace(mant, ".", "", 1)
	if exp >= -4 && exp < 16 {
		s := strconv.FormatFloat(f, 'f', -1, 64)
		if !strings.Contains(s, ".") {
			s += ".0"
		}
		return s
	}
	out := digits[:1]
	if len(digits) > 1 {
		out += "." + digits[1:]
	}
	sign := "+"
	if exp < 0 {
		sign = "-"
		exp = -exp
	}
	return fmt.Sprintf("%se%s%02d", out, sign, exp)
}

// repr renders s as Python's repr() of a str.
func repr(s string) string {
	q := byte('\'')
	if strings.ContainsRune(s, '\'') && !strings.ContainsRune(s, '"') {
		q = '"'
	}
	var b strings.Builder
	b.WriteByte(q)
	for _, r := range s {
		switch {
		case r == rune(q) || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == '\t':
			b.WriteString(`\t`)
		case r < 0x20 || r == 0x7f:
			fmt.Fprintf(&b, `\x%02x`, r)
		case r >= 0x80 && !isPrintable(r):
			switch {
			case r <= 0xff:
				fmt.Fprintf(&b, `\x%02x`, r)
			case r <= 0xffff:
				fmt.Fprintf(&b, `\u%04x`, r)
			default:
				fmt.Fprintf(&b, `\U%08x`, r)
			}
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte(q)
	return b.String()
}

// isPrintable is Python's str.isprintable for one non-ASCII character:
// false for the categories Cc, Cf, Cs, Co, Cn, Zl, Zp and Zs, which beyond
// ASCII is Go's unicode.IsPrint (letters, marks, numbers, punctuation and
// symbols).
func isPrintable(r rune) bool {
	return r == utf8.RuneError || unicode.IsPrint(r)
}

func bytesRepr(s string) string {
	q := byte('\'')
	if strings.IndexByte(s, '\'') >= 0 && strings.IndexByte(s, '"') < 0 {
		q = '"'
	}
	var b strings.Builder
	b.WriteByte(q)
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == q || c == '\\':
			b.WriteByte('\\')
			b.WriteByte(c)
		case c == '\n':
			b.WriteString(`\n`)
		case c == '\r':
			b.WriteString(`\r`)
		case c == '\t':
			b.WriteString(`\t`)
		case c < 0x20 || c >= 0x7f:
			fmt.Fprintf(&b, `\x%02x`, c)
		default:
			b.WriteByte(c)
		}
	}
	b.WriteByte(q)
	return b.String()
}
