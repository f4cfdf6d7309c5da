package policy

import (
	"context"
	"errors"
	"regexp"
	"regexp/syntax"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/lookout-dev/lookout/internal/policy/internal/regexp2"
)

// Regular expressions follow Python's re module, as in Invariant. A pattern
// is translated to Go's RE2 syntax when it has the same meaning there (with
// \d, \w and \s made Unicode-aware like Python's), and otherwise handed to
// regexp2, a backtracking engine that supports lookaround, backreferences
// and \b. Offsets reported to policies are code points.

// The backtracking engine runs under the analysis's context: its timeout
// is what is left of the check's time budget, and a cancelled check stops
// it mid-match (internal/regexp2 is regexp2 patched for that), so a
// catastrophic pattern ends with the check's budget instead of hanging.
// The Go engine needs no such bound: it runs in time linear in the subject.

type pyRegexp struct {
	src string
	// Go engine (nil when the pattern needs regexp2)
	re, anchored *regexp.Regexp
	// dollar: the Go translation turned '$' into \z; a subject ending in a
	// newline must use regexp2, whose '$' also matches before a final
	// newline as Python's does.
	dollar bool
	// lit is a string every match contains; a subject without it cannot
	// match, which a substring search (much faster than any regex engine)
	// tells first.
	lit string
	// emptyOK: the pattern can match the empty string. Go's FindAll drops an
	// empty match right after a match, Python keeps it, so such patterns are
	// searched with the backtracking engine (which behaves like Python).
	emptyOK bool

	once           sync.Once
	bt, btAnchored *regexp2.Regexp
	btErr          error
}

// regexCache holds compiled patterns, shared by all policies; it is
// emptied when it grows large (patterns built at run time could fill it).
var regexCache = struct {
	sync.Mutex
	m map[string]*pyRegexp
}{m: map[string]*pyRegexp{}}

// compilePy compiles a Python regular expression.
func compilePy(pattern string) (*pyRegexp, error) {
	regexCache.Lock()
	r, ok := regexCache.m[pattern]
	regexCache.Unlock()
	if ok {
		return r, nil
	}
	r, err := compilePyUncached(pattern)
	if err != nil {
		return nil, err
	}
	regexCache.Lock()
	if len(regexCache.m) >= 4096 {
		regexCache.m = map[string]*pyRegexp{}
	}
	regexCache.m[pattern] = r
	regexCache.Unlock()
	return r, nil
}

func compilePyUncached(pattern string) (*pyRegexp, error) {
	r := &pyRegexp{src: pattern}
	if goPat, dollar, ok := translateToGo(pattern); ok {
		if re, err := regexp.Compile(goPat); err == nil {
			if an, err := regexp.Compile(`\A(?:` + goPat + `)`); err == nil {
				r.re, r.anchored, r.dollar = re, an, dollar
				if t, err := syntax.Parse(goPat, syntax.Perl); err == nil {
					t = t.Simplify()
					r.lit = requiredLiteral(t)
					r.emptyOK = minLength(t) == 0
				}
			}
		}
	}
	if r.re == nil {
		r.compileBacktracking()
		if r.btErr != nil {
			return nil, r.btErr
		}
	}
	return r, nil
}

func (r *pyRegexp) compileBacktracking() {
	r.once.Do(func() {
		pat := translateToNet(r.src)
		bt, err := regexp2.Compile(pat, regexp2.None)
		if err != nil {
			r.btErr = cleanRegexError(err)
			return
		}
		an, err := regexp2.Compile(`\A(?:`+pat+`)`, regexp2.None)
		if err != nil {
			r.btErr = cleanRegexError(err)
			return
		}
		r.bt, r.btAnchored = bt, an
	})
}

func cleanRegexError(err error) error {
	msg := err.Error()
	msg = strings.TrimPrefix(msg, "error parsing regexp: ")
	return errors.New(msg)
}

func (r *pyRegexp) useGo(s string) bool {
	return r.re != nil && !(r.dollar && strings.HasSuffix(s, "\n"))
}

// errRegexStopped tells, wrapped in the error of match or findAll, that
// the backtracking engine stopped because ctx was done.
var errRegexStopped = errors.New("stopped by the check's budget")

func regexError(err error) error {
	if errors.Is(err, regexp2.ErrCanceled) || errors.Is(err, regexp2.ErrMatchTimeout) {
		return errRegexStopped
	}
	return err
}

// match is Python's re.match: a match starting at the beginning of s. It
// returns the code point span. The backtracking engine stops when the
// context ctx returns (called only if that engine runs) is done
// (errRegexStopped).
func (r *pyRegexp) match(ctx func() context.Context, s string) (start, end int, ok bool, err error) {
	if r.lit != "" && !strings.Contains(s, r.lit) {
		return 0, 0, false, nil
	}
	if r.useGo(s) {
		loc := r.anchored.FindStringIndex(s)
		if loc == nil {
			return 0, 0, false, nil
		}
		return 0, runeOffset(s, loc[1]), true, nil
	}
	r.compileBacktracking()
	if r.btErr != nil {
		return 0, 0, false, r.btErr
	}
	m, err := r.btAnchored.FindStringMatchContext(ctx(), s)
	if err != nil {
		return 0, 0, false, regexError(err)
	}
	if m == nil {
		return 0, 0, false, nil
	}
	return m.Index, m.Index + m.Length, true, nil
}

