package policy

import (
	"strconv"
	"strings"

	"github.com/lookout-dev/lookout/internal/jsonscan"
	"github.com/lookout-dev/lookout/internal/trace"
)

// decodeJSON turns JSON into a value. Strings, lists and dictionaries keep
// their origin (when o is not nil) so ranges can point into them. Invalid JSON
// yields None; callers that must report it use parseJSON.
func decodeJSON(raw []byte, o *origin) value {
	if raw == nil {
		return none
	}
	v, err := parseJSON(raw, o)
	if err != nil {
		return none
	}
	return v
}

// parseJSON is decodeJSON with errors.
func parseJSON(raw []byte, o *origin) (value, error) {
	s := jsonscan.New(raw)
	v, err := scanValue(s, o, 0)
	if err != nil {
		return none, err
	}
	if err := s.End(); err != nil {
		return none, err
	}
	return v, nil
}

func scanValue(s *jsonscan.Scanner, o *origin, depth int) (value, error) {
	switch s.Peek() {
	case jsonscan.Null:
		return none, s.Null()
	case jsonscan.Bool:
		b, err := s.Bool("value")
		return vBool(b), err
	case jsonscan.Number:
		t, err := s.NumberText("value")
		if err != nil {
			return none, err
		}
		return numberValue(t), nil
	case jsonscan.String:
		str, err := s.String("value")
		return vStrAt(str, o), err
	case jsonscan.Array:
		l := &listVal{org: o}
		err := s.Array(func(i int) error {
			var co *origin
			if o != nil {
				co = o.elem(i)
			}
			v, err := scanValue(s, co, depth+1)
			l.Items = append(l.Items, v)
			return err
		})
		return value{K: kList, p: l}, err
	case jsonscan.Object:
		d := newDict(4)
		d.org = o
		err := s.Object(func(key string) error {
			var co *origin
			if o != nil {
				co = o.child(key, len(d.keys))
			}
			v, err := scanValue(s, co, depth+1)
			d.set(key, v)
			return err
		})
		return value{K: kDict, p: d}, err
	}
	return none, s.Errorf("invalid JSON")
}

// numberValue is an int when the JSON number has no fraction or exponent
// and fits, as Python's json module decides.
func numberValue(t string) value {
	if !strings.ContainsAny(t, ".eE") {
		if i, err := strconv.ParseInt(t, 10, 64); err == nil {
			return vInt(i)
		}
	}
	f, _ := strconv.ParseFloat(t, 64)
	return vFloat(f)
}

// appendJSON renders v as JSON. Objects from the trace render as their JSON;
// other non-JSON values as their Python str().
func appendJSON(b []byte, v value) []byte {
	switch v.K {
	case kNone, kUnknown, kNop:
		return append(b, "null"...)
	case kBool:
		if v.b() {
			return append(b, "true"...)
		}
		return append(b, "false"...)
	case kInt:
		return strconv.AppendInt(b, v.i(), 10)
	case kFloat:
		f := v.f()
		if f != f || f > 1.7976931348623157e308 || f < -1.7976931348623157e308 {
			return appendJSONString(b, formatFloat(f))
		}
		return strconv.AppendFloat(b, f, 'g', -1, 64)
	case kStr:
		return appendJSONString(b, v.s)
	case kList:
		b = append(b, '[')
		for i, x := range v.list().Items {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendJSON(b, x)
		}
		return append(b, ']')
	case kDict:
		d := v.dict()
		b = append(b, '{')
		for i, k := range d.keys {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendJSONString(b, k)
			b = append(b, ':')
			b = appendJSON(b, d.vals[i])
		}
		return append(b, '}')
	case kObj:
		switch o := v.obj().(type) {
		case *message:
			return append(b, eventJSON(o.ev)...)
		case *toolOutput:
			return append(b, eventJSON(o.ev)...)
		case *toolCall:
			return append(b, toolCallJSON(o)...)
		case *tool:
			return appendJSON(b, value{K: kDict, p: o.d})
		case *toolParam:
			return appendJSON(b, value{K: kDict, p: o.fields})
		case *textChunk:
			b = append(b, `{"type":`...)
			b = appendJSONString(b, o.typ)
			b = append(b, `,"text":`...)
			b = appendJSONString(b, o.text.s)
			return append(b, '}')
		case *imageChunk:
			b = append(b, `{"type":`...)
			b = appendJSONString(b, o.typ)
			b = append(b, `,"image_url":`...)
			b = appendJSON(b, o.url)
			return append(b, '}')
		case *record:
			return appendJSON(b, value{K: kDict, p: o.fields})
		}
	}
	return appendJSONString(b, pyStr(v))
}

func appendJSONString(b []byte, s string) []byte { return trace.AppendString(b, s) }
