package policy

import (
	"encoding/json"
	"maps"
	"slices"
	"strings"

	"github.com/lookout-dev/lookout/internal/trace"
)

// The trace as policies see it. Events become objects of Invariant's types:
// Message, ToolOutput, ToolCall (inside messages or as bare events), Tool and
// ToolParameter (from {"tools": [...]} events), and the chunks of list
// content (TextChunk, Image). Objects are built once per analysis and their
// fields decoded lazily, so a rule that only looks at tool names never pays
// for parsing tool arguments.

// object is a value with attributes.
type object interface {
	typeName() string
	// attr returns the named attribute; ok is false when the object has none.
	attr(in *interp, name string) (v value, ok bool)
	// attrList names the attributes for error messages.
	attrList() string
	org() *origin
	repr() string
}

// flowObject is an object with a place in the event order, so it can be an
// operand of -> and ~>.
type flowObject interface {
	object
	flowSeq() int
	eventIndex() int
}

type traceState struct {
	events  []trace.Event
	top     []value // top-level objects in order (tools expanded)
	msgs    []value
	outs    []value
	calls   []value
	tools   []value
	byType  map[string][]value
	pending int // index of the first pending event (analyze_pending), or len(events)

	// What building the objects of later events needs (extend).
	seq       int
	lastCall  *toolCall
	callsByID map[string]*toolCall
}

func newTraceState(events []trace.Event) *traceState {
	st := &traceState{}
	st.build(events, 0)
	return st
}

// extend returns the state of events, whose first len(st.events) are
// st's events (the caller vouches for it): st's objects are shared, the
// later events' are built. st stays as it was, but the two share the lazy
// caches of st's objects and the room past the end of st's lists: neither
// may be used while the other is, and a state extended twice leaves the
// first extension unusable.
func (st *traceState) extend(events []trace.Event) *traceState {
	n := len(st.events)
	ns := &traceState{seq: st.seq, lastCall: st.lastCall}
	if len(st.callsByID) > 0 {
		ns.callsByID = maps.Clone(st.callsByID)
	}
	ns.top, ns.msgs, ns.outs, ns.calls, ns.tools = st.top, st.msgs, st.outs, st.calls, st.tools
	ns.build(events, n)
	return ns
}

