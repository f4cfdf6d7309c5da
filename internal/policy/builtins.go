package policy

import (
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"unicode"

	"github.com/lookout-dev/lookout/internal/pyre"
)

// Builtins, methods and modules available to policies: Invariant's stdlib
// functions (match, find, len, any, all, min, max, sum, text, image,
// tool_call, server, json_loads, print, ...), the str and dict methods its
// sandbox allows, and the modules policies import from.

// callable is any value of kind KFunc.
type callable interface{ name() string }

type builtinFn struct {
	fname            string
	minArgs, maxArgs int // maxArgs < 0: any number
	call             func(in *interp, n *CallExpr, args []value, kw []kwArg) value
}

func (f *builtinFn) name() string { return f.fname }
func (f *builtinFn) arity() string {
	switch {
	case f.maxArgs < 0:
		return fmt.Sprintf("at least %d argument(s)", f.minArgs)
	case f.minArgs == f.maxArgs:
		return fmt.Sprintf("%d argument(s)", f.minArgs)
	}
	return fmt.Sprintf("%d to %d arguments", f.minArgs, f.maxArgs)
}

type predicate struct{ d *DeclStmt }

func (p *predicate) name() string { return p.d.Name }

type boundMethod struct {
	recv   value
	method string
}

func (m *boundMethod) name() string { return typeName(m.recv) + "." + m.method }

type detectorFn struct{ d *Detector }

func (d *detectorFn) name() string { return d.d.Name }

type violationCtor struct{ ctor string }

func (v *violationCtor) name() string { return v.ctor }

// violationVal is the value of PolicyViolation(...): the message arguments.
type violationVal struct {
	args []value
	kw   []kwArg
}

func (v *violationVal) typeName() string { return "PolicyViolation" }
func (v *violationVal) attrList() string { return "" }
func (v *violationVal) org() *origin     { return nil }
func (v *violationVal) attr(*interp, string) (value, bool) {
	return value{}, false
}
func (v *violationVal) repr() string { return "PolicyViolation(...)" }

type typeConv struct{ tname string }

func (t *typeConv) name() string { return t.tname }

// paramsObj is the value of 'input': policy parameters.
type paramsObj struct{ vals map[string]value }

func (p *paramsObj) typeName() string                   { return "PolicyParameters" }
func (p *paramsObj) attrList() string                   { return "" }
func (p *paramsObj) org() *origin                       { return nil }
func (p *paramsObj) attr(*interp, string) (value, bool) { return value{}, false }
func (p *paramsObj) repr() string                       { return "<input>" }

// module is an importable module.
type module struct {
	path    string
	members map[string]*symbol
}

func (m *module) typeName() string                   { return "module" }
func (m *module) attrList() string                   { return strings.Join(m.names(), ", ") }
func (m *module) org() *origin                       { return nil }
func (m *module) attr(*interp, string) (value, bool) { return value{}, false }
func (m *module) repr() string                       { return "<module " + m.path + ">" }

func (m *module) member(name string) (*symbol, bool) {
	if s, ok := m.members[name]; ok {
		return s, true
	}
	if d, ok := lookupDetector(m.path, name); ok {
		return detectorSymbol(d), true
	}
	return nil, false
}

