package policy

import "github.com/lookout-dev/lookout/internal/pyre"

// Semantic patterns: call is tool:send_email({to: "^(?!Peter$).*$"}).
//
// As in Invariant: the tool name is matched as an anchored regular
// expression; the single argument pattern is matched against the call's
// arguments; in it, an object matches a dictionary with (at least) those
// keys, a list a list of the same length, a string the equal string or a
// string the pattern fully matches (with . matching newlines), a number the
// equal number of the same kind, * anything, and <TYPE> a value the named
// detector recognizes (e.g. <EMAIL_ADDRESS> through pii). A tool output
// matches through the call it answers.

type matcher interface {
	match(in *interp, v value) bool
}

type dictMatcher struct {
	keys []string
	ms   []matcher
}

func (m *dictMatcher) match(in *interp, v value) bool {
	if v.K != kDict {
		return false
	}
	d := v.dict()
	for i, k := range m.keys {
		x, ok := d.get(k)
		if !ok || !m.ms[i].match(in, x) {
			return false
		}
	}
	return true
}

type listMatcher struct{ ms []matcher }

func (m *listMatcher) match(in *interp, v value) bool {
	if v.K != kList || len(v.list().Items) != len(m.ms) {
		return false
	}
	for i, x := range v.list().Items {
		if !m.ms[i].match(in, x) {
			return false
		}
	}
	return true
}

type constMatcher struct {
	v  value
	re *pyre.Regexp // for strings: the pattern anchored at both ends
}

func (m *constMatcher) match(in *interp, v value) bool {
	switch m.v.K {
	case kStr:
		if v.K != kStr {
			return false
		}
		if v.s == m.v.s {
			return true
		}
		if m.re == nil {
			return false
		}
		in.regexCost(m.re, v.s)
		_, _, ok, err := m.re.Match(in.regexContext, v.s)
		if err != nil {
			in.regexFailed(0, err, "pattern %q", m.v.s)
		}
		return ok
	case kInt:
		// Python checks issubclass(type(value), type(pattern)): bool counts as int
		return (v.K == kInt || v.K == kBool) && int64(v.n) == m.v.i()
	case kFloat:
		return v.K == kFloat && v.f() == m.v.f()
	case kBool:
		return v.K == kBool && v.b() == m.v.b()
	case kNone:
		return v.K == kNone
	}
	return false
}

type wildcardMatcher struct{}

func (wildcardMatcher) match(*interp, value) bool { return true }

type valueRefMatcher struct {
	typ      string
	detector string
}

func (m *valueRefMatcher) match(in *interp, v value) bool {
	if m.typ == "DUMMY" {
		return v.K == kStr && v.s == "__DUMMY__"
	}
	if v.K != kStr {
		return false
	}
	d := findDetector(m.detector)
	if d == nil {
		in.fail(0, ClassUnavailable, "<%s> needs the %s detector, which is not registered in this build", m.typ, m.detector)
	}
	if msg, ok := in.unavailable(d); !ok {
		in.fail(0, ClassUnavailable, "<%s> needs the %s detector: %s", m.typ, m.detector, msg)
	}
	// Ask for the one entity: a detector that cannot recognize it (say a
	// named entity without a model) then fails instead of matching nothing.
	res := in.runDetector(d, []value{v, vList([]value{vStr(m.typ)})}, nil, 0)
	switch res.K {
	case kList:
		for _, x := range res.list().Items {
			if x.K == kStr && x.s == m.typ {
				return true
			}
		}
		return false
	}
	return truthy(res)
}

// findDetector looks a detector up by name in any module.
func findDetector(name string) *Detector {
	registry.mu.RLock()
	defer registry.mu.RUnlock()
	var found *Detector
	for _, names := range registry.modules {
		if d, ok := names[name]; ok && !d.Type {
			if found == nil || (found.Unavailable != "" && d.Unavailable == "") {
				found = d
			}
		}
	}
	return found
}

// patternArgs builds the matcher for a semantic pattern's arguments.
func (c *checker) patternArgs(sp *SemanticPattern) matcher {
	var ms []matcher
	for _, a := range sp.Args {
		ms = append(ms, c.patternMatcher(a))
	}
	if len(ms) == 1 {
		return ms[0]
	}
	return nil
}

func (c *checker) patternMatcher(e Expr) matcher {
	switch n := e.(type) {
	case *ObjectLit:
		m := &dictMatcher{keys: n.Keys}
		for _, v := range n.Vals {
			m.ms = append(m.ms, c.patternMatcher(v))
		}
		return m
	case *ListLit:
		m := &listMatcher{}
		for _, v := range n.Elems {
			m.ms = append(m.ms, c.patternMatcher(v))
		}
		return m
	case *StringLit:
		m := &constMatcher{v: vStr(n.value)}
		// A string that is not a valid pattern still matches itself.
		if re, err := pyre.Compile("(?s)" + n.value + "$"); err == nil {
			m.re = re
		}
		return m
	case *NumberLit:
		if n.IsInt {
			return &constMatcher{v: vInt(n.Int)}
		}
		return &constMatcher{v: vFloat(n.Float)}
	case *BoolLit:
		return &constMatcher{v: vBool(n.value)}
	case *NoneLit:
		return &constMatcher{v: none}
	case *UnaryExpr:
		if num, ok := n.X.(*NumberLit); ok && n.Op == "-" {
			if num.IsInt {
				return &constMatcher{v: vInt(-num.Int)}
			}
			return &constMatcher{v: vFloat(-num.Float)}
		}
	case *Wildcard:
		return wildcardMatcher{}
	case *ValueReference:
		det, ok := valueTypes[n.Type]
		if !ok {
			c.errorf(n.Off, ClassName, "Unsupported value type: %s. Available types: %s", n.Type, joinSorted(valueTypes))
			return wildcardMatcher{}
		}
		return &valueRefMatcher{typ: n.Type, detector: det}
	}
	c.errorf(e.pos(), ClassSyntax, "unsupported element in a semantic pattern: use a string (regular expression), a number, a list, an object, * or <TYPE>")
	return wildcardMatcher{}
}

func joinSorted(m map[string]string) string {
	s := ""
	for i, k := range sortedKeys(m) {
		if i > 0 {
			s += " "
		}
		s += k
	}
	return s
}

// matchTool is 'value is tool:name(...)'.
func (in *interp) matchTool(v value, tr *ToolReference, sp *SemanticPattern) bool {
	if v.K != kObj {
		return false
	}
	var c *toolCall
	switch o := v.obj().(type) {
	case *toolCall:
		c = o
	case *toolOutput:
		c = o.call
	}
	if c == nil {
		return false
	}
	if tr.re != nil {
		in.regexCost(tr.re, c.name)
		_, _, ok, err := tr.re.Match(in.regexContext, c.name)
		if err != nil {
			in.regexFailed(tr.Off, err, "tool name pattern %q", tr.Name)
		}
		if !ok {
			return false
		}
	} else if c.name != tr.Name {
		return false
	}
	if sp == nil || len(sp.Args) == 0 {
		return true
	}
	if len(sp.Args) != 1 || sp.m == nil {
		// Invariant only supports one argument pattern (the arguments object)
		return false
	}
	return sp.m.match(in, c.arguments())
}
