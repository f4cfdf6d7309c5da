// Package jsonscan is a small pull parser over a JSON document held in memory.
//
// The format decoders use it instead of encoding/json for two reasons: it is
// several times faster on string-heavy chat traces (one pass, no reflection),
// and every error it reports carries the byte offset and the JSON path of the
// value that broke a rule, which is what users need to fix a file.
package jsonscan

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
	"unsafe"
)

// Kind is the type of the next JSON value.
type Kind byte

const (
	Invalid Kind = iota
	Null
	Bool
	Number
	String
	Array
	Object
)

func (k Kind) String() string {
	switch k {
	case Null:
		return "null"
	case Bool:
		return "boolean"
	case Number:
		return "number"
	case String:
		return "string"
	case Array:
		return "array"
	case Object:
		return "object"
	}
	return "invalid JSON"
}

// MaxDepth bounds nesting so hostile input cannot make us recurse without end.
const MaxDepth = 10000

// The rule at the door. Lookout refuses input that it would store but then
// read back otherwise than the sender meant, or that later readers (search,
// evaluation, the explorer, PostgreSQL) would refuse. A strict scanner
// (NewStrict) holds every value it reads or skips to it, in the same single
// pass:
//
//   - an object names each member once (last-wins would keep one value
//     while other JSON readers keep the other);
//   - a number fits a 64-bit float (1e400 would read back as no value);
//   - a string is valid UTF-8 with no unpaired UTF-16 surrogate escape
//     (such bytes were replaced or stored as they came);
//   - nesting is at most MaxDepth levels (as in every scanner).
//
// Each breach is an *Error with Rule set, at its place.

// Error is a decoding error with its place in the document.
type Error struct {
	Offset int    // byte offset into the scanned data
	Path   string // JSON path such as $[3].messages[2].content
	Msg    string
	// Rule: the JSON is well-formed but breaks the rule at the door (or
	// nests deeper than MaxDepth); otherwise the error is in the syntax or
	// is the caller's own.
	Rule bool
}

func (e *Error) Error() string { return fmt.Sprintf("offset %d: %s: %s", e.Offset, e.Path, e.Msg) }

type pathElem struct {
	key   string
	index int // -1 for object keys
}

// Scanner reads one JSON document.
type Scanner struct {
	data   []byte
	pos    int
	path   []pathElem
	root   string // path prefix, "$" unless set with SetRoot
	depth  int
	strict bool
	keys   keyStack // strict: the members of the objects being read
	// strings, when set, is given each string value (not object key) that
	// Skip passes, as written between its quotes, and whether it holds an
	// escape (see Strings).
	strings func(raw []byte, escaped bool)
	escaped bool // the last string skipString read held an escape
}

// New returns a scanner over data.
func New(data []byte) *Scanner { return &Scanner{data: data, root: "$"} }

// NewStrict returns a scanner over data that holds it to the rule at the
// door (see above): for input from outside, before it is stored.
func NewStrict(data []byte) *Scanner { return &Scanner{data: data, root: "$", strict: true} }

// Reset reuses s for new data.
func (s *Scanner) Reset(data []byte) {
	s.data, s.pos, s.path, s.depth = data, 0, s.path[:0], 0
	s.keys.reset()
}

// Strict reports whether s holds its input to the rule at the door.
func (s *Scanner) Strict() bool { return s.strict }

// keyStack holds the member names of the objects being read, innermost
// last, to find a name given twice: by comparison while an object has few
// members, by a set past that (so a hostile object of many members costs
// linear time).
type keyStack struct {
	keys   []string
	frames []keyFrame
}

type keyFrame struct {
	base int // the object's names are keys[base:]
	set  map[string]struct{}
}

const keySetAbove = 16

func (k *keyStack) reset() { k.keys, k.frames = k.keys[:0], k.frames[:0] }

func (k *keyStack) push() { k.frames = append(k.frames, keyFrame{base: len(k.keys)}) }

func (k *keyStack) pop() {
	f := k.frames[len(k.frames)-1]
	clear(k.keys[f.base:]) // let the names go
	k.keys, k.frames = k.keys[:f.base], k.frames[:len(k.frames)-1]
}

