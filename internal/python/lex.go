package python

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// This file is a Python 3.12 tokenizer: indentation, implicit and explicit
// line joining, numbers, strings with their escapes, and f-strings (PEP 701)
// whose replacement fields are tokenized recursively.

type tokKind uint8

const (
	tkEnd tokKind = iota
	tkName
	tkNumber
	tkString
	tkOp
	tkNewline
	tkIndent
	tkDedent
)

type token struct {
	kind tokKind
	val  string // name (NFKC-normalised), operator, number text
	line int
	pos  int // byte offset of the token in the source
	str  *strLit
}

// strLit is one string literal token.
type strLit struct {
	bytes, raw, fstr, u bool
	value               string  // decoded value (plain strings and bytes)
	parts               []fpart // f-string parts
}

// fpart is a literal run or a replacement field of an f-string.
type fpart struct {
	lit    string
	isExpr bool
	expr   []token // tokens of the expression, ending with tkEnd
	conv   rune    // 0, 's', 'r' or 'a'
	spec   []fpart // format spec (may hold nested fields)
	debug  string  // text of a "{expr=}" debug field, else ""
	line   int
}

type syntaxError struct {
	msg  string
	line int
}

func (e *syntaxError) Error() string {
	if e.line > 0 {
		return fmt.Sprintf("%s (line %d)", e.msg, e.line)
	}
	return e.msg
}

const (
	maxParenDepth  = 200
	maxIndentDepth = 100
	maxFStringNest = 50
	maxParseDepth  = 1200
)

type lexer struct {
	src     string
	pos     int
	line    int
	parens  []byte
	plines  []int
	indents []int
	alts    []int
	toks    []token
	err     *syntaxError
	fnest   int
}

func (l *lexer) fail(line int, format string, args ...any) {
	if l.err == nil {
		l.err = &syntaxError{msg: fmt.Sprintf(format, args...), line: line}
	}
}

// tokenize tokenizes Python source.
func tokenize(src string) ([]token, *syntaxError) {
	if strings.IndexByte(src, 0) >= 0 {
		return nil, &syntaxError{msg: "source code string cannot contain null bytes"}
	}
	src = strings.ReplaceAll(src, "\r\n", "\n")
	src = strings.ReplaceAll(src, "\r", "\n")
	l := &lexer{src: src, line: 1, indents: []int{0}, alts: []int{0}}
	l.run()
	if l.err != nil {
		return nil, l.err
	}
	return l.toks, nil
}

func (l *lexer) emit(t token) { l.toks = append(l.toks, t) }

func (l *lexer) run() {
	bol := true
	for l.err == nil {
		if bol && len(l.parens) == 0 {
			blank := l.indentation()
			if l.err != nil {
				return
			}
			if blank {
				if l.pos >= len(l.src) {
					break
				}
				continue
			}
			bol = false
		}
		t, ok := l.scan(false, false)
		if l.err != nil {
			return
		}
		if !ok {
			break // end of input
		}
		if t.kind == tkNewline {
			bol = true
		}
		l.emit(t)
	}
	if l.err != nil {
		return
	}
	if len(l.parens) > 0 {
		l.fail(l.plines[len(l.plines)-1], "'%c' was never closed", l.parens[len(l.parens)-1])
		return
	}
	if n := len(l.toks); n > 0 && l.toks[n-1].kind != tkNewline && l.toks[n-1].kind != tkDedent && l.toks[n-1].kind != tkIndent {
		l.emit(token{kind: tkNewline, line: l.line})
	}
	for len(l.indents) > 1 {
		l.indents = l.indents[:len(l.indents)-1]
		l.alts = l.alts[:len(l.alts)-1]
		l.emit(token{kind: tkDedent, line: l.line})
	}
	l.emit(token{kind: tkEnd, line: l.line})
}

