package policy

// Detector registry
//
// Policies call detectors by name after importing them, as in Invariant:
//
//	from invariant.detectors import secrets, pii
//	raise "leaked a key" if:
//	    (msg: Message)
//	    "GITHUB_TOKEN" in secrets(msg)
//
// A detector is a Go function registered under a name and the module paths
// that export it. Register detectors before calling Parse, typically from an
// init function of the package that implements them:
//
//	func init() {
//	    policy.RegisterDetector(policy.Detector{
//	        Name:    "secrets",
//	        Modules: []string{"invariant.detectors", "invariant.detectors.secrets"},
//	        Func: func(c *policy.DetectorCall) (any, error) {
//	            var found []string
//	            for _, t := range c.Arg(0).Texts() { // a string, or a message's text
//	                ms, err := detectors.Secrets(t.S, nil)
//	                if err != nil {
//	                    return nil, err
//	                }
//	                for _, m := range ms {
//	                    c.MarkRunes(t, m.Start, m.End) // code point offsets
//	                    found = append(found, m.Kind)
//	                }
//	            }
//	            return found, nil
//	        },
//	    })
//	}
//
// The function gets the evaluated arguments (DetectorCall.Args, Kwargs) and
// returns a Go value: nil, bool, an integer, a float, a string, []string,
// []any, map[string]any, or a Record for results with attributes (e.g.
// python_code(x).imports). Errors become runtime errors of class
// DetectorError. Marking a range (DetectorCall.Mark) makes the violation point
// at the characters found, like Invariant's pii and secrets detectors do.
// Results are cached per analysis and argument, together with their marks.
//
// Detectors that need a model or a network service are registered here with
// Unavailable set: importing them works (so policies that import but do not
// call them load), calling them fails with a clear "not available in this
// build" error instead of silently returning false. The model-backed ones
// (prompt_injection, moderated, llm, llm_confirm, and pii's named entities;
// modeldetectors.go) also have a Func and Model set: they run when the
// policy has a detector model (Policy.SetDetectorModel, an OpenAI-compatible
// endpoint) and fail with Unavailable when it has none.
//
// Invariant's model-free detectors that Lookout implements natively live in
// internal/policy/detectors (pure functions over strings, which do not
// import this package); wire them with one adapter each, in a file of this
// package or of the binary, under these names and modules (results as in
// Invariant: lists of kinds, booleans, or Records with Invariant's attribute
// names such as imports, builtins, syntax_error, alt_texts, links):
//
//	secrets         invariant.detectors, invariant.detectors.secrets
//	pii             invariant.detectors, invariant.detectors.pii (also serves <EMAIL_ADDRESS>,
//	                <PHONE_NUMBER>, <LOCATION>, <PERSON> in semantic patterns: it is
//	                called as pii(value, ["LOCATION"]) and must fail, not return
//	                nothing, for an entity it cannot detect)
//	unicode         invariant.detectors, invariant.detectors.unicode
//	python_code     invariant.detectors, invariant.detectors.code
//	ipython_code    invariant.detectors, invariant.detectors.code (the same as python_code)
//	fuzzy_contains  invariant.detectors, invariant.detectors.fuzzy_matching
//	copyright       invariant.detectors, invariant.detectors.copyright
//	html_code       invariant.parsers.html
//	links           invariant.parsers.html
//
// Registering a name that exists (for example one of the unavailable stubs
// below) replaces it. Tests of this package that should see the detectors
// (conformance_test.go) need the file that registers them compiled in: put
// the adapters in this package, or import their package from the test.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"sync"
	"unicode/utf8"

	"github.com/lookout-dev/lookout/internal/pyre"
)

// Detector is a named function that policies can import and call.
type Detector struct {
	Name string
	// Modules are the import paths that export the detector. Empty means
	// "invariant.detectors".
	Modules []string
	// Func computes the result. Nil when Unavailable is set.
	Func DetectorFunc
	// Unavailable, when not empty, says why the detector cannot run in this
	// build (e.g. it needs a machine-learning model). Calls fail with it.
	Unavailable string
	// Type, when set, registers a type name instead of a function (e.g.
	// CodeIssue), usable in (x: CodeIssue) declarations.
	Type bool
	// Partial, when not empty, says what part of Invariant's detector this
	// build lacks (e.g. "PERSON and LOCATION need a named-entity model").
	// The detector runs; the conformance test no longer counts the
	// capability as fully available.
	Partial string
	// Model marks a detector answered by the analysis' detector model
	// (Policy.SetDetectorModel): with Func and Unavailable set, it runs
	// when the policy has a model and fails with Unavailable otherwise.
	Model bool
}

