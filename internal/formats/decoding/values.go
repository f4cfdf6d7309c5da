package decoding

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"
)

// ValueReader streams the top-level JSON values of an input: one for a JSON
// file, one a line for JSONL (pretty-printed values spanning lines work too).
// It finds where each value ends without decoding it, so memory holds one
// value at a time however large the input.
type ValueReader struct {
	r    io.Reader
	file string
	buf  []byte // buf[start:end] is unread input
	beg  int
	end  int
	eof  bool
	err  error

	line, col int // position of buf[beg]
	// lines is set once a value was seen whole on one line: the input is
	// JSONL, so a newline inside an unclosed value ends it with an error
	// instead of letting one broken line swallow the rest of the file.
	lines bool
	mark  *readerMark
	// MaxValue bounds one value's size; 0 means no bound.
	MaxValue int
}

type readerMark struct {
	beg, line, col int
	lines          bool
}

// NewValueReader reads values from r; file names the input in errors.
func NewValueReader(r io.Reader, file string) *ValueReader {
	return &ValueReader{r: r, file: file, buf: make([]byte, 0, 64<<10), line: 1, col: 1}
}

// Value is one top-level value and where it starts.
type Value struct {
	Source
	Index int // 0-based count of values before this one
}

// Next returns the next value. The bytes are valid until the next call.
// At the end of input it returns io.EOF. Any other error is an *Error with
// the position: bytes that cannot start or finish a value, or a failed read
// (then the input cannot be read further). A decoder's Next can return
// either as it is.
func (vr *ValueReader) Next(index int) (Value, error) {
	if err := vr.skipSpace(); err != nil {
		return Value{}, err
	}
	if vr.beg == vr.end {
		return Value{}, io.EOF
	}
	n, err := vr.scanValue()
	if err != nil {
		return Value{}, err
	}
	v := vr.take(n, index)
	if v.Line == vr.line {
		vr.lines = true
	}
	return v, nil
}

// Reject places err, met decoding the value as one trace, in the input and
// marks it recoverable: only that trace is rejected.
func (v Value) Reject(err error) *Error {
	e := v.Source.Wrap(err)
	e.Trace = v.Index
	e.Recoverable = true
	return e
}

// take hands out the n bytes at beg as a value and moves past them.
func (vr *ValueReader) take(n, index int) Value {
	v := Value{Source: Source{File: vr.file, Data: vr.buf[vr.beg : vr.beg+n], Line: vr.line, Col: vr.col}, Index: index}
	nl := bytes.Count(v.Data, []byte{'\n'})
	if nl > 0 {
		vr.line += nl
		vr.col = n - bytes.LastIndexByte(v.Data, '\n')
	} else {
		vr.col += n
	}
	vr.beg += n
	return v
}

// PeekByte returns the first byte of the next value without consuming it,
// or io.EOF at the end of input.
func (vr *ValueReader) PeekByte() (byte, error) {
	if err := vr.skipSpace(); err != nil {
		return 0, err
	}
	if vr.beg == vr.end {
		return 0, io.EOF
	}
	return vr.buf[vr.beg], nil
}

// Mark remembers the current position so that Rewind can return to it:
// until Unmark or Rewind the reader keeps every byte from there on.
func (vr *ValueReader) Mark() {
	vr.mark = &readerMark{beg: vr.beg, line: vr.line, col: vr.col, lines: vr.lines}
}

// Unmark forgets the position Mark remembered.
func (vr *ValueReader) Unmark() { vr.mark = nil }

// Rewind returns to the position Mark remembered, forgetting any structural
// error met since (an I/O error stays).
func (vr *ValueReader) Rewind() {
	m := vr.mark
	vr.mark = nil
	vr.beg, vr.line, vr.col, vr.lines = m.beg, m.line, m.col, m.lines
	if e, ok := vr.err.(*Error); ok && !strings.HasPrefix(e.Msg, "read: ") {
		vr.err = nil
	}
}

// EnterArray consumes the '[' that PeekByte just returned, so that
// NextElement reads the array's elements one at a time: a list of a million
// runs then never has to be in memory at once.
func (vr *ValueReader) EnterArray() {
	vr.beg++
	vr.col++
}

// NextElement returns element index of the array entered with EnterArray,
// or io.EOF after its closing ']'. what names the array in errors ("the list
// of runs").
func (vr *ValueReader) NextElement(index int, what string) (Value, error) {
	if err := vr.StartElement(index, what); err != nil {
		return Value{}, err
	}
	return vr.TakeElement(index)
}

