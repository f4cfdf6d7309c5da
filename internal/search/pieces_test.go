package search

import (
	"encoding/json"
	"slices"
	"testing"

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