// build builds the objects of events from event from on, after those of
// the events before it (st's lists hold them; they are not written to).
func (st *traceState) build(events []trace.Event, from int) {
	st.events, st.pending, st.byType = events, len(events), nil
	// Objects are allocated in slabs, one per kind, to keep an analysis of a
	// short trace to a handful of allocations.
	nMsg, nOut, nCall, nBare := 0, 0, 0, 0
	for i := from; i < len(events); i++ {
		ev := &events[i]
		switch {
		case ev.Role == "tool":
			nOut++
		case ev.Role != "" || ev.Extra.Get("role") != nil:
			nMsg++
			nCall += len(ev.ToolCalls)
		case ev.Extra.Get("tools") != nil:
		case ev.Extra.Get("type") != nil || ev.Extra.Get("function") != nil:
			nBare++
		}
	}
	msgs := make([]message, nMsg)
	outs := make([]toolOutput, nOut)
	calls := make([]toolCall, nCall+nBare)
	// The lists grow by append: a state extended again and again (one
	// call of a conversation after another) writes past the end of the
	// lists of the state it extends, which that state does not see, so
	// each extension costs what it adds, not the whole trace.
	grow := func(l []value, extra int) []value {
		if len(l) == 0 {
			return make([]value, 0, extra)
		}
		return slices.Grow(l, extra)
	}
	st.top = grow(st.top, nMsg+nOut+nBare)
	st.msgs = grow(st.msgs, nMsg)
	st.outs = grow(st.outs, nOut)
	st.calls = grow(st.calls, nCall+nBare)
	seq, lastCall, callsByID := st.seq, st.lastCall, st.callsByID
	defer func() { st.seq, st.lastCall, st.callsByID = seq, lastCall, callsByID }()
	for i := from; i < len(events); i++ {
		ev := &events[i]
		switch {
		case ev.Role == "tool":
			out := &outs[0]
			outs = outs[1:]
			out.init(st, i, ev, seq)
			seq++
			if ev.ToolCallID != "" {
				out.callID, out.hasID = ev.ToolCallID, true
				out.call = callsByID[ev.ToolCallID]
			} else if lastCall != nil {
				// Invariant links an output without tool_call_id to the most
				// recent call, and reports that call's id as its own.
				out.inherited = lastCall
				out.call = lastCall
			}
			v := vObj(out)
			st.top = append(st.top, v)
			st.outs = append(st.outs, v)
		case ev.Role != "" || ev.Extra.Get("role") != nil:
			m := &msgs[0]
			msgs = msgs[1:]
			m.init(st, i, ev, seq)
			seq++
			v := vObj(m)
			st.top = append(st.top, v)
			st.msgs = append(st.msgs, v)
			if len(ev.ToolCalls) > 0 {
				m.calls = make([]*toolCall, len(ev.ToolCalls))
			}
			for j := range ev.ToolCalls {
				tc := &ev.ToolCalls[j]
				c := &calls[0]
				calls = calls[1:]
				*c = toolCall{ev: &m.eventBase, msg: m, i: j, tc: tc, seq: seq, name: tc.Function.Name, argsRaw: tc.Function.Arguments}
				seq++
				m.calls[j] = c
				st.calls = append(st.calls, vObj(c))
				if tc.ID != "" {
					if callsByID == nil {
						callsByID = make(map[string]*toolCall, nCall)
					}
					callsByID[tc.ID] = c
				}
				lastCall = c
			}
		case ev.Extra.Get("tools") != nil:
			base := &eventBase{}
			base.init(st, i, ev, -1)
			lst := decodeJSON(ev.Extra.Get("tools"), base.sub("tools"))
			if lst.K != kList {
				continue
			}
			for k, tv := range lst.list().Items {
				t := &tool{k: k}
				t.init(st, i, ev, seq)
				seq++
				t.o = tv.origin()
				if t.o == nil {
					t.o = base.sub("tools").elem(k)
				}
				if tv.K == kDict {
					t.d = tv.dict()
				} else {
					t.d = newDict(0)
				}
				v := vObj(t)
				st.top = append(st.top, v)
				st.tools = append(st.tools, v)
			}
		case ev.Extra.Get("type") != nil || ev.Extra.Get("function") != nil:
			// a bare tool call event
			c := &calls[0]
			calls = calls[1:]
			base := &eventBase{}
			base.init(st, i, ev, seq)
			*c = toolCall{ev: base, i: -1, bare: true, seq: seq}
			seq++
			fn := decodeJSON(ev.Extra.Get("function"), c.org().child("function", fieldRank["function"]))
			if fn.K == kDict {
				c.fnDict = fn.dict()
				if n, ok := c.fnDict.get("name"); ok && n.K == kStr {
					c.name = n.s
				}
			}
			if id := ev.Extra.Get("id"); id != nil {
				var s string
				if json.Unmarshal(id, &s) == nil {
					if callsByID == nil {
						callsByID = map[string]*toolCall{}
					}
					callsByID[s] = c
				}
			}
			lastCall = c
			v := vObj(c)
			st.top = append(st.top, v)
			st.calls = append(st.calls, v)
		}
	}
}

// selectType returns every object of the named type in the trace, in order,
// the way Invariant's Input.select does for an unconstrained variable.
func (st *traceState) selectType(name string) []value {
	switch name {
	case "Message":
		return st.msgs
	case "ToolOutput":
		return st.outs
	case "ToolCall":
		return st.calls
	case "Tool":
		return st.tools
	}
	if v, ok := st.byType[name]; ok {
		return v
	}
	var out []value
	for _, v := range st.top {
		out = selectIn(name, v, out, 0)
	}
	if st.byType == nil {
		st.byType = map[string][]value{}
	}
	st.byType[name] = out
	return out
}

