package trace

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/lookout-dev/lookout/internal/jsonscan"
)

// Root is the list an address starts from.
type Root uint8

const (
	RootEvents Root = iota // "messages": Trace.Events, by index
	RootSpans              // "spans": Trace.Spans, by span id
)

// SelectorKind tells what part of the value an address selects.
type SelectorKind uint8

const (
	SelectValue SelectorKind = iota // the whole value (no selector)
	SelectRange                     // :start-end, code points of a string
	SelectLine                      // :L<n>, a line of a string
	SelectBox                       // :bbox-x1,y1,x2,y2, a box in an image
)

// Box is a rectangle in an image given by two corners: (X1, Y1) top left and
// (X2, Y2) bottom right. Explorer uses fractions of the image's size.
type Box struct {
	X1, Y1, X2, Y2 float64
}

// Selector picks part of the value at an address's path. Only the fields of
// its Kind are set.
type Selector struct {
	Kind       SelectorKind
	Start, End int // SelectRange: code points [Start, End)
	Line       int // SelectLine: 0-based line
	Box        Box // SelectBox
}

// Address points into a trace: an event or a span, a path of keys and list
// indices inside it, and an optional selector. The zero Address is
// messages.0. Build one with ParseAddress, EventAddress or SpanAddress.
//
// Addresses are the one syntax Lookout uses to point into a trace (annotations,
// search highlights, rule violations, UI deep links). It is Invariant's
// syntax (see DESIGN.md, "Addresses"):
//
//	messages.2                                   an event (also messages[2])
//	messages.2.tool_calls.0.function.arguments.to  a field inside an event
//	messages.0.content:5-10                      characters [5, 10) of a string
//	messages.2.content:L3                        line 3 (0-based) of a string
//	messages.4.content.1:bbox-10,20,200,80       a box in an image
//	spans.<id>.attributes.<key>                  a span of the tree, and a field in it
//	0.tool_calls.0.function.name:0-3             relative to the event list, as
//	                                             Invariant's rule output writes it
//
// Grammar (what ParseAddress accepts; String prints the canonical subset):
//
//	address  = events | spans .
//	events   = ( "messages" step | digits ) { step } [ ":" selector ] .  (first step: an event index)
//	spans    = "spans" step { step } [ ":" selector ] .                    (first step: a span id)
//	step     = "." name | "[" digits "]" | "[" quoted "]" .
//	name     = one or more characters other than . [ ] : " and control characters .
//	quoted   = a JSON string literal, e.g. "gen_ai.request.model" .
//	selector = digits "-" digits                      (* code points, start ≤ end *)
//	         | "L" digits                             (* a line, 0-based *)
//	         | "bbox-" num "," num "," num "," num .  (* x1,y1,x2,y2; blanks allowed after "," *)
//	num      = digits [ "." digits ] .
//
// `[2]` is the same step as `.2`, and `["a"]` the same as `.a`: a path is a
// list of strings, as in Invariant's json_path. A step made of digits indexes
// a list, or names a key when the value is an object. The canonical (printed)
// form is dotted, and brackets with a JSON string are used only for a step
// that cannot stand after a dot (empty, or holding . [ ] : " , white space or
// characters that are not graphic).
//
// Conventions, checked against Invariant and its Explorer UI:
//   - Character ranges count Unicode code points, end exclusive, as Python
//     string indices do (Invariant's Range). Explorer's JavaScript UI counts
//     UTF-16 code units instead, which differ past U+FFFF (emoji).
//   - Lines are 0-based, as Explorer numbers them (`content:L0` is the first
//     line; it splits the text on "\n"). A "\r" just before the "\n" belongs
//     to the line break, not to the line. A text ending in "\n" has a last,
//     empty line.
//   - A box is two corners, x1,y1 (top left) and x2,y2 (bottom right), as
//     Explorer reads `bbox-x1,y1,x2,y2`; Explorer gives them as fractions of
//     the image's width and height (0 to 1). Lookout keeps the numbers as
//     written, in whatever unit, and requires x1 ≤ x2 and y1 ≤ y2.
//   - The relative form (no "messages." prefix) is what Invariant's rules
//     report; it parses to the same Address as the absolute form. String
//     prints the absolute form and Relative the relative one.
type Address struct {
	Root  Root
	Event int      // RootEvents: index into Trace.Events
	Span  string   // RootSpans: the span's id
	Path  []string // keys and indices inside the event or span, outermost first
	Sel   Selector
}

