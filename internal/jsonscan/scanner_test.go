package jsonscan

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"unsafe"
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
		if app, err := AppendUnescaped([]byte("kept:"), []byte(c)); err != nil || string(app) != "kept:"+want {
			t.Errorf("AppendUnescaped(%q) = %q, %v; want %q", c, app, err, "kept:"+want)
		}
	}
	for _, bad := range []string{`"open`, `x"`, `"a" b`, `"\x"`, `"`, ``} {
		if _, err := AppendUnescaped(nil, []byte(bad)); err == nil {
			t.Errorf("AppendUnescaped(%q): no error", bad)
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
				quoted := bytes.TrimSpace(data)
				if app, err := AppendUnescaped(quoted[:1:1], quoted); err != nil || string(app[1:]) != s {
					t.Fatalf("AppendUnescaped = %q, %v; want %q", app, err, s)
				}
			}
		}
	})
}

// FuzzSkip checks Skip's fast pass against the careful one: the same
// values accepted, ending at the same offset.
func FuzzSkip(f *testing.F) {
	for _, s := range []string{`{"a": [1, "b", null, true], "c": {"d": -1.5e3}}`, `{"k\u00e9y": "v\n"}`, `[1, 2,]`, `{"a" 1}`,
		`{"a": 1,}`, `"\x"`, "\"a\x01\"", `tru`, `nul`, `-`, `01`, `[[[[]]]] x`, `{"a":{"b":[{"c":"\ud800"}]}}`, ` `,
		`{"a":1,"a":2}`, `[1e400]`, "\"\xff\"", `{"\u0061":1,"a":{}}`,
		// Runs longer than PlainEnd's eight-byte steps, ended by each kind of byte.
		`{"role":"user","content":"a long enough run of plain text \"quoted\" then more"}`,
		"[\"a long enough run of plain text\x01 then a control\"]", "[\"a long enough run of text \xc3\xa9 and \xff\"]"} {
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
		// Strict: the fast and careful passes agree too, and the rule only
		// takes away.
		sfast, scareful := NewStrict(data), NewStrict(data)
		sok := sfast.skipFast(0)
		scareful.skipSpace()
		serr := scareful.skip()
		if sok != (serr == nil) || (sok && sfast.pos != scareful.pos) {
			t.Fatalf("strict skipFast(%q) = %v at %d, skip says %v at %d", data, sok, sfast.pos, serr, scareful.pos)
		}
		if sok && !ok {
			t.Fatalf("strict takes %q, which lenient refuses", data)
		}
		if rerr := readAll(NewStrict(data)); (rerr == nil) != sok {
			t.Fatalf("strict read of %q: %v, skip: %v", data, rerr, serr)
		}
		checkStrings(t, data)
	})
}