// add records key in the innermost object and reports whether it was
// there already.
func (k *keyStack) add(key string) (dup bool) {
	f := &k.frames[len(k.frames)-1]
	if f.set != nil {
		if _, dup := f.set[key]; dup {
			return true
		}
		f.set[key] = struct{}{}
		return false
	}
	for _, x := range k.keys[f.base:] {
		if x == key {
			return true
		}
	}
	k.keys = append(k.keys, key)
	if len(k.keys)-f.base > keySetAbove {
		f.set = make(map[string]struct{}, 2*keySetAbove)
		for _, x := range k.keys[f.base:] {
			f.set[x] = struct{}{}
		}
	}
	return false
}

// ruleError is a breach of the rule at the door at offset.
func (s *Scanner) ruleError(offset int, format string, args ...any) *Error {
	e := s.ErrorAt(offset, format, args...)
	e.Rule = true
	return e
}

// SetRoot sets the path printed for the document itself, e.g. "$[4]" when
// the document is the fifth element of an outer array read piecewise.
func (s *Scanner) SetRoot(root string) { s.root = root }

// Data is the scanned document.
func (s *Scanner) Data() []byte { return s.data }

// Offset is the current byte offset.
func (s *Scanner) Offset() int { return s.pos }

// Seek moves to byte offset off: the start of a value seen before, to read
// it again, or the end of one, to go on after it.
func (s *Scanner) Seek(off int) { s.pos = off }

func (s *Scanner) skipSpace() {
	for s.pos < len(s.data) {
		switch s.data[s.pos] {
		case ' ', '\t', '\n', '\r':
			s.pos++
		default:
			return
		}
	}
}

// Peek returns the kind of the next value without consuming it.
func (s *Scanner) Peek() Kind {
	s.skipSpace()
	if s.pos >= len(s.data) {
		return Invalid
	}
	switch c := s.data[s.pos]; c {
	case 'n':
		return Null
	case 't', 'f':
		return Bool
	case '"':
		return String
	case '[':
		return Array
	case '{':
		return Object
	default:
		if c == '-' || (c >= '0' && c <= '9') {
			return Number
		}
	}
	return Invalid
}

// Path is the JSON path of the value being read. A path of more than
// 64 steps is shortened in the middle ("...(9950 steps)..."), so that an
// error about deep nesting stays readable.
func (s *Scanner) Path() string {
	var b strings.Builder
	b.WriteString(s.root)
	for i, p := range s.path {
		if n := len(s.path); n > 64 && i >= 32 && i < n-16 {
			if i == 32 {
				fmt.Fprintf(&b, "...(%d steps)...", n-48)
			}
			continue
		}
		if p.index >= 0 {
			b.WriteByte('[')
			b.WriteString(strconv.Itoa(p.index))
			b.WriteByte(']')
		} else {
			AppendPathKey(&b, p.key)
		}
	}
	return b.String()
}

// AppendPathKey writes .key, or ["key"] when key is not a plain identifier.
func AppendPathKey(b *strings.Builder, key string) {
	plain := key != ""
	for i, r := range key {
		if !(r == '_' || r == '$' || (r >= 'a' && r <= 'z') || (r >= 'A' && r <= 'Z') || (i > 0 && r >= '0' && r <= '9')) {
			plain = false
			break
		}
	}
	if plain {
		b.WriteByte('.')
		b.WriteString(key)
		return
	}
	b.WriteByte('[')
	b.WriteString(strconv.Quote(key))
	b.WriteByte(']')
}

// Errorf returns an error at the current offset and path.
func (s *Scanner) Errorf(format string, args ...any) *Error {
	return &Error{Offset: s.pos, Path: s.Path(), Msg: fmt.Sprintf(format, args...)}
}

// ErrorAt returns an error at the given offset with the current path.
func (s *Scanner) ErrorAt(offset int, format string, args ...any) *Error {
	return &Error{Offset: offset, Path: s.Path(), Msg: fmt.Sprintf(format, args...)}
}

func (s *Scanner) syntax(what string) *Error {
	s.skipSpace()
	if s.pos >= len(s.data) {
		return s.Errorf("unexpected end of JSON input, expected %s", what)
	}
	return s.Errorf("invalid character %s, expected %s", quoteChar(s.data[s.pos]), what)
}

