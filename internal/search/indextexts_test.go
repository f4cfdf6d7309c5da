package search_test

import (
	"cmp"
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/lookout-dev/lookout/internal/formats"
	"github.com/lookout-dev/lookout/internal/search"
	"github.com/lookout-dev/lookout/internal/testcorpus"
	"github.com/lookout-dev/lookout/internal/trace"
)

// IndexTexts is Index without addresses: on every corpus trace the
// formats read, the same pieces (texts and offsets; in another order, as
// the strings of a JSON value are written rather than by member), facets
// and metadata. IndexHashed is IndexTexts with HashPieces' hashes, with one
// cache for every trace (the corpus repeats texts across traces).
func TestIndexTextsIsIndexWithoutAddresses(t *testing.T) {
	traces := 0
	cache := search.TextCache{}
	filepath.WalkDir(testcorpus.Dir(t), func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || strings.HasSuffix(path, ".md") {
			return err
		}
		f, err := os.Open(path)
		if err != nil {
			return err
		}
		defer f.Close()
		dec, _, err := formats.Open(f, path, formats.Auto)
		if err != nil {
			return nil // not a trace file the formats read
		}
		for {
			tr, err := dec.Next()
			if errors.Is(err, io.EOF) || err != nil {
				return nil
			}
			traces++
			want, got := search.Index(tr), search.IndexTexts(tr)
			for i := range want.Pieces {
				want.Pieces[i].Address = ""
			}
			sorted := got
			sorted.Pieces = slices.Clone(got.Pieces)
			byText := func(a, b search.Piece) int { return cmp.Or(strings.Compare(a.Text, b.Text), a.At-b.At) }
			slices.SortFunc(want.Pieces, byText)
			slices.SortFunc(sorted.Pieces, byText)
			if !reflect.DeepEqual(sorted, want) {
				t.Fatalf("%s, trace %d: IndexTexts differs from Index without addresses", path, traces)
			}
			hashed := search.IndexHashed(tr, cache)
			if got.HashPieces(); len(got.Pieces) == 0 {
				got.Hashes = []search.TextHash{}
			}
			if !reflect.DeepEqual(hashed, got) {
				t.Fatalf("%s, trace %d: IndexHashed differs from IndexTexts and HashPieces", path, traces)
			}
		}
	})
	if traces < 200 {
		t.Fatalf("only %d corpus traces read", traces)
	}
	if len(cache) == 0 {
		t.Fatal("IndexHashed cached no text")
	}
}

// IndexTexts reads a span's JSON values in one pass, in the order their
// strings are written; these values test that pass against Index's walk by
// member: escapes, surrogates, invalid UTF-8, strings that look like keys,
// JSON text inside strings, values that are not JSON at all.
func TestIndexTextsValues(t *testing.T) {
	values := []string{
		`{"b": "two", "a": ["one", {"z": "deep", "y": ""}], "c": 3, "d": null, "e": true}`,
		`{"k": "a \"quoted\": word", "k2": "tab\tand\\backslash", "k3": "\u00e9t\u00c9 \ud83d\ude00 \ud800 lone"}`,
		`{"k" : "space before colon", "v": "x" , "w":"y"}`,
		`{"msgs": "[{\"role\": \"user\", \"content\": \"Hello \\\"there\\\"\"}]", "plain": "[not json"}`,
		"{\"bad\": \"caf\xe9 \xff\", \"ok\": \"fine\"}",
		`["top", ["level", ["arrays"]], {"": "empty key"}]`,
		`"just a string"`,
		`{"a": "b"} trailing`,
		`not json at all`,
		`  {"padded": "value"}  `,
		`12.5`,
	}
	for _, v := range values {
		tr := &trace.Trace{Spans: []trace.Span{{ID: "s", Name: "n", Attributes: json.RawMessage(v), Inputs: json.RawMessage(v)}},
			Events: []trace.Event{{Role: "assistant", ToolCalls: []trace.ToolCall{{Function: trace.Function{Name: "f", Arguments: json.RawMessage(v)}}}}}}
		want, got := search.Index(tr), search.IndexTexts(tr)
		for i := range want.Pieces {
			want.Pieces[i].Address = ""
		}
		byText := func(a, b search.Piece) int { return cmp.Or(strings.Compare(a.Text, b.Text), a.At-b.At) }
		slices.SortFunc(want.Pieces, byText)
		slices.SortFunc(got.Pieces, byText)
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%q:\nIndexTexts %+v\nIndex      %+v", v, got.Pieces, want.Pieces)
		}
		if len(got.Pieces) < 4 && v != `12.5` {
			t.Errorf("%q: only %d pieces", v, len(got.Pieces))
		}
	}
}

// TestJSONTextPieces: a span's string that holds JSON text is indexed by
// the strings in it (as written, at their code point offsets), found here
// by the quotes, as the index found them before it read them with
// jsonscan; a string that is not JSON text whole is one piece.
func TestJSONTextPieces(t *testing.T) {
	reference := func(s string) []search.Piece {
		var out []search.Piece
		cp, counted := 0, 0
		for i := 0; i < len(s); i++ {
			if s[i] != '"' {
				continue
			}
			j := i + 1
			for j < len(s) && s[j] != '"' {
				if s[j] == '\\' {
					j++
				}
				j++
			}
			k := j + 1
			for k < len(s) && strings.ContainsRune(" \t\n\r", rune(s[k])) {
				k++
			}
			if j > i+1 && (k == len(s) || s[k] != ':') {
				cp += utf8.RuneCountInString(s[counted : i+1])
				counted = i + 1
				out = append(out, search.Piece{Text: search.Lower(s[i+1 : j]), At: cp})
			}
			i = j
		}
		return out
	}
	texts := []string{
		`[{"role": "user", "content": "Héllo \"wörld\" ✓"}, {"role" : "assistant", "content": ""}]`,
		` {"a": ["x", ["y", {"b": "zé"}]], "n": 1, "t": true, "k\"ey": "v"}`,
		`{"emoji": "😀 ok", "esc": "\u00e9\n", "after": "last"}`,
	}
	for _, text := range texts {
		for _, index := range []func(*trace.Trace) search.Doc{search.Index, search.IndexTexts} {
			tr := &trace.Trace{Spans: []trace.Span{{ID: "s", Attributes: json.RawMessage(`{"m": ` + string(trace.AppendString(nil, text)) + `}`)}}}
			got := index(tr).Pieces
			for i := range got {
				got[i].Address = ""
			}
			if want := reference(text); !reflect.DeepEqual(got, want) {
				t.Errorf("%s:\n got %+v\nwant %+v", text, got, want)
			}
		}
	}
	for _, notJSON := range []string{`{"a": "unclosed"`, `[1, 2] more`, `{not json}`} {
		tr := &trace.Trace{Spans: []trace.Span{{ID: "s", Attributes: json.RawMessage(`{"m": ` + string(trace.AppendString(nil, notJSON)) + `}`)}}}
		if got := search.IndexTexts(tr).Pieces; len(got) != 1 || got[0].Text != search.Lower(notJSON) || got[0].At != 0 {
			t.Errorf("%s: pieces %+v, want the string whole", notJSON, got)
		}
	}
}
