package pyre

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"
)

func background() context.Context { return context.Background() }

// find returns FindAll's texts joined by "|".
func find(t *testing.T, r *Regexp, s string) string {
	t.Helper()
	_, texts, err := r.FindAll(background, s, -1)
	if err != nil {
		t.Fatalf("%s on %q: %v", r, s, err)
	}
	return strings.Join(texts, "|")
}

// TestSemantics: Python's meaning, whichever engine runs.
func TestSemantics(t *testing.T) {
	cases := []struct {
		pattern, subject string
		match            bool
		find             string
	}{
		{`\d+`, "x ٣٤ 5", false, "٣٤|5"},            // \d is Unicode, as in Python
		{`^abc$`, "abc\n", true, "abc"},             // $ matches before a final newline
		{`^(?!Peter$).*$`, "Peter", false, ""},      // lookahead (backtracking engine)
		{`^(?!Peter$).*$`, "Petra", true, "Petra"},  //
		{`(\w)\1`, "abccd", false, "cc"},            // backreference
		{`\bcat\b`, "a cat! concat", false, "cat"},  // word boundary
		{`(?P<w>o)(?P=w)`, "foo", false, "oo"},      // Python named groups
		{`(?i)HELLO`, "hello there", true, "hello"}, // inline flags
		{`a{,2}`, "aaa", true, "aa|a|"},             // {,n} is {0,n}
		{`\w+`, "héllo wörld", true, "héllo|wörld"}, // \w is Unicode
		{`x\Z`, "x\n", false, ""},                   // \Z is the very end
		{`.`, "\n", false, ""},                      // . does not match newline
		{`[\w-]+`, "a-b_c d", true, "a-b_c|d"},      // '-' after a class escape
		{`[\d-z]+`, "1-z9 y", true, "1-z9"},         //
		{`(?m)^b$`, "a\nb\nc", false, "b"},          // multiline anchors
		{`\s+`, "a\u00a0\u2003b", false, "\u00a0\u2003"},
		{`[^]a]+`, "]ab]", false, "b"}, // ']' first in a class is literal
		{`\u00e9`, "café", false, "é"},
	}
	for _, c := range cases {
		r, err := Compile(c.pattern)
		if err != nil {
			t.Errorf("%s: %v", c.pattern, err)
			continue
		}
		_, _, ok, err := r.Match(background, c.subject)
		if err != nil {
			t.Errorf("%s: %v", c.pattern, err)
			continue
		}
		if got := find(t, r, c.subject); ok != c.match || got != c.find {
			t.Errorf("%s on %q: match %v find %q, want %v %q", c.pattern, c.subject, ok, got, c.match, c.find)
		}
	}
}

// TestEnginesAgree runs each pattern that the Go engine takes through the
// backtracking engine as well: the translation must not change a match.
func TestEnginesAgree(t *testing.T) {
	patterns := []string{`\d+`, `\w+@\w+\.com`, `[\w-]+`, `[\d-z]+`, `(?i)héllo`, `\s+`, `\W+`, `\S+`,
		`a{,2}b`, `x\Z`, `^a.c$`, `(?s)a.c`, `[^\d\s]+`, `\u00e9+`, `\x41`, `(?P<n>ab)+`}
	subjects := []string{"", "abc", "a\nc", "aéc", "1-z9 y", "bob@mail.com and al@x.com", "x\n", "x",
		"AAAb ab b", "٣٤ 5\u00a0six", "ééé e", "A[:", "HÉLLO héllo", "a c\n", "abab ab"}
	for _, p := range patterns {
		r, err := Compile(p)
		if err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		if r.re == nil {
			t.Errorf("%s: not translated to Go's syntax", p)
			continue
		}
		bt := &Regexp{src: p} // no Go engine: every search backtracks
		for _, s := range subjects {
			gs, ge, gok, gerr := r.Match(background, s)
			bs, be, bok, berr := bt.Match(background, s)
			if gs != bs || ge != be || gok != bok || gerr != nil || berr != nil {
				t.Errorf("%s: Match(%q) = %d %d %v %v with Go, %d %d %v %v backtracking", p, s, gs, ge, gok, gerr, bs, be, bok, berr)
			}
			gsp, gt, gerr := r.FindAll(background, s, -1)
			bsp, bt2, berr := bt.FindAll(background, s, -1)
			if !reflect.DeepEqual(gsp, bsp) || !reflect.DeepEqual(gt, bt2) || gerr != nil || berr != nil {
				t.Errorf("%s: FindAll(%q) = %v %q %v with Go, %v %q %v backtracking", p, s, gsp, gt, gerr, bsp, bt2, berr)
			}
		}
	}
}

