package policy

import (
	"math"
	"strconv"
	"strings"
	"unicode/utf8"
)

// vkind is the dynamic type of a value.
type vkind uint8

const (
	// kUnknown is the value of an expression that depends on a variable not
	// bound yet. Evaluation is three-valued (true, false, unknown) the way
	// Invariant's is: an unknown operand makes most results unknown, but
	// 'x or True' is true and 'x and False' is false.
	kUnknown vkind = iota
	kNop           // the result of name := value
	kNone
	kBool
	kInt
	kFloat
	kStr
	kList
	kDict
	kObj  // an object with attributes: message, tool call, tool, chunk, detector record, ...
	kFunc // something callable
)

// value is a policy value. It is a small struct rather than an interface so
// that numbers, booleans and strings never allocate.
type value struct {
	K vkind
	n uint64 // bool, int64 bits or float64 bits
	s string
	p any // *origin for strings from the trace, *List, *Dict, object, callable
}

var (
	unknown = value{K: kUnknown}
	nop     = value{K: kNop}
	none    = value{K: kNone}
	vTrue   = value{K: kBool, n: 1}
	vFalse  = value{K: kBool}
)

func vBool(b bool) value {
	if b {
		return vTrue
	}
	return vFalse
}
func vInt(i int64) value     { return value{K: kInt, n: uint64(i)} }
func vFloat(f float64) value { return value{K: kFloat, n: math.Float64bits(f)} }
func vStr(s string) value    { return value{K: kStr, s: s} }
func vStrAt(s string, o *origin) value {
	if o == nil {
		return value{K: kStr, s: s}
	}
	return value{K: kStr, s: s, p: o}
}
func vList(items []value) value { return value{K: kList, p: &listVal{Items: items}} }
func vObj(o object) value       { return value{K: kObj, p: o} }

func (v value) b() bool        { return v.n != 0 }
func (v value) i() int64       { return int64(v.n) }
func (v value) f() float64     { return math.Float64frombits(v.n) }
func (v value) list() *listVal { l, _ := v.p.(*listVal); return l }
func (v value) dict() *dictVal { d, _ := v.p.(*dictVal); return d }
func (v value) obj() object    { o, _ := v.p.(object); return o }
func (v value) isTrue() bool   { return v.K == kBool && v.n != 0 }
func (v value) isFalse() bool {
	return v.K == kBool && v.n == 0
}

// origin of a string (or list/dict/object) taken from the trace; nil otherwise.
func (v value) origin() *origin {
	switch x := v.p.(type) {
	case *origin:
		return x
	case *listVal:
		return x.org
	case *dictVal:
		return x.org
	case object:
		return x.org()
	}
	return nil
}

func (v value) num() (float64, bool) {
	switch v.K {
	case kInt:
		return float64(v.i()), true
	case kFloat:
		return v.f(), true
	case kBool:
		if v.b() {
			return 1, true
		}
		return 0, true
	}
	return 0, false
}

// listVal is a list (or tuple) value.
type listVal struct {
	Items []value
	Tuple bool
	org   *origin
}

// dictVal is a dictionary with string keys in insertion order, as JSON objects
// and policy object literals have.
type dictVal struct {
	keys []string
	vals []value
	idx  map[string]int
	org  *origin
}

func newDict(n int) *dictVal { return &dictVal{keys: make([]string, 0, n), vals: make([]value, 0, n)} }

func (d *dictVal) get(k string) (value, bool) {
	if d.idx != nil {
		if i, ok := d.idx[k]; ok {
			return d.vals[i], true
		}
		return value{}, false
	}
	for i, x := range d.keys {
		if x == k {
			return d.vals[i], true
		}
	}
	return value{}, false
}

func (d *dictVal) set(k string, v value) {
	if d.idx != nil {
		if i, ok := d.idx[k]; ok {
			d.vals[i] = v
			return
		}
	} else {
		for i, x := range d.keys {
			if x == k {
				d.vals[i] = v
				return
			}
		}
	}
	d.keys = append(d.keys, k)
	d.vals = append(d.vals, v)
	if d.idx != nil {
		d.idx[k] = len(d.keys) - 1
	} else if len(d.keys) > 12 {
		d.idx = make(map[string]int, len(d.keys))
		for i, x := range d.keys {
			d.idx[x] = i
		}
	}
}

func (d *dictVal) len() int { return len(d.keys) }

// truthy is Python truthiness.
func truthy(v value) bool {
	switch v.K {
	case kNone, kUnknown, kNop:
		return false
	case kBool, kInt:
		return v.n != 0
	case kFloat:
		return v.f() != 0
	case kStr:
		return v.s != ""
	case kList:
		return len(v.list().Items) > 0
	case kDict:
		return v.dict().len() > 0
	case kObj:
		if l, ok := v.p.(interface{ length() int }); ok {
			return l.length() > 0
		}
	}
	return true
}

// typeName is the Python type name used by typed variables (x: str) to
// select values.
func typeName(v value) string {
	switch v.K {
	case kNone:
		return "NoneType"
	case kBool:
		return "bool"
	case kInt:
		return "int"
	case kFloat:
		return "float"
	case kStr:
		return "str"
	case kList:
		if v.list().Tuple {
			return "tuple"
		}
		return "list"
	case kDict:
		return "dict"
	case kObj:
		return v.obj().typeName()
	case kFunc:
		return "function"
	}
	return "unknown"
}

