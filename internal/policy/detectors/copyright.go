package detectors

import (
	"fmt"
	"strings"
	"unicode"
)

// DefaultCopyrightThreshold is copyright()'s default threshold.
const DefaultCopyrightThreshold = 0.5

// softwareLicenses are the licence headers Invariant's copyright detector
// knows, in its order, with their names.
var softwareLicenses = []struct{ name, text string }{
	{"GNU_AGPL_V3", "\n                    GNU AFFERO GENERAL PUBLIC LICENSE\n                       Version 3, 19 November 2007\n"},
	{"GNU_GPL_V2", "\n                    GNU GENERAL PUBLIC LICENSE\n                       Version 3, 29 June 2007\n"},
	{"GNU_LGPL_V3", "\n                   GNU LESSER GENERAL PUBLIC LICENSE\n                       Version 3, 29 June 2007\n"},
	{"MOZILLA_PUBLIC_LICENSE_2.0", "\nMozilla Public License Version 2.0\n"},
	{"APACHE_LICENSE_2.0", "\n                                 Apache License\n                           Version 2.0, January 2004\n"},
	{"MIT_LICENSE", "\nMIT License\n"},
	{"BOOST_SOFTWARE_LICENSE", "\nBoost Software License - Version 1.0 - August 17th, 2003\n"},
}

// CopyrightKinds are the kinds Copyright reports: the licence names and
// "COPYRIGHT".
var CopyrightKinds = func() []string {
	var out []string
	for _, l := range softwareLicenses {
		out = append(out, l.name)
	}
	return append(out, "COPYRIGHT")
}()

var copyrightPatterns = []string{"Copyright (C)", "Copyright ©"}

// Copyright detects licence headers and copyright notices the way
// Invariant's copyright(text, threshold=...) does:
//
//   - if the stripped text starts with a known licence header, that licence
//     alone is reported;
//   - otherwise every licence whose header words (split on single spaces, as
//     Invariant splits them) occur among the text's words in a proportion of
//     at least threshold is reported, spanning the whole text;
//   - then "COPYRIGHT" for the first occurrence of "Copyright (C)" and of
//     "Copyright ©" (case-sensitive).
//
// threshold must be in [0, 1] (DefaultCopyrightThreshold is Invariant's
// default).
func Copyright(text string, threshold float64) ([]Match, error) {
	if !(threshold >= 0 && threshold <= 1) {
		return nil, fmt.Errorf("copyright threshold %v must be between 0 and 1", threshold)
	}
	ri := newRuneIndex(text)
	var out []Match
	out = append(out, detectLicenses(text, ri, threshold)...)
	for _, p := range copyrightPatterns {
		if i := strings.Index(text, p); i >= 0 {
			out = append(out, ri.match("COPYRIGHT", i, i+len(p), 1))
		}
	}
	return out, nil
}

// pyStrip is Python's str.strip() without arguments.
func pyStrip(s string) (string, int) {
	t := strings.TrimLeftFunc(s, pyIsSpace)
	lead := len(s) - len(t)
	return strings.TrimRightFunc(t, pyIsSpace), lead
}

// pyIsSpace is Python's str.isspace for one character.
func pyIsSpace(r rune) bool {
	return unicode.IsSpace(r) || r >= 0x1c && r <= 0x1f
}

func detectLicenses(text string, ri *runeIndex, threshold float64) []Match {
	stripped, lead := pyStrip(text)
	for _, l := range softwareLicenses {
		lt, _ := pyStrip(l.text)
		if strings.HasPrefix(stripped, lt) {
			return []Match{ri.match(l.name, lead, lead+len(lt), 1)}
		}
	}
	words := map[string]bool{}
	for _, w := range strings.Split(stripped, " ") {
		words[w] = true
	}
	var out []Match
	for _, l := range softwareLicenses {
		lt, _ := pyStrip(l.text)
		total, in := 0, 0
		for _, tok := range strings.Split(lt, " ") {
			if tok == "" {
				continue
			}
			total++
			if words[tok] {
				in++
			}
		}
		if total > 0 && float64(in)/float64(total) >= threshold {
			out = append(out, ri.match(l.name, 0, len(text), 1))
		}
	}
	return out
}