// StartElement moves past the separator before element index of the array
// entered with EnterArray, to the element's first byte; io.EOF after the
// closing ']'. Then either TakeElement reads the element, or the caller
// decodes it from Ahead's bytes and moves past it with Consume.
func (vr *ValueReader) StartElement(index int, what string) error {
	if err := vr.skipSpace(); err != nil {
		return err
	}
	if vr.beg == vr.end {
		return vr.errAt(0, "unexpected end of input inside %s", what)
	}
	switch c := vr.buf[vr.beg]; {
	case c == ']':
		vr.beg++
		vr.col++
		return io.EOF
	case index > 0 && c != ',':
		return vr.errAt(0, "expected ',' or ']' after element %d of %s", index-1, what)
	case index > 0:
		vr.beg++
		vr.col++
		if err := vr.skipSpace(); err != nil {
			return err
		}
		if vr.beg == vr.end {
			return vr.errAt(0, "unexpected end of input inside %s", what)
		}
		if vr.buf[vr.beg] == ']' {
			return vr.errAt(0, "expected element %d of %s after ',', not ']'", index, what)
		}
	}
	return nil
}

// TakeElement returns the value at the reader's position (after
// StartElement) as element index.
func (vr *ValueReader) TakeElement(index int) (Value, error) {
	n, err := vr.scanValue()
	if err != nil {
		return Value{}, err
	}
	return vr.take(n, index), nil
}

// Ahead returns the unread input in memory, reading on until it holds at
// least min bytes or the input ends; complete reports that it holds all the
// rest of the input. It lets a decoder parse a value in place, without
// the structural pass of TakeElement: a decoder that runs out of bytes asks
// again with a larger min, or falls back to TakeElement. The bytes are valid
// until the next call that reads.
func (vr *ValueReader) Ahead(min int) (data []byte, complete bool) {
	if vr.MaxValue > 0 && min > vr.MaxValue {
		min = vr.MaxValue
	}
	if vr.end-vr.beg >= min || vr.eof || vr.err != nil {
		return vr.buf[vr.beg:vr.end], vr.eof && vr.err == nil
	}
	// Room for twice min: a refill then moves fewer bytes to the front than
	// it reads after them (with room for min only, every call after a small
	// value moved the whole read-ahead to read those few bytes: quadratic).
	if need := vr.beg - vr.keepFrom() + 2*min; need > cap(vr.buf) {
		vr.moveTo(make([]byte, need))
	}
	for vr.end-vr.beg < min && !vr.eof && vr.err == nil {
		if vr.fill() != nil {
			break
		}
	}
	return vr.buf[vr.beg:vr.end], vr.eof && vr.err == nil
}

// Consume moves past n bytes of a value decoded from Ahead's bytes.
func (vr *ValueReader) Consume(n int) { vr.take(n, 0) }

// skipSpace moves past white space (and a UTF-8 byte order mark at the very
// start), reading more input as needed.
func (vr *ValueReader) skipSpace() error {
	for {
		if vr.beg == vr.end {
			if err := vr.fill(); err != nil {
				return err
			}
			if vr.beg == vr.end {
				return nil
			}
		}
		c := vr.buf[vr.beg]
		if c == '\n' {
			vr.line++
			vr.col = 1
			vr.beg++
			continue
		}
		if c == ' ' || c == '\t' || c == '\r' {
			vr.col++
			vr.beg++
			continue
		}
		if c == 0xEF && vr.line == 1 && vr.col == 1 {
			if vr.end-vr.beg < 3 {
				if err := vr.fill(); err != nil {
					return err
				}
			}
			if vr.end-vr.beg >= 3 && bytes.Equal(vr.buf[vr.beg:vr.beg+3], []byte{0xEF, 0xBB, 0xBF}) {
				vr.beg += 3
				continue
			}
		}
		return nil
	}
}

// keepFrom is the first byte fill must keep.
func (vr *ValueReader) keepFrom() int {
	if vr.mark != nil {
		return vr.mark.beg
	}
	return vr.beg
}

// fill reads more input, keeping buf[beg:end] and growing buf when full.
func (vr *ValueReader) fill() error {
	if vr.err != nil {
		return vr.err
	}
	if vr.eof {
		return nil
	}
	if vr.keepFrom() > 0 {
		vr.moveTo(vr.buf[:cap(vr.buf)])
	}
	if vr.end == cap(vr.buf) {
		if vr.MaxValue > 0 && vr.end >= vr.MaxValue {
			vr.err = &Error{File: vr.file, Line: vr.line, Col: vr.col, Msg: fmt.Sprintf("a JSON value larger than %d bytes", vr.MaxValue), Trace: -1}
			return vr.err
		}
		vr.moveTo(make([]byte, 2*cap(vr.buf)))
	}
	m, err := vr.r.Read(vr.buf[vr.end:cap(vr.buf)])
	vr.end += m
	vr.buf = vr.buf[:vr.end]
	if errors.Is(err, io.EOF) {
		vr.eof = true
	} else if err != nil {
		vr.err = &Error{File: vr.file, Line: vr.line, Col: vr.col, Msg: "read: " + err.Error(), Trace: -1}
		return vr.err
	}
	return nil
}