// selectIn appends the values of type name found in v, descending the way
// Invariant's Selectable does: a value of the wanted type is taken whole;
// otherwise messages, tool calls, outputs, tools, content lists, lists and
// dictionaries are searched.
func selectIn(name string, v value, out []value, depth int) []value {
	if depth > 64 {
		return out
	}
	if typeName(v) == name {
		return append(out, v)
	}
	switch v.K {
	case kList:
		for _, x := range v.list().Items {
			out = selectIn(name, x, out, depth+1)
		}
	case kDict:
		for _, x := range v.dict().vals {
			out = selectIn(name, x, out, depth+1)
		}
	case kObj:
		switch o := v.obj().(type) {
		case *message:
			out = selectIn(name, o.contentValue(), out, depth+1)
			out = selectIn(name, o.roleValue(), out, depth+1)
			out = selectIn(name, o.toolCallsValue(), out, depth+1)
		case *toolCall:
			out = selectIn(name, o.idValue(), out, depth+1)
			out = selectIn(name, o.typeValue(), out, depth+1)
			out = selectIn(name, vObj(o.function()), out, depth+1)
		case *toolOutput:
			out = selectIn(name, o.roleValue(), out, depth+1)
			out = selectIn(name, o.contentValue(), out, depth+1)
			out = selectIn(name, o.callIDValue(), out, depth+1)
		case *tool:
			out = selectIn(name, o.inputSchema(), out, depth+1)
		case *contents:
			for _, p := range o.parts {
				out = selectIn(name, p, out, depth+1)
			}
		case *imageChunk:
			out = selectIn(name, o.url, out, depth+1)
		case *textChunk:
			out = selectIn(name, o.text, out, depth+1)
		}
	}
	return out
}

// eventBase is what every event object shares.
type eventBase struct {
	st   *traceState
	idx  int
	ev   *trace.Event
	o    *origin
	seq  int
	meta *value
	// origins of the event and its common members, kept inline so that
	// building the trace state allocates nothing per field
	root, roleOrg, contentOrg origin
}

func (e *eventBase) init(st *traceState, idx int, ev *trace.Event, seq int) {
	e.st, e.idx, e.ev, e.seq = st, idx, ev, seq
	e.root = origin{idx: idx, ord: idx}
	e.o = &e.root
	e.roleOrg = origin{parent: &e.root, key: "role", ord: rankRole}
	e.contentOrg = origin{parent: &e.root, key: "content", ord: rankContent}
}

func (e *eventBase) org() *origin    { return e.o }
func (e *eventBase) flowSeq() int    { return e.seq }
func (e *eventBase) eventIndex() int { return e.idx }

// sub is the origin of a member of the event.
func (e *eventBase) sub(key string) *origin { return e.o.child(key, fieldRank[key]) }

func (e *eventBase) roleValue() value { return vStrAt(e.ev.Role, &e.roleOrg) }

// metadata is the event's "metadata" object ({} when absent).
func (e *eventBase) metadata() value {
	if e.meta == nil {
		v := value{K: kDict, p: newDict(0)}
		if raw := e.ev.Extra.Get("metadata"); raw != nil {
			if d := decodeJSON(raw, e.sub("metadata")); d.K == kDict {
				v = d
			}
		}
		e.meta = &v
	}
	return *e.meta
}

// server is metadata.server, or the event's own "server" member.
func (e *eventBase) server() value {
	if md := e.metadata(); md.K == kDict {
		if s, ok := md.dict().get("server"); ok {
			return s
		}
	}
	if raw := e.ev.Extra.Get("server"); raw != nil {
		return decodeJSON(raw, nil)
	}
	return none
}

func contentValue(e *eventBase, cache *value, done *bool) value {
	if *done {
		return *cache
	}
	*done = true
	c := &e.ev.Content
	co := &e.contentOrg
	switch c.Kind {
	case trace.ContentText:
		*cache = vStrAt(c.Text, co)
	case trace.ContentParts:
		cs := &contents{o: co}
		for j := range c.Parts {
			p := &c.Parts[j]
			po := co.elem(j)
			switch {
			case p.Type == "text":
				cs.parts = append(cs.parts, vObj(&textChunk{typ: p.Type, text: vStrAt(p.Text, po.child("text", fieldRank["text"])), o: po}))
			case p.Extra.Get("image_url") != nil:
				url := decodeJSON(p.Extra.Get("image_url"), po.child("image_url", fieldRank["image_url"]))
				cs.parts = append(cs.parts, vObj(&imageChunk{typ: p.Type, url: url, o: po}))
			default:
				cs.parts = append(cs.parts, partDict(p, po))
			}
		}
		*cache = vObj(cs)
	default:
		*cache = none
	}
	return *cache
}