// TestStrict: a strict scanner refuses, at its place and as a Rule error,
// what the rule at the door refuses, whether the value is read or skipped
// (raw values such as metadata are skipped), and a lenient one takes it as
// before.
func TestStrict(t *testing.T) {
	many := `{` + strings.Repeat(`"k0":0,`, 0)
	for i := range 40 {
		many += `"k` + strings.Repeat("x", i) + `":1,`
	}
	cases := []struct {
		doc, path, msg string
	}{
		{`{"a":1,"b":{"c":1,"c":2}}`, `$.b.c`, `member "c" is given twice`},
		{`{"m":[{"role":"user","role":"assistant"}]}`, `$.m[0].role`, `member "role" is given twice`},
		{`{"a":1,"\u0061":2}`, `$.a`, `member "a" is given twice`},
		{many + `"kxxx":2}`, `$.kxxx`, `member "kxxx" is given twice`},
		{`{"x":1e400}`, `$.x`, `number 1e400 is out of the range of a 64-bit float`},
		{`[1,-1e309]`, `$[1]`, `number -1e309 is out of the range`},
		{`{"x":` + strings.Repeat("9", 400) + `}`, `$.x`, `out of the range`},
		{"{\"x\":\"a\xffb\"}", `$.x`, `invalid UTF-8 (byte 0xff) in string`},
		{"{\"x\":\"\\n\xc3\"}", `$.x`, `invalid UTF-8 (byte 0xc3) in string`},
		{"{\"k\xfe\":1}", `$`, `invalid UTF-8 (byte 0xfe)`},
		{`{"x":"a\ud800b"}`, `$.x`, `\ud800 in string is half of a UTF-16 surrogate pair`},
		{`{"x":"\udc00"}`, `$.x`, `half of a UTF-16 surrogate pair`},
		{`{"x":"\ud83d\u0041"}`, `$.x`, `half of a UTF-16 surrogate pair`},
		{strings.Repeat("[", MaxDepth+1) + strings.Repeat("]", MaxDepth+1), "", `nesting deeper than 10000 levels`},
	}
	for _, c := range cases {
		// Read member by member (Object, Array, String), and skipped whole
		// (Skip, as raw values are).
		for _, how := range []string{"read", "skip"} {
			s := NewStrict([]byte(c.doc))
			var err error
			if how == "read" {
				err = readAll(s)
			} else {
				err = s.Skip()
			}
			se, ok := err.(*Error)
			if !ok || !se.Rule || !strings.Contains(se.Msg, c.msg) || (c.path != "" && se.Path != c.path) {
				t.Errorf("%s %.60q: got %v (%T), want a rule error at %s: %s", how, c.doc, err, err, c.path, c.msg)
				continue
			}
			if se.Offset <= 0 || se.Offset >= len(c.doc) {
				t.Errorf("%s %.60q: offset %d outside the document", how, c.doc, se.Offset)
			}
		}
		if !strings.Contains(c.msg, "nesting") && !Valid([]byte(c.doc)) {
			t.Errorf("%.60q: a lenient scanner refuses it", c.doc)
		}
	}
	for _, ok := range []string{
		`{"a":{"a":1},"b":{"a":2},"c":[{"a":1},{"a":2}]}`, many + `"z":{"kxxx":1}}`,
		`[1e-400,1.7976931348623157e308,-0.0,123456789012345678901234567890]`,
		`"\ud83d\ude00 é \u00e9"`, `{"":1,"\u0000":2}`, `{"a":1,"A":2,"a ":3}`,
	} {
		if err := readAll(NewStrict([]byte(ok))); err != nil {
			t.Errorf("read %q: %v", ok, err)
		}
		if err := CheckStrict([]byte(ok)); err != nil {
			t.Errorf("CheckStrict(%q): %v", ok, err)
		}
	}
	// A scanner reused with Reset forgets the members of the last document.
	s := NewStrict([]byte(`{"a":{"b":1,`))
	_ = s.Skip()
	s.Reset([]byte(`{"b":1}`))
	if err := readAll(s); err != nil {
		t.Errorf("after Reset: %v", err)
	}
}

// readAll reads a value through Object, Array and String (not Skip).
func readAll(s *Scanner) error {
	switch s.Peek() {
	case Object:
		return s.Object(func(string) error { return readAll(s) })
	case Array:
		return s.Array(func(int) error { return readAll(s) })
	case String:
		_, err := s.String("value")
		return err
	}
	return s.Skip()
}

// stringValues reads data's string values (not keys) in order with the
// careful readers (Object, Array, String).
func stringValues(s *Scanner, out *[]string) error {
	switch s.Peek() {
	case Object:
		return s.Object(func(string) error { return stringValues(s, out) })
	case Array:
		return s.Array(func(int) error { return stringValues(s, out) })
	case String:
		v, err := s.String("v")
		*out = append(*out, v)
		return err
	}
	return s.Skip()
}