// equal is Python ==.
func equal(a, b value) bool {
	if an, ok := a.num(); ok {
		if bn, ok := b.num(); ok {
			if a.K == kInt && b.K == kInt {
				return a.i() == b.i()
			}
			return an == bn
		}
		return false
	}
	switch a.K {
	case kNone:
		return b.K == kNone
	case kStr:
		return b.K == kStr && a.s == b.s
	case kList:
		if b.K != kList {
			return false
		}
		x, y := a.list().Items, b.list().Items
		if len(x) != len(y) {
			return false
		}
		for i := range x {
			if !equal(x[i], y[i]) {
				return false
			}
		}
		return true
	case kDict:
		if b.K != kDict {
			return false
		}
		x, y := a.dict(), b.dict()
		if x.len() != y.len() {
			return false
		}
		for i, k := range x.keys {
			w, ok := y.get(k)
			if !ok || !equal(x.vals[i], w) {
				return false
			}
		}
		return true
	case kObj, kFunc:
		return (b.K == kObj || b.K == kFunc) && a.p == b.p
	}
	return false
}

// pyStr renders v as Python's str() does.
func pyStr(v value) string {
	if v.K == kStr {
		return v.s
	}
	var b strings.Builder
	writeRepr(&b, v, 0)
	return b.String()
}

// pyRepr renders v as Python's repr() does.
func pyRepr(v value) string {
	var b strings.Builder
	writeRepr(&b, v, 0)
	return b.String()
}

func writeRepr(b *strings.Builder, v value, depth int) {
	if depth > 50 {
		b.WriteString("...")
		return
	}
	switch v.K {
	case kUnknown:
		b.WriteString("<unknown>")
	case kNop:
		b.WriteString("<nop>")
	case kNone:
		b.WriteString("None")
	case kBool:
		if v.b() {
			b.WriteString("True")
		} else {
			b.WriteString("False")
		}
	case kInt:
		b.WriteString(strconv.FormatInt(v.i(), 10))
	case kFloat:
		b.WriteString(formatFloat(v.f()))
	case kStr:
		b.WriteString(quotePy(v.s))
	case kList:
		l := v.list()
		open, close := "[", "]"
		if l.Tuple {
			open, close = "(", ")"
		}
		b.WriteString(open)
		for i, x := range l.Items {
			if i > 0 {
				b.WriteString(", ")
			}
			writeRepr(b, x, depth+1)
		}
		if l.Tuple && len(l.Items) == 1 {
			b.WriteString(",")
		}
		b.WriteString(close)
	case kDict:
		d := v.dict()
		b.WriteString("{")
		for i, k := range d.keys {
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString(quotePy(k))
			b.WriteString(": ")
			writeRepr(b, d.vals[i], depth+1)
		}
		b.WriteString("}")
	case kObj:
		b.WriteString(v.obj().repr())
	case kFunc:
		if c, ok := v.p.(callable); ok {
			b.WriteString("<function " + c.name() + ">")
		} else {
			b.WriteString("<function>")
		}
	}
}

// formatFloat renders a float as Python's repr does.
func formatFloat(f float64) string {
	switch {
	case math.IsInf(f, 1):
		return "inf"
	case math.IsInf(f, -1):
		return "-inf"
	case math.IsNaN(f):
		return "nan"
	}
	abs := math.Abs(f)
	if abs != 0 && (abs < 1e-4 || abs >= 1e16) {
		s := strconv.FormatFloat(f, 'e', -1, 64)
		// Python writes 1e+16 and 1e-05 with at least two exponent digits.
		if i := strings.IndexByte(s, 'e'); i >= 0 {
			mant, exp := s[:i], s[i+1:]
			sign := exp[0]
			digits := exp[1:]
			if len(digits) < 2 {
				digits = "0" + digits
			}
			s = mant + "e" + string(sign) + digits
		}
		return s
	}
	s := strconv.FormatFloat(f, 'f', -1, 64)
	if !strings.ContainsAny(s, ".") {
		s += ".0"
	}
	return s
}

// quotePy quotes s the way Python's repr quotes strings.
func quotePy(s string) string {
	q := byte('\'')
	if strings.IndexByte(s, '\'') >= 0 && strings.IndexByte(s, '"') < 0 {
		q = '"'
	}
	var b strings.Builder
	b.WriteByte(q)
	for _, r := range s {
		switch {
		case r == rune(q) || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == '\t':
			b.WriteString(`\t`)
		case r < 0x20 || r == 0x7f:
			b.WriteString(`\x`)
			b.WriteString(strconv.FormatInt(int64(r)+0x100, 16)[1:])
		case r == utf8.RuneError:
			b.WriteRune(r)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte(q)
	return b.String()
}

// runeLen is the length of s in code points, which is what Python's len and
// string offsets count.
func runeLen(s string) int {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return utf8.RuneCountInString(s)
		}
	}
	return len(s)
}