func quoteChar(c byte) string {
	if c == '\'' {
		return `'\''`
	}
	if c == '"' {
		return `'"'`
	}
	if c < 0x20 || c >= 0x7f {
		return fmt.Sprintf("0x%02x", c)
	}
	return "'" + string(c) + "'"
}

// Expect fails unless the next value has kind k; it names what was found.
func (s *Scanner) Expect(k Kind, what string) error {
	got := s.Peek()
	if got == k {
		return nil
	}
	if got == Invalid {
		return s.syntax("a JSON value")
	}
	return s.Errorf("%s must be %s, not %s", what, Article(k), Article(got))
}

// Article names a kind of value with its article, for error messages:
// "an object", "a string", "null", "invalid JSON".
func Article(k Kind) string {
	switch k {
	case Array, Object:
		return "an " + k.String()
	case Null, Invalid:
		return k.String()
	}
	return "a " + k.String()
}

// Object reads an object, calling fn for each key with the scanner placed on
// the value; fn must consume the value (Skip when it is not wanted).
func (s *Scanner) Object(fn func(key string) error) error {
	return s.object(fn, false)
}

// ObjectBorrowed is Object for a caller that reads the keys and lets them
// go: a key without escapes is the scanner's data itself, not a copy, so
// it is valid only while that data is unchanged. Walkers that look at
// every key of every span's attributes (usage) spent most of their
// allocations on keys they dropped at once.
func (s *Scanner) ObjectBorrowed(fn func(key string) error) error {
	return s.object(fn, true)
}

func (s *Scanner) object(fn func(key string) error, borrow bool) error {
	if err := s.Expect(Object, "value"); err != nil {
		return err
	}
	if s.depth >= MaxDepth {
		return s.ruleError(s.pos, "nesting deeper than %d levels", MaxDepth)
	}
	s.depth++
	s.pos++
	s.skipSpace()
	if s.pos < len(s.data) && s.data[s.pos] == '}' {
		s.pos++
		s.depth--
		return nil
	}
	s.path = append(s.path, pathElem{index: -1})
	top := len(s.path) - 1
	if s.strict {
		s.keys.push()
	}
	for {
		s.skipSpace()
		if s.pos >= len(s.data) || s.data[s.pos] != '"' {
			return s.syntax("an object key")
		}
		keyAt := s.pos
		key, err := s.readStringBorrowed(borrow)
		if err != nil {
			// A bad key is the object's error, not a member's.
			s.path = s.path[:top]
			if e, ok := err.(*Error); ok {
				e.Path = s.Path()
			}
			return err
		}
		s.skipSpace()
		if s.pos >= len(s.data) || s.data[s.pos] != ':' {
			return s.syntax("':' after object key")
		}
		s.pos++
		s.path[top].key = key
		if s.strict && s.keys.add(key) {
			return s.ruleError(keyAt, "member %q is given twice", key)
		}
		s.skipSpace()
		start := s.pos
		if err := fn(key); err != nil {
			return err
		}
		if s.pos == start {
			return s.Errorf("internal error: value of %q not consumed", key)
		}
		s.skipSpace()
		if s.pos < len(s.data) {
			switch s.data[s.pos] {
			case ',':
				s.pos++
				continue
			case '}':
				s.pos++
				s.path = s.path[:top]
				s.depth--
				if s.strict {
					s.keys.pop()
				}
				return nil
			}
		}
		return s.syntax("',' or '}' after object value")
	}
}

// Array reads an array, calling fn for each element (which fn must consume).
func (s *Scanner) Array(fn func(i int) error) error {
	if err := s.Expect(Array, "value"); err != nil {
		return err
	}
	if s.depth >= MaxDepth {
		return s.ruleError(s.pos, "nesting deeper than %d levels", MaxDepth)
	}
	s.depth++
	s.pos++
	s.skipSpace()
	if s.pos < len(s.data) && s.data[s.pos] == ']' {
		s.pos++
		s.depth--
		return nil
	}
	s.path = append(s.path, pathElem{})
	top := len(s.path) - 1
	for i := 0; ; i++ {
		s.path[top].index = i
		s.skipSpace()
		start := s.pos
		if err := fn(i); err != nil {
			return err
		}
		if s.pos == start {
			return s.Errorf("internal error: array element not consumed")
		}
		s.skipSpace()
		if s.pos < len(s.data) {
			switch s.data[s.pos] {
			case ',':
				s.pos++
				continue
			case ']':
				s.pos++
				s.path = s.path[:top]
				s.depth--
				return nil
			}
		}
		return s.syntax("',' or ']' after array element")
	}
}

