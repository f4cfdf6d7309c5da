package decoding

import (
	"errors"
	"io"
	"strings"
	"testing"
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
