package decoding

import (
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
	"testing/iotest"
)

// readAll drains a ValueReader the way a JSONL decoder does: on a structural
// error it records the error and resyncs at the next line.
func readAll(t *testing.T, in string) (values []string, errs []*Error) {
	t.Helper()
	vr := NewValueReader(strings.NewReader(in), "f.jsonl")
	for i := 0; i < 10000; i++ {
		v, err := vr.Next(i)
		if errors.Is(err, io.EOF) {
			return values, errs
		}
		if err != nil {
			var de *Error
			if !errors.As(err, &de) {
				t.Fatalf("error %v is not a *Error", err)
			}
			errs = append(errs, de)
			if !vr.Resync() {
				return values, errs
			}
			continue
		}
		values = append(values, string(v.Data))
	}
	t.Fatal("reader does not end")
	return nil, nil
}

func TestValueReader(t *testing.T) {
	cases := []struct {
		name      string
		in        string
		values    []string
		errLines  []int
		errSubstr string
	}{
		{name: "jsonl", in: "{\"a\":1}\n[2]\n\"s\"\n", values: []string{`{"a":1}`, `[2]`, `"s"`}},
		{name: "bom and blank lines", in: "\xEF\xBB\xBF\n\n{}\n\n", values: []string{`{}`}},
		{name: "pretty single value", in: "[\n  {\"a\": [1,\n 2]}\n]\n", values: []string{"[\n  {\"a\": [1,\n 2]}\n]"}},
		{name: "unclosed line in jsonl", in: "[1]\n[2, {\"x\": 1}\n[3]\n", values: []string{`[1]`, `[3]`}, errLines: []int{2}, errSubstr: "not closed at the end of its line"},
		{name: "unclosed first line", in: "[1, [2]\n[3]\n{\"a\":4}\n", values: []string{`[3]`, `{"a":4}`}, errLines: []int{1}, errSubstr: "never closed"},
		{name: "unterminated string", in: "[\"a]\n[1]\n", values: []string{`[1]`}, errLines: []int{1}, errSubstr: "unterminated string"},
		{name: "mismatched bracket", in: "[1}\n{}\n", values: []string{`{}`}, errLines: []int{1}, errSubstr: "unexpected '}'"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			values, errs := readAll(t, c.in)
			if strings.Join(values, "|") != strings.Join(c.values, "|") {
				t.Errorf("values %q, want %q", values, c.values)
			}
			if len(errs) != len(c.errLines) {
				t.Fatalf("errors %v, want on lines %v", errs, c.errLines)
			}
			for i, e := range errs {
				if e.Line != c.errLines[i] {
					t.Errorf("error %q on line %d, want %d", e, e.Line, c.errLines[i])
				}
				if !strings.Contains(e.Msg, c.errSubstr) {
					t.Errorf("error %q does not say %q", e.Msg, c.errSubstr)
				}
			}
		})
	}
}

// A JSONL file with many broken lines is read in one pass: each broken line
// costs its own length, not the rest of the file.
func TestValueReaderManyBrokenLines(t *testing.T) {
	var b strings.Builder
	b.WriteString("[0]\n")
	for i := 0; i < 2000; i++ {
		b.WriteString("[1, {\n")
	}
	values, errs := readAll(t, b.String())
	if len(values) != 1 || len(errs) != 2000 {
		t.Fatalf("%d values and %d errors, want 1 and 2000", len(values), len(errs))
	}
	for i, e := range errs {
		if e.Line != i+2 {
			t.Fatalf("error %d on line %d, want %d", i, e.Line, i+2)
		}
	}
}

// elements reads the array at the start of in element by element.
func elements(t *testing.T, r io.Reader) (vals []Value, data []string, err error) {
	t.Helper()
	vr := NewValueReader(r, "a.json")
	c, err := vr.PeekByte()
	if err != nil || c != '[' {
		t.Fatalf("PeekByte = %q, %v", c, err)
	}
	vr.EnterArray()
	for i := 0; ; i++ {
		v, err := vr.NextElement(i, "the list")
		if err == io.EOF {
			return vals, data, nil
		}
		if err != nil {
			return vals, data, err
		}
		vals = append(vals, v)
		data = append(data, string(v.Data))
	}
}