// partDict represents a content part of an unknown type as a dictionary.
func partDict(p *trace.Part, o *origin) value {
	d := newDict(len(p.Extra) + 2)
	d.org = o
	if p.Type != "" {
		d.set("type", vStr(p.Type))
	}
	for i, f := range p.Extra {
		d.set(f.Key, decodeJSON(f.Value, o.child(f.Key, 10+i)))
	}
	return value{K: kDict, p: d}
}

// message is an event with a role other than "tool".
type message struct {
	eventBase
	calls       []*toolCall
	callsOrg    *origin
	content     value
	contentDone bool
}

func (m *message) callsOrigin() *origin {
	if m.callsOrg == nil {
		m.callsOrg = m.sub("tool_calls")
	}
	return m.callsOrg
}

func (m *message) typeName() string { return "Message" }
func (m *message) attrList() string { return "role, content, tool_calls, metadata" }
func (m *message) contentValue() value {
	return contentValue(&m.eventBase, &m.content, &m.contentDone)
}
func (m *message) toolCallsValue() value {
	items := make([]value, len(m.calls))
	for i, c := range m.calls {
		items[i] = vObj(c)
	}
	return value{K: kList, p: &listVal{Items: items, org: m.callsOrigin()}}
}
func (m *message) attr(in *interp, name string) (value, bool) {
	switch name {
	case "role":
		if m.ev.Role == "" {
			if raw := m.ev.Extra.Get("role"); raw != nil {
				return decodeJSON(raw, &m.roleOrg), true
			}
		}
		return m.roleValue(), true
	case "content":
		return m.contentValue(), true
	case "tool_calls":
		return m.toolCallsValue(), true
	case "metadata":
		return m.metadata(), true
	}
	return value{}, false
}
func (m *message) repr() string { return string(eventJSON(m.ev)) }

// toolOutput is an event with role "tool".
type toolOutput struct {
	eventBase
	callID      string
	hasID       bool
	inherited   *toolCall // the call whose id this output reports, when it has none
	call        *toolCall
	content     value
	contentDone bool
}

func (t *toolOutput) callIDValue() value {
	switch {
	case t.hasID:
		return vStrAt(t.callID, t.sub("tool_call_id"))
	case t.inherited != nil:
		return t.inherited.idValue()
	}
	return none
}

func (t *toolOutput) typeName() string { return "ToolOutput" }
func (t *toolOutput) attrList() string { return "role, content, tool_call_id, metadata" }
func (t *toolOutput) contentValue() value {
	return contentValue(&t.eventBase, &t.content, &t.contentDone)
}
func (t *toolOutput) attr(in *interp, name string) (value, bool) {
	switch name {
	case "role":
		return t.roleValue(), true
	case "content":
		return t.contentValue(), true
	case "tool_call_id":
		return t.callIDValue(), true
	case "metadata":
		return t.metadata(), true
	}
	return value{}, false
}
func (t *toolOutput) repr() string { return string(eventJSON(t.ev)) }

// toolCall is a call inside a message's tool_calls, or a bare tool call event.
type toolCall struct {
	ev       *eventBase
	msg      *message
	i        int // index in tool_calls; -1 for a bare call
	bare     bool
	tc       *trace.ToolCall // nil for a bare call
	fnDict   *dictVal        // the decoded "function" of a bare call
	o        *origin
	seq      int
	name     string
	nameOrg  *origin
	oval     origin // storage for o and nameOrg of calls in messages
	nameVal  origin
	argsRaw  json.RawMessage
	args     *value
	fn       *function
	metaDict *value
}