// String reads a string value.
func (s *Scanner) String(what string) (string, error) {
	if err := s.Expect(String, what); err != nil {
		return "", err
	}
	return s.readString()
}

// readString reads the string at s.pos (which holds '"').
func (s *Scanner) readString() (string, error) { return s.readStringBorrowed(false) }

// readStringBorrowed is readString; borrow: a string without escapes or
// invalid UTF-8 is the data's bytes, not a copy.
func (s *Scanner) readStringBorrowed(borrow bool) (string, error) {
	start := s.pos + 1
	i := start
	ascii := true
	for i < len(s.data) {
		c := s.data[i]
		if plain[c] {
			i = PlainEnd(s.data, i+1)
			continue
		}
		if c == '"' {
			b := s.data[start:i]
			if !ascii && !utf8.Valid(b) {
				if s.strict {
					return "", s.badUTF8(start, b)
				}
				s.pos = i + 1
				return ValidUTF8(b), nil
			}
			s.pos = i + 1
			if borrow {
				return unsafe.String(unsafe.SliceData(b), len(b)), nil
			}
			return string(b), nil
		}
		if c == '\\' {
			return s.readEscaped(start, i)
		}
		if c < 0x20 {
			s.pos = i
			return "", s.Errorf("invalid control character 0x%02x in string", c)
		}
		if c >= 0x80 {
			ascii = false
		}
		i++
	}
	s.pos = len(s.data)
	return "", s.Errorf("unexpected end of JSON input in string")
}