// indentation measures the indentation of a new logical line and emits
// INDENT/DEDENT tokens; it reports whether the line is blank (and skips it).
func (l *lexer) indentation() bool {
	col, alt := 0, 0
	for l.pos < len(l.src) {
		c := l.src[l.pos]
		if c == ' ' {
			col++
			alt++
		} else if c == '\t' {
			col = (col/8 + 1) * 8
			alt++
		} else if c == '\f' {
			col, alt = 0, 0
		} else {
			break
		}
		l.pos++
	}
	if l.pos >= len(l.src) {
		return true
	}
	c := l.src[l.pos]
	if c == '#' || c == '\n' {
		for l.pos < len(l.src) && l.src[l.pos] != '\n' {
			l.pos++
		}
		if l.pos < len(l.src) {
			l.pos++
			l.line++
		}
		return true
	}
	top := l.indents[len(l.indents)-1]
	atop := l.alts[len(l.alts)-1]
	switch {
	case col == top:
		if alt != atop {
			l.fail(l.line, "inconsistent use of tabs and spaces in indentation")
		}
	case col > top:
		if alt <= atop {
			l.fail(l.line, "inconsistent use of tabs and spaces in indentation")
			return false
		}
		if len(l.indents) >= maxIndentDepth {
			l.fail(l.line, "too many levels of indentation")
			return false
		}
		l.indents = append(l.indents, col)
		l.alts = append(l.alts, alt)
		l.emit(token{kind: tkIndent, line: l.line})
	default:
		for len(l.indents) > 1 && col < l.indents[len(l.indents)-1] {
			l.indents = l.indents[:len(l.indents)-1]
			l.alts = l.alts[:len(l.alts)-1]
			l.emit(token{kind: tkDedent, line: l.line})
		}
		if col != l.indents[len(l.indents)-1] {
			l.fail(l.line, "unindent does not match any outer indentation level")
		} else if alt != l.alts[len(l.alts)-1] {
			l.fail(l.line, "inconsistent use of tabs and spaces in indentation")
		}
	}
	return false
}

var ops3 = []string{"**=", "//=", ">>=", "<<=", "...", "!="}
var ops2 = []string{"**", "//", ">>", "<<", "<=", ">=", "==", "!=", "->", ":=", "+=", "-=", "*=", "/=", "%=", "&=", "|=", "^=", "@="}

const ops1 = "+-*/%@&|^~<>()[]{},:;.=!"

// scan returns the next token. inField is true inside an f-string
// replacement field (newlines join, comments only if multiline). ok is
// false at the end of input.
func (l *lexer) scan(inField, multiline bool) (token, bool) {
	for l.pos < len(l.src) {
		c := l.src[l.pos]
		switch {
		case c == ' ' || c == '\t' || c == '\f':
			l.pos++
		case c == '#':
			if inField && !multiline {
				l.fail(l.line, "f-string expression part cannot include '#'")
				return token{}, false
			}
			for l.pos < len(l.src) && l.src[l.pos] != '\n' {
				l.pos++
			}
		case c == '\\':
			if l.pos+1 >= len(l.src) {
				l.fail(l.line, "unexpected EOF while parsing")
				return token{}, false
			}
			if l.src[l.pos+1] != '\n' {
				l.fail(l.line, "unexpected character after line continuation character")
				return token{}, false
			}
			l.pos += 2
			l.line++
			if l.pos >= len(l.src) {
				l.fail(l.line, "unexpected EOF while parsing")
				return token{}, false
			}
		case c == '\n':
			l.pos++
			l.line++
			if len(l.parens) == 0 && !inField {
				return token{kind: tkNewline, line: l.line - 1}, true
			}
		default:
			start := l.pos
			t := l.scanToken(inField)
			t.pos = start
			return t, l.err == nil
		}
	}
	return token{}, false
}

func isIDStart(r rune) bool {
	if r < utf8.RuneSelf {
		return r == '_' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z'
	}
	return unicode.IsLetter(r) || unicode.Is(unicode.Nl, r) || r == 0x2118 || r == 0x212E || r == 0x309B || r == 0x309C
}

func isIDContinue(r rune) bool {
	if r < utf8.RuneSelf {
		return r == '_' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9'
	}
	return isIDStart(r) || unicode.In(r, unicode.Mn, unicode.Mc, unicode.Nd, unicode.Pc) || r == 0xB7 || r == 0x387 || (r >= 0x1369 && r <= 0x1371) || r == 0x19DA
}