// TestCodePointSpans: spans count code points, as Python str indices do,
// in both engines; limit bounds FindAll.
func TestCodePointSpans(t *testing.T) {
	for _, p := range []string{`é+`, `(?<=a)é+`} {
		r, err := Compile(p)
		if err != nil {
			t.Fatal(err)
		}
		spans, texts, err := r.FindAll(background, "aéé bé aé", -1)
		if err != nil {
			t.Fatal(err)
		}
		want := [][2]int{{1, 3}, {8, 9}}
		wantTexts := []string{"éé", "é"}
		if p == `é+` {
			want = [][2]int{{1, 3}, {5, 6}, {8, 9}}
			wantTexts = []string{"éé", "é", "é"}
		}
		if !reflect.DeepEqual(spans, want) || !reflect.DeepEqual(texts, wantTexts) {
			t.Errorf("%s: spans %v texts %q, want %v %q", p, spans, texts, want, wantTexts)
		}
		if spans, _, _ := r.FindAll(background, "aéé bé aé", 1); len(spans) != 1 {
			t.Errorf("%s: limit 1 gave %v", p, spans)
		}
	}
	r, _ := Compile(`\w+`)
	if start, end, ok, _ := r.Match(background, "héllo wörld"); !ok || start != 0 || end != 5 {
		t.Errorf("Match = %d %d %v, want 0 5 true", start, end, ok)
	}
}

func TestCompileErrors(t *testing.T) {
	for _, p := range []string{`(`, `a)`, `[a`, `(?P<n>a)(?P=m)`, `a{2,1}`} {
		_, err := Compile(p)
		if err == nil {
			t.Errorf("%s: no error", p)
			continue
		}
		if strings.HasPrefix(err.Error(), "error parsing regexp") || err.Error() == "" {
			t.Errorf("%s: error %q", p, err)
		}
	}
	a, err := Compile(`ab+`)
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := Compile(`ab+`); a != b {
		t.Error("a pattern compiled twice is not shared")
	}
	if a.String() != `ab+` {
		t.Errorf("String() = %q", a.String())
	}
}

func TestUsesBacktracking(t *testing.T) {
	cases := []struct {
		pattern, subject string
		want             bool
	}{
		{`\d+`, "abc", false},
		{`(?=a)a`, "abc", true}, // lookahead: only the backtracking engine has it
		{`a*`, "abc", true},     // may match empty: FindAll backtracks to keep Python's empty matches
		{`abc$`, "abc", false},  //
		{`abc$`, "abc\n", true}, // '$' before a final newline
		{`(?m)abc$`, "abc\n", false},
	}
	for _, c := range cases {
		r, err := Compile(c.pattern)
		if err != nil {
			t.Fatal(err)
		}
		if got := r.UsesBacktracking(c.subject); got != c.want {
			t.Errorf("%s on %q: UsesBacktracking = %v", c.pattern, c.subject, got)
		}
	}
}

// TestContextStopsBacktracking: each 'x' makes the engine try 2^22 ways
// before failing, so only the context ends the search.
func TestContextStopsBacktracking(t *testing.T) {
	r, err := Compile(`x(?!(a+)+$)`)
	if err != nil {
		t.Fatal(err)
	}
	s := strings.Repeat("x"+strings.Repeat("a", 22)+"!", 60)
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, _, err = r.FindAll(func() context.Context { return ctx }, s, -1)
	if !errors.Is(err, ErrStopped) {
		t.Fatalf("FindAll: want ErrStopped, got %v", err)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("a 100 ms deadline stopped the search after %v", d)
	}
	done, cancelDone := context.WithCancel(context.Background())
	cancelDone()
	if _, _, _, err := r.Match(func() context.Context { return done }, s); !errors.Is(err, ErrStopped) {
		t.Errorf("Match under a cancelled context: want ErrStopped, got %v", err)
	}
	// the Go engine never asks for a context
	g, _ := Compile(`a+`)
	if _, _, err := g.FindAll(func() context.Context { panic("context asked for") }, s, -1); err != nil {
		t.Error(err)
	}
}