// plain marks the bytes that a string can hold as they are and that need no
// second look: printable ASCII but the quote and the backslash. A lookup per
// byte is faster than the comparisons it replaces, in the loops that walk
// every byte of every string.
var plain = func() (t [256]bool) {
	for c := 0x20; c < 0x80; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

// PlainEnd returns the offset of the first byte at or after i in d that a
// JSON string cannot hold as it is (a quote, a backslash, a control
// character) or that needs a second look (from 0x80: UTF-8), len(d) when
// there is none: eight bytes a step while none is, then byte by byte.
// Agents' strings are long runs of plain text (messages and payloads
// skipped, read or written whole), where a table lookup a byte was most of
// the time of the loops that walk them.
func PlainEnd(d []byte, i int) int {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	for ; i+8 <= len(d); i += 8 {
		x := binary.LittleEndian.Uint64(d[i:])
		// A byte below 0x20, a quote, a backslash, or one from 0x80 (the
		// high bit of x): each test sets a byte's high bit where it holds.
		ctl := (x - 0x20*ones) &^ x
		q := x ^ '"'*ones
		bs := x ^ '\\'*ones
		if ((ctl|(q-ones)&^q|(bs-ones)&^bs)|x)&highs != 0 {
			break
		}
	}
	for i < len(d) && plain[d[i]] {
		i++
	}
	return i
}

// PlainEndString is PlainEnd of a string.
func PlainEndString(s string, i int) int {
	return PlainEnd(unsafe.Slice(unsafe.StringData(s), len(s)), i)
}

// closingQuote returns the offset of the quote that ends the string holding
// offset i (past any escaped quotes), or len(data) when there is none.
func closingQuote(data []byte, i int) int {
	for {
		k := bytes.IndexByte(data[i:], '"')
		if k < 0 {
			return len(data)
		}
		q := i + k
		bs := 0
		for p := q - 1; p >= 0 && data[p] == '\\'; p-- {
			bs++
		}
		if bs%2 == 0 {
			return q
		}
		i = q + 1
	}
}

func (s *Scanner) readEscaped(start, i int) (string, error) {
	// Unescaping never lengthens a string, so the bytes up to the closing
	// quote are enough room: one allocation, no regrowing for long texts.
	buf, err := s.unescape(make([]byte, closingQuote(s.data, i)-start), start, i)
	if err != nil {
		return "", err
	}
	if !utf8.Valid(buf) {
		return ValidUTF8(buf), nil
	}
	// buf is ours alone and never written again: hand it over rather than
	// copy it (halves the memory escaped strings take).
	return unsafe.String(unsafe.SliceData(buf), len(buf)), nil
}

// AppendUnescaped appends the text of the JSON string quoted (quotes
// included; well-formed, as a non-strict scanner reads it) to dst, as
// String would return it: for a caller that keeps the text no longer
// than its buffer, without an allocation a string.
func AppendUnescaped(dst, quoted []byte) ([]byte, error) {
	s := Scanner{data: quoted, root: "$"}
	if len(quoted) < 2 || quoted[0] != '"' {
		return dst, s.syntax("a string")
	}
	n := len(dst)
	dst = slices.Grow(dst, len(quoted))
	buf, err := s.unescape(dst[n:n+len(quoted)], 1, 1)
	if err != nil {
		return dst, err
	}
	if s.pos != len(quoted) {
		return dst, s.syntax("the end of the string")
	}
	dst = dst[:n+len(buf)]
	if !utf8.Valid(buf) {
		dst = append(dst[:n], ValidUTF8(buf)...)
	}
	return dst, nil
}

// unescape reads the string starting at offset start, whose bytes up to
// offset i hold no escape, into buf (room enough: the bytes up to the
// closing quote), and returns what buf holds then. Only a strict scanner
// checks the UTF-8.
func (s *Scanner) unescape(buf []byte, start, i int) ([]byte, error) {
	n := copy(buf, s.data[start:i])
	for i < len(s.data) {
		c := s.data[i]
		switch {
		case c == '"':
			buf = buf[:n]
			if s.strict && !utf8.Valid(buf) {
				// Escapes are valid UTF-8: the bad byte is in the input.
				return nil, s.badUTF8(start, s.data[start:i])
			}
			s.pos = i + 1
			return buf, nil
		case c < 0x20:
			s.pos = i
			return nil, s.Errorf("invalid control character 0x%02x in string", c)
		case c != '\\':
			// Copy the run up to the next quote or backslash in one go.
			j := i + 1
			for j < len(s.data) && (plain[s.data[j]] || s.data[j] >= 0x80) {
				j++
			}
			n += copy(buf[n:], s.data[i:j])
			i = j
			continue
		}
		if i+1 >= len(s.data) {
			break
		}
		e := s.data[i+1]
		switch e {
		case '"', '\\', '/':
			buf[n] = e
			n++
		case 'b':
			buf[n] = '\b'
			n++
		case 'f':
			buf[n] = '\f'
			n++
		case 'n':
			buf[n] = '\n'
			n++
		case 'r':
			buf[n] = '\r'
			n++
		case 't':
			buf[n] = '\t'
			n++
		case 'u':
			r, ok := hex4(s.data, i+2)
			if !ok {
				s.pos = i
				return nil, s.Errorf(`invalid \u escape in string`)
			}
			i += 6
			if utf16.IsSurrogate(r) {
				if r2, ok := hex4(s.data, i+2); ok && i+1 < len(s.data) && s.data[i] == '\\' && s.data[i+1] == 'u' {
					if dec := utf16.DecodeRune(r, r2); dec != utf8.RuneError {
						n += utf8.EncodeRune(buf[n:], dec)
						i += 6
						continue
					}
				}
				if s.strict {
					return nil, s.loneSurrogate(i-6, r)
				}
				r = utf8.RuneError
			}
			n += utf8.EncodeRune(buf[n:], r)
			continue
		default:
			s.pos = i
			return nil, s.Errorf("invalid escape %s in string", quoteChar(e))
		}
		i += 2
	}
	s.pos = len(s.data)
	return nil, s.Errorf("unexpected end of JSON input in string")
}

// badUTF8 is the rule error for the string bytes b, which start at offset
// start and are not valid UTF-8: it points at the first bad byte.
func (s *Scanner) badUTF8(start int, b []byte) *Error {
	i := 0
	for i < len(b) {
		r, size := utf8.DecodeRune(b[i:])
		if r == utf8.RuneError && size == 1 {
			break
		}
		i += size
	}
	s.pos = start + i
	return s.ruleError(start+i, "invalid UTF-8 (byte 0x%02x) in string", b[min(i, len(b)-1)])
}

// loneSurrogate is the rule error for the escape of r at offset: half of a
// UTF-16 surrogate pair, which no UTF-8 text can hold.
func (s *Scanner) loneSurrogate(offset int, r rune) *Error {
	s.pos = offset
	return s.ruleError(offset, `\u%04x in string is half of a UTF-16 surrogate pair, which UTF-8 text cannot hold`, r)
}

// ValidUTF8 returns b as a string with each invalid byte replaced by
// U+FFFD, as the scanner reads strings (and encoding/json does), so that
// text taken from raw JSON reads the same as the string it would decode to.
func ValidUTF8(b []byte) string {
	if utf8.Valid(b) {
		return string(b)
	}
	out := make([]byte, 0, len(b)+8)
	for i := 0; i < len(b); {
		r, size := utf8.DecodeRune(b[i:])
		if r == utf8.RuneError && size == 1 {
			out = append(out, "\uFFFD"...)
		} else {
			out = append(out, b[i:i+size]...)
		}
		i += size
	}
	return string(out)
}

func hex4(b []byte, i int) (rune, bool) {
	if i+4 > len(b) {
		return 0, false
	}
	var r rune
	for _, c := range b[i : i+4] {
		switch {
		case c >= '0' && c <= '9':
			c -= '0'
		case c >= 'a' && c <= 'f':
			c = c - 'a' + 10
		case c >= 'A' && c <= 'F':
			c = c - 'A' + 10
		default:
			return 0, false
		}
		r = r<<4 | rune(c)
	}
	return r, true
}

// Bool reads true or false.
func (s *Scanner) Bool(what string) (bool, error) {
	if err := s.Expect(Bool, what); err != nil {
		return false, err
	}
	if s.lit("true") {
		return true, nil
	}
	if s.lit("false") {
		return false, nil
	}
	return false, s.syntax("true or false")
}

// Null consumes null.
func (s *Scanner) Null() error {
	if s.lit("null") {
		return nil
	}
	return s.syntax("null")
}

func (s *Scanner) lit(word string) bool {
	if len(s.data)-s.pos >= len(word) && string(s.data[s.pos:s.pos+len(word)]) == word {
		s.pos += len(word)
		return true
	}
	return false
}

// NumberText reads a number and returns its text as written.
func (s *Scanner) NumberText(what string) (string, error) {
	if err := s.Expect(Number, what); err != nil {
		return "", err
	}
	b, err := s.scanNumber()
	return string(b), err
}

func (s *Scanner) scanNumber() ([]byte, error) {
	start := s.pos
	i := s.pos
	d := s.data
	if i < len(d) && d[i] == '-' {
		i++
	}
	digits := func() int {
		n := 0
		for i < len(d) && d[i] >= '0' && d[i] <= '9' {
			i++
			n++
		}
		return n
	}
	if i < len(d) && d[i] == '0' {
		i++
	} else if digits() == 0 {
		s.pos = i
		return nil, s.syntax("a digit")
	}
	if i < len(d) && d[i] == '.' {
		i++
		if digits() == 0 {
			s.pos = i
			return nil, s.syntax("a digit after '.'")
		}
	}
	exp := false
	if i < len(d) && (d[i] == 'e' || d[i] == 'E') {
		exp = true
		i++
		if i < len(d) && (d[i] == '+' || d[i] == '-') {
			i++
		}
		if digits() == 0 {
			s.pos = i
			return nil, s.syntax("a digit in exponent")
		}
	}
	num := d[start:i]
	// Only an exponent or 309 digits reach past a float64: the others need
	// no parse.
	if s.strict && (exp || len(num) > 308) {
		if _, err := strconv.ParseFloat(string(num), 64); err != nil {
			s.pos = start
			return nil, s.ruleError(start, "number %s is out of the range of a 64-bit float", abbreviate(num))
		}
	}
	s.pos = i
	return num, nil
}

// abbreviate shortens a long number for messages.
func abbreviate(num []byte) string {
	if len(num) > 40 {
		return string(num[:20]) + "..." + string(num[len(num)-12:])
	}
	return string(num)
}

// Int64 reads an integer number; fractions, exponents and overflow are errors.
func (s *Scanner) Int64(what string) (int64, error) {
	if err := s.Expect(Number, what); err != nil {
		return 0, err
	}
	start := s.pos
	b, err := s.scanNumber()
	if err != nil {
		return 0, err
	}
	n, perr := strconv.ParseInt(string(b), 10, 64)
	if perr != nil {
		return 0, s.ErrorAt(start, "%s must be an integer, not %s", what, b)
	}
	return n, nil
}

// Float64 reads a number as float64.
func (s *Scanner) Float64(what string) (float64, error) {
	if err := s.Expect(Number, what); err != nil {
		return 0, err
	}
	start := s.pos
	b, err := s.scanNumber()
	if err != nil {
		return 0, err
	}
	f, perr := strconv.ParseFloat(string(b), 64)
	if perr != nil {
		return 0, s.ErrorAt(start, "%s: number %s out of range", what, b)
	}
	return f, nil
}

// Raw validates the next value and returns its bytes (aliasing the input).
func (s *Scanner) Raw() (json.RawMessage, error) {
	s.skipSpace()
	start := s.pos
	if err := s.Skip(); err != nil {
		return nil, err
	}
	return s.data[start:s.pos], nil
}

// Strings validates the next value as Skip does and calls fn with each
// string value in it (not object keys), in the order written: its bytes
// between the quotes, and whether they hold an escape. One pass instead of
// a validation and a walk: the search index reads every string of every
// span so. fn may have been called when it fails.
func (s *Scanner) Strings(fn func(raw []byte, escaped bool)) error {
	s.strings = fn
	defer func() { s.strings = nil }()
	return s.Skip()
}

// Skip validates and discards the next value.
func (s *Scanner) Skip() error {
	s.skipSpace()
	start := s.pos
	frames, keys := len(s.keys.frames), len(s.keys.keys)
	if s.skipFast(s.depth) {
		return nil
	}
	// skipFast keeps no path; the careful pass says where the value fails.
	s.pos = start
	s.keys.frames, s.keys.keys = s.keys.frames[:frames], s.keys.keys[:keys]
	return s.skip()
}

// skipFast consumes one well-formed value, depth levels deep, without
// building its keys or path (skip built every key of a skipped object: a
// third of the time of walking agent metadata). It accepts what skip
// accepts; on false the position is anywhere.
func (s *Scanner) skipFast(depth int) bool {
	s.skipSpace()
	if s.pos >= len(s.data) {
		return false
	}
	switch c := s.data[s.pos]; c {
	case '"':
		start := s.pos
		if s.skipString() != nil {
			return false
		}
		if s.strings != nil {
			s.strings(s.data[start+1:s.pos-1], s.escaped)
		}
		return true
	case '{', '[':
		if depth >= MaxDepth {
			return false
		}
		end := byte(']')
		if c == '{' {
			end = '}'
		}
		s.pos++
		s.skipSpace()
		if s.pos < len(s.data) && s.data[s.pos] == end {
			s.pos++
			return true
		}
		keys := s.strict && c == '{'
		if keys {
			s.keys.push()
		}
		for {
			if c == '{' {
				s.skipSpace()
				keyAt := s.pos
				if s.pos >= len(s.data) || s.data[s.pos] != '"' || s.skipString() != nil {
					return false
				}
				if keys && s.keys.add(s.rawKey(keyAt)) {
					return false
				}
				s.skipSpace()
				if s.pos >= len(s.data) || s.data[s.pos] != ':' {
					return false
				}
				s.pos++
			}
			if !s.skipFast(depth + 1) {
				return false
			}
			s.skipSpace()
			if s.pos >= len(s.data) {
				return false
			}
			switch s.data[s.pos] {
			case ',':
				s.pos++
			case end:
				s.pos++
				if keys {
					s.keys.pop()
				}
				return true
			default:
				return false
			}
		}
	case 'n':
		return s.lit("null")
	case 't':
		return s.lit("true")
	case 'f':
		return s.lit("false")
	}
	_, err := s.scanNumber()
	return err == nil
}

func (s *Scanner) skip() error {
	switch s.Peek() {
	case String:
		return s.skipString()
	case Number:
		_, err := s.scanNumber()
		return err
	case Bool:
		_, err := s.Bool("value")
		return err
	case Null:
		return s.Null()
	case Array:
		return s.Array(func(int) error { return s.skip() })
	case Object:
		return s.Object(func(string) error { return s.skip() })
	}
	return s.syntax("a JSON value")
}

// rawKey is the object key whose string starts at offset at, which
// skipString has just read: the input's bytes when it has no escape (no
// copy: the scanner holds the input anyway), else the decoded name.
func (s *Scanner) rawKey(at int) string {
	raw := s.data[at+1 : s.pos-1]
	if bytes.IndexByte(raw, '\\') < 0 {
		return unsafe.String(unsafe.SliceData(raw), len(raw))
	}
	end := s.pos
	s.pos = at
	key, err := s.readString()
	s.pos = end
	if err != nil {
		return string(raw)
	}
	return key
}

// skipString validates a string without building it.
func (s *Scanner) skipString() error {
	i := s.pos + 1
	d := s.data
	s.escaped = false
	for i < len(d) {
		c := d[i]
		if plain[c] {
			i = PlainEnd(d, i+1)
			continue
		}
		switch {
		case c == '"':
			s.pos = i + 1
			return nil
		case c == '\\':
			s.escaped = true
			if i+1 >= len(d) {
				i = len(d)
				continue
			}
			switch d[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i += 2
			case 'u':
				r, ok := hex4(d, i+2)
				if !ok {
					s.pos = i
					return s.Errorf(`invalid \u escape in string`)
				}
				if s.strict && utf16.IsSurrogate(r) {
					// Only a high half followed by a low half makes a rune.
					r2, ok := hex4(d, i+8)
					if !ok || r >= 0xdc00 || d[i+6] != '\\' || d[i+7] != 'u' || utf16.DecodeRune(r, r2) == utf8.RuneError {
						return s.loneSurrogate(i, r)
					}
					i += 6
				}
				i += 6
			default:
				s.pos = i
				return s.Errorf("invalid escape %s in string", quoteChar(d[i+1]))
			}
		case c < 0x20:
			s.pos = i
			return s.Errorf("invalid control character 0x%02x in string", c)
		case c >= 0x80 && s.strict:
			r, size := utf8.DecodeRune(d[i:])
			if r == utf8.RuneError && size == 1 {
				s.pos = i
				return s.ruleError(i, "invalid UTF-8 (byte 0x%02x) in string", c)
			}
			i += size
		default:
			i++
		}
	}
	s.pos = len(d)
	return s.Errorf("unexpected end of JSON input in string")
}

// End fails unless only white space remains.
func (s *Scanner) End() error {
	s.skipSpace()
	if s.pos < len(s.data) {
		return s.Errorf("invalid character %s after top-level value", quoteChar(s.data[s.pos]))
	}
	return nil
}

// LineCol converts a byte offset in data to a 1-based line and column
// (column counted in bytes, as compilers do).
func LineCol(data []byte, offset int) (line, col int) {
	if offset > len(data) {
		offset = len(data)
	}
	line, last := 1, -1
	for i := 0; i < offset; i++ {
		if data[i] == '\n' {
			line++
			last = i
		}
	}
	return line, offset - last
}

// Valid reports whether data is one well-formed JSON value.
func Valid(data []byte) bool {
	s := New(data)
	return s.Skip() == nil && s.End() == nil
}

// CheckStrict returns the first error of data as one JSON value held to
// the rule at the door, or nil.
func CheckStrict(data []byte) error {
	s := NewStrict(data)
	if err := s.Skip(); err != nil {
		return err
	}
	return s.End()
}

// AppendCompact appends the valid JSON value raw to dst with insignificant
// white space removed. Callers keep raw values compact so that JSONL output
// never spans lines.
func AppendCompact(dst, raw []byte) []byte {
	start := 0
	for i := 0; i < len(raw); {
		switch raw[i] {
		case '"':
			// Jump past the closing quote: strings hold no insignificant space.
			i = closingQuote(raw, i+1) + 1
		case ' ', '\t', '\n', '\r':
			dst = append(dst, raw[start:i]...)
			for i < len(raw) && (raw[i] == ' ' || raw[i] == '\t' || raw[i] == '\n' || raw[i] == '\r') {
				i++
			}
			start = i
		default:
			i++
		}
	}
	return append(dst, raw[start:]...)
}
