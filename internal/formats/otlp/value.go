package otlp

import (
	"encoding/json"
	"strings"
	"unsafe"

	"github.com/lookout-dev/lookout/internal/jsonscan"
	"github.com/lookout-dev/lookout/internal/trace"
)

// val is a parsed JSON value that keeps the order of object members and
// the text of every node. The message parsers work on it: payloads come in
// many shapes, and they look at a value from several sides.
type val struct {
	kind jsonscan.Kind
	raw  []byte // the value's JSON text
	str  string // String
	obj  []member
	arr  []*val
	p    *valParser // what parsed it, to parse the JSON a string holds (decoded)
}

type member struct {
	key string
	v   *val
}

// parseVal parses one JSON document; nil when it is not valid JSON.
func parseVal(data []byte) *val { return newValParser().parse(data) }

func newValParser() *valParser { return &valParser{s: jsonscan.New(nil)} }

// parse parses one JSON document; nil when it is not valid JSON. Its
// values share the parser's slabs with those parsed before: one parser
// serves a trace's mapping.
func (p *valParser) parse(data []byte) *val {
	p.s.Reset(data)
	v, err := p.read()
	if err != nil || p.s.End() != nil {
		return nil
	}
	return v
}

// valParser reads a document's values into slabs: a node, and each
// object's members and array's elements, allocated one by one were two
// thirds of the bytes mapping allocates and most of its calls to the
// allocator. Members and elements wait on a stack until their container
// ends, then take a slice of its exact size from a slab.
type valParser struct {
	s      *jsonscan.Scanner
	vals   slab[val]
	mstack []member
	astack []*val
	mslab  slab[member]
	aslab  slab[*val]
}

// slab hands out slices of arrays made a few at a time: each array twice
// as long as the one before, up to maxSlab (most documents are one string).
type slab[T any] struct {
	free []T
	size int // the length of the last array made
}

const maxSlab = 64

// take returns a slice of length n, with no room to grow.
func (s *slab[T]) take(n int) []T {
	if len(s.free) < n {
		s.size = min(max(2*s.size, 2), maxSlab)
		s.free = make([]T, max(n, s.size))
	}
	out := s.free[:n:n]
	s.free = s.free[n:]
	return out
}

func (p *valParser) node(k jsonscan.Kind) *val {
	v := &p.vals.take(1)[0]
	v.kind, v.p = k, p
	return v
}