// EventAddress returns the address of event i, or of the value at path inside it.
func EventAddress(i int, path ...string) Address {
	return Address{Root: RootEvents, Event: i, Path: path}
}

// SpanAddress returns the address of the span with the given id, or of the
// value at path inside it (e.g. "attributes", "gen_ai.request.model").
func SpanAddress(id string, path ...string) Address {
	return Address{Root: RootSpans, Span: id, Path: path}
}

// Equal reports whether a and b are the same address. A nil and an empty
// Path are equal.
func (a Address) Equal(b Address) bool {
	if a.Root != b.Root || a.Sel != b.Sel || len(a.Path) != len(b.Path) {
		return false
	}
	if a.Root == RootSpans && a.Span != b.Span || a.Root != RootSpans && a.Event != b.Event {
		return false
	}
	for i := range a.Path {
		if a.Path[i] != b.Path[i] {
			return false
		}
	}
	return true
}

// String returns the canonical form: dotted, absolute ("messages.2.content:5-10",
// "spans.abc.attributes[\"gen_ai.system\"]"). ParseAddress(a.String()) equals a
// for every address ParseAddress returns.
func (a Address) String() string { return string(a.appendTo(nil, true)) }

// Relative returns the form relative to the event list that Invariant's rules
// report ("2.content:5-10"). Span addresses have no relative form; for them
// Relative returns String().
func (a Address) Relative() string { return string(a.appendTo(nil, false)) }

func (a Address) appendTo(b []byte, absolute bool) []byte {
	if a.Root == RootSpans {
		b = append(b, "spans"...)
		b = appendStep(b, a.Span)
	} else {
		if absolute {
			b = append(b, "messages."...)
		}
		b = strconv.AppendInt(b, int64(a.Event), 10)
	}
	for _, seg := range a.Path {
		b = appendStep(b, seg)
	}
	switch a.Sel.Kind {
	case SelectRange:
		b = append(b, ':')
		b = strconv.AppendInt(b, int64(a.Sel.Start), 10)
		b = append(b, '-')
		b = strconv.AppendInt(b, int64(a.Sel.End), 10)
	case SelectLine:
		b = append(b, ":L"...)
		b = strconv.AppendInt(b, int64(a.Sel.Line), 10)
	case SelectBox:
		b = append(b, ":bbox-"...)
		for i, v := range [4]float64{a.Sel.Box.X1, a.Sel.Box.Y1, a.Sel.Box.X2, a.Sel.Box.Y2} {
			if i > 0 {
				b = append(b, ',')
			}
			b = strconv.AppendFloat(b, v, 'f', -1, 64)
		}
	}
	return b
}

// appendStep writes .seg, or ["seg"] when seg cannot stand after a dot.
func appendStep(b []byte, seg string) []byte {
	if plainStep(seg) {
		b = append(b, '.')
		return append(b, seg...)
	}
	b = append(b, '[')
	b = AppendString(b, seg)
	return append(b, ']')
}

func plainStep(seg string) bool {
	if seg == "" || !utf8.ValidString(seg) {
		return false
	}
	for _, r := range seg {
		if r < utf8.RuneSelf && stopsName(byte(r)) || unicode.IsSpace(r) || !unicode.IsGraphic(r) {
			return false
		}
	}
	return true
}

