// Package detectors holds the guardrail detectors that need no model and no
// network: secrets, PII (pattern based), Unicode categories, links and HTML,
// Python source analysis (over package python's parser), fuzzy matching and
// copyright notices.
//
// Every function is a plain, pure function over a string. Results that mark a
// part of the input carry Start/End offsets in Unicode code points (the
// indices of a Python str), so the policy language can report them as ranges
// such as "0.content:55-67". Go strings are byte sequences; an invalid UTF-8
// byte counts as one code point, the way range-over-string and
// utf8.RuneCountInString count it.
//
// The semantics follow Invariant's detectors (invariant/analyzer/...) and the
// libraries they wrap (detect-secrets, presidio's pattern recognizers); each
// function's documentation says where Lookout differs. Whatever needs a model
// (named-entity PII such as PERSON or LOCATION, for instance) is reported with
// an error wrapping ErrUnavailable, never with a silent empty result.
//
// No function in this package panics, whatever its input.
package detectors

import (
	"errors"
	"fmt"
	"regexp"
	"sort"
	"sync"
	"unicode/utf8"
)

// ErrUnavailable is wrapped by the errors of detectors (or detector options)
// that cannot be answered without a model or another component this build
// does not have.
var ErrUnavailable = errors.New("not available in this build")

// ErrUnknownKind is wrapped by the errors returned for a kind, entity or
// category name that the detector does not know at all.
var ErrUnknownKind = errors.New("unknown kind")

// Match is one finding in a text.
type Match struct {
	// Kind is what was found: a secret type ("GITHUB_TOKEN"), a PII entity
	// ("EMAIL_ADDRESS"), a Unicode category ("Cf"), "LINK", "COPYRIGHT" or a
	// licence name, depending on the detector.
	Kind string
	// Start and End delimit the finding in code points, End exclusive:
	// 0 <= Start <= End <= number of code points of the text.
	Start, End int
	// Text is the matched text.
	Text string
	// Score is the confidence in [0, 1] where the detector has one (PII);
	// 1 elsewhere.
	Score float64
}

func unavailable(format string, args ...any) error {
	return fmt.Errorf("%s: %w", fmt.Sprintf(format, args...), ErrUnavailable)
}

func unknown(format string, args ...any) error {
	return fmt.Errorf("%s: %w", fmt.Sprintf(format, args...), ErrUnknownKind)
}

// Kinds returns the distinct kinds of ms in the order they first occur.
func Kinds(ms []Match) []string {
	var out []string
	seen := map[string]bool{}
	for _, m := range ms {
		if !seen[m.Kind] {
			seen[m.Kind] = true
			out = append(out, m.Kind)
		}
	}
	return out
}

// runeIndex converts byte offsets of one string into code-point offsets.
type runeIndex struct {
	s     string
	ascii bool
	idx   []int32 // idx[b] = code points before byte b (len(s)+1 entries), built lazily
}

func newRuneIndex(s string) *runeIndex {
	ri := &runeIndex{s: s, ascii: true}
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			ri.ascii = false
			break
		}
	}
	return ri
}

// at returns the code-point offset of byte offset b (clamped to the string).
func (ri *runeIndex) at(b int) int {
	if b <= 0 {
		return 0
	}
	if b >= len(ri.s) {
		b = len(ri.s)
	}
	if ri.ascii {
		return b
	}
	if ri.idx == nil {
		ri.idx = make([]int32, len(ri.s)+1)
		n := int32(0)
		for i := 0; i < len(ri.s); {
			_, w := utf8.DecodeRuneInString(ri.s[i:])
			for j := 0; j < w; j++ {
				ri.idx[i+j] = n
			}
			i += w
			n++
		}
		ri.idx[len(ri.s)] = n
	}
	return int(ri.idx[b])
}

// match builds a Match for the byte range [bs, be) of ri.s.
func (ri *runeIndex) match(kind string, bs, be int, score float64) Match {
	if bs < 0 {
		bs = 0
	}
	if be > len(ri.s) {
		be = len(ri.s)
	}
	if be < bs {
		be = bs
	}
	return Match{Kind: kind, Start: ri.at(bs), End: ri.at(be), Text: ri.s[bs:be], Score: score}
}

// sortMatches orders matches by start, then end, then kind.
func sortMatches(ms []Match) {
	sort.SliceStable(ms, func(i, j int) bool {
		a, b := ms[i], ms[j]
		if a.Start != b.Start {
			return a.Start < b.Start
		}
		if a.End != b.End {
			return a.End < b.End
		}
		return a.Kind < b.Kind
	})
}

// kindSet validates requested names against the known ones.
func kindSet(requested []string, known map[string]bool, what string) (map[string]bool, error) {
	if len(requested) == 0 {
		return nil, nil
	}
	set := make(map[string]bool, len(requested))
	for _, k := range requested {
		if !known[k] {
			return nil, unknown("%s %q", what, k)
		}
		set[k] = true
	}
	return set, nil
}

// lazyRE is a regular expression compiled on first use: every lookout
// command links the detectors, and most never call them, so compiling the
// patterns at start would slow down all of them.
type lazyRE struct {
	pat  string
	once sync.Once
	re   *regexp.Regexp
}

func lazyRegexp(pat string) *lazyRE { return &lazyRE{pat: pat} }

func (l *lazyRE) get() *regexp.Regexp {
	l.once.Do(func() { l.re = regexp.MustCompile(l.pat) })
	return l.re
}
