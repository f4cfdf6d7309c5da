package search

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/lookout-dev/lookout/internal/trace"
)

// FuzzWalkStrings: the jsonscan walk of a JSON value finds the same strings
// at the same paths, in the same order, as decoding it with encoding/json.
func FuzzWalkStrings(f *testing.F) {
	for _, s := range []string{
		`{"b": "x", "a": ["y", {"c": "z"}], "n": 1}`,
		`{"k": "first", "k": "last", "j": {"k": 1}, "j": "later"}`,
		`"\ud800 lone \ud83d\ude00"`,
		"{\"bad\": \"\xff\"}",
		`[1, "two", null, true, {"": ""}]`,
		`{"a": 1} trailing`,
		`not json`,
		``,
		" \t ",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		type got struct{ addr, text string }
		collect := func(walk func(json.RawMessage, trace.Address, func(trace.Address, string))) []got {
			var out []got
			walk(raw, trace.SpanAddress("s", "attributes"), func(a trace.Address, s string) {
				out = append(out, got{a.String(), s})
			})
			return out
		}
		fast, slow := collect(walkStrings), collect(walkDecoded)
		if !slices.Equal(fast, slow) {
			t.Fatalf("walkStrings(%q) =\n%q\nencoding/json walk =\n%q", raw, fast, slow)
		}
	})
}

// FuzzMeta: the jsonscan walk of metadata gives the same values, keys and
// order as decoding it with encoding/json.
func FuzzMeta(f *testing.F) {
	for _, s := range []string{
		`{"b": "X", "a": {"c": [1, "T", {"no": 1}, [2]], "d": {"e": {"f": {"g": 1}}}}, "n": -1.5e3, "z": null, "t": true}`,
		`{"k": "first", "k": "last", "j": {"k": 1}, "j": "later"}`,
		`{"tags": ["A", "b", null, false, 3]}`,
		"{\"bad\": \"\xff\", \"\\ud800\": \"\\ud83d\\ude00\"}",
		`{"a": 1} trailing`,
		`["not", "an", "object"]`,
		`{"a": 1e999}`,
		`not json`,
		``,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		fast, slow := Meta(raw), metaDecoded(raw)
		if !slices.EqualFunc(fast, slow, func(a, b MetaValue) bool {
			return a.Key == b.Key && a.Text == b.Text && a.IsNum == b.IsNum && (a.Num == b.Num || a.Num != a.Num && b.Num != b.Num)
		}) {
			t.Fatalf("Meta(%q) =\n%+v\nencoding/json walk =\n%+v", raw, fast, slow)
		}
	})
}

// FuzzLower: Lower is strings.ToLower, and keeps the number of code points.
func FuzzLower(f *testing.F) {
	for _, s := range []string{"ABC def", "İstanbul", "ΣΑΣ", "Ǆ", "ẞ", "K", "Ⅻ", "a\xffB", "\ufffdX", "plain", "", "Ⱥ"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got := Lower(s)
		if want := strings.ToLower(s); got != want {
			t.Fatalf("Lower(%q) = %q, strings.ToLower gives %q", s, got, want)
		}
		if utf8.RuneCountInString(got) != utf8.RuneCountInString(s) {
			t.Fatalf("Lower(%q) = %q: %d code points, want %d", s, got, utf8.RuneCountInString(got), utf8.RuneCountInString(s))
		}
	})
}
