package search

import (
	"unicode/utf8"

	"github.com/lookout-dev/lookout/internal/jsonscan"
	"github.com/lookout-dev/lookout/internal/trace"
)

// Snippet is the text around a hit (an address with a code point range,
// as Hits gives them) in t: up to before code points ahead of it, the hit,
// and up to after code points behind it, as written in the trace (not
// lower-cased). ok is false when the hit does not name a range of a
// string of t.
func Snippet(t *trace.Trace, hit string, before, after int) (pre, match, post string, ok bool) {
	a, err := trace.ParseAddress(hit)
	if err != nil || a.Sel.Kind != trace.SelectRange {
		return "", "", "", false
	}
	sel := a.Sel
	a.Sel = trace.Selector{}
	r, err := t.Resolve(a)
	if err != nil {
		return "", "", "", false
	}
	s, err := jsonscan.New(r.Value).String("value")
	if err != nil {
		return "", "", "", false
	}
	// Byte offsets of the hit and of the text kept around it.
	from, start, end, to := -1, -1, -1, len(s)
	cp := 0
	for i := range s {
		switch cp {
		case sel.Start - before:
			from = i
		case sel.End + after:
			to = i
		}
		if cp == sel.Start {
			start = i
		}
		if cp == sel.End {
			end = i
		}
		cp++
	}
	if cp == sel.Start {
		start = len(s)
	}
	if cp == sel.End {
		end = len(s)
	}
	if from < 0 || sel.Start-before < 0 {
		from = 0
	}
	if start < 0 || end < start || !utf8.ValidString(s[start:end]) {
		return "", "", "", false
	}
	return s[from:start], s[start:end], s[end:to], true
}
