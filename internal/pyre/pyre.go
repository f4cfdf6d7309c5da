// Package pyre gives Python's re syntax and meaning to Lookout's rules, as
// Invariant has them. A pattern is translated to Go's RE2 syntax when it
// means the same there (with \d, \w and \s made Unicode-aware like
// Python's), and otherwise handed to regexp2, a backtracking engine that
// supports lookaround, backreferences and \b. Offsets are code points, the
// indices of a Python str.
//
// The backtracking engine runs under a context the caller supplies: its
// deadline bounds a catastrophic pattern and its cancellation stops a match
// midway (internal/regexp2 is regexp2 patched for that). The Go engine
// needs no such bound: it runs in time linear in the subject.
package pyre

import (
	"context"
	"errors"
	"regexp"
	"regexp/syntax"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/lookout-dev/lookout/internal/pyre/internal/regexp2"
)

// Regexp is a compiled Python regular expression. It is safe for
// concurrent use.
type Regexp struct {
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

// cache holds compiled patterns, shared by all callers; it is emptied when
// it grows large (patterns built at run time could fill it).
var cache = struct {
	sync.Mutex
	m map[string]*Regexp
}{m: map[string]*Regexp{}}

// Compile compiles a Python regular expression. Patterns are cached, so
// compiling one again is cheap. The error is the engine's, without Go's
// "error parsing regexp: " prefix.
func Compile(pattern string) (*Regexp, error) {
	cache.Lock()
	r, ok := cache.m[pattern]
	cache.Unlock()
	if ok {
		return r, nil
	}
	r, err := compileUncached(pattern)
	if err != nil {
		return nil, err
	}
	cache.Lock()
	if len(cache.m) >= 4096 {
		cache.m = map[string]*Regexp{}
	}
	cache.m[pattern] = r
	cache.Unlock()
	return r, nil
}

func compileUncached(pattern string) (*Regexp, error) {
	r := &Regexp{src: pattern}
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

// String returns the pattern as given to Compile.
func (r *Regexp) String() string { return r.src }

func (r *Regexp) compileBacktracking() {
	r.once.Do(func() {
		pat := translateToNet(r.src)
		bt, err := regexp2.Compile(pat, regexp2.None)
		if err != nil {
			r.btErr = cleanError(err)
			return
		}
		an, err := regexp2.Compile(`\A(?:`+pat+`)`, regexp2.None)
		if err != nil {
			r.btErr = cleanError(err)
			return
		}
		r.bt, r.btAnchored = bt, an
	})
}

func cleanError(err error) error {
	msg := err.Error()
	msg = strings.TrimPrefix(msg, "error parsing regexp: ")
	return errors.New(msg)
}

func (r *Regexp) useGo(s string) bool {
	return r.re != nil && !(r.dollar && strings.HasSuffix(s, "\n"))
}

// UsesBacktracking reports whether FindAll on s runs the backtracking
// engine, which holds a copy of s as code points (4 bytes each); Match runs
// it in no other case. The Go engine allocates little beyond its results.
func (r *Regexp) UsesBacktracking(s string) bool {
	return !r.useGo(s) || r.emptyOK
}

// ErrStopped is wrapped in the error of Match or FindAll when the
// backtracking engine stopped because its context was done: the caller's
// deadline passed or its work was cancelled.
var ErrStopped = errors.New("stopped by the check's budget")

func engineError(err error) error {
	if errors.Is(err, regexp2.ErrCanceled) || errors.Is(err, regexp2.ErrMatchTimeout) {
		return ErrStopped
	}
	return err
}

// Match is Python's re.match: a match starting at the beginning of s, as a
// code point span. The backtracking engine, if it runs, stops with
// ErrStopped when the context ctx returns is done; ctx is called only then,
// so that a caller can make its context lazily.
func (r *Regexp) Match(ctx func() context.Context, s string) (start, end int, ok bool, err error) {
	if r.lit != "" && !strings.Contains(s, r.lit) {
		return 0, 0, false, nil
	}
	if r.useGo(s) {
		loc := r.anchored.FindStringIndex(s)
		if loc == nil {
			return 0, 0, false, nil
		}
		return 0, RuneOffset(s, loc[1]), true, nil
	}
	r.compileBacktracking()
	if r.btErr != nil {
		return 0, 0, false, r.btErr
	}
	m, err := r.btAnchored.FindStringMatchContext(ctx(), s)
	if err != nil {
		return 0, 0, false, engineError(err)
	}
	if m == nil {
		return 0, 0, false, nil
	}
	return m.Index, m.Index + m.Length, true, nil
}

// FindAll is Python's re.finditer: the non-overlapping matches in s as code
// point spans and their text, at most limit of them (all when limit < 0).
// ctx is as for Match.
func (r *Regexp) FindAll(ctx func() context.Context, s string, limit int) (spans [][2]int, texts []string, err error) {
	if r.lit != "" && !strings.Contains(s, r.lit) {
		return nil, nil, nil
	}
	if r.useGo(s) && !r.emptyOK {
		locs := r.re.FindAllStringIndex(s, limit)
		ascii := IsASCII(s)
		for _, l := range locs {
			a, b := l[0], l[1]
			texts = append(texts, s[a:b])
			if !ascii {
				a, b = RuneOffset(s, a), RuneOffset(s, b)
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
	return spans, texts, engineError(err)
}

// IsASCII reports whether s is all ASCII, where byte and code point offsets
// agree.
func IsASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

// RuneOffset converts a byte offset in s to a code point offset (an
// invalid UTF-8 byte counts as one), the unit of match positions here and
// in Lookout's addresses.
func RuneOffset(s string, byteOff int) int {
	if byteOff > len(s) {
		byteOff = len(s)
	}
	for i := 0; i < byteOff; i++ {
		if s[i] >= utf8.RuneSelf {
			return i + utf8.RuneCountInString(s[i:byteOff])
		}
	}
	return byteOff
}

func isNameChar(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '_' || c >= '0' && c <= '9'
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