// moveTo moves the bytes fill must keep to the front of nb (the buffer
// itself, or a larger one), which becomes the buffer.
func (vr *ValueReader) moveTo(nb []byte) {
	keep := vr.keepFrom()
	n := copy(nb, vr.buf[keep:vr.end])
	vr.buf = nb[:n]
	vr.end -= keep
	vr.beg -= keep
	if vr.mark != nil {
		vr.mark.beg -= keep
	}
}

// scanValue returns the length of the value starting at buf[beg], reading
// more input as needed. It checks only structure (brackets and strings); the
// decoder that parses the value reports any other error with its path.
func (vr *ValueReader) scanValue() (int, error) {
	depth := 0
	i := 0 // offset from beg
	var stack []byte
	for {
		for vr.beg+i >= vr.end {
			if vr.eof {
				if depth == 0 && i > 0 {
					return i, nil
				}
				if bytes.IndexByte(vr.buf[vr.beg:vr.beg+i], '\n') >= 0 {
					// Point at the start, where the unclosed value begins,
					// not at the last line of the file.
					return 0, vr.errAt(0, "this JSON value is never closed (end of input reached)")
				}
				return 0, vr.errAt(i, "unexpected end of input inside a JSON value")
			}
			if err := vr.fill(); err != nil {
				return 0, err
			}
		}
		c := vr.buf[vr.beg+i]
		switch c {
		case '\n':
			if depth > 0 && vr.lines {
				return 0, vr.errAt(i, "JSON value not closed at the end of its line")
			}
		case '"':
			j, err := vr.scanString(i)
			if err != nil {
				return 0, err
			}
			i = j
			if depth == 0 {
				return i, nil
			}
			continue
		case '{', '[':
			stack = append(stack, c)
			depth++
		case '}', ']':
			if depth == 0 || (c == '}') != (stack[depth-1] == '{') {
				return 0, vr.errAt(i, "unexpected %q", c)
			}
			depth--
			stack = stack[:depth]
			if depth == 0 {
				return i + 1, nil
			}
		default:
			if depth == 0 {
				// A scalar at top level ends at white space or a delimiter.
				j := i
				for {
					for vr.beg+j >= vr.end && !vr.eof {
						if err := vr.fill(); err != nil {
							return 0, err
						}
					}
					if vr.beg+j >= vr.end {
						return j, nil
					}
					switch vr.buf[vr.beg+j] {
					case ' ', '\t', '\r', '\n', '{', '[', '"', '}', ']', ',':
						if j == i {
							return 0, vr.errAt(i, "unexpected %q", vr.buf[vr.beg+j])
						}
						return j, nil
					}
					j++
				}
			}
		}
		i++
	}
}

// scanString returns the offset just past the string starting at offset i.
func (vr *ValueReader) scanString(i int) (int, error) {
	j := i + 1
	for {
		rest := vr.buf[vr.beg+j : vr.end]
		k := bytes.IndexByte(rest, '"')
		if k < 0 {
			if nl := bytes.IndexByte(rest, '\n'); nl >= 0 {
				return 0, vr.errAt(j+nl, "unterminated string")
			}
			j = vr.end - vr.beg
			if vr.eof {
				return 0, vr.errAt(i, "unterminated string at end of input")
			}
			if err := vr.fill(); err != nil {
				return 0, err
			}
			continue
		}
		// A raw newline cannot be inside a JSON string: stop at it so one
		// broken line of a JSONL file does not swallow the rest.
		if nl := bytes.IndexByte(rest[:k], '\n'); nl >= 0 {
			return 0, vr.errAt(j+nl, "unterminated string")
		}
		q := j + k
		bs := 0
		for p := vr.beg + q - 1; p > vr.beg+i && vr.buf[p] == '\\'; p-- {
			bs++
		}
		if bs%2 == 0 {
			return q + 1, nil
		}
		j = q + 1
	}
}

func (vr *ValueReader) errAt(off int, format string, args ...any) *Error {
	src := Source{File: vr.file, Data: vr.buf[vr.beg:vr.end], Line: vr.line, Col: vr.col}
	e := src.Errorf(off, "", format, args...)
	vr.err = e
	return e
}

// Resync recovers from a structural error so that a line-oriented input
// (JSONL) can go on: it drops the rest of the current line. It reports
// whether there may be more input.
func (vr *ValueReader) Resync() bool {
	if vr.err == nil {
		return true
	}
	if _, ok := vr.err.(*Error); !ok || vr.buf == nil {
		return false
	}
	if e := vr.err.(*Error); strings.HasPrefix(e.Msg, "read: ") {
		return false // an I/O error is not a problem of the content
	}
	vr.err = nil
	for {
		if i := bytes.IndexByte(vr.buf[vr.beg:vr.end], '\n'); i >= 0 {
			vr.beg += i + 1
			vr.line++
			vr.col = 1
			return true
		}
		vr.beg = vr.end
		if vr.eof {
			return false
		}
		if err := vr.fill(); err != nil {
			return false
		}
	}
}
