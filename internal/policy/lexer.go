package policy

import (
	"fmt"
	"strings"
)

// The lexer turns policy source into tokens, including NEWLINE, INDENT and
// DEDENT, so the parser can be an ordinary recursive-descent parser.
//
// Indentation follows Invariant's rules rather than Python's, because
// policies written for Invariant must keep their meaning:
//   - the whole text is dedented first (policies are often embedded in
//     indented host-language strings);
//   - the indentation unit is the smallest positive indentation of any code
//     line, and a line's level is its indentation divided by the unit
//     (rounded down), so a line indented by a few extra spaces stays at its
//     block's level;
//   - a deeper line opens a block (INDENT, one per level gained) only after a
//     line ending in ':' or ':='; any other deeper line keeps the current
//     block: it continues the previous line, unless it starts a statement
//     or an assignment (raise, def, from, import, 'name :=' or
//     'name(params) :='), which Invariant's grammar reads as the next
//     statement or condition because it ignores line breaks. So the
//     statements after the imports may all be indented (as the Explorer's
//     playground writes policies);
//   - a shallower line closes one block per level lost. A line may not end
//     between the levels of a block opened several levels deep at once
//     (line 2 of 'raise "x" if:' + a body indented by two levels + a line
//     indented by one): Invariant parses that line into the block above as
//     a sibling of the nested block and fails when it loads or runs the
//     policy, so it is a syntax error here.
//
// Unlike Invariant, comment-only lines and lines inside brackets or
// multi-line strings never affect indentation, and a line ending in a binary
// operator (or starting with one such as 'and') continues the logical line.

type tokKind uint8

const (
	tEOF tokKind = iota
	tNewline
	tIndent
	tDedent
	tName
	tNumber
	tString
	tValueRef
	tOp
)

type token struct {
	kind  tokKind
	text  string // name, operator, number text, string value, value-ref type
	off   int    // byte offset of the token start
	end   int    // byte offset just past the token
	mod   byte   // string modifier: 'r', 'f' or 0
	multi bool   // triple-quoted string
	bol   bool   // first token on its physical line
	depth int    // bracket depth before the token
}

type syntaxError struct {
	off int
	msg string
}

func (e *syntaxError) Error() string { return e.msg }

// lex tokenizes src. On a lexical error it returns the error position.
func lex(src string) ([]token, *syntaxError) {
	raw, err := lexRaw(src)
	if err != nil {
		return nil, err
	}
	return layout(src, raw)
}

var ops2 = []string{":=", "->", "~>", "**", "==", "!=", "<=", ">="}

const ops1 = "+-*/%<>()[]{},:.="

func isNameStart(c byte) bool {
	return c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')
}

