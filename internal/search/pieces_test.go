package search

import (
	"cmp"
	"encoding/json"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/lookout-dev/lookout/internal/jsonscan"
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
		// The index without addresses reads the same strings in one pass,
		// in the order written (so the same pieces, in another order),
		// unless an object names a member twice, which the rule at the door
		// keeps out of stored traces (it reads both values).
		if namesTwice(jsonscan.New(raw)) {
			return
		}
		tr := &trace.Trace{Spans: []trace.Span{{ID: "s", Attributes: raw}}}
		byText := func(a, b Piece) int { return cmp.Or(strings.Compare(a.Text, b.Text), a.At-b.At) }
		addressed, texts := Index(tr).Pieces, IndexTexts(tr).Pieces
		for i := range addressed {
			addressed[i].Address = ""
		}
		slices.SortFunc(addressed, byText)
		slices.SortFunc(texts, byText)
		if !slices.Equal(texts, addressed) {
			t.Fatalf("IndexTexts of attributes %q =\n%+v\nIndex without addresses =\n%+v", raw, texts, addressed)
		}
	})
}

// namesTwice reports whether an object in the JSON value s reads names a
// member twice (false for what is not JSON).
func namesTwice(s *jsonscan.Scanner) bool {
	twice := false
	var walk func() error
	walk = func() error {
		switch s.Peek() {
		case jsonscan.Object:
			seen := map[string]bool{}
			return s.Object(func(key string) error {
				twice = twice || seen[key]
				seen[key] = true
				return walk()
			})
		case jsonscan.Array:
			return s.Array(func(int) error { return walk() })
		}
		return s.Skip()
	}
	return walk() == nil && twice
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

// A span's string that holds JSON is searched by its string values as
// written, each at its code point offset: keys, syntax, numbers and empty
// strings are not pieces; a string that is not one JSON object or array
// whole stays one piece.
func TestSpanJSONText(t *testing.T) {
	attrs := map[string]string{
		"gen_ai.input.messages": `[{"role": "user", "parts": [{"type": "text", "content": "Où est \"Zoë\"?\n"}], "n": 3, "e": ""}]`,
		"plain":                 `just text`,
		"not.json":              `[1, 2`,
		"json.after.space":      ` {"k":"V"}`,
	}
	raw, _ := json.Marshal(attrs)
	d := Index(&trace.Trace{Spans: []trace.Span{{ID: "s1", Attributes: raw}}})
	var got []string
	for _, p := range d.Pieces {
		got = append(got, p.Address+"@"+strconv.Itoa(p.At)+"="+p.Text)
	}
	msgs := attrs["gen_ai.input.messages"]
	at := func(s string) string { return strconv.Itoa(utf8.RuneCountInString(msgs[:strings.Index(msgs, s)])) }
	addr := func(key string) string { return trace.SpanAddress("s1", "attributes", key).String() }
	want := []string{
		addr("gen_ai.input.messages") + "@" + at(`user`) + "=user",
		addr("gen_ai.input.messages") + "@" + at(`text"`) + "=text",
		addr("gen_ai.input.messages") + "@" + at(`Où`) + `=où est \"zoë\"?\n`,
		addr("json.after.space") + "@7=v",
		addr("not.json") + "@0=[1, 2",
		addr("plain") + "@0=just text",
	}
	if !slices.Equal(got, want) {
		t.Fatalf("pieces:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	// Hits count from the start of the attribute's string.
	h := Hits(d.Pieces, []string{"zoë"})
	start := utf8.RuneCountInString(msgs[:strings.Index(msgs, "Zoë")])
	if w := addr("gen_ai.input.messages") + ":" + strconv.Itoa(start) + "-" + strconv.Itoa(start+3); !slices.Equal(h, []string{w}) {
		t.Errorf("hits %q, want %q", h, w)
	}
	if h := Hits(d.Pieces, []string{`"role"`}); h != nil {
		t.Errorf("JSON syntax found: %q", h)
	}
}