// stopsName reports whether c ends a name in the dotted form.
func stopsName(c byte) bool {
	switch c {
	case '.', '[', ']', ':', '"':
		return true
	}
	return c < 0x20 || c == 0x7f
}

// AddressError is a syntax error in an address.
type AddressError struct {
	Address string
	Offset  int // byte offset into Address where the problem is
	Msg     string
}

func (e *AddressError) Error() string {
	return fmt.Sprintf("address %q: offset %d: %s", e.Address, e.Offset, e.Msg)
}

// ParseAddress parses an address in any accepted form: dotted or with
// bracket indices (messages[2].tool_calls[0]), absolute or relative to the
// event list, with bracket-quoted keys (["a.b"]). See the grammar above.
func ParseAddress(s string) (Address, error) {
	p := addrParser{s: s}
	a, err := p.parse()
	if err != nil {
		return Address{}, err
	}
	return a, nil
}

type addrParser struct {
	s   string
	pos int
}

func (p *addrParser) errf(at int, format string, args ...any) error {
	return &AddressError{Address: p.s, Offset: at, Msg: fmt.Sprintf(format, args...)}
}

func (p *addrParser) parse() (Address, error) {
	var a Address
	if p.s == "" {
		return a, p.errf(0, "empty address")
	}
	if !utf8.ValidString(p.s) {
		i := 0
		for i < len(p.s) {
			r, size := utf8.DecodeRuneInString(p.s[i:])
			if r == utf8.RuneError && size == 1 {
				break
			}
			i += size
		}
		return a, p.errf(i, "invalid UTF-8")
	}
	root := p.name()
	switch {
	case root == "messages" || root == "spans":
		if p.pos == len(p.s) || p.s[p.pos] != '.' && p.s[p.pos] != '[' {
			return a, p.errf(p.pos, "expected '.' or '[' after %s", root)
		}
		at := p.pos
		seg, quoted, err := p.step()
		if err != nil {
			return a, err
		}
		if root == "spans" {
			if seg == "" {
				return a, p.errf(at, "empty span id")
			}
			a.Root, a.Span = RootSpans, seg
			break
		}
		if quoted || !allDigits(seg) {
			return a, p.errf(at+1, "event index must be a number, not %q", seg)
		}
		if a.Event, err = p.number(at+1, seg); err != nil {
			return a, err
		}
	case root != "" && allDigits(root):
		n, err := p.number(0, root)
		if err != nil {
			return a, err
		}
		a.Event = n
	case root == "":
		return a, p.errf(0, "expected messages, spans or an event index")
	default:
		return a, p.errf(0, "unknown root %q: expected messages, spans or an event index", root)
	}
	for p.pos < len(p.s) {
		switch c := p.s[p.pos]; c {
		case '.', '[':
			seg, _, err := p.step()
			if err != nil {
				return a, err
			}
			a.Path = append(a.Path, seg)
		case ':':
			if err := p.selector(&a.Sel); err != nil {
				return a, err
			}
		default:
			return a, p.errf(p.pos, "unexpected %s; expected '.', '[', ':' or the end", p.char())
		}
	}
	return a, nil
}

// char describes the character at p.pos for an error message.
func (p *addrParser) char() string {
	r, _ := utf8.DecodeRuneInString(p.s[p.pos:])
	return strconv.QuoteRune(r)
}

// name reads a name of the dotted form (possibly empty).
func (p *addrParser) name() string {
	start := p.pos
	for p.pos < len(p.s) && !stopsName(p.s[p.pos]) {
		p.pos++
	}
	return p.s[start:p.pos]
}