func (m *module) names() []string {
	set := map[string]bool{}
	for n := range m.members {
		set[n] = true
	}
	for _, n := range moduleDetectors(m.path) {
		set[n] = true
	}
	out := make([]string, 0, len(set))
	for n := range set {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

func detectorSymbol(d *Detector) *symbol {
	if d.Type {
		return &symbol{kind: sType, name: d.Name, val: value{K: kFunc, p: &typeConv{tname: d.Name}}}
	}
	return &symbol{kind: sDetector, name: d.Name, det: d, val: value{K: kFunc, p: &detectorFn{d: d}}}
}

var (
	universe       = map[string]*symbol{}
	builtinModules = map[string]*module{}
)

func lookupModule(path string) (*module, bool) {
	if m, ok := builtinModules[path]; ok {
		return m, true
	}
	if registeredModule(path) {
		return &module{path: path, members: map[string]*symbol{}}, true
	}
	return nil, false
}

func knownModules() []string {
	set := map[string]bool{}
	for p := range builtinModules {
		set[p] = true
	}
	registry.mu.RLock()
	for p := range registry.modules {
		set[p] = true
	}
	registry.mu.RUnlock()
	var out []string
	for p := range set {
		out = append(out, p)
	}
	sort.Strings(out)
	return out
}

func addBuiltin(name string, minArgs, maxArgs int, fn func(in *interp, n *CallExpr, args []value, kw []kwArg) value) *builtinFn {
	f := &builtinFn{fname: name, minArgs: minArgs, maxArgs: maxArgs, call: fn}
	universe[name] = &symbol{kind: sBuiltin, name: name, fn: f, val: value{K: kFunc, p: f}}
	return f
}

func init() {
	for _, t := range []string{"Message", "ToolCall", "ToolOutput", "Tool", "ToolParameter", "Function",
		"Image", "TextChunk", "Contents", "Input", "LLM",
		"str", "int", "float", "bool", "list", "dict", "tuple"} {
		universe[t] = &symbol{kind: sType, name: t, val: value{K: kFunc, p: &typeConv{tname: t}}}
	}
	for _, q := range []string{"count", "forall"} {
		universe[q] = &symbol{kind: sQuant, name: q}
	}
	for _, v := range []string{"PolicyViolation", "Violation"} {
		universe[v] = &symbol{kind: sViolation, name: v, val: value{K: kFunc, p: &violationCtor{ctor: v}}}
	}
	universe["input"] = &symbol{kind: sInput, name: "input"}

	addBuiltin("any", 1, 1, func(in *interp, n *CallExpr, a []value, kw []kwArg) value {
		for _, x := range in.iterate(n.Off, a[0]) {
			if truthy(x) {
				return vTrue
			}
		}
		return vFalse
	})
	addBuiltin("all", 1, 1, func(in *interp, n *CallExpr, a []value, kw []kwArg) value {
		for _, x := range in.iterate(n.Off, a[0]) {
			if !truthy(x) {
				return vFalse
			}
		}
		return vTrue
	})
	addBuiltin("empty", 1, 1, func(in *interp, n *CallExpr, a []value, kw []kwArg) value {
		return vBool(in.length(n.Off, a[0]) == 0)
	})
	addBuiltin("len", 1, 1, func(in *interp, n *CallExpr, a []value, kw []kwArg) value {
		return vInt(int64(in.length(n.Off, a[0])))
	})
	addBuiltin("match", 2, 2, builtinMatch)
	addBuiltin("find", 2, 2, builtinFind)
	addBuiltin("min", 1, -1, func(in *interp, n *CallExpr, a []value, kw []kwArg) value {
		return in.extreme(n, a, kw, -1)
	})
	addBuiltin("max", 1, -1, func(in *interp, n *CallExpr, a []value, kw []kwArg) value {
		return in.extreme(n, a, kw, 1)
	})
	addBuiltin("sum", 1, 2, func(in *interp, n *CallExpr, a []value, kw []kwArg) value {
		total := vInt(0)
		if len(a) == 2 {
			total = a[1]
		}
		add := &BinaryExpr{Off: n.Off, OpOff: n.Off, Op: "+"}
		for _, x := range in.iterate(n.Off, a[0]) {
			total = in.arith(add, total, x)
		}
		return total
	})
	addBuiltin("print", 0, -1, func(in *interp, n *CallExpr, a []value, kw []kwArg) value {
		// print never affects the outcome of a rule (Invariant returns True).
		return vTrue
	})
	addBuiltin("tool_call", 1, 1, func(in *interp, n *CallExpr, a []value, kw []kwArg) value {
		out, ok := a[0].p.(*toolOutput)
		if a[0].K != kObj || !ok {
			in.fail(n.Off, ClassValue, "tool_output argument must be a ToolOutput.")
		}
		if out.call == nil {
			return none
		}
		return vObj(out.call)
	})
	addBuiltin("server", 1, 1, func(in *interp, n *CallExpr, a []value, kw []kwArg) value {
		switch o := a[0].p.(type) {
		case *message:
			return o.server()
		case *toolOutput:
			return o.server()
		case *toolCall:
			if o.bare {
				return o.ev.server()
			}
			return none
		case *tool:
			v, _ := o.attr(in, "server")
			return v
		}
		return none
	})
	addBuiltin("text", 0, -1, func(in *interp, n *CallExpr, a []value, kw []kwArg) value {
		var out []value
		for _, x := range a {
			collectTextValues(x, &out, 0)
		}
		return vList(out)
	})
	addBuiltin("image", 0, -1, func(in *interp, n *CallExpr, a []value, kw []kwArg) value {
		return vList(imagesOf(a))
	})
	jsonLoads := addBuiltin("json_loads", 1, 1, func(in *interp, n *CallExpr, a []value, kw []kwArg) value {
		if a[0].K != kStr {
			in.fail(n.Off, ClassType, "the JSON object must be str, not %s", typeName(a[0]))
		}
		in.steps += int64(len(a[0].s) / 64)
		v, err := parseJSON([]byte(a[0].s), nil)
		if err != nil {
			in.fail(n.Off, ClassJSON, "Invalid JSON string: %s", truncate(a[0].s, 200))
		}
		return v
	})
	jsonDumps := &builtinFn{fname: "dumps", minArgs: 1, maxArgs: 1, call: func(in *interp, n *CallExpr, a []value, kw []kwArg) value {
		return vStr(pyJSON(a[0]))
	}}
	addBuiltin("lower", 1, 1, func(in *interp, n *CallExpr, a []value, kw []kwArg) value {
		return vStr(strings.ToLower(in.str(n.Off, a[0], "lower")))
	})
	addBuiltin("upper", 1, 1, func(in *interp, n *CallExpr, a []value, kw []kwArg) value {
		return vStr(strings.ToUpper(in.str(n.Off, a[0], "upper")))
	})

	inv := &module{path: "invariant", members: map[string]*symbol{}}
	for name, sym := range universe {
		if name != "input" {
			inv.members[name] = sym
		}
	}
	builtinModules["invariant"] = inv
	builtinModules["invariant.builtins"] = inv
	rbac := &builtinFn{fname: "should_allow_rbac", minArgs: 5, maxArgs: 5, call: builtinRBAC}
	builtinModules["invariant.access_control"] = &module{path: "invariant.access_control", members: map[string]*symbol{
		"should_allow_rbac": {kind: sBuiltin, name: "should_allow_rbac", fn: rbac, val: value{K: kFunc, p: rbac}},
	}}
	builtinModules["json"] = &module{path: "json", members: map[string]*symbol{
		"loads": {kind: sBuiltin, name: "loads", fn: jsonLoads, val: value{K: kFunc, p: jsonLoads}},
		"dumps": {kind: sBuiltin, name: "dumps", fn: jsonDumps, val: value{K: kFunc, p: jsonDumps}},
	}}
}

// builtinRBAC is invariant.access_control.should_allow_rbac: whether any role
// of the user grants the scope.
func builtinRBAC(in *interp, n *CallExpr, a []value, kw []kwArg) value {
	scope, user, roles, grants := a[1], a[2], a[3], a[4]
	if roles.K != kDict || grants.K != kDict || user.K != kStr {
		return vFalse
	}
	rs, ok := roles.dict().get(user.s)
	if !ok || rs.K != kList {
		return vFalse
	}
	for _, r := range rs.list().Items {
		if r.K != kStr {
			continue
		}
		g, ok := grants.dict().get(r.s)
		if !ok || g.K != kDict || scope.K != kStr {
			continue
		}
		if v, ok := g.dict().get(scope.s); ok && truthy(v) {
			return vTrue
		}
	}
	return vFalse
}

func (in *interp) str(off int, v value, fn string) string {
	if v.K != kStr {
		in.fail(off, ClassType, "%s needs a string, not %s", fn, typeName(v))
	}
	return v.s
}

func (in *interp) length(off int, v value) int {
	switch v.K {
	case kStr:
		return runeLen(v.s)
	case kList:
		return len(v.list().Items)
	case kDict:
		return v.dict().len()
	case kObj:
		if c, ok := v.p.(*contents); ok {
			return len(c.parts)
		}
		if r, ok := v.p.(*record); ok {
			return r.fields.len()
		}
	}
	in.fail(off, ClassType, "object of type '%s' has no len()", typeName(v))
	return 0
}

func (in *interp) extreme(n *CallExpr, a []value, kw []kwArg, sign int) value {
	items := a
	if len(a) == 1 {
		items = in.iterate(n.Off, a[0])
	}
	if len(items) == 0 {
		for _, k := range kw {
			if k.name == "default" {
				return k.v
			}
		}
		in.fail(n.Off, ClassValue, "%s() arg is an empty sequence", map[int]string{-1: "min", 1: "max"}[sign])
	}
	cmp := &BinaryExpr{Off: n.Off, OpOff: n.Off, Op: "<"}
	best := items[0]
	for _, x := range items[1:] {
		if c := in.compare(cmp, x, best); c*sign > 0 {
			best = x
		}
	}
	return best
}

// collectTextValues is Invariant's text(): strings, the text chunks of
// content, the content of messages and tool outputs, recursively in lists.
func collectTextValues(v value, out *[]value, depth int) {
	if depth > 32 {
		return
	}
	switch v.K {
	case kStr:
		*out = append(*out, v)
	case kList:
		for _, x := range v.list().Items {
			collectTextValues(x, out, depth+1)
		}
	case kObj:
		switch o := v.obj().(type) {
		case *contents:
			*out = append(*out, o.texts()...)
		case *message:
			collectTextValues(o.contentValue(), out, depth+1)
		case *toolOutput:
			collectTextValues(o.contentValue(), out, depth+1)
		}
	}
}

// imagesOf is Invariant's image(): image URLs of content, messages, tool
// outputs and image chunks, and strings that are base64 PNG or JPEG data URLs.
func imagesOf(args []value) []value {
	var out []value
	var walk func(v value, depth int)
	walk = func(v value, depth int) {
		if depth > 32 {
			return
		}
		switch v.K {
		case kStr:
			if strings.HasPrefix(v.s, "data:image/png;base64,") || strings.HasPrefix(v.s, "data:image/jpeg;base64,") {
				out = append(out, v)
			}
		case kList:
			for _, x := range v.list().Items {
				walk(x, depth+1)
			}
		case kObj:
			switch o := v.obj().(type) {
			case *contents:
				out = append(out, o.images()...)
			case *message:
				walk(o.contentValue(), depth+1)
			case *toolOutput:
				walk(o.contentValue(), depth+1)
			case *imageChunk:
				if u := o.urlString(); u.K == kStr {
					out = append(out, u)
				}
			}
		}
	}
	for _, a := range args {
		walk(a, 0)
	}
	return out
}

// regexArg compiles the pattern argument of match/find (precompiled when it
// is a literal).
func (in *interp) regexArg(n *CallExpr, p value, fn string) *pyre.Regexp {
	if n.re != nil {
		return n.re
	}
	if p.K != kStr {
		in.fail(n.Off, ClassType, "%s: the pattern must be a string, not %s", fn, typeName(p))
	}
	in.steps += int64(len(p.s))
	re, err := pyre.Compile(p.s)
	if err != nil {
		in.fail(n.Off, ClassRegex, "invalid regular expression %q: %v", p.s, err)
	}
	return re
}

// matchSubjects are the strings match/find look at: a string; the text
// chunks of list content; nothing for None. (Invariant fails on the last
// two; matching the text is what a rule author means.)
func (in *interp) matchSubjects(n *CallExpr, v value, fn string) []value {
	switch v.K {
	case kStr:
		return []value{v}
	case kNone:
		return nil
	case kObj:
		if c, ok := v.p.(*contents); ok {
			return c.texts()
		}
	}
	in.fail(n.Off, ClassType, "%s: expected string or bytes-like object, got '%s'", fn, typeName(v))
	return nil
}

func builtinMatch(in *interp, n *CallExpr, a []value, kw []kwArg) value {
	re := in.regexArg(n, a[0], "match")
	for _, s := range in.matchSubjects(n, a[1], "match") {
		in.steps += int64(len(s.s) / 16)
		in.regexCost(re, s.s)
		start, end, ok, err := re.Match(in.regexContext, s.s)
		if err != nil {
			in.regexFailed(n.Off, err, "match %q", re.String())
		}
		if ok {
			if o, isLoc := s.p.(*origin); isLoc && o != nil {
				in.marks = append(in.marks, mark{o: o, start: start, end: end})
			}
			return vTrue
		}
	}
	return vFalse
}

func builtinFind(in *interp, n *CallExpr, a []value, kw []kwArg) value {
	re := in.regexArg(n, a[0], "find")
	var out []value
	for _, s := range in.matchSubjects(n, a[1], "find") {
		in.steps += int64(len(s.s) / 16)
		in.regexCost(re, s.s)
		spans, texts, err := re.FindAll(in.regexContext, s.s, -1)
		if err != nil {
			in.regexFailed(n.Off, err, "find %q", re.String())
		}
		in.alloc(int64(len(spans)) * matchBytes)
		o, isLoc := s.p.(*origin)
		for i, sp := range spans {
			if isLoc && o != nil {
				in.marks = append(in.marks, mark{o: o, start: sp[0], end: sp[1]})
			}
			out = append(out, vStr(texts[i]))
		}
		in.steps += int64(len(spans))
	}
	return vList(out)
}

func (t *typeConv) call(in *interp, n *CallExpr, a []value, kw []kwArg) value {
	arg := func() value {
		if len(a) == 0 {
			return none
		}
		if len(a) > 1 {
			in.fail(n.Off, ClassType, "%s() takes at most 1 argument (%d given)", t.tname, len(a))
		}
		return a[0]
	}
	switch t.tname {
	case "str":
		if len(a) == 0 {
			return vStr("")
		}
		return vStr(pyStr(arg()))
	case "bool":
		return vBool(truthy(arg()))
	case "int":
		x := arg()
		switch x.K {
		case kNone:
			if len(a) == 0 {
				return vInt(0)
			}
		case kInt:
			return x
		case kBool:
			return vInt(int64(x.n))
		case kFloat:
			return vInt(int64(x.f()))
		case kStr:
			if i, err := strconv.ParseInt(strings.TrimSpace(strings.ReplaceAll(x.s, "_", "")), 10, 64); err == nil {
				return vInt(i)
			}
			in.fail(n.Off, ClassValue, "invalid literal for int() with base 10: %s", pyRepr(x))
		}
	case "float":
		x := arg()
		switch x.K {
		case kNone:
			if len(a) == 0 {
				return vFloat(0)
			}
		case kInt, kBool, kFloat:
			f, _ := x.num()
			return vFloat(f)
		case kStr:
			if f, err := strconv.ParseFloat(strings.TrimSpace(x.s), 64); err == nil {
				return vFloat(f)
			}
			in.fail(n.Off, ClassValue, "could not convert string to float: %s", pyRepr(x))
		}
	case "list", "tuple":
		if len(a) == 0 {
			return value{K: kList, p: &listVal{Tuple: t.tname == "tuple"}}
		}
		items := append([]value(nil), in.iterate(n.Off, arg())...)
		return value{K: kList, p: &listVal{Items: items, Tuple: t.tname == "tuple"}}
	case "dict":
		d := newDict(0)
		if len(a) > 0 {
			x := arg()
			switch x.K {
			case kDict:
				for i, k := range x.dict().keys {
					d.set(k, x.dict().vals[i])
				}
			case kList:
				for _, p := range x.list().Items {
					if p.K != kList || len(p.list().Items) != 2 || p.list().Items[0].K != kStr {
						in.fail(n.Off, ClassType, "dict() needs (str, value) pairs")
					}
					d.set(p.list().Items[0].s, p.list().Items[1])
				}
			default:
				in.fail(n.Off, ClassType, "'%s' object is not iterable", typeName(x))
			}
		}
		for _, k := range kw {
			d.set(k.name, k.v)
		}
		return value{K: kDict, p: d}
	}
	in.fail(n.Off, ClassType, "cannot call %s(...) on %s", t.tname, typeName(arg()))
	return unknown
}

// callMethod runs an allowed str, dict or content method.
func (in *interp) callMethod(n *CallExpr, m *boundMethod, a []value, kw []kwArg) value {
	r := m.recv
	switch r.K {
	case kStr:
		return in.strMethod(n, r.s, m.method, a, kw)
	case kDict:
		d := r.dict()
		switch m.method {
		case "keys":
			out := make([]value, len(d.keys))
			for i, k := range d.keys {
				out[i] = vStr(k)
			}
			return vList(out)
		case "values":
			return vList(append([]value(nil), d.vals...))
		case "items":
			out := make([]value, len(d.keys))
			for i, k := range d.keys {
				out[i] = value{K: kList, p: &listVal{Items: []value{vStr(k), d.vals[i]}, Tuple: true}}
			}
			return vList(out)
		case "get":
			if len(a) < 1 || len(a) > 2 {
				in.fail(n.Off, ClassType, "get expected 1 or 2 arguments, got %d", len(a))
			}
			if a[0].K == kStr {
				if v, ok := d.get(a[0].s); ok {
					return v
				}
			}
			if len(a) == 2 {
				return a[1]
			}
			return none
		}
	case kObj:
		if c, ok := r.p.(*contents); ok {
			if m.method == "text" {
				return vList(c.texts())
			}
			return vList(c.images())
		}
	}
	in.fail(n.Off, ClassType, "cannot call %s", m.name())
	return unknown
}

func (in *interp) strMethod(n *CallExpr, s, method string, a []value, kw []kwArg) value {
	in.steps += int64(len(s) / 64)
	optStr := func(i int) (string, bool) {
		if i >= len(a) || a[i].K == kNone {
			return "", false
		}
		if a[i].K != kStr {
			in.fail(n.Off, ClassType, "%s: argument must be str or None, not %s", method, typeName(a[i]))
		}
		return a[i].s, true
	}
	switch method {
	case "lower":
		return vStr(strings.ToLower(s))
	case "upper":
		return vStr(strings.ToUpper(s))
	case "strip":
		if chars, ok := optStr(0); ok {
			return vStr(strings.Trim(s, chars))
		}
		return vStr(strings.TrimFunc(s, isPySpace))
	case "splitlines":
		keep := len(a) > 0 && truthy(a[0])
		for _, k := range kw {
			if k.name == "keepends" {
				keep = truthy(k.v)
			}
		}
		return vList(strValues(pySplitLines(s, keep)))
	case "split":
		max := -1
		sep, hasSep := optStr(0)
		for _, k := range kw {
			switch k.name {
			case "sep":
				if k.v.K == kStr {
					sep, hasSep = k.v.s, true
				}
			case "maxsplit":
				if k.v.K == kInt {
					max = int(k.v.i())
				}
			}
		}
		if len(a) > 1 && a[1].K == kInt {
			max = int(a[1].i())
		}
		if hasSep {
			if sep == "" {
				in.fail(n.Off, ClassValue, "empty separator")
			}
			if max < 0 {
				return vList(strValues(strings.Split(s, sep)))
			}
			return vList(strValues(strings.SplitN(s, sep, max+1)))
		}
		return vList(strValues(pySplitSpace(s, max)))
	case "join":
		if len(a) != 1 {
			in.fail(n.Off, ClassType, "join() takes exactly one argument (%d given)", len(a))
		}
		items := in.iterate(n.Off, a[0])
		parts := make([]string, len(items))
		for i, x := range items {
			if x.K != kStr {
				in.fail(n.Off, ClassType, "sequence item %d: expected str instance, %s found", i, typeName(x))
			}
			parts[i] = x.s
		}
		return vStr(strings.Join(parts, s))
	case "format":
		return vStr(in.pyFormat(n, s, a, kw))
	}
	in.fail(n.Off, ClassExcessive, "Excessive Policy: Unavailable attribute %s for str values.", method)
	return unknown
}

func strValues(ss []string) []value {
	out := make([]value, len(ss))
	for i, s := range ss {
		out[i] = vStr(s)
	}
	return out
}

// isPySpace is Python's str.isspace for one character.
func isPySpace(r rune) bool {
	switch r {
	case ' ', '\t', '\n', '\r', '\v', '\f', 0x1c, 0x1d, 0x1e, 0x1f, 0x85:
		return true
	}
	return unicode.Is(unicode.Z, r)
}

// pySplitLines is Python's str.splitlines.
func pySplitLines(s string, keep bool) []string {
	var out []string
	start := 0
	rs := []rune(s)
	for i := 0; i < len(rs); i++ {
		r := rs[i]
		brk := 0
		switch r {
		case '\n', '\v', '\f', 0x1c, 0x1d, 0x1e, 0x85, 0x2028, 0x2029:
			brk = 1
		case '\r':
			brk = 1
			if i+1 < len(rs) && rs[i+1] == '\n' {
				brk = 2
			}
		}
		if brk == 0 {
			continue
		}
		end := i
		if keep {
			end = i + brk
		}
		out = append(out, string(rs[start:end]))
		i += brk - 1
		start = i + 1
	}
	if start < len(rs) {
		out = append(out, string(rs[start:]))
	}
	return out
}

// pySplitSpace is Python's str.split() without a separator.
func pySplitSpace(s string, max int) []string {
	var out []string
	rs := []rune(s)
	i := 0
	for {
		for i < len(rs) && isPySpace(rs[i]) {
			i++
		}
		if i >= len(rs) {
			return out
		}
		if max >= 0 && len(out) == max {
			rest := string(rs[i:])
			return append(out, strings.TrimRightFunc(rest, isPySpace))
		}
		j := i
		for j < len(rs) && !isPySpace(rs[j]) {
			j++
		}
		out = append(out, string(rs[i:j]))
		i = j
	}
}

// pyFormat implements str.format for {}, {0} and {name} fields (format specs
// and conversions are ignored).
func (in *interp) pyFormat(n *CallExpr, s string, a []value, kw []kwArg) string {
	var b strings.Builder
	auto := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == '{' {
			if i+1 < len(s) && s[i+1] == '{' {
				b.WriteByte('{')
				i++
				continue
			}
			j := strings.IndexByte(s[i:], '}')
			if j < 0 {
				in.fail(n.Off, ClassValue, "Single '{' encountered in format string")
			}
			field := s[i+1 : i+j]
			if k := strings.IndexAny(field, ":!"); k >= 0 {
				field = field[:k]
			}
			var v value
			switch {
			case field == "":
				if auto >= len(a) {
					in.fail(n.Off, "IndexError", "Replacement index %d out of range for positional args tuple", auto)
				}
				v = a[auto]
				auto++
			case isAllDigits(field):
				k, _ := strconv.Atoi(field)
				if k >= len(a) {
					in.fail(n.Off, "IndexError", "Replacement index %d out of range for positional args tuple", k)
				}
				v = a[k]
			default:
				found := false
				for _, x := range kw {
					if x.name == field {
						v, found = x.v, true
					}
				}
				if !found {
					in.fail(n.Off, ClassKey, "'%s'", field)
				}
			}
			b.WriteString(pyStr(v))
			i += j
			continue
		}
		if c == '}' && i+1 < len(s) && s[i+1] == '}' {
			i++
		}
		b.WriteByte(c)
	}
	return b.String()
}

// pyJSON renders v as Python's json.dumps does (", " and ": " separators).
func pyJSON(v value) string {
	var b strings.Builder
	var w func(v value, depth int)
	w = func(v value, depth int) {
		if depth > 64 {
			b.WriteString("null")
			return
		}
		switch v.K {
		case kList:
			b.WriteByte('[')
			for i, x := range v.list().Items {
				if i > 0 {
					b.WriteString(", ")
				}
				w(x, depth+1)
			}
			b.WriteByte(']')
		case kDict:
			d := v.dict()
			b.WriteByte('{')
			for i, k := range d.keys {
				if i > 0 {
					b.WriteString(", ")
				}
				b.Write(appendJSONString(nil, k))
				b.WriteString(": ")
				w(d.vals[i], depth+1)
			}
			b.WriteByte('}')
		case kFloat:
			b.WriteString(formatFloat(v.f()))
		default:
			b.Write(appendJSON(nil, v))
		}
	}
	w(v, 0)
	return b.String()
}

// runDetector calls a registered detector, with results cached per
// analysis and argument.
func (in *interp) runDetector(d *Detector, args []value, kw []kwArg, off int) (result value) {
	if msg, ok := in.unavailable(d); !ok {
		in.fail(off, ClassUnavailable, "%s", msg)
	}
	key, cacheable := detectorKey(d, args, kw)
	if cacheable {
		if e, ok := in.detCache[key]; ok {
			in.marks = append(in.marks, e.marks...)
			return e.v
		}
	}
	call := &DetectorCall{Name: d.Name, Args: make([]Arg, len(args)), model: in.p.model, in: in}
	for i, a := range args {
		call.Args[i] = Arg{a}
	}
	if len(kw) > 0 {
		call.Kwargs = make(map[string]Arg, len(kw))
		for _, k := range kw {
			call.Kwargs[k.name] = Arg{k.v}
		}
	}
	for _, a := range args {
		if a.K == kStr {
			in.steps += int64(len(a.s) / 16)
		}
	}
	var res any
	var err error
	func() {
		defer func() {
			if r := recover(); r != nil {
				err = fmt.Errorf("detector panicked: %v", r)
			}
		}()
		res, err = d.Func(call)
	}()
	if err != nil {
		if errors.Is(err, ErrDetectorUnavailable) {
			in.fail(off, ClassUnavailable, "%s: %v", d.Name, err)
		}
		if isContextErr(err) && in.regexCtx != nil && in.regexCtx.Err() != nil {
			// the check's time ran out (or its caller left) while the
			// detector waited: the budget's error, naming the detector
			in.fail(off, ClassBudget, "%s: %v", d.Name, err)
		}
		in.fail(off, ClassDetectorFailed, "%s: %v", d.Name, err)
	}
	v, cerr := fromGo(res, 0)
	if cerr != nil {
		in.fail(off, ClassDetectorFailed, "%s: %v", d.Name, cerr)
	}
	in.marks = append(in.marks, call.marks...)
	if cacheable {
		if in.detCache == nil {
			in.detCache = map[string]detEntry{}
		}
		in.detCache[key] = detEntry{v: v, marks: call.marks}
	}
	return v
}

// unavailable reports whether d can run in this analysis, and why not:
// a stub, or a model-backed detector without a detector model.
func (in *interp) unavailable(d *Detector) (string, bool) {
	if d.Func != nil && (d.Unavailable == "" || d.Model && in.p.model != nil) {
		return "", true
	}
	msg := d.Unavailable
	if msg == "" {
		msg = d.Name + " is not available in this build"
	}
	return msg, false
}

// detectorKey identifies a call by detector, argument identity (values from
// the trace by their place, others by content) and keyword arguments.
func detectorKey(d *Detector, args []value, kw []kwArg) (string, bool) {
	var b strings.Builder
	b.WriteString(d.Name)
	write := func(v value) bool {
		b.WriteByte('|')
		switch v.K {
		case kStr:
			if o, ok := v.p.(*origin); ok && o != nil {
				fmt.Fprintf(&b, "@%p:%d", o, len(v.s))
				return true
			}
			if len(v.s) > 4096 {
				return false
			}
			b.WriteString(strconv.Quote(v.s))
		case kObj:
			fmt.Fprintf(&b, "@%p", v.p)
		case kNone, kBool, kInt, kFloat:
			b.WriteString(pyRepr(v))
		default:
			return false
		}
		return true
	}
	for _, a := range args {
		if !write(a) {
			return "", false
		}
	}
	for _, k := range kw {
		b.WriteString("|" + k.name + "=")
		if k.v.K == kList || k.v.K == kDict {
			r := pyRepr(k.v)
			if len(r) > 1024 {
				return "", false
			}
			b.WriteString(r)
			continue
		}
		if !write(k.v) {
			return "", false
		}
	}
	return b.String(), true
}