func TestNextElement(t *testing.T) {
	cases := []struct {
		in   string
		want []string
		err  string // "" for none
	}{
		{in: `[]`, want: nil},
		{in: " [ 1 , \"a,]\" ,{\"b\": [1, 2]}\n, [[]] ]", want: []string{"1", `"a,]"`, `{"b": [1, 2]}`, "[[]]"}},
		{in: "[1,\n 2,]", want: []string{"1", "2"}, err: "a.json:2:4: expected element 2 of the list after ',', not ']'"},
		{in: "[1\n 2]", want: []string{"1"}, err: "a.json:2:2: expected ',' or ']' after element 0 of the list"},
		{in: "[1, 2,\n ", want: []string{"1", "2"}, err: "a.json:2:2: unexpected end of input inside the list"},
		{in: "[1, {\"a\": [", want: []string{"1"}, err: "a.json:1:12: unexpected end of input inside a JSON value"},
	}
	for _, tc := range cases {
		_, got, err := elements(t, strings.NewReader(tc.in))
		if strings.Join(got, "|") != strings.Join(tc.want, "|") {
			t.Errorf("%q: elements %q, want %q", tc.in, got, tc.want)
		}
		if msg := fmt.Sprint(err); (tc.err == "" && err != nil) || (tc.err != "" && msg != tc.err) {
			t.Errorf("%q: error %v, want %q", tc.in, err, tc.err)
		}
	}
}

// TestNextElementPlaces: each element knows its line and column, also when
// the input arrives a byte at a time.
func TestNextElementPlaces(t *testing.T) {
	in := "[\n  {\"a\": 1},\n  [2,\n 3], \"x\"\n]"
	vals, _, err := elements(t, iotest.OneByteReader(strings.NewReader(in)))
	if err != nil {
		t.Fatal(err)
	}
	want := [][2]int{{2, 3}, {3, 3}, {4, 6}}
	for i, v := range vals {
		if [2]int{v.Line, v.Col} != want[i] {
			t.Errorf("element %d at %d:%d, want %d:%d", i, v.Line, v.Col, want[i][0], want[i][1])
		}
	}
}

// TestNextElementStreams: reading a large array element by element keeps one
// element in memory, not the array.
func TestNextElementStreams(t *testing.T) {
	elem := `{"traj": [{"role": "user", "content": "` + strings.Repeat("x", 1000) + `"}]}`
	in := "[" + strings.Repeat(elem+",\n", 9999) + elem + "]"
	vr := NewValueReader(strings.NewReader(in), "big.json")
	if _, err := vr.PeekByte(); err != nil {
		t.Fatal(err)
	}
	vr.EnterArray()
	n := 0
	for ; ; n++ {
		v, err := vr.NextElement(n, "the list")
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if string(v.Data) != elem {
			t.Fatalf("element %d = %.40q...", n, v.Data)
		}
	}
	if n != 10000 {
		t.Fatalf("%d elements", n)
	}
	if c := cap(vr.buf); c > 64<<10 {
		t.Errorf("buffer grew to %d bytes for a %d-byte array", c, len(in))
	}
}

// TestRewind: after Mark, reading on across many buffer refills and Rewind
// read the same input again, whole.
func TestRewind(t *testing.T) {
	in := "[" + strings.Repeat(`"abcdefgh",`, 20000) + "1]"
	vr := NewValueReader(strings.NewReader(in), "a.json")
	if _, err := vr.PeekByte(); err != nil {
		t.Fatal(err)
	}
	vr.Mark()
	vr.EnterArray()
	n := 0
	for ; ; n++ {
		_, err := vr.NextElement(n, "the list")
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	if n != 20001 {
		t.Fatalf("%d elements", n)
	}
	vr.Rewind()
	v, err := vr.Next(0)
	if err != nil || string(v.Data) != in || v.Line != 1 || v.Col != 1 {
		t.Fatalf("after Rewind: %d bytes at %d:%d, %v", len(v.Data), v.Line, v.Col, err)
	}
}

// TestValueReaderReadError: a failed read is an *Error naming the file and
// the place reached, so that decoders return Next's errors as they are.
func TestValueReaderReadError(t *testing.T) {
	r := io.MultiReader(strings.NewReader("{\"a\": 1}\n{\"b\""), iotest.ErrReader(errors.New("disk gone")))
	vr := NewValueReader(r, "f.jsonl")
	if _, err := vr.Next(0); err != nil {
		t.Fatalf("first value: %v", err)
	}
	_, err := vr.Next(1)
	var e *Error
	if !errors.As(err, &e) || e.File != "f.jsonl" || e.Line != 2 || !strings.Contains(e.Msg, "disk gone") {
		t.Fatalf("got %#v, want an *Error at f.jsonl line 2 naming the read error", err)
	}
}