func (c *toolCall) typeName() string { return "ToolCall" }
func (c *toolCall) attrList() string { return "function, type, id, metadata" }
func (c *toolCall) org() *origin {
	if c.o == nil {
		if c.bare {
			c.o = c.ev.o
		} else {
			c.oval = origin{parent: c.msg.callsOrigin(), idx: c.i, ord: c.i}
			c.o = &c.oval
		}
	}
	return c.o
}
func (c *toolCall) flowSeq() int    { return c.seq }
func (c *toolCall) eventIndex() int { return c.ev.idx }
func (c *toolCall) function() *function {
	if c.fn == nil {
		c.fn = &function{c: c, o: c.org().child("function", fieldRank["function"])}
	}
	return c.fn
}
func (c *toolCall) idValue() value {
	if c.bare {
		if raw := c.ev.ev.Extra.Get("id"); raw != nil {
			return decodeJSON(raw, c.org().child("id", fieldRank["id"]))
		}
		return none
	}
	if c.tc.ID == "" {
		return none
	}
	return vStrAt(c.tc.ID, c.org().child("id", fieldRank["id"]))
}
func (c *toolCall) typeValue() value {
	if c.bare {
		if raw := c.ev.ev.Extra.Get("type"); raw != nil {
			return decodeJSON(raw, c.org().child("type", fieldRank["type"]))
		}
		return none
	}
	if c.tc.Type == "" {
		return vStr("function")
	}
	return vStrAt(c.tc.Type, c.org().child("type", fieldRank["type"]))
}
func (c *toolCall) nameValue() value {
	if c.nameOrg == nil {
		c.nameVal = origin{parent: c.function().o, key: "name", ord: fieldRank["name"]}
		c.nameOrg = &c.nameVal
	}
	return vStrAt(c.name, c.nameOrg)
}

// arguments decodes the call's arguments on first use: an object (also when
// given as a JSON string), the original string when it is not JSON, or {}.
func (c *toolCall) arguments() value {
	if c.args != nil {
		return *c.args
	}
	ao := c.function().o.child("arguments", fieldRank["arguments"])
	var v value
	if c.bare {
		v = value{K: kDict, p: &dictVal{org: ao}}
		if c.fnDict != nil {
			if a, ok := c.fnDict.get("arguments"); ok {
				v = a
				if a.K == kStr {
					if parsed := decodeJSON([]byte(a.s), ao); parsed.K == kDict {
						v = parsed
					}
				}
			}
		}
	} else if c.argsRaw != nil {
		v = decodeJSON(c.argsRaw, ao)
	} else {
		v = value{K: kDict, p: &dictVal{org: ao}}
	}
	c.args = &v
	return v
}
func (c *toolCall) metadata() value {
	if c.metaDict == nil {
		v := value{K: kDict, p: newDict(0)}
		var raw json.RawMessage
		if c.bare {
			raw = c.ev.ev.Extra.Get("metadata")
		} else {
			raw = c.tc.Extra.Get("metadata")
		}
		if raw != nil {
			if d := decodeJSON(raw, c.org().child("metadata", 0)); d.K == kDict {
				v = d
			}
		}
		c.metaDict = &v
	}
	return *c.metaDict
}
func (c *toolCall) attr(in *interp, name string) (value, bool) {
	switch name {
	case "function":
		return vObj(c.function()), true
	case "type":
		return c.typeValue(), true
	case "id":
		return c.idValue(), true
	case "metadata":
		return c.metadata(), true
	}
	return value{}, false
}
func (c *toolCall) repr() string { return string(toolCallJSON(c)) }

// function is a tool call's {name, arguments}.
type function struct {
	c *toolCall
	o *origin
}

func (f *function) typeName() string { return "Function" }
func (f *function) attrList() string { return "name, arguments" }
func (f *function) org() *origin     { return f.o }
func (f *function) attr(in *interp, name string) (value, bool) {
	switch name {
	case "name":
		return f.c.nameValue(), true
	case "arguments":
		return f.c.arguments(), true
	}
	return value{}, false
}
func (f *function) repr() string {
	return "<Function " + f.c.name + "(" + pyStr(f.c.arguments()) + ")>"
}

// contents is list content: text chunks and images.
type contents struct {
	parts []value
	o     *origin
}

func (c *contents) typeName() string { return "Contents" }
func (c *contents) attrList() string { return "text, image" }
func (c *contents) org() *origin     { return c.o }
func (c *contents) length() int      { return len(c.parts) }
func (c *contents) attr(in *interp, name string) (value, bool) {
	switch name {
	case "text", "image":
		return value{K: kFunc, p: &boundMethod{recv: vObj(c), method: name}}, true
	}
	return value{}, false
}
func (c *contents) texts() []value {
	var out []value
	for _, p := range c.parts {
		if t, ok := p.p.(*textChunk); ok && p.K == kObj {
			out = append(out, t.text)
		}
	}
	return out
}
func (c *contents) images() []value {
	var out []value
	for _, p := range c.parts {
		if im, ok := p.p.(*imageChunk); ok && p.K == kObj {
			if u := im.urlString(); u.K == kStr {
				out = append(out, u)
			}
		}
	}
	return out
}