// step reads ".name", "[digits]" or "[\"quoted\"]" at p.pos, which holds '.' or '['.
func (p *addrParser) step() (seg string, quoted bool, err error) {
	if p.s[p.pos] == '.' {
		p.pos++
		at := p.pos
		seg = p.name()
		if seg == "" {
			return "", false, p.errf(at, "empty segment")
		}
		return seg, false, nil
	}
	p.pos++ // '['
	at := p.pos
	switch {
	case p.pos < len(p.s) && p.s[p.pos] == '"':
		// Scan only the literal: copying the rest of the address for every
		// quoted step would make long addresses quadratic.
		end := p.pos + 1
		for end < len(p.s) && p.s[end] != '"' {
			if p.s[end] == '\\' {
				end++
			}
			end++
		}
		sc := jsonscan.New([]byte(p.s[p.pos:min(end+1, len(p.s))]))
		seg, err = sc.String("key")
		if err != nil {
			if e, ok := err.(*jsonscan.Error); ok {
				return "", false, p.errf(p.pos+e.Offset, "bad quoted key: %s", e.Msg)
			}
			return "", false, p.errf(p.pos, "bad quoted key: %v", err)
		}
		p.pos += sc.Offset()
		quoted = true
	case p.pos < len(p.s) && isDigit(p.s[p.pos]):
		for p.pos < len(p.s) && isDigit(p.s[p.pos]) {
			p.pos++
		}
		seg = p.s[at:p.pos]
	default:
		return "", false, p.errf(at, "expected a number or a quoted key after '['")
	}
	if p.pos == len(p.s) || p.s[p.pos] != ']' {
		return "", false, p.errf(p.pos, "expected ']'")
	}
	p.pos++
	return seg, quoted, nil
}

// number converts the digits ds found at offset at.
func (p *addrParser) number(at int, ds string) (int, error) {
	n, err := strconv.ParseInt(ds, 10, 0)
	if err != nil || n > maxAddressNumber {
		return 0, p.errf(at, "number %s is too large", ds)
	}
	return int(n), nil
}

// maxAddressNumber bounds indices, offsets and line numbers so that they fit
// an int on every platform.
const maxAddressNumber = 1<<31 - 1

func (p *addrParser) digits() string {
	start := p.pos
	for p.pos < len(p.s) && isDigit(p.s[p.pos]) {
		p.pos++
	}
	return p.s[start:p.pos]
}

// selector reads ":..." at p.pos up to the end of the address.
func (p *addrParser) selector(sel *Selector) error {
	p.pos++ // ':'
	at := p.pos
	rest := p.s[p.pos:]
	switch {
	case strings.HasPrefix(rest, "L"):
		p.pos++
		ds := p.digits()
		if ds == "" {
			return p.errf(p.pos, "expected a line number after 'L'")
		}
		n, err := p.number(p.pos-len(ds), ds)
		if err != nil {
			return err
		}
		*sel = Selector{Kind: SelectLine, Line: n}
	case strings.HasPrefix(rest, "bbox-"):
		p.pos += len("bbox-")
		var v [4]float64
		for i := range v {
			if i > 0 {
				if p.pos == len(p.s) || p.s[p.pos] != ',' {
					return p.errf(p.pos, "expected ',' and 4 numbers x1,y1,x2,y2 in a box")
				}
				p.pos++
				for p.pos < len(p.s) && (p.s[p.pos] == ' ' || p.s[p.pos] == '\t') {
					p.pos++
				}
			}
			start := p.pos
			if p.digits() == "" {
				return p.errf(p.pos, "expected a number in a box")
			}
			if p.pos < len(p.s) && p.s[p.pos] == '.' {
				p.pos++
				if p.digits() == "" {
					return p.errf(p.pos, "expected digits after '.'")
				}
			}
			f, err := strconv.ParseFloat(p.s[start:p.pos], 64)
			if err != nil {
				return p.errf(start, "number %s is too large", p.s[start:p.pos])
			}
			v[i] = f
		}
		b := Box{v[0], v[1], v[2], v[3]}
		if b.X2 < b.X1 || b.Y2 < b.Y1 {
			return p.errf(at, "box corner x2,y2 (%g,%g) is not below and right of x1,y1 (%g,%g)", b.X2, b.Y2, b.X1, b.Y1)
		}
		*sel = Selector{Kind: SelectBox, Box: b}
	case rest != "" && isDigit(rest[0]):
		ds := p.digits()
		start, err := p.number(at, ds)
		if err != nil {
			return err
		}
		if p.pos == len(p.s) || p.s[p.pos] != '-' {
			return p.errf(p.pos, "expected '-' after the range start")
		}
		p.pos++
		endAt := p.pos
		ds = p.digits()
		if ds == "" {
			return p.errf(p.pos, "expected the range end after '-'")
		}
		end, err := p.number(endAt, ds)
		if err != nil {
			return err
		}
		if end < start {
			return p.errf(endAt, "range end %d is before its start %d", end, start)
		}
		*sel = Selector{Kind: SelectRange, Start: start, End: end}
	default:
		return p.errf(at, "expected a range start-end, a line L<n> or a box bbox-x1,y1,x2,y2 after ':'")
	}
	if p.pos < len(p.s) {
		return p.errf(p.pos, "unexpected %s after the selector", p.char())
	}
	return nil
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

func allDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if !isDigit(s[i]) {
			return false
		}
	}
	return s != ""
}