// findAll is Python's re.finditer: non-overlapping matches as code point
// spans and their text.
func (r *pyRegexp) findAll(ctx func() context.Context, s string, limit int) (spans [][2]int, texts []string, err error) {
	if r.lit != "" && !strings.Contains(s, r.lit) {
		return nil, nil, nil
	}
	if r.useGo(s) && !r.emptyOK {
		locs := r.re.FindAllStringIndex(s, limit)
		ascii := isASCII(s)
		for _, l := range locs {
			a, b := l[0], l[1]
			texts = append(texts, s[a:b])
			if !ascii {
				a, b = runeOffset(s, a), runeOffset(s, b)
			}
			spans = append(spans, [2]int{a, b})
		}
		return spans, texts, nil
	}
	r.compileBacktracking()
	if r.btErr != nil {
		return nil, nil, r.btErr
	}
	c := ctx()
	m, err := r.bt.FindStringMatchContext(c, s)
	for m != nil && err == nil {
		spans = append(spans, [2]int{m.Index, m.Index + m.Length})
		texts = append(texts, m.String())
		if limit >= 0 && len(spans) >= limit {
			break
		}
		m, err = r.bt.FindNextMatchContext(c, m)
	}
	return spans, texts, regexError(err)
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

// Unicode-aware classes with Python's meaning for str patterns.
const (
	pyDigit = `\p{Nd}`
	pyWord  = `\p{L}\p{N}_`
	pySpace = `\t\n\v\f\r \x1c-\x1f\x85\p{Z}`
)

// translateToGo rewrites a Python pattern into RE2 syntax when both mean the
// same. ok is false when the pattern needs the backtracking engine.
func translateToGo(p string) (out string, dollar, ok bool) {
	var b strings.Builder
	multiline := hasInlineFlag(p, 'm')
	inClass := false
	classStart := 0
	for i := 0; i < len(p); i++ {
		c := p[i]
		if c == '\\' {
			if i+1 >= len(p) {
				return "", false, false
			}
			e := p[i+1]
			i++
			switch e {
			case 'd':
				b.WriteString(pyDigit)
				if inClass && i+2 < len(p) && p[i+1] == '-' && p[i+2] != ']' {
					// [\d-x] has a literal '-' in Python; keep it from
					// forming a range after the expanded class
					b.WriteString(`\-`)
					i++
				}
			case 'D':
				b.WriteString(`\P{Nd}`)
			case 'w', 's':
				class := pyWord
				if e == 's' {
					class = pySpace
				}
				if !inClass {
					b.WriteString("[" + class + "]")
					break
				}
				b.WriteString(class)
				if i+2 < len(p) && p[i+1] == '-' && p[i+2] != ']' {
					b.WriteString(`\-`)
					i++
				}
			case 'W', 'S':
				if inClass {
					return "", false, false
				}
				if e == 'W' {
					b.WriteString("[^" + pyWord + "]")
				} else {
					b.WriteString("[^" + pySpace + "]")
				}
			case 'b', 'B':
				if inClass && e == 'b' {
					b.WriteString(`\x08`)
					continue
				}
				return "", false, false
			case 'Z':
				if inClass {
					return "", false, false
				}
				b.WriteString(`\z`)
			case 'A':
				b.WriteString(`\A`)
			case 'u', 'U':
				n := 4
				if e == 'U' {
					n = 8
				}
				if i+1+n > len(p) {
					return "", false, false
				}
				hex := p[i+1 : i+1+n]
				for j := 0; j < len(hex); j++ {
					if !strings.ContainsRune("0123456789abcdefABCDEF", rune(hex[j])) {
						return "", false, false
					}
				}
				b.WriteString(`\x{` + hex + `}`)
				i += n
			case 'x':
				b.WriteString(`\x`)
			case 'n', 't', 'r', 'f', 'v', 'a':
				b.WriteByte('\\')
				b.WriteByte(e)
			default:
				if e >= '0' && e <= '9' || e == 'g' || e == 'N' {
					return "", false, false // backreferences, octal, named chars
				}
				if isNameChar(e) {
					return "", false, false // unknown letter escapes are errors in Python
				}
				b.WriteByte('\\')
				b.WriteByte(e)
			}
			continue
		}
		if inClass {
			if c == ']' && i > classStart {
				inClass = false
			}
			if c == '[' && i+1 < len(p) && p[i+1] == ':' {
				// Python has no POSIX classes; keep '[' literal
				b.WriteString(`\[`)
				continue
			}
			b.WriteByte(c)
			continue
		}
		switch c {
		case '[':
			inClass = true
			b.WriteByte(c)
			j := i + 1
			if j < len(p) && p[j] == '^' {
				b.WriteByte('^')
				j++
			}
			if j < len(p) && p[j] == ']' {
				b.WriteString(`\]`)
				j++
			}
			classStart = j
			i = j - 1
		case '$':
			if multiline {
				b.WriteByte('$')
			} else {
				b.WriteString(`\z`)
				dollar = true
			}
		case '(':
			if strings.HasPrefix(p[i:], "(?") {
				rest := p[i+2:]
				switch {
				case strings.HasPrefix(rest, "P<"), strings.HasPrefix(rest, ":"):
				case strings.HasPrefix(rest, "="), strings.HasPrefix(rest, "!"), strings.HasPrefix(rest, "<"),
					strings.HasPrefix(rest, "P="), strings.HasPrefix(rest, "#"), strings.HasPrefix(rest, ">"),
					strings.HasPrefix(rest, "("):
					return "", false, false
				default:
					// inline flags: Go knows i, m, s (and U, which Python lacks)
					j := 0
					for j < len(rest) && rest[j] != ')' && rest[j] != ':' {
						if !strings.ContainsRune("ims-", rune(rest[j])) {
							return "", false, false
						}
						j++
					}
				}
			}
			b.WriteByte(c)
		case '{':
			// Python treats {,n} as {0,n}; Go would take it literally.
			if strings.HasPrefix(p[i:], "{,") {
				b.WriteString("{0,")
				i++
				continue
			}
			b.WriteByte(c)
		case '*', '+', '?', '}':
			b.WriteByte(c)
			// possessive quantifiers (Python 3.11) need the other engine
			if i+1 < len(p) && p[i+1] == '+' && c != '}' {
				return "", false, false
			}
		default:
			b.WriteByte(c)
		}
	}
	if inClass {
		return "", false, false
	}
	return b.String(), dollar, true
}

func hasInlineFlag(p string, flag byte) bool {
	for i := 0; i+2 < len(p); i++ {
		if p[i] == '\\' {
			i++
			continue
		}
		if p[i] == '(' && p[i+1] == '?' {
			for j := i + 2; j < len(p) && isNameChar(p[j]); j++ {
				if p[j] == flag {
					return true
				}
			}
		}
	}
	return false
}

// translateToNet adapts Python syntax to regexp2's .NET dialect, which
// otherwise shares Python's meaning of \d, \w, \s, \b and $.
func translateToNet(p string) string {
	var b strings.Builder
	for i := 0; i < len(p); i++ {
		c := p[i]
		if c == '\\' && i+1 < len(p) {
			switch p[i+1] {
			case 'Z':
				b.WriteString(`\z`)
			default:
				b.WriteByte(c)
				b.WriteByte(p[i+1])
			}
			i++
			continue
		}
		if strings.HasPrefix(p[i:], "(?P<") {
			b.WriteString("(?<")
			i += 3
			continue
		}
		if strings.HasPrefix(p[i:], "{,") {
			b.WriteString("{0,")
			i++
			continue
		}
		if strings.HasPrefix(p[i:], "(?P=") {
			j := strings.IndexByte(p[i:], ')')
			if j > 0 {
				b.WriteString(`\k<` + p[i+4:i+j] + `>`)
				i += j
				continue
			}
		}
		b.WriteByte(c)
	}
	return b.String()
}

// requiredLiteral returns the longest literal string that every match of re
// contains (case-sensitively), or "".
func requiredLiteral(re *syntax.Regexp) string {
	switch re.Op {
	case syntax.OpLiteral:
		if re.Flags&syntax.FoldCase != 0 {
			return ""
		}
		return string(re.Rune)
	case syntax.OpCapture, syntax.OpPlus:
		return requiredLiteral(re.Sub[0])
	case syntax.OpRepeat:
		if re.Min >= 1 {
			return requiredLiteral(re.Sub[0])
		}
	case syntax.OpConcat:
		best := ""
		run := ""
		for _, sub := range re.Sub {
			if sub.Op == syntax.OpLiteral && sub.Flags&syntax.FoldCase == 0 {
				run += string(sub.Rune)
				if len(run) > len(best) {
					best = run
				}
				continue
			}
			run = ""
			if l := requiredLiteral(sub); len(l) > len(best) {
				best = l
			}
		}
		return best
	}
	return ""
}

// minLength is the length of the shortest string re can match (capped).
func minLength(re *syntax.Regexp) int {
	switch re.Op {
	case syntax.OpLiteral:
		return len(re.Rune)
	case syntax.OpCharClass, syntax.OpAnyChar, syntax.OpAnyCharNotNL:
		return 1
	case syntax.OpCapture, syntax.OpPlus:
		return minLength(re.Sub[0])
	case syntax.OpRepeat:
		return min(re.Min*minLength(re.Sub[0]), 1<<20)
	case syntax.OpConcat:
		n := 0
		for _, sub := range re.Sub {
			n = min(n+minLength(sub), 1<<20)
		}
		return n
	case syntax.OpAlternate:
		n := 1 << 20
		for _, sub := range re.Sub {
			n = min(n, minLength(sub))
		}
		return n
	}
	return 0
}
