package detectors

import (
	"unicode"
	"unicode/utf8"
)

// UnicodeCategories are the two-letter Unicode general categories, as
// Python's unicodedata.category names them.
var UnicodeCategories = []string{
	"Lu", "Ll", "Lt", "Lm", "Lo",
	"Mn", "Mc", "Me",
	"Nd", "Nl", "No",
	"Pc", "Pd", "Ps", "Pe", "Pi", "Pf", "Po",
	"Sm", "Sc", "Sk", "So",
	"Zs", "Zl", "Zp",
	"Cc", "Cf", "Cs", "Co", "Cn",
}

var knownCategories = func() map[string]bool {
	m := map[string]bool{}
	for _, c := range UnicodeCategories {
		m[c] = true
	}
	return m
}()

// categoryTables in a lookup order that tries frequent categories first.
var categoryTables = func() []struct {
	name  string
	table *unicode.RangeTable
} {
	order := []string{"Ll", "Lu", "Lo", "Zs", "Po", "Nd", "Mn", "Cc", "Cf", "So", "Sm", "Pd", "Ps", "Pe",
		"Pi", "Pf", "Pc", "Sc", "Sk", "Lt", "Lm", "Mc", "Me", "Nl", "No", "Zl", "Zp", "Co", "Cs"}
	out := make([]struct {
		name  string
		table *unicode.RangeTable
	}, 0, len(order))
	for _, n := range order {
		out = append(out, struct {
			name  string
			table *unicode.RangeTable
		}{n, unicode.Categories[n]})
	}
	return out
}()

var asciiCategory = func() [128]string {
	var t [128]string
	for r := rune(0); r < 128; r++ {
		t[r] = categoryOfSlow(r)
	}
	return t
}()

func categoryOfSlow(r rune) string {
	for _, c := range categoryTables {
		if c.table != nil && unicode.Is(c.table, r) {
			return c.name
		}
	}
	return "Cn"
}

// UnicodeCategory returns the general category of r ("Lu", "Cf", ...), "Cn"
// for unassigned code points. Go's tables are Unicode 15.0.
func UnicodeCategory(r rune) string {
	if r >= 0 && r < 128 {
		return asciiCategory[r]
	}
	if r >= 0xD800 && r <= 0xDFFF {
		return "Cs"
	}
	return categoryOfSlow(r)
}

// Unicode returns one match per character of text whose general category is
// in categories (all characters when categories is empty), with the
// category as Kind, in text order. Invariant's unicode(x, categories) is the
// list of these Kinds. An unknown category name is an error wrapping
// ErrUnknownKind.
//
// A Go string cannot hold a lone surrogate (JSON decoding turns one into
// U+FFFD), so "Cs" never matches; an invalid UTF-8 byte counts as U+FFFD
// ("So").
func Unicode(text string, categories []string) ([]Match, error) {
	want, err := kindSet(categories, knownCategories, "Unicode category")
	if err != nil {
		return nil, err
	}
	var out []Match
	cp := 0
	for i := 0; i < len(text); {
		r, w := utf8.DecodeRuneInString(text[i:])
		cat := UnicodeCategory(r)
		if want == nil || want[cat] {
			out = append(out, Match{Kind: cat, Start: cp, End: cp + 1, Text: text[i : i+w], Score: 1})
		}
		i += w
		cp++
	}
	return out, nil
}

// isAlnumRune is Python's str.isalnum for one character: letters and
// numbers (Nd, Nl, No).
func isAlnumRune(r rune) bool {
	if r < 128 {
		return r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9'
	}
	return unicode.IsLetter(r) || unicode.IsNumber(r)
}