// Resolved is what an address points at.
type Resolved struct {
	// Value is the JSON value at the address's path, as it appears in the
	// canonical JSON of the event or span: inside the arguments object for
	// tool-call arguments, inside the attributes object for span attributes.
	// For a box it is the image (a content part, or an image string).
	Value json.RawMessage
	// Text is the selected text for a range or a line.
	Text string
	// Start and End are the selection in code points: the range itself, or
	// the line without its line break. For a line of a value that is not a
	// string they count in the value's indented JSON (see Resolve).
	Start, End int
	// Box is the selected box, for a box selector.
	Box Box
}

// Resolve returns what a points at in t. It encodes only the event or span
// concerned, then walks the path through its canonical JSON: a step indexes a
// list when it is a number, and names a member of an object otherwise. When
// an object has no member named by a step but has one named by it and the
// following steps joined with dots, that member is taken (the longest such
// key), so that
// spans.s1.attributes.gen_ai.system finds the attribute "gen_ai.system" (the
// canonical form quotes such keys).
//
// A range needs a string. A line takes a line of a string; of any other
// value it takes a line of its JSON indented by two spaces, which is how
// Explorer shows such values. A box needs an image: a content part with an
// image (type "image", "image_url" or "input_image", or an "image_url"
// member) or a string (Explorer's screenshot content).
func (t *Trace) Resolve(a Address) (Resolved, error) {
	var doc []byte
	switch a.Root {
	case RootEvents:
		if a.Event < 0 || a.Event >= len(t.Events) {
			return Resolved{}, fmt.Errorf("%s: no such event (the trace has %s)", a.prefix(0), count(len(t.Events), "event"))
		}
		doc = AppendEvent(nil, &t.Events[a.Event])
	case RootSpans:
		i := -1
		for j := range t.Spans {
			if t.Spans[j].ID == a.Span {
				i = j
				break
			}
		}
		if i < 0 {
			return Resolved{}, fmt.Errorf("%s: no span with this id (the trace has %s)", a.prefix(0), count(len(t.Spans), "span"))
		}
		doc = appendSpan(nil, &t.Spans[i])
	default:
		return Resolved{}, fmt.Errorf("address has an unknown root (%d)", a.Root)
	}
	v, err := walk(doc, a)
	if err != nil {
		return Resolved{}, err
	}
	r := Resolved{Value: v}
	kind := jsonscan.New(v).Peek()
	switch a.Sel.Kind {
	case SelectValue:
	case SelectRange:
		if a.Sel.Start < 0 || a.Sel.End < a.Sel.Start {
			return Resolved{}, fmt.Errorf("%s: bad range", a)
		}
		if kind != jsonscan.String {
			return Resolved{}, fmt.Errorf("%s: a character range needs a string, not %s", a, jsonscan.Article(kind))
		}
		s, err := jsonscan.New(v).String("value")
		if err != nil {
			return Resolved{}, fmt.Errorf("%s: %v", a, err)
		}
		n := utf8.RuneCountInString(s)
		if a.Sel.End > n {
			return Resolved{}, fmt.Errorf("%s: range ends past the end of the string (%s)", a, count(n, "code point"))
		}
		bs, be := byteOffset(s, a.Sel.Start), byteOffset(s, a.Sel.End)
		r.Text, r.Start, r.End = s[bs:be], a.Sel.Start, a.Sel.End
	case SelectLine:
		var s string
		if kind == jsonscan.String {
			if s, err = jsonscan.New(v).String("value"); err != nil {
				return Resolved{}, fmt.Errorf("%s: %v", a, err)
			}
		} else {
			if s, err = indentJSON(v); err != nil {
				return Resolved{}, fmt.Errorf("%s: %v", a, err)
			}
		}
		text, start, end, lines := line(s, a.Sel.Line)
		if a.Sel.Line < 0 || a.Sel.Line >= lines {
			what := "the string"
			if kind != jsonscan.String {
				what = "its indented JSON"
			}
			return Resolved{}, fmt.Errorf("%s: no line %d (%s has %s)", a, a.Sel.Line, what, count(lines, "line"))
		}
		r.Text, r.Start, r.End = text, start, end
	case SelectBox:
		if !isImage(v, kind) {
			return Resolved{}, fmt.Errorf("%s: a box needs an image part or an image string, not %s", a, jsonscan.Article(kind))
		}
		r.Box = a.Sel.Box
	default:
		return Resolved{}, fmt.Errorf("%s: unknown selector kind %d", a, a.Sel.Kind)
	}
	return r, nil
}