// DetectorFunc implements a detector. It may be called from several
// analyses at once, so it must be safe for concurrent use. An error wrapping
// ErrDetectorUnavailable (the detector cannot answer this call in this
// build, e.g. an entity that needs a model) is reported with class
// DetectorUnavailable, other errors with class DetectorError.
type DetectorFunc func(c *DetectorCall) (any, error)

// ErrDetectorUnavailable marks detector errors that mean "this build cannot
// answer", as opposed to a failure on the given input.
var ErrDetectorUnavailable = errors.New("not available in this build")

// DetectorCall is one call of a detector.
type DetectorCall struct {
	Name   string
	Args   []Arg
	Kwargs map[string]Arg
	marks  []mark
	model  *DetectorModel
	in     *interp
}

// Context bounds the call: it ends when the analysis is stopped or passes
// its deadline. Detectors that wait (on a model, a program) watch it. Call
// it from the detector function, not from goroutines it starts (pass them
// the context).
func (c *DetectorCall) Context() context.Context {
	if c.in == nil {
		return context.Background()
	}
	// made on first use (most detectors never wait) and cancelled when
	// the analysis ends
	return c.in.regexContext()
}

// Arg returns argument i, or a None argument when there are fewer.
func (c *DetectorCall) Arg(i int) Arg {
	if i < len(c.Args) {
		return c.Args[i]
	}
	return Arg{v: none}
}

// Kwarg returns the named keyword argument and whether it was given.
func (c *DetectorCall) Kwarg(name string) (Arg, bool) {
	a, ok := c.Kwargs[name]
	return a, ok
}

// Mark records that bytes [start, end) of t were found, so the violation
// gets the range. Offsets outside t are ignored.
func (c *DetectorCall) Mark(t Text, start, end int) {
	if t.o == nil || start < 0 || end < start || end > len(t.S) {
		return
	}
	c.marks = append(c.marks, mark{o: t.o, start: pyre.RuneOffset(t.S, start), end: pyre.RuneOffset(t.S, end)})
}

// MarkRunes is Mark with offsets in code points (Python string indices), as
// internal/policy/detectors reports them.
func (c *DetectorCall) MarkRunes(t Text, start, end int) {
	if t.o == nil || start < 0 || end < start || end > runeLen(t.S) {
		return
	}
	c.marks = append(c.marks, mark{o: t.o, start: start, end: end})
}

// MarkAll records a range covering all of t (e.g. a whole message found
// harmful).
func (c *DetectorCall) MarkAll(t Text) {
	if t.o != nil {
		c.marks = append(c.marks, mark{o: t.o, start: -1})
	}
}

// Text is a piece of text from an argument, with its place in the trace when
// it came from there.
type Text struct {
	S string
	o *origin
}

// Arg is an evaluated argument of a detector call.
type Arg struct{ v value }

// Type is the argument's type name as policies see it: "str", "int",
// "float", "bool", "NoneType", "list", "dict", "Message", "ToolOutput",
// "ToolCall", "Tool", "TextChunk", "Image", or a Record's type.
func (a Arg) Type() string { return typeName(a.v) }

// IsNone reports whether the argument is None (or missing).
func (a Arg) IsNone() bool { return a.v.K == kNone || a.v.K == kUnknown }

// Str returns the argument when it is a string.
func (a Arg) Str() (string, bool) { return a.v.s, a.v.K == kStr }

// Int returns the argument when it is an integer (or a boolean).
func (a Arg) Int() (int64, bool) {
	switch a.v.K {
	case kInt:
		return a.v.i(), true
	case kBool:
		if a.v.b() {
			return 1, true
		}
		return 0, true
	}
	return 0, false
}

// Float returns the argument when it is a number.
func (a Arg) Float() (float64, bool) { return a.v.num() }

// Bool returns the argument's truth value.
func (a Arg) Bool() bool { return truthy(a.v) }

// List returns the elements when the argument is a list.
func (a Arg) List() ([]Arg, bool) {
	if a.v.K != kList {
		return nil, false
	}
	items := a.v.list().Items
	out := make([]Arg, len(items))
	for i, x := range items {
		out[i] = Arg{x}
	}
	return out, true
}

// Strings returns the argument as a list of strings: a string gives itself,
// a list its string elements.
func (a Arg) Strings() []string {
	switch a.v.K {
	case kStr:
		return []string{a.v.s}
	case kList:
		var out []string
		for _, x := range a.v.list().Items {
			if x.K == kStr {
				out = append(out, x.s)
			}
		}
		return out
	}
	return nil
}

// Texts returns the text the argument holds: a string itself; a message's or
// tool output's content (a string, or each text chunk); a text chunk's text;
// each element of a list. This is how Invariant's detectors accept either a
// string or an event.
func (a Arg) Texts() []Text {
	var out []Text
	collectTexts(a.v, &out, 0)
	return out
}