// contains is Invariant's Contents.__contains__: a substring of any text
// chunk or image URL.
func (c *contents) contains(s string) bool {
	for _, p := range c.parts {
		switch x := p.p.(type) {
		case *textChunk:
			if strings.Contains(x.text.s, s) {
				return true
			}
		case *imageChunk:
			if u := x.urlString(); u.K == kStr && strings.Contains(u.s, s) {
				return true
			}
		}
	}
	return false
}
func (c *contents) repr() string {
	var parts []string
	for _, p := range c.parts {
		parts = append(parts, pyRepr(p))
	}
	return "<Contents(" + strings.Join(parts, ", ") + ")>"
}

type textChunk struct {
	typ  string
	text value
	o    *origin
}

func (t *textChunk) typeName() string { return "TextChunk" }
func (t *textChunk) attrList() string { return "type, text" }
func (t *textChunk) org() *origin     { return t.o }
func (t *textChunk) attr(in *interp, name string) (value, bool) {
	switch name {
	case "type":
		return vStr(t.typ), true
	case "text":
		return t.text, true
	}
	return value{}, false
}
func (t *textChunk) repr() string { return "TextChunk(type=" + t.typ + ", text=" + t.text.s + ")" }

type imageChunk struct {
	typ string
	url value // the image_url member (usually {"url": ...})
	o   *origin
}

func (im *imageChunk) typeName() string { return "Image" }
func (im *imageChunk) attrList() string { return "type, image_url" }
func (im *imageChunk) org() *origin     { return im.o }
func (im *imageChunk) urlString() value {
	switch im.url.K {
	case kDict:
		if u, ok := im.url.dict().get("url"); ok {
			return u
		}
	case kStr:
		return im.url
	}
	return none
}
func (im *imageChunk) attr(in *interp, name string) (value, bool) {
	switch name {
	case "type":
		return vStr(im.typ), true
	case "image_url":
		return im.url, true
	}
	return value{}, false
}
func (im *imageChunk) repr() string {
	return "Image(type=" + im.typ + ", image_url=" + pyStr(im.url) + ")"
}

// tool is one entry of a {"tools": [...]} event.
type tool struct {
	eventBase
	k      int // index in the tools list
	d      *dictVal
	params *value
}

func (t *tool) typeName() string { return "Tool" }
func (t *tool) attrList() string { return "name, description, inputSchema, server" }
func (t *tool) org() *origin     { return t.o }
func (t *tool) inputSchema() value {
	if t.params != nil {
		return *t.params
	}
	schemaOrg := t.o.child("inputSchema", fieldRank["inputSchema"])
	var items []value
	if s, ok := t.d.get("inputSchema"); ok && s.K == kDict {
		req, _ := s.dict().get("required")
		if props, ok := s.dict().get("properties"); ok && props.K == kDict {
			pd := props.dict()
			for i, key := range pd.keys {
				items = append(items, newToolParam(key, pd.vals[i], req, pd.vals[i].origin(), false))
			}
		}
	}
	v := value{K: kList, p: &listVal{Items: items, org: schemaOrg}}
	t.params = &v
	return v
}
func (t *tool) attr(in *interp, name string) (value, bool) {
	switch name {
	case "name":
		if v, ok := t.d.get("name"); ok {
			return v, true
		}
		return vStr(""), true
	case "description":
		if v, ok := t.d.get("description"); ok && v.K != kNone {
			if v.K != kStr {
				return vStr(pyStr(v)), true
			}
			return v, true
		}
		return vStr("no description available"), true
	case "inputSchema":
		return t.inputSchema(), true
	case "server":
		if md, ok := t.d.get("metadata"); ok && md.K == kDict {
			if s, ok := md.dict().get("server"); ok {
				return s, true
			}
		}
		return none, true
	}
	return value{}, false
}
func (t *tool) repr() string {
	n, _ := t.d.get("name")
	d, _ := t.attr(nil, "description")
	return "<Tool " + pyStr(n) + " (" + pyStr(d) + ")>"
}