// prefix is the address of the first n steps of a's path, without selector.
func (a Address) prefix(n int) string {
	b := a
	b.Path, b.Sel = a.Path[:n], Selector{}
	return b.String()
}

type member struct {
	key string
	raw []byte
}

// walk follows a's path from doc, the JSON of the event or span.
func walk(doc []byte, a Address) ([]byte, error) {
	v := doc
	for i := 0; i < len(a.Path); i++ {
		seg := a.Path[i]
		s := jsonscan.New(v)
		switch kind := s.Peek(); kind {
		case jsonscan.Object:
			var members []member
			err := s.Object(func(key string) error {
				raw, err := s.Raw()
				members = append(members, member{key, raw})
				return err
			})
			if err != nil {
				return nil, fmt.Errorf("%s: %v", a.prefix(i), err)
			}
			found, ok := lookup(members, seg)
			if !ok {
				var n int
				if found, n = lookupJoined(members, a.Path[i:]); n == 0 {
					return nil, fmt.Errorf("%s: no such field (%s %s)", a.prefix(i+1), a.prefix(i), describeKeys(members))
				}
				i += n - 1
			}
			v = found
		case jsonscan.Array:
			if !allDigits(seg) {
				return nil, fmt.Errorf("%s: index must be a number (%s is an array)", a.prefix(i+1), a.prefix(i))
			}
			want, err := strconv.ParseInt(seg, 10, 0)
			if err != nil {
				want = -1 // too large: surely out of range
			}
			var found []byte
			n := 0
			err = s.Array(func(k int) error {
				n++
				if int64(k) == want {
					raw, err := s.Raw()
					found = raw
					return err
				}
				return s.Skip()
			})
			if err != nil {
				return nil, fmt.Errorf("%s: %v", a.prefix(i), err)
			}
			if found == nil {
				return nil, fmt.Errorf("%s: index out of range (%s has %s)", a.prefix(i+1), a.prefix(i), count(n, "element"))
			}
			v = found
		default:
			return nil, fmt.Errorf("%s: no such field (%s is %s)", a.prefix(i+1), a.prefix(i), jsonscan.Article(kind))
		}
	}
	return v, nil
}

