package policy

import (
	"slices"
	"strconv"
	"strings"
)

// origin records where a value sits in the trace, so that a violation can
// point at it ("3.tool_calls.0.function.name:0-3"). Python's analyzer finds
// these places by object identity after the fact; Lookout carries them along
// with the values instead, which is cheaper and also works for strings.
type origin struct {
	parent *origin
	key    string // member name; "" for a list element or an event
	idx    int    // list index, or event index for a root
	ord    int    // rank among siblings, for sorting ranges in document order
}

func (o *origin) child(key string, ord int) *origin {
	return &origin{parent: o, key: key, ord: ord}
}

func (o *origin) elem(i int) *origin {
	return &origin{parent: o, idx: i, ord: i}
}

// path is the dotted address relative to the event list: "0", "0.content",
// "2.tool_calls.0.function.arguments.to".
func (o *origin) path() string { return string(o.appendPath(make([]byte, 0, 32))) }

func (o *origin) appendPath(b []byte) []byte {
	if o.parent != nil {
		b = o.parent.appendPath(b)
		b = append(b, '.')
	}
	if o.key != "" {
		return append(b, o.key...)
	}
	return strconv.AppendInt(b, int64(o.idx), 10)
}

func (o *origin) depth() int {
	d := 0
	for x := o.parent; x != nil; x = x.parent {
		d++
	}
	return d
}

// within reports whether o is anc or lies inside it.
func (o *origin) within(anc *origin) bool {
	x := o
	for d := o.depth() - anc.depth(); d > 0; d-- {
		x = x.parent
	}
	return o.depth() >= anc.depth() && samePath(x, anc)
}

func sameNode(x, y *origin) bool {
	return x.key == y.key && x.idx == y.idx && x.ord == y.ord
}

// samePath reports whether two origins of equal depth name the same place.
func samePath(x, y *origin) bool {
	for x != nil && y != nil {
		if x == y {
			return true
		}
		if !sameNode(x, y) {
			return false
		}
		x, y = x.parent, y.parent
	}
	return x == nil && y == nil
}

const (
	rankRole    = 1
	rankContent = 2
)

// Field ranks inside events, in the order Python's pydantic models list them,
// so ranges come out in the same document order as Invariant's.
var fieldRank = map[string]int{
	"role": rankRole, "content": rankContent, "tool_calls": 3, "tool_call_id": 4,
	"id": 1, "type": 2, "function": 3,
	"name": 1, "arguments": 2,
	"text": 2, "image_url": 2,
	"tools": 1, "description": 2, "inputSchema": 3, "properties": 1, "items": 2,
	"metadata": 0,
}

// mark is a range: a whole object (start < 0) or characters [start, end) of a
// string, in code points.
type mark struct {
	o          *origin
	start, end int
}

func (m mark) address() string {
	b := m.o.appendPath(make([]byte, 0, 48))
	if m.start >= 0 {
		b = append(b, ':')
		b = strconv.AppendInt(b, int64(m.start), 10)
		b = append(b, '-')
		b = strconv.AppendInt(b, int64(m.end), 10)
	}
	return string(b)
}

// compareOrigins orders origins in document order: a parent before its
// members, members by rank, list elements by index.
func compareOrigins(a, b *origin) int {
	if a == b {
		return 0
	}
	da, db := a.depth(), b.depth()
	x, y := a, b
	for i := da; i > db; i-- {
		x = x.parent
	}
	for i := db; i > da; i-- {
		y = y.parent
	}
	if samePath(x, y) {
		return da - db // one contains the other
	}
	for !samePath(x.parent, y.parent) {
		x, y = x.parent, y.parent
	}
	if x.ord != y.ord {
		return x.ord - y.ord
	}
	if x.key != y.key {
		return strings.Compare(x.key, y.key)
	}
	return x.idx - y.idx
}

// rangeStrings sorts marks in document order, drops duplicates and renders them.
func rangeStrings(marks []mark) []string {
	if len(marks) == 0 {
		return nil
	}
	ms := append([]mark(nil), marks...)
	slices.SortStableFunc(ms, func(x, y mark) int {
		if c := compareOrigins(x.o, y.o); c != 0 {
			return c
		}
		if x.start != y.start {
			return x.start - y.start
		}
		return x.end - y.end
	})
	out := make([]string, 0, len(ms))
	for _, m := range ms {
		s := m.address()
		// equal ranges sort next to each other
		if len(out) == 0 || out[len(out)-1] != s {
			out = append(out, s)
		}
	}
	return out
}