func (p *valParser) read() (*val, error) {
	s := p.s
	k := s.Peek()
	start := s.Offset()
	v := p.node(k)
	var err error
	switch k {
	case jsonscan.Object:
		base := len(p.mstack)
		err = s.Object(func(key string) error {
			c, err := p.read()
			if err == nil {
				p.mstack = append(p.mstack, member{key, c})
			}
			return err
		})
		if n := len(p.mstack) - base; err == nil && n > 0 {
			v.obj = p.mslab.take(n)
			copy(v.obj, p.mstack[base:])
		}
		clear(p.mstack[base:])
		p.mstack = p.mstack[:base]
	case jsonscan.Array:
		base := len(p.astack)
		err = s.Array(func(int) error {
			c, err := p.read()
			if err == nil {
				p.astack = append(p.astack, c)
			}
			return err
		})
		if n := len(p.astack) - base; err == nil && n > 0 {
			v.arr = p.aslab.take(n)
			copy(v.arr, p.astack[base:])
		}
		clear(p.astack[base:])
		p.astack = p.astack[:base]
	case jsonscan.String:
		v.str, err = s.String("value")
	default:
		err = s.Skip()
	}
	if err != nil {
		return nil, err
	}
	v.raw = s.Data()[start:s.Offset()]
	for len(v.raw) > 0 && isSpace(v.raw[0]) {
		v.raw = v.raw[1:]
	}
	return v, nil
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

// get returns the member key of an object (the last one when repeated), or nil.
func (v *val) get(key string) *val {
	if v == nil || v.kind != jsonscan.Object {
		return nil
	}
	for i := len(v.obj) - 1; i >= 0; i-- {
		if v.obj[i].key == key {
			return v.obj[i].v
		}
	}
	return nil
}

func (v *val) isObj() bool  { return v != nil && v.kind == jsonscan.Object }
func (v *val) isArr() bool  { return v != nil && v.kind == jsonscan.Array }
func (v *val) isStr() bool  { return v != nil && v.kind == jsonscan.String }
func (v *val) isNull() bool { return v == nil || v.kind == jsonscan.Null }

// text returns the string of a string value, and false for anything else.
func (v *val) text() (string, bool) {
	if v.isStr() {
		return v.str, true
	}
	return "", false
}

// getStr returns the string member key, or "".
func (v *val) getStr(key string) string {
	s, _ := v.get(key).text()
	return s
}

// has reports whether an object has the member key.
func (v *val) has(key string) bool { return v.get(key) != nil }

// compact is the value's compact JSON text.
func (v *val) compact() json.RawMessage { return trace.Compact(v.raw) }

// decoded returns the value a string holds when its text is a JSON object
// or array (attributes and Langfuse fields carry JSON as text); otherwise
// the value itself.
func (v *val) decoded() *val {
	if !v.isStr() {
		return v
	}
	t := strings.TrimSpace(v.str)
	if t == "" || t[0] != '{' && t[0] != '[' {
		return v
	}
	if d := v.p.parse(bytesOf(t)); d != nil {
		return d
	}
	return v
}

// bytesOf is the bytes of s, not copied, for parseVal (which only reads
// them, and copies what it keeps): the texts decoded are agents' whole
// message lists.
func bytesOf(s string) []byte { return unsafe.Slice(unsafe.StringData(s), len(s)) }

// decodedAny is decoded, but also turns JSON text holding a scalar (a
// quoted string, a number, true, false, null) into that value.
func (v *val) decodedAny() *val {
	if !v.isStr() {
		return v
	}
	t := strings.TrimSpace(v.str)
	if t == "" {
		return v
	}
	if d := v.p.parse(bytesOf(t)); d != nil {
		return d
	}
	return v
}

// asText renders a value as message text: a string as it is, anything else
// as its compact JSON.
func (v *val) asText() string {
	if v == nil {
		return ""
	}
	if v.isStr() {
		return v.str
	}
	// Invalid UTF-8 (possible only inside strings of raw JSON text) becomes
	// U+FFFD, one for each run of bad bytes, so that the text survives the
	// canonical round trip unchanged.
	return strings.ToValidUTF8(string(v.compact()), "\uFFFD")
}

// objectOf writes attrs as a JSON object, keeping the first position of a
// key and the last value given for it.
func objectOf(attrs []Attr) json.RawMessage {
	if len(attrs) == 0 {
		return nil
	}
	// The object is written into one allocation of its size (keys with room
	// for a few escapes): its values hold the agent's messages, and growing
	// the buffer from a guess copied them again, a quarter of the bytes
	// mapping allocates.
	size := 2
	for _, a := range attrs {
		size += len(a.Key) + 8 + max(len(a.Value), 4)
	}
	b := make([]byte, 0, size)
	b = append(b, '{')
	// Where each key is given last: a map only for a long list, whose
	// pairs looked at one by one would grow with its square.
	var last map[string]int
	if len(attrs) > 16 {
		last = make(map[string]int, len(attrs))
		for i, a := range attrs {
			last[a.Key] = i
		}
	}
	n := 0
	for i, a := range attrs {
		// The first position, the last value.
		if last != nil {
			j := last[a.Key]
			if j < 0 {
				continue // written already
			}
			a.Value = attrs[j].Value
			last[a.Key] = -1
		} else {
			if given(attrs[:i], a.Key) {
				continue
			}
			for _, later := range attrs[i+1:] {
				if later.Key == a.Key {
					a.Value = later.Value
				}
			}
		}
		if n > 0 {
			b = append(b, ',')
		}
		n++
		b = trace.AppendString(b, a.Key)
		b = append(b, ':')
		if len(a.Value) == 0 {
			b = append(b, "null"...)
		} else {
			b = append(b, a.Value...)
		}
	}
	return append(b, '}')
}

// given reports whether attrs name key.
func given(attrs []Attr, key string) bool {
	for _, a := range attrs {
		if a.Key == key {
			return true
		}
	}
	return false
}