func collectTexts(v value, out *[]Text, depth int) {
	if depth > 32 {
		return
	}
	switch v.K {
	case kStr:
		o, _ := v.p.(*origin)
		*out = append(*out, Text{S: v.s, o: o})
	case kList:
		for _, x := range v.list().Items {
			collectTexts(x, out, depth+1)
		}
	case kObj:
		switch o := v.obj().(type) {
		case *message:
			collectTexts(o.contentValue(), out, depth+1)
		case *toolOutput:
			collectTexts(o.contentValue(), out, depth+1)
		case *contents:
			for _, t := range o.texts() {
				collectTexts(t, out, depth+1)
			}
		case *textChunk:
			collectTexts(o.text, out, depth+1)
		}
	}
}

// Images returns the image URLs the argument holds (see the image builtin).
func (a Arg) Images() []string {
	var out []string
	for _, v := range imagesOf([]value{a.v}) {
		out = append(out, v.s)
	}
	return out
}

// Interface returns the argument as a plain Go value: nil, bool, int64,
// float64, string, []any, map[string]any; events and other objects as
// map[string]any of their JSON.
func (a Arg) Interface() any { return toGo(a.v) }

// Record is a detector result with named attributes, e.g. the analysis of a
// program: Record{Type: "PythonCode", Fields: map[string]any{"imports": []string{"os"}}}.
// Policies read fields as attributes (python_code(x).imports) and can select
// records by type ((issue: CodeIssue) in semgrep(code)).
type Record struct {
	Type   string
	Fields map[string]any
}

type record struct {
	typ    string
	fields *dictVal
}

func (r *record) typeName() string { return r.typ }
func (r *record) attrList() string { return joinKeys(r.fields) }
func (r *record) org() *origin     { return nil }
func (r *record) attr(in *interp, name string) (value, bool) {
	return r.fields.get(name)
}
func (r *record) repr() string { return r.typ + "(" + pyStr(value{K: kDict, p: r.fields}) + ")" }

func joinKeys(d *dictVal) string {
	s := ""
	for i, k := range d.keys {
		if i > 0 {
			s += ", "
		}
		s += k
	}
	return s
}

type registryT struct {
	mu sync.RWMutex
	// module -> name -> detector
	modules map[string]map[string]*Detector
}

var registry = registryT{modules: map[string]map[string]*Detector{}}

// RegisterDetector makes a detector importable by policies parsed afterwards.
// It replaces a detector of the same name in the same modules.
func RegisterDetector(d Detector) {
	if d.Name == "" {
		panic("policy: RegisterDetector: empty name")
	}
	if d.Func == nil && d.Unavailable == "" && !d.Type {
		panic("policy: RegisterDetector: " + d.Name + " has no Func and is not marked Unavailable")
	}
	mods := d.Modules
	if len(mods) == 0 {
		mods = []string{"invariant.detectors"}
	}
	dd := d
	dd.Modules = append([]string(nil), mods...)
	registry.mu.Lock()
	defer registry.mu.Unlock()
	for _, m := range mods {
		if registry.modules[m] == nil {
			registry.modules[m] = map[string]*Detector{}
		}
		registry.modules[m][d.Name] = &dd
	}
}