// checkStrings: Strings accepts what Skip accepts and gives the string
// values the careful readers read, in order.
func checkStrings(t *testing.T, data []byte) {
	t.Helper()
	var got []string
	err := New(data).Strings(func(raw []byte, escaped bool) {
		if escaped != bytes.Contains(raw, []byte{'\\'}) {
			t.Fatalf("Strings(%q): %q given as escaped=%v", data, raw, escaped)
		}
		q := append(append([]byte{'"'}, raw...), '"')
		v, err := AppendUnescaped(nil, q)
		if err != nil {
			t.Fatalf("Strings(%q) gave %q, which does not unescape: %v", data, raw, err)
		}
		got = append(got, string(v))
	})
	if (err == nil) != (New(data).Skip() == nil) {
		t.Fatalf("Strings(%q) = %v, unlike Skip", data, err)
	}
	if err != nil {
		return
	}
	var want []string
	if err := stringValues(New(data), &want); err != nil {
		t.Fatalf("careful read of %q: %v", data, err)
	}
	if !slices.Equal(got, want) {
		t.Fatalf("Strings(%q) gave %q, want %q", data, got, want)
	}
}

func TestStrings(t *testing.T) {
	for _, c := range []string{`{"a": "x", "b": ["y", {"k": "z"}], "c": 1, "\u0041": "esc\"aped"}`, `"top"`, `["", "\ud83d\ude00", "\n"]`,
		`{"a": }`, `[1, 2,]`, `{"key": "value"`, "\"bad \xff\"", `{}`, `[]`, `12`} {
		checkStrings(t, []byte(c))
	}
}

// TestPlainEnd checks the eight-byte steps of PlainEnd against a byte at a
// time: each byte that ends a run (and the plain bytes next to them in
// value), at every place in a run, from every start.
func TestPlainEnd(t *testing.T) {
	naive := func(d []byte, i int) int {
		for i < len(d) && plain[d[i]] {
			i++
		}
		return i
	}
	fill := []byte{'a', ' ', '!', '#', '[', ']', 0x7f, '~', '0', 'Z', '\\' - 1, '\\' + 1, '"' - 1, '"' + 1}
	ends := []byte{0x00, 0x01, 0x1f, '"', '\\', 0x80, 0xc3, 0xff}
	for _, f := range fill {
		for _, e := range ends {
			for at := 0; at <= 20; at++ {
				d := bytes.Repeat([]byte{f}, 21)
				d[at%21] = e
				if at == 20 {
					d = d[:20] // no end byte: the run ends with the data
				}
				for i := 0; i <= len(d); i++ {
					want := naive(d, i)
					if got := PlainEnd(d, i); got != want {
						t.Fatalf("PlainEnd(%q, %d) = %d, want %d", d, i, got, want)
					}
					if got := PlainEndString(string(d), i); got != want {
						t.Fatalf("PlainEndString(%q, %d) = %d, want %d", d, i, got, want)
					}
				}
			}
		}
	}
}

// TestObjectBorrowed: the same keys as Object, in order, whatever their
// escapes; a key without escapes is the data's own bytes.
func TestObjectBorrowed(t *testing.T) {
	for _, doc := range []string{
		`{}`, `{"a":1,"b":{"c":[1,2]},"d":"x"}`, `{"esc\"aped":1,"\u00e9":2,"plain":3}`, "{\"bad\xff\":1}",
		`{"a":1,"a":2}`, `{"a":`, `{"a":1,}`,
	} {
		keys := func(borrow bool) ([]string, error) {
			s := New([]byte(doc))
			var out []string
			fn := func(k string) error {
				out = append(out, strings.Clone(k))
				return s.Skip()
			}
			var err error
			if borrow {
				err = s.ObjectBorrowed(fn)
			} else {
				err = s.Object(fn)
			}
			return out, err
		}
		want, wantErr := keys(false)
		got, gotErr := keys(true)
		if !slices.Equal(got, want) || (gotErr == nil) != (wantErr == nil) {
			t.Errorf("%s: borrowed keys %q (%v), Object's %q (%v)", doc, got, gotErr, want, wantErr)
		}
	}
	data := []byte(`{"key":1}`)
	s := New(data)
	_ = s.ObjectBorrowed(func(k string) error {
		if unsafe.StringData(k) != &data[2] {
			t.Errorf("key %q is a copy, not the data's bytes", k)
		}
		return s.Skip()
	})
}