// toolParam is one parameter of a tool's input schema.
type toolParam struct {
	fields *dictVal
	o      *origin
}

func newToolParam(name string, schema value, required value, o *origin, nested bool) value {
	d := newDict(8)
	var sd *dictVal
	if schema.K == kDict {
		sd = schema.dict()
	} else {
		sd = newDict(0)
	}
	typ, ok := sd.get("type")
	if !ok {
		typ = vStr("string")
	}
	aliases := map[string]string{"int": "integer", "long": "integer", "float": "number", "bool": "boolean",
		"str": "string", "dict": "object", "list": "array"}
	if typ.K == kStr {
		if a, ok := aliases[typ.s]; ok {
			typ = vStr(a)
		}
	}
	desc, ok := sd.get("description")
	if !ok || desc.K == kNone {
		desc = vStr("no description available")
	}
	isReq := false
	if required.K == kList {
		for _, r := range required.list().Items {
			if r.K == kStr && r.s == name {
				isReq = true
			}
		}
	}
	d.set("type", typ)
	d.set("name", vStr(name))
	d.set("description", desc)
	d.set("required", vBool(isReq))
	props := none
	if typ.K == kStr && typ.s == "object" {
		pd := newDict(0)
		if ps, ok := sd.get("properties"); ok && ps.K == kDict {
			req, _ := sd.get("required")
			for i, k := range ps.dict().keys {
				child := ps.dict().vals[i]
				co := child.origin()
				pd.set(k, newToolParam(name+"."+k, child, req, co, true))
			}
		}
		props = value{K: kDict, p: pd}
	}
	d.set("properties", props)
	addl := none
	if a, ok := sd.get("additionalProperties"); ok && a.K != kNone {
		addl = vBool(truthy(a))
	}
	d.set("additionalProperties", addl)
	items := none
	if typ.K == kStr && typ.s == "array" {
		if it, ok := sd.get("items"); ok {
			items = newToolParam(name+" item", it, none, it.origin(), true)
		}
	}
	d.set("items", items)
	enum := none
	if e, ok := sd.get("enum"); ok {
		enum = e
	}
	d.set("enum", enum)
	if o == nil {
		o = &origin{}
	}
	return vObj(&toolParam{fields: d, o: o})
}

func (p *toolParam) typeName() string { return "ToolParameter" }
func (p *toolParam) attrList() string {
	return "type, name, description, required, properties, additionalProperties, items, enum"
}
func (p *toolParam) org() *origin { return p.o }
func (p *toolParam) attr(in *interp, name string) (value, bool) {
	return p.fields.get(name)
}
func (p *toolParam) repr() string {
	n, _ := p.fields.get("name")
	return "ToolParameter(" + pyStr(n) + ")"
}

// eventJSON renders an event as JSON (for violation arguments).
func eventJSON(e *trace.Event) json.RawMessage {
	// size the buffer once; events are mostly their content
	n := 64 + len(e.Content.Text)
	for _, p := range e.Content.Parts {
		n += len(p.Text) + 32
	}
	for _, c := range e.ToolCalls {
		n += len(c.Function.Name) + len(c.Function.Arguments) + len(c.ID) + 64
	}
	for _, f := range e.Extra {
		n += len(f.Key) + len(f.Value) + 4
	}
	return json.RawMessage(trace.AppendEvent(make([]byte, 0, n+n/8), e))
}

func toolCallJSON(c *toolCall) json.RawMessage {
	if c.bare {
		return eventJSON(c.ev.ev)
	}
	b := []byte(`{`)
	if c.tc.ID != "" {
		b = append(b, `"id":`...)
		b = trace.AppendString(b, c.tc.ID)
		b = append(b, ',')
	}
	if c.tc.Type != "" {
		b = append(b, `"type":`...)
		b = trace.AppendString(b, c.tc.Type)
		b = append(b, ',')
	}
	b = append(b, `"function":{"name":`...)
	b = trace.AppendString(b, c.tc.Function.Name)
	if c.tc.Function.Arguments != nil {
		b = append(b, `,"arguments":`...)
		b = append(b, c.tc.Function.Arguments...)
	}
	b = append(b, `}}`...)
	return b
}
