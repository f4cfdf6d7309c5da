package jsonscan

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

func TestValidAgreesWithEncodingJSON(t *testing.T) {
	cases := []string{
		`null`, `true`, `false`, `0`, `-0`, `1.5e10`, `-1E-2`, `"a"`, `"\u00e9\ud83d\ude00"`, `[]`, `{}`,
		`[1, 2, {"a": [null]}]`, ` {"a" : "b" } `, `01`, `1.`, `.5`, `-`, `1e`, `"\x"`, `"abc`, `[1,]`, `{"a":1,}`,
		`{"a" 1}`, `[1 2]`, `tru`, `nul`, `"` + "\x01" + `"`, `{"a":1}}`, `[`, `"\ud800"`, `"\u12"`, ``, `  `,
		`{"a":{"b":{"c":[[[[]]]]}}}`, `"é"`, "\"\xff\"",
	}
	for _, c := range cases {
		if got, want := Valid([]byte(c)), json.Valid([]byte(c)); got != want {
			t.Errorf("Valid(%q) = %v, encoding/json says %v", c, got, want)
		}
	}
}

func TestStringsAgreeWithEncodingJSON(t *testing.T) {
	cases := []string{`"plain"`, `"tab\there"`, `"quote \" and \\ slash \/"`, `"\u00e9\u4e2d"`, `"\ud83d\ude00 emoji"`,
		`"lone \ud800 surrogate"`, `"\b\f\n\r\t"`, "\"bad \xff utf8\"", `"é ü"`, `""`}
	for _, c := range cases {
		var want string
		if err := json.Unmarshal([]byte(c), &want); err != nil {
			t.Fatalf("encoding/json rejects %q: %v", c, err)
		}
		got, err := New([]byte(c)).String("s")
		if err != nil {
			t.Fatalf("String(%q): %v", c, err)
		}
		if got != want {
			t.Errorf("String(%q) = %q, encoding/json gives %q", c, got, want)
		}
	}
}

func TestErrorsCarryPathAndOffset(t *testing.T) {
	data := []byte(`{"messages": [{"role": "user"}, {"role": 5}], "x": "y"}`)
	s := New(data)
	err := s.Object(func(key string) error {
		if key != "messages" {
			return s.Skip()
		}
		return s.Array(func(int) error {
			return s.Object(func(k string) error {
				_, err := s.String(k)
				return err
			})
		})
	})
	se, ok := err.(*Error)
	if !ok {
		t.Fatalf("got %v, want *Error", err)
	}
	if se.Path != "$.messages[1].role" || se.Offset != strings.Index(string(data), "5}") || se.Msg != "role must be a string, not a number" {
		t.Errorf("got %+v", se)
	}
}

func TestPathQuotesOddKeys(t *testing.T) {
	s := New([]byte(`{"a.b": {"1x": [0, {"ok_1": true}]}}`))
	var path string
	_ = s.Object(func(string) error {
		return s.Object(func(string) error {
			return s.Array(func(i int) error {
				if i == 0 {
					return s.Skip()
				}
				return s.Object(func(string) error { path = s.Path(); return s.Skip() })
			})
		})
	})
	if want := `$["a.b"]["1x"][1].ok_1`; path != want {
		t.Errorf("path %s, want %s", path, want)
	}
}

func TestDepthLimit(t *testing.T) {
	deep := strings.Repeat("[", MaxDepth+1) + strings.Repeat("]", MaxDepth+1)
	err := New([]byte(deep)).Skip()
	if err == nil || !strings.Contains(err.Error(), "nesting deeper") {
		t.Fatalf("got %v", err)
	}
}

func TestAppendCompact(t *testing.T) {
	in := "{ \"a\" : [ 1 ,\n 2 ] , \"s\" : \"x  y\\\" z\" }"
	if got, want := string(AppendCompact(nil, []byte(in))), `{"a":[1,2],"s":"x  y\" z"}`; got != want {
		t.Errorf("got %s, want %s", got, want)
	}
}

func TestLineCol(t *testing.T) {
	data := []byte("ab\ncd\nef")
	for _, c := range []struct{ off, line, col int }{{0, 1, 1}, {1, 1, 2}, {3, 2, 1}, {7, 3, 2}} {
		if l, col := LineCol(data, c.off); l != c.line || col != c.col {
			t.Errorf("LineCol(%d) = %d:%d, want %d:%d", c.off, l, col, c.line, c.col)
		}
	}
}

// FuzzScanner checks the scanner against encoding/json on any input.
func FuzzScanner(f *testing.F) {
	for _, s := range []string{`{"a": [1, "b", null, true]}`, `"\ud83d\ude00"`, `[{"role":"user","content":"x"}]`, `1e5`, `{"a":`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if got, want := Valid(data), json.Valid(data); got != want {
			t.Fatalf("Valid = %v, encoding/json says %v for %q", got, want, data)
		}
		if !json.Valid(data) {
			return
		}
		compact := AppendCompact(nil, data)
		var std bytes.Buffer
		if err := json.Compact(&std, data); err != nil || !bytes.Equal(compact, std.Bytes()) {
			t.Fatalf("AppendCompact(%q) = %q, encoding/json's Compact gives %q", data, compact, std.Bytes())
		}
		var want any
		if json.Unmarshal(data, &want) == nil {
			if s, ok := want.(string); ok {
				got, err := New(data).String("s")
				if err != nil || got != s {
					t.Fatalf("String = %q, %v; want %q", got, err, s)
				}
			}
		}
	})
}

// FuzzSkip checks Skip's fast pass against the careful one: the same
// values accepted, ending at the same offset.
func FuzzSkip(f *testing.F) {
	for _, s := range []string{`{"a": [1, "b", null, true], "c": {"d": -1.5e3}}`, `{"k\u00e9y": "v\n"}`, `[1, 2,]`, `{"a" 1}`,
		`{"a": 1,}`, `"\x"`, "\"a\x01\"", `tru`, `nul`, `-`, `01`, `[[[[]]]] x`, `{"a":{"b":[{"c":"\ud800"}]}}`, ` `} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		fast, careful := New(data), New(data)
		ok := fast.skipFast(0)
		careful.skipSpace()
		err := careful.skip()
		if ok != (err == nil) {
			t.Fatalf("skipFast(%q) = %v, skip says %v", data, ok, err)
		}
		if ok && fast.pos != careful.pos {
			t.Fatalf("skipFast(%q) ends at %d, skip at %d", data, fast.pos, careful.pos)
		}
		if err := New(data).Skip(); (err == nil) != ok {
			t.Fatalf("Skip(%q) = %v, want ok=%v", data, err, ok)
		}
	})
}