// lookup returns the value of key; with duplicate keys the last one wins, as
// in encoding/json and Python.
func lookup(members []member, key string) ([]byte, bool) {
	for i := len(members) - 1; i >= 0; i-- {
		if members[i].key == key {
			return members[i].raw, true
		}
	}
	return nil, false
}

// lookupJoined finds the member whose key is the first n steps of path
// joined with dots, for the largest n ≥ 2; n is 0 when there is none. It
// costs the length of the keys, not of the path.
func lookupJoined(members []member, path []string) (raw []byte, n int) {
	for i := len(members) - 1; i >= 0; i-- {
		k := members[i].key
		if !strings.Contains(k, ".") {
			continue
		}
		for j, seg := range path {
			if !strings.HasPrefix(k, seg) {
				break
			}
			k = k[len(seg):]
			if k == "" {
				if j > 0 && j+1 > n {
					raw, n = members[i].raw, j+1
				}
				break
			}
			if k[0] != '.' {
				break
			}
			k = k[1:]
		}
	}
	return raw, n
}

func describeKeys(members []member) string {
	if len(members) == 0 {
		return "is an empty object"
	}
	const show = 10
	var b strings.Builder
	b.WriteString("has ")
	for i, m := range members {
		if i == show {
			fmt.Fprintf(&b, ", … (%d in all)", len(members))
			break
		}
		if i > 0 {
			b.WriteString(", ")
		}
		if plainStep(m.key) {
			b.WriteString(m.key)
		} else {
			b.Write(AppendString(nil, m.key))
		}
	}
	return b.String()
}

func count(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return strconv.Itoa(n) + " " + what + "s"
}

// byteOffset returns the byte offset of code point n of s (len(s) at the end).
func byteOffset(s string, n int) int {
	if n <= 0 {
		return 0
	}
	k := 0
	for i := range s {
		if k == n {
			return i
		}
		k++
	}
	return len(s)
}

// line returns line n (0-based) of s without its line break, its extent in
// code points, and the number of lines of s. Lines end at "\n"; a "\r"
// before the "\n" is part of the break.
func line(s string, n int) (text string, start, end, lines int) {
	lines = strings.Count(s, "\n") + 1
	if n < 0 || n >= lines {
		return "", 0, 0, lines
	}
	bs := 0
	for k := 0; k < n; k++ {
		bs += strings.IndexByte(s[bs:], '\n') + 1
	}
	be := len(s)
	if i := strings.IndexByte(s[bs:], '\n'); i >= 0 {
		be = bs + i
		if be > bs && s[be-1] == '\r' {
			be--
		}
	}
	start = utf8.RuneCountInString(s[:bs])
	return s[bs:be], start, start + utf8.RuneCountInString(s[bs:be]), lines
}

// indentJSON returns v indented by two spaces, as JSON.stringify(v, null, 2)
// shows it.
func indentJSON(v []byte) (string, error) {
	var b bytes.Buffer
	if err := json.Indent(&b, v, "", "  "); err != nil {
		return "", err
	}
	return b.String(), nil
}

// isImage reports whether v, of kind k, can hold a box: a string (Explorer's
// screenshot content) or a content part with an image.
func isImage(v []byte, k jsonscan.Kind) bool {
	switch k {
	case jsonscan.String:
		return true
	case jsonscan.Object:
		s := jsonscan.New(v)
		image := false
		err := s.Object(func(key string) error {
			switch key {
			case "image_url", "image":
				image = true
			case "type":
				if s.Peek() == jsonscan.String {
					t, err := s.String("type")
					if t == "image" || t == "image_url" || t == "input_image" {
						image = true
					}
					return err
				}
			}
			return s.Skip()
		})
		return err == nil && image
	}
	return false
}