func (l *lexer) scanToken(inField bool) token {
	start := l.pos
	line := l.line
	r, w := utf8.DecodeRuneInString(l.src[l.pos:])
	switch {
	case isIDStart(r):
		j := l.pos + w
		for j < len(l.src) {
			r2, w2 := utf8.DecodeRuneInString(l.src[j:])
			if !isIDContinue(r2) {
				break
			}
			j += w2
		}
		word := l.src[l.pos:j]
		if j < len(l.src) && (l.src[j] == '\'' || l.src[j] == '"') && isStringPrefix(word) {
			l.pos = j
			return l.scanString(strings.ToLower(word), line)
		}
		l.pos = j
		if !isASCII(word) {
			word = norm.NFKC.String(word)
			for i, r2 := range word {
				if (i == 0 && !isIDStart(r2)) || !isIDContinue(r2) {
					l.fail(line, "invalid character in identifier")
					return token{}
				}
			}
		}
		return token{kind: tkName, val: word, line: line}
	case r >= '0' && r <= '9' || r == '.' && l.pos+1 < len(l.src) && l.src[l.pos+1] >= '0' && l.src[l.pos+1] <= '9':
		return l.scanNumber(line)
	case r == '\'' || r == '"':
		return l.scanString("", line)
	}
	for _, op := range ops3 {
		if strings.HasPrefix(l.src[l.pos:], op) {
			l.pos += len(op)
			return token{kind: tkOp, val: op, line: line}
		}
	}
	for _, op := range ops2 {
		if strings.HasPrefix(l.src[l.pos:], op) {
			l.pos += len(op)
			return token{kind: tkOp, val: op, line: line}
		}
	}
	if r < utf8.RuneSelf && strings.IndexByte(ops1, byte(r)) >= 0 {
		c := byte(r)
		l.pos++
		switch c {
		case '(', '[', '{':
			if len(l.parens) >= maxParenDepth {
				l.fail(line, "too many nested parentheses")
				return token{}
			}
			l.parens = append(l.parens, c)
			l.plines = append(l.plines, line)
		case ')', ']', '}':
			if len(l.parens) == 0 && inField {
				return token{kind: tkOp, val: string(c), line: line}
			}
			if len(l.parens) == 0 {
				l.fail(line, "unmatched '%c'", c)
				return token{}
			}
			open := l.parens[len(l.parens)-1]
			if open != map[byte]byte{')': '(', ']': '[', '}': '{'}[c] {
				l.fail(line, "closing parenthesis '%c' does not match opening parenthesis '%c'", c, open)
				return token{}
			}
			l.parens = l.parens[:len(l.parens)-1]
			l.plines = l.plines[:len(l.plines)-1]
		}
		return token{kind: tkOp, val: string(c), line: line}
	}
	_ = start
	if r == utf8.RuneError && w == 1 {
		l.fail(line, "invalid utf-8 byte")
	} else if unicode.IsPrint(r) {
		l.fail(line, "invalid character '%c' (U+%04X)", r, r)
	} else {
		l.fail(line, "invalid non-printable character U+%04X", r)
	}
	return token{}
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

func isStringPrefix(w string) bool {
	switch strings.ToLower(w) {
	case "r", "u", "b", "f", "br", "rb", "fr", "rf":
		return true
	}
	return false
}

// --- numbers

func (l *lexer) digits(pred func(byte) bool) bool {
	// digit (_? digit)*; reports whether at least one digit was read
	if l.pos >= len(l.src) || !pred(l.src[l.pos]) {
		return false
	}
	for l.pos < len(l.src) {
		c := l.src[l.pos]
		if pred(c) {
			l.pos++
			continue
		}
		if c == '_' && l.pos+1 < len(l.src) && pred(l.src[l.pos+1]) {
			l.pos += 2
			continue
		}
		break
	}
	return true
}

func isDec(c byte) bool { return c >= '0' && c <= '9' }

func isHexByte(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}

func (l *lexer) scanNumber(line int) token {
	start := l.pos
	src := l.src
	kindName := "decimal"
	if src[l.pos] == '0' && l.pos+1 < len(src) && strings.IndexByte("xXoObB", src[l.pos+1]) >= 0 {
		var pred func(byte) bool
		switch src[l.pos+1] | 0x20 {
		case 'x':
			pred, kindName = func(c byte) bool { return isHexByte(c) }, "hexadecimal"
		case 'o':
			pred, kindName = func(c byte) bool { return c >= '0' && c <= '7' }, "octal"
		default:
			pred, kindName = func(c byte) bool { return c == '0' || c == '1' }, "binary"
		}
		l.pos += 2
		if l.pos < len(src) && src[l.pos] == '_' {
			l.pos++
		}
		if !l.digits(pred) {
			l.fail(line, "invalid %s literal", kindName)
			return token{}
		}
		if l.pos < len(src) && (isDec(src[l.pos]) || src[l.pos] == '_') {
			l.fail(line, "invalid digit in %s literal", kindName)
			return token{}
		}
		return l.endNumber(start, line, kindName)
	}
	isFloat := false
	intStart := l.pos
	if src[l.pos] != '.' {
		l.digits(isDec)
		if l.pos < len(src) && src[l.pos] == '_' {
			l.fail(line, "invalid decimal literal")
			return token{}
		}
	}
	intPart := src[intStart:l.pos]
	if l.pos < len(src) && src[l.pos] == '.' {
		isFloat = true
		l.pos++
		if l.pos < len(src) && isDec(src[l.pos]) {
			l.digits(isDec)
			if l.pos < len(src) && src[l.pos] == '_' {
				l.fail(line, "invalid decimal literal")
				return token{}
			}
		}
	}
	if l.pos < len(src) && (src[l.pos] == 'e' || src[l.pos] == 'E') {
		save := l.pos
		l.pos++
		if l.pos < len(src) && (src[l.pos] == '+' || src[l.pos] == '-') {
			l.pos++
		}
		if !l.digits(isDec) {
			// "1else" style: the e starts a keyword
			l.pos = save
			if !isFloat {
				return l.endNumber(start, line, "decimal")
			}
			l.fail(line, "invalid decimal literal")
			return token{}
		}
		isFloat = true
	}
	imag := false
	if l.pos < len(src) && (src[l.pos] == 'j' || src[l.pos] == 'J') {
		l.pos++
		imag = true
	}
	if !isFloat && !imag && len(intPart) > 1 && intPart[0] == '0' && strings.Trim(intPart, "0_") != "" {
		l.fail(line, "leading zeros in decimal integer literals are not permitted; use an 0o prefix for octal integers")
		return token{}
	}
	return l.endNumber(start, line, "decimal")
}

// endNumber rejects a number directly followed by an identifier, except by
// the keywords Python tolerates there (with a warning).
func (l *lexer) endNumber(start, line int, kindName string) token {
	if l.pos < len(l.src) {
		r, _ := utf8.DecodeRuneInString(l.src[l.pos:])
		if isIDStart(r) {
			rest := l.src[l.pos:]
			ok := false
			for _, kw := range []string{"and", "else", "for", "if", "in", "is", "not", "or"} {
				if strings.HasPrefix(rest, kw) {
					ok = true
					break
				}
			}
			if !ok {
				l.fail(line, "invalid %s literal", kindName)
				return token{}
			}
		}
	}
	return token{kind: tkNumber, val: l.src[start:l.pos], line: line}
}

// --- strings

func (l *lexer) scanString(prefix string, line int) token {
	lit := &strLit{
		bytes: strings.Contains(prefix, "b"),
		raw:   strings.Contains(prefix, "r"),
		fstr:  strings.Contains(prefix, "f"),
		u:     prefix == "u",
	}
	q := l.src[l.pos]
	quote := string(q)
	if strings.HasPrefix(l.src[l.pos:], strings.Repeat(quote, 3)) {
		quote = strings.Repeat(quote, 3)
	}
	l.pos += len(quote)
	triple := len(quote) == 3
	if lit.fstr {
		l.fnest++
		if l.fnest > maxFStringNest {
			l.fail(line, "f-string: expressions nested too deeply")
			return token{}
		}
		lit.parts = l.scanFString(quote, lit.raw, triple, false, line)
		l.fnest--
		if l.err != nil {
			return token{}
		}
		return token{kind: tkString, line: line, str: lit}
	}
	// find the end
	startBody := l.pos
	for {
		if l.pos >= len(l.src) {
			if triple {
				l.fail(line, "unterminated triple-quoted string literal (detected at line %d)", l.line)
			} else {
				l.fail(line, "unterminated string literal (detected at line %d)", line)
			}
			return token{}
		}
		c := l.src[l.pos]
		if c == '\\' && l.pos+1 < len(l.src) {
			if l.src[l.pos+1] == '\n' {
				l.line++
			}
			l.pos += 2
			continue
		}
		if c == '\n' {
			if !triple {
				l.fail(line, "unterminated string literal (detected at line %d)", line)
				return token{}
			}
			l.line++
		}
		if strings.HasPrefix(l.src[l.pos:], quote) {
			break
		}
		l.pos++
	}
	body := l.src[startBody:l.pos]
	l.pos += len(quote)
	if lit.bytes && !isASCII(body) {
		l.fail(line, "bytes can only contain ASCII literal characters")
		return token{}
	}
	if lit.raw {
		lit.value = body
	} else {
		v, msg := decodeEscapes(body, lit.bytes)
		if msg != "" {
			l.fail(line, "%s", msg)
			return token{}
		}
		lit.value = v
	}
	return token{kind: tkString, line: line, str: lit}
}

// decodeEscapes processes the backslash escapes of a non-raw literal.
func decodeEscapes(s string, isBytes bool) (string, string) {
	if strings.IndexByte(s, '\\') < 0 {
		return s, ""
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '\\' || i+1 >= len(s) {
			b.WriteByte(c)
			continue
		}
		i++
		e := s[i]
		switch e {
		case '\n':
		case '\\', '\'', '"':
			b.WriteByte(e)
		case 'a':
			b.WriteByte(7)
		case 'b':
			b.WriteByte(8)
		case 'f':
			b.WriteByte(12)
		case 'n':
			b.WriteByte('\n')
		case 'r':
			b.WriteByte('\r')
		case 't':
			b.WriteByte('\t')
		case 'v':
			b.WriteByte(11)
		case '0', '1', '2', '3', '4', '5', '6', '7':
			v := 0
			j := i
			for j < len(s) && j < i+3 && s[j] >= '0' && s[j] <= '7' {
				v = v*8 + int(s[j]-'0')
				j++
			}
			i = j - 1
			if isBytes {
				b.WriteByte(byte(v))
			} else {
				b.WriteRune(rune(v))
			}
		case 'x', 'u', 'U':
			n := map[byte]int{'x': 2, 'u': 4, 'U': 8}[e]
			if e != 'x' && isBytes {
				b.WriteByte('\\')
				b.WriteByte(e)
				continue
			}
			v := 0
			for j := 1; j <= n; j++ {
				if i+j >= len(s) || !isHexByte(s[i+j]) {
					return "", fmt.Sprintf("(unicode error) truncated \\%c escape", e)
				}
				v = v*16 + hexVal(s[i+j])
			}
			i += n
			if v > unicode.MaxRune {
				return "", "(unicode error) illegal Unicode character"
			}
			if isBytes {
				b.WriteByte(byte(v))
			} else {
				b.WriteRune(rune(v))
			}
		case 'N':
			if isBytes {
				b.WriteString("\\N")
				continue
			}
			if i+1 >= len(s) || s[i+1] != '{' {
				return "", "(unicode error) malformed \\N character escape"
			}
			end := strings.IndexByte(s[i+1:], '}')
			if end < 2 {
				return "", "(unicode error) malformed \\N character escape"
			}
			r, ok := lookupUnicodeName(s[i+2 : i+1+end])
			if !ok {
				return "", "(unicode error) unknown Unicode character name"
			}
			i += end + 1
			b.WriteRune(r)
		default:
			b.WriteByte('\\')
			b.WriteByte(e)
		}
	}
	return b.String(), ""
}

func hexVal(c byte) int {
	switch {
	case c >= '0' && c <= '9':
		return int(c - '0')
	case c >= 'a' && c <= 'f':
		return int(c-'a') + 10
	default:
		return int(c-'A') + 10
	}
}

// scanFString scans an f-string body (or, with inSpec, a format spec, which
// ends at the '}' closing its field) into parts.
func (l *lexer) scanFString(quote string, raw, triple, inSpec bool, line int) []fpart {
	var parts []fpart
	var lit strings.Builder
	flush := func() {
		if lit.Len() > 0 {
			v := lit.String()
			if !raw {
				d, msg := decodeEscapes(v, false)
				if msg != "" {
					l.fail(line, "%s", msg)
				}
				v = d
			}
			parts = append(parts, fpart{lit: v})
			lit.Reset()
		}
	}
	for l.err == nil {
		if l.pos >= len(l.src) {
			if triple {
				l.fail(line, "unterminated triple-quoted f-string literal (detected at line %d)", l.line)
			} else {
				l.fail(line, "unterminated f-string literal (detected at line %d)", line)
			}
			return nil
		}
		c := l.src[l.pos]
		if strings.HasPrefix(l.src[l.pos:], quote) {
			if inSpec {
				l.fail(line, "f-string: expecting '}'")
				return nil
			}
			l.pos += len(quote)
			flush()
			return parts
		}
		switch {
		case c == '\\' && l.pos+1 < len(l.src) && !(l.src[l.pos+1] == '{' || l.src[l.pos+1] == '}'):
			if l.src[l.pos+1] == '\n' {
				l.line++
			}
			if !raw && l.src[l.pos+1] == 'N' && l.pos+2 < len(l.src) && l.src[l.pos+2] == '{' {
				end := strings.IndexByte(l.src[l.pos:], '}')
				if end < 0 {
					l.fail(line, "(unicode error) malformed \\N character escape")
					return nil
				}
				lit.WriteString(l.src[l.pos : l.pos+end+1])
				l.pos += end + 1
				continue
			}
			lit.WriteString(l.src[l.pos : l.pos+2])
			l.pos += 2
		case c == '\n':
			if !triple {
				l.fail(line, "unterminated f-string literal (detected at line %d)", line)
				return nil
			}
			l.line++
			lit.WriteByte(c)
			l.pos++
		case c == '{':
			if !inSpec && l.pos+1 < len(l.src) && l.src[l.pos+1] == '{' {
				lit.WriteByte('{')
				l.pos += 2
				continue
			}
			flush()
			l.pos++
			f := l.scanField(quote, raw, triple, line)
			if l.err != nil {
				return nil
			}
			parts = append(parts, f)
		case c == '}':
			if inSpec {
				flush()
				return parts
			}
			if l.pos+1 < len(l.src) && l.src[l.pos+1] == '}' {
				lit.WriteByte('}')
				l.pos += 2
				continue
			}
			l.fail(l.line, "f-string: single '}' is not allowed")
			return nil
		default:
			lit.WriteByte(c)
			l.pos++
		}
	}
	return nil
}

// scanField scans a replacement field after its '{' up to and including the
// closing '}'.
func (l *lexer) scanField(quote string, raw, triple bool, line int) fpart {
	f := fpart{isExpr: true, line: l.line}
	savedParens, savedLines := l.parens, l.plines
	l.parens, l.plines = nil, nil
	exprStart := l.pos
	defer func() { l.parens, l.plines = savedParens, savedLines }()
	for l.err == nil {
		depthBefore := len(l.parens)
		t, ok := l.scan(true, triple)
		if l.err != nil {
			return f
		}
		if !ok {
			l.fail(line, "f-string: expecting '}'")
			return f
		}
		if t.kind == tkOp && depthBefore == 0 {
			switch t.val {
			case "}":
				return l.finishField(f, line)
			case "=":
				f.debug = l.src[exprStart:l.pos]
				l.skipSpaces()
				if l.pos >= len(l.src) || strings.IndexByte("}!:", l.src[l.pos]) < 0 {
					l.fail(line, "f-string: expecting '}'")
					return f
				}
				continue
			case ":=", ":":
				l.pos = t.pos + 1 // just after the ':'
				f.spec = l.scanFString(quote, raw, triple, true, line)
				if l.err != nil {
					return f
				}
				if l.pos >= len(l.src) || l.src[l.pos] != '}' {
					l.fail(line, "f-string: expecting '}'")
					return f
				}
				l.pos++
				return l.finishField(f, line)
			case "!":
				r, w := utf8.DecodeRuneInString(l.src[l.pos:])
				if r != 's' && r != 'r' && r != 'a' {
					l.fail(line, "f-string: invalid conversion character: expected 's', 'r', or 'a'")
					return f
				}
				f.conv = r
				l.pos += w
				if l.pos < len(l.src) && l.src[l.pos] == ':' {
					l.pos++
					f.spec = l.scanFString(quote, raw, triple, true, line)
					if l.err != nil {
						return f
					}
				}
				if l.pos >= len(l.src) || l.src[l.pos] != '}' {
					l.fail(line, "f-string: expecting '}'")
					return f
				}
				l.pos++
				return l.finishField(f, line)
			}
		}
		f.expr = append(f.expr, t)
	}
	return f
}

func (l *lexer) finishField(f fpart, line int) fpart {
	if len(f.expr) == 0 {
		l.fail(line, "f-string: valid expression required before '}'")
		return f
	}
	f.expr = append(f.expr, token{kind: tkEnd, line: l.line})
	return f
}

func (l *lexer) skipSpaces() {
	for l.pos < len(l.src) && (l.src[l.pos] == ' ' || l.src[l.pos] == '\t' || l.src[l.pos] == '\n') {
		if l.src[l.pos] == '\n' {
			l.line++
		}
		l.pos++
	}
}