func isNameChar(c byte) bool { return isNameStart(c) || (c >= '0' && c <= '9') }

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// lexRaw produces tokens without layout (no NEWLINE/INDENT/DEDENT).
func lexRaw(src string) ([]token, *syntaxError) {
	var toks []token
	depth := 0
	var brackets []int // offsets of open brackets, for error messages
	lineHasTok := false
	i := 0
	for i < len(src) {
		c := src[i]
		switch {
		case c == '\n':
			lineHasTok = false
			i++
			continue
		case c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v':
			i++
			continue
		case c == '#':
			for i < len(src) && src[i] != '\n' {
				i++
			}
			continue
		case c == '\\' && i+1 < len(src) && (src[i+1] == '\n' || (src[i+1] == '\r' && i+2 < len(src) && src[i+2] == '\n')):
			// explicit line continuation: the next physical line belongs to
			// this one, so its first token is not at the beginning of a line
			if src[i+1] == '\r' {
				i += 3
			} else {
				i += 2
			}
			continue
		}
		t := token{off: i, bol: !lineHasTok, depth: depth}
		lineHasTok = true
		switch {
		case isNameStart(c):
			// string modifiers r"..." and f"..."
			if (c == 'r' || c == 'f') && i+1 < len(src) && (src[i+1] == '"' || src[i+1] == '\'') {
				s, end, err := lexString(src, i+1)
				if err != nil {
					return nil, err
				}
				t.kind, t.text, t.end, t.mod, t.multi = tString, s.value, end, c, s.multi
				i = end
				break
			}
			j := i + 1
			for j < len(src) && isNameChar(src[j]) {
				j++
			}
			t.kind, t.text, t.end = tName, src[i:j], j
			i = j
		case isDigit(c) || (c == '.' && i+1 < len(src) && isDigit(src[i+1])):
			j := i
			for j < len(src) && isDigit(src[j]) {
				j++
			}
			if j < len(src) && src[j] == '.' && !(j+1 < len(src) && isNameStart(src[j+1])) {
				j++
				for j < len(src) && isDigit(src[j]) {
					j++
				}
			}
			if j < len(src) && (src[j] == 'e' || src[j] == 'E') {
				k := j + 1
				if k < len(src) && (src[k] == '+' || src[k] == '-') {
					k++
				}
				if k < len(src) && isDigit(src[k]) {
					for k < len(src) && isDigit(src[k]) {
						k++
					}
					j = k
				}
			}
			if j < len(src) && isNameStart(src[j]) {
				k := j
				for k < len(src) && isNameChar(src[k]) {
					k++
				}
				return nil, &syntaxError{i, fmt.Sprintf("invalid number %q (names cannot start with a digit)", src[i:k])}
			}
			t.kind, t.text, t.end = tNumber, src[i:j], j
			i = j
		case c == '"' || c == '\'':
			s, end, err := lexString(src, i)
			if err != nil {
				return nil, err
			}
			t.kind, t.text, t.end, t.multi = tString, s.value, end, s.multi
			i = end
		case c == '<' && operandExpected(toks) && valueRefAt(src, i) > 0:
			n := valueRefAt(src, i)
			t.kind, t.text, t.end = tValueRef, src[i+1:i+n-1], i+n
			i += n
		default:
			op := ""
			for _, o := range ops2 {
				if strings.HasPrefix(src[i:], o) {
					op = o
					break
				}
			}
			if op == "" && strings.IndexByte(ops1, c) >= 0 {
				op = src[i : i+1]
			}
			if op == "" {
				r := []rune(src[i:])[0]
				return nil, &syntaxError{i, fmt.Sprintf("unexpected character %q", r)}
			}
			switch op {
			case "(", "[", "{":
				depth++
				brackets = append(brackets, i)
			case ")", "]", "}":
				if depth == 0 {
					return nil, &syntaxError{i, fmt.Sprintf("unmatched %q", op)}
				}
				open := src[brackets[len(brackets)-1]]
				if want := map[byte]string{'(': ")", '[': "]", '{': "}"}[open]; want != op {
					return nil, &syntaxError{i, fmt.Sprintf("%q does not match %q opened at %s", op, string(open), posOf(src, brackets[len(brackets)-1]))}
				}
				depth--
				brackets = brackets[:len(brackets)-1]
			}
			t.kind, t.text, t.end = tOp, op, i+len(op)
			i += len(op)
		}
		toks = append(toks, t)
	}
	if depth > 0 {
		off := brackets[len(brackets)-1]
		return nil, &syntaxError{off, fmt.Sprintf("%q is never closed", string(src[off]))}
	}
	return toks, nil
}

func posOf(src string, off int) string {
	p := newLineIndex(src).pos(off)
	return fmt.Sprintf("line %d, column %d", p.Line, p.Col)
}

// operandExpected reports whether the next token starts an operand, which is
// where '<' begins a value reference such as <EMAIL_ADDRESS> rather than a
// comparison.
func operandExpected(toks []token) bool {
	if len(toks) == 0 {
		return true
	}
	t := toks[len(toks)-1]
	switch t.kind {
	case tOp:
		switch t.text {
		case ")", "]", "}":
			return false
		}
		return true
	case tName:
		switch t.text {
		case "and", "or", "not", "in", "is", "if", "else", "contains_only":
			return true
		}
	}
	return false
}