// RegisteredDetectors lists the registered detectors (one entry per name),
// sorted by name.
func RegisteredDetectors() []Detector {
	registry.mu.RLock()
	defer registry.mu.RUnlock()
	seen := map[string]*Detector{}
	for _, names := range registry.modules {
		for n, d := range names {
			seen[n] = d
		}
	}
	out := make([]Detector, 0, len(seen))
	for _, d := range seen {
		out = append(out, *d)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// DetectorAvailable reports whether a detector of that name is registered and
// can run (i.e. is not a stub for a model-based detector), possibly only in
// part (see Detector.Partial).
func DetectorAvailable(name string) bool {
	registry.mu.RLock()
	defer registry.mu.RUnlock()
	for _, names := range registry.modules {
		if d, ok := names[name]; ok && d.Unavailable == "" && (d.Func != nil || d.Type) {
			return true
		}
	}
	return false
}

// DetectorComplete reports whether a detector of that name is available
// with all of Invariant's behaviour (Partial is empty).
func DetectorComplete(name string) bool {
	registry.mu.RLock()
	defer registry.mu.RUnlock()
	for _, names := range registry.modules {
		if d, ok := names[name]; ok && d.Unavailable == "" && d.Partial == "" && (d.Func != nil || d.Type) {
			return true
		}
	}
	return false
}

func lookupDetector(module, name string) (*Detector, bool) {
	registry.mu.RLock()
	defer registry.mu.RUnlock()
	d, ok := registry.modules[module][name]
	return d, ok
}

func registeredModule(module string) bool {
	registry.mu.RLock()
	defer registry.mu.RUnlock()
	_, ok := registry.modules[module]
	return ok
}

func moduleDetectors(module string) []string {
	registry.mu.RLock()
	defer registry.mu.RUnlock()
	var out []string
	for n := range registry.modules[module] {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

const modelNeeded = "needs a machine-learning model or an external service and is not available in this build"

func init() {
	// Invariant detectors that need a model, a network service or an external
	// program. Declared so that policies importing them load; calling them
	// fails loudly.
	for _, d := range []Detector{
		{Name: "is_similar", Modules: []string{"invariant.detectors", "invariant.detectors.sentence_similarity"}, Unavailable: "is_similar " + modelNeeded + " (sentence embeddings)"},
		{Name: "semgrep", Modules: []string{"invariant.detectors", "invariant.detectors.code"}, Unavailable: "semgrep needs the semgrep program and is not available in this build"},
		{Name: "CodeIssue", Modules: []string{"invariant.detectors", "invariant.detectors.code"}, Type: true},
		{Name: "ocr", Modules: []string{"invariant.parsers.ocr"}, Unavailable: "ocr needs the tesseract OCR engine and is not available in this build"},
	} {
		RegisterDetector(d)
	}
}

// valueTypes are the <TYPE> references semantic patterns may use, and the
// detector that decides whether a value is of that type.
var valueTypes = map[string]string{
	"EMAIL_ADDRESS": "pii",
	"LOCATION":      "pii",
	"PHONE_NUMBER":  "pii",
	"PERSON":        "pii",
	"MODERATED":     "moderated",
	"DUMMY":         "", // Invariant's test matcher: the value "__DUMMY__"
}

// fromGo converts a detector's result to a value.
func fromGo(x any, depth int) (value, error) {
	if depth > 64 {
		return none, fmt.Errorf("result nested too deeply")
	}
	switch v := x.(type) {
	case nil:
		return none, nil
	case value:
		return v, nil
	case bool:
		return vBool(v), nil
	case int:
		return vInt(int64(v)), nil
	case int32:
		return vInt(int64(v)), nil
	case int64:
		return vInt(v), nil
	case uint:
		return vInt(int64(v)), nil
	case float32:
		return vFloat(float64(v)), nil
	case float64:
		return vFloat(v), nil
	case string:
		if !utf8.ValidString(v) {
			return none, fmt.Errorf("result string is not valid UTF-8")
		}
		return vStr(v), nil
	case []string:
		items := make([]value, len(v))
		for i, s := range v {
			items[i] = vStr(s)
		}
		return vList(items), nil
	case []any:
		items := make([]value, len(v))
		for i, e := range v {
			c, err := fromGo(e, depth+1)
			if err != nil {
				return none, err
			}
			items[i] = c
		}
		return vList(items), nil
	case []Record:
		items := make([]value, len(v))
		for i := range v {
			c, err := fromGo(v[i], depth+1)
			if err != nil {
				return none, err
			}
			items[i] = c
		}
		return vList(items), nil
	case map[string]any:
		d, err := dictFromMap(v, depth)
		if err != nil {
			return none, err
		}
		return value{K: kDict, p: d}, nil
	case Record:
		d, err := dictFromMap(v.Fields, depth)
		if err != nil {
			return none, err
		}
		return vObj(&record{typ: v.Type, fields: d}), nil
	case *Record:
		if v == nil {
			return none, nil
		}
		return fromGo(*v, depth)
	case json.RawMessage:
		return parseJSON(v, nil)
	}
	// anything else that encodes as JSON (typed slices and maps, structs)
	raw, err := json.Marshal(x)
	if err != nil {
		return none, fmt.Errorf("unsupported value of type %T: %v", x, err)
	}
	return parseJSON(raw, nil)
}

func dictFromMap(m map[string]any, depth int) (*dictVal, error) {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	d := newDict(len(keys))
	for _, k := range keys {
		c, err := fromGo(m[k], depth+1)
		if err != nil {
			return nil, err
		}
		d.set(k, c)
	}
	return d, nil
}

// toGo converts a value to a plain Go value.
func toGo(v value) any {
	switch v.K {
	case kNone, kUnknown, kNop:
		return nil
	case kBool:
		return v.b()
	case kInt:
		return v.i()
	case kFloat:
		return v.f()
	case kStr:
		return v.s
	case kList:
		out := make([]any, len(v.list().Items))
		for i, x := range v.list().Items {
			out[i] = toGo(x)
		}
		return out
	case kDict:
		d := v.dict()
		out := make(map[string]any, d.len())
		for i, k := range d.keys {
			out[k] = toGo(d.vals[i])
		}
		return out
	case kObj:
		raw := appendJSON(nil, v)
		if x, err := parseJSON(raw, nil); err == nil && x.K == kDict {
			return toGo(x)
		}
		return pyStr(v)
	}
	return pyStr(v)
}