// valueRefAt returns the length of a value reference <TYPE> at src[i:], or 0.
func valueRefAt(src string, i int) int {
	j := i + 1
	for j < len(src) {
		c := src[j]
		if isNameStart(c) || c == ':' {
			j++
			continue
		}
		break
	}
	if j > i+1 && j < len(src) && src[j] == '>' {
		return j + 1 - i
	}
	return 0
}

type strLit struct {
	value string
	multi bool
}

// lexString reads a string literal starting at the opening quote src[i].
// Escapes keep Invariant's meaning: the text between the quotes is taken
// as written (so regular expressions need no doubled backslashes), except
// that \" (or \' in single quotes) stands for the quote itself. Triple-quoted
// strings are dedented like Python's textwrap.dedent.
func lexString(src string, i int) (strLit, int, *syntaxError) {
	q := src[i]
	if strings.HasPrefix(src[i:], strings.Repeat(string(q), 3)) {
		delim := strings.Repeat(string(q), 3)
		j := i + 3
		for j < len(src) {
			if src[j] == '\\' {
				j += 2
				continue
			}
			if strings.HasPrefix(src[j:], delim) {
				return strLit{value: dedentText(src[i+3 : j]), multi: true}, j + 3, nil
			}
			j++
		}
		return strLit{}, 0, &syntaxError{i, "unterminated triple-quoted string"}
	}
	j := i + 1
	for j < len(src) {
		switch src[j] {
		case '\\':
			if j+1 < len(src) && src[j+1] != '\n' {
				j += 2
				continue
			}
		case '\n':
			return strLit{}, 0, &syntaxError{i, "unterminated string (strings end on the line they start; use \"\"\" for several lines)"}
		case q:
			raw := src[i+1 : j]
			return strLit{value: strings.ReplaceAll(raw, `\`+string(q), string(q))}, j + 1, nil
		}
		j++
	}
	return strLit{}, 0, &syntaxError{i, "unterminated string"}
}

// dedentText removes the common leading whitespace of all non-blank lines and
// empties whitespace-only lines, as Python's textwrap.dedent does.
func dedentText(s string) string {
	lines := strings.Split(s, "\n")
	prefix := ""
	first := true
	for _, l := range lines {
		if strings.TrimSpace(l) == "" {
			continue
		}
		ws := l[:len(l)-len(strings.TrimLeft(l, " \t"))]
		if first {
			prefix, first = ws, false
			continue
		}
		for !strings.HasPrefix(ws, prefix) {
			prefix = prefix[:len(prefix)-1]
		}
	}
	for i, l := range lines {
		if strings.TrimSpace(l) == "" {
			lines[i] = ""
		} else {
			lines[i] = l[len(prefix):]
		}
	}
	return strings.Join(lines, "\n")
}

// Tokens that make the line after them a continuation, and tokens that
// continue the previous line when they start one.
var (
	contAfterOp = map[string]bool{"+": true, "-": true, "*": true, "/": true, "%": true, "**": true,
		"==": true, "!=": true, "<": true, ">": true, "<=": true, ">=": true, "->": true, "~>": true,
		",": true, ".": true, "=": true}
	contAfterName = map[string]bool{"and": true, "or": true, "not": true, "in": true, "is": true,
		"if": true, "else": true, "for": true, "contains_only": true}
	contBeforeOp = map[string]bool{"==": true, "!=": true, "<": true, ">": true, "<=": true,
		">=": true, "->": true, "~>": true, ".": true, "/": true, "%": true, "**": true}
	contBeforeName = map[string]bool{"and": true, "or": true, "in": true, "is": true,
		"if": true, "else": true, "for": true, "contains_only": true}
)

// indentWidth is the number of whitespace characters before off on its line.
func indentWidth(src string, off int) int {
	start := strings.LastIndexByte(src[:off], '\n') + 1
	return off - start
}

// layout inserts NEWLINE, INDENT and DEDENT tokens.
func layout(src string, raw []token) ([]token, *syntaxError) {
	// Line starts that count for indentation: first tokens of lines outside
	// brackets.
	common, unit := -1, 0
	for _, t := range raw {
		if t.bol && t.depth == 0 {
			if w := indentWidth(src, t.off); common < 0 || w < common {
				common = w
			}
		}
	}
	for _, t := range raw {
		if t.bol && t.depth == 0 {
			if w := indentWidth(src, t.off) - common; w > 0 && (unit == 0 || w < unit) {
				unit = w
			}
		}
	}
	if unit == 0 {
		unit = 1
	}
	out := make([]token, 0, len(raw)+len(raw)/4+4)
	indent := 0
	// opened[k] is the token that opened block level k+1; a level passed
	// over by a jump of several levels has the same token as the level
	// the jump reached, with between set.
	type openBlock struct {
		first   token // first token of the block's first line
		from    int   // the level the block was opened from
		between bool  // a level passed over by a jump of several levels
	}
	var opened []openBlock
	for i, t := range raw {
		if i > 0 && t.bol && t.depth == 0 {
			level := (indentWidth(src, t.off) - common) / unit
			prev := raw[i-1]
			opensBlock := prev.kind == tOp && (prev.text == ":" || prev.text == ":=")
			contAfter := (prev.kind == tOp && contAfterOp[prev.text]) ||
				(prev.kind == tName && contAfterName[prev.text])
			cont := contAfter ||
				(t.kind == tOp && contBeforeOp[t.text]) ||
				(t.kind == tName && contBeforeName[t.text])
			switch {
			case level > indent && opensBlock:
				from := indent
				for ; indent < level; indent++ {
					opened = append(opened, openBlock{first: t, from: from, between: indent+1 < level})
					out = append(out, token{kind: tIndent, off: t.off, end: t.off})
				}
			case level > indent && !contAfter && startsStatement(raw, i):
				// a statement or assignment on a deeper line: Invariant
				// reads it as the next one, in the current block
				out = append(out, token{kind: tNewline, off: prev.end, end: prev.end})
			case level > indent:
				// a deeper line without ':' continues the previous line
			case cont && level == indent:
			case prev.kind == tOp && prev.text == ":=" && level == indent:
			default:
				if level < indent && level > 0 && opened[level-1].between {
					b := opened[level-1]
					return nil, &syntaxError{t.off, fmt.Sprintf(
						"this line's indentation matches no open block: the block starting at %s is indented %d levels deeper than the level it was opened from, and this line falls between them (Invariant cannot load or run such a policy either); indent it like that block, or start it at column %d",
						posOf(src, b.first.off), levelOf(src, b.first, common, unit)-b.from, common+b.from*unit+1)}
				}
				out = append(out, token{kind: tNewline, off: prev.end, end: prev.end})
				for ; indent > level; indent-- {
					opened = opened[:indent-1]
					out = append(out, token{kind: tDedent, off: t.off, end: t.off})
				}
			}
		}
		out = append(out, t)
	}
	end := len(src)
	if len(raw) > 0 {
		end = raw[len(raw)-1].end
	}
	out = append(out, token{kind: tNewline, off: end, end: end})
	for ; indent > 0; indent-- {
		out = append(out, token{kind: tDedent, off: len(src), end: len(src)})
	}
	out = append(out, token{kind: tEOF, off: len(src), end: len(src)})
	return out, nil
}

func levelOf(src string, t token, common, unit int) int {
	return (indentWidth(src, t.off) - common) / unit
}

// startsStatement reports whether the line starting at raw[i] begins a
// statement (raise, def, from, import) or an assignment: 'name :=' or
// 'name(...) :='.
func startsStatement(raw []token, i int) bool {
	t := raw[i]
	if t.kind != tName {
		return false
	}
	switch t.text {
	case "raise", "def", "from", "import":
		return true
	}
	if keywords[t.text] || i+1 >= len(raw) {
		return false
	}
	j := i + 1
	if raw[j].kind == tOp && raw[j].text == "(" {
		// skip the parameter list to its closing bracket
		for j++; j < len(raw) && raw[j].depth > t.depth; j++ {
		}
		j++ // past ')'
	}
	return j < len(raw) && raw[j].kind == tOp && raw[j].text == ":="
}
