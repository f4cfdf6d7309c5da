package otlp

import (
	"crypto/sha256"
	"slices"

	"github.com/lookout-dev/lookout/internal/trace"
)

// ---- events ----
//
// Chat events come from model calls (LLM spans) and tool spans, visited in
// start-time order; see the package documentation for the rules.

type hash [sha256.Size]byte

// conv is a conversation whose end may still grow by tool outputs.
type conv struct{ h hash }

// pendingCall is a tool call of a model's output that no tool span or
// tool message has answered yet.
type pendingCall struct {
	id, name string
	event    int // the assistant event holding the call
	call     int // its index in that event's tool calls
	conv     *conv
	answered bool
}

type deriver struct {
	events   []trace.Event
	prefixes map[hash]struct{}
	calls    []pendingCall
	byName   map[string][]int // calls by function name, oldest first
	byID     map[string][]int
	answered map[string]bool // tool_call_ids with an output emitted
	// outputs emitted by tool spans for calls without ids, by tool name,
	// so that the copy of such an output in a later prompt is not emitted
	// again
	idless map[string]int
	// the same by content, for tool messages with neither id nor name
	outputs map[string]int
	key     []byte
}

// selectSpans picks the spans whose views give events: model calls and
// tool spans. When model calls nest (an SDK wrapper around a provider
// call, or two instrumentations of one call), the innermost ones with
// message-shaped data give the events; a model call whose data is only
// plain text gives events only when no model call around or inside it has
// messages. A trace with no model call at all takes its events from the
// outermost spans whose input or output are messages.
func selectSpans(nodes []*node) []*node {
	// nodes are in tree order: parents before children. below: a model
	// call with messages is below the span (filled walking backwards);
	// llmAbove: a model call is above it (filled walking forwards).
	below := make(map[*node]bool, len(nodes))
	for i := len(nodes) - 1; i >= 0; i-- {
		n := nodes[i]
		if n.parent != nil && (below[n] || n.kind == KindLLM && n.structured) {
			below[n.parent] = true
		}
	}
	llmAbove := make(map[*node]bool, len(nodes))
	for _, n := range nodes {
		if p := n.parent; p != nil && (llmAbove[p] || p.kind == KindLLM) {
			llmAbove[n] = true
		}
	}
	var out []*node
	llm := false
	for _, n := range nodes {
		switch {
		case n.kind == KindTool:
			out = append(out, n)
		case n.kind == KindLLM && n.structured && !below[n]:
			out = append(out, n)
			llm = true
		case n.kind == KindLLM && !n.structured && !below[n] && !llmAbove[n]:
			out = append(out, n)
			llm = true
		}
	}
	if llm {
		return out
	}
	// No model call: the outermost spans with messages.
	out = out[:0]
	msgsAbove := make(map[*node]bool, len(nodes))
	for _, n := range nodes {
		hasMsgs := n.kind != KindTool && n.structured && len(n.in)+len(n.out) > 0
		if p := n.parent; p != nil && (msgsAbove[p] || p.kind != KindTool && p.structured && len(p.in)+len(p.out) > 0) {
			msgsAbove[n] = true
		}
		if n.kind == KindTool || hasMsgs && !msgsAbove[n] {
			out = append(out, n)
		}
	}
	return out
}

func deriveEvents(nodes []*node) []trace.Event {
	sel := selectSpans(nodes)
	slices.SortStableFunc(sel, func(a, b *node) int {
		switch {
		case a.startNS < b.startNS:
			return -1
		case a.startNS > b.startNS:
			return 1
		}
		return 0
	})
	d := &deriver{events: []trace.Event{}, prefixes: map[hash]struct{}{}, byName: map[string][]int{},
		byID: map[string][]int{}, answered: map[string]bool{}, idless: map[string]int{}, outputs: map[string]int{}}
	for _, n := range sel {
		if n.kind == KindTool {
			d.tool(n)
		} else {
			d.chat(n)
		}
	}
	return d.events
}

// chain extends a conversation hash by one message. The identity of a
// message is its role, content (absent = null), tool calls (id, name,
// arguments) and tool_call_id; a tool output with an id is identified by
// role and id alone, so that its copy in a later prompt is recognised even
// when the text differs.
func (d *deriver) chain(h hash, e *trace.Event) hash {
	k := trace.Event{Role: e.Role, ToolCallID: e.ToolCallID}
	if !(e.Role == "tool" && e.ToolCallID != "") {
		k.Content = e.Content
		if k.Content.Kind == trace.ContentAbsent {
			k.Content.Kind = trace.ContentNull
		}
		for _, c := range e.ToolCalls {
			k.ToolCalls = append(k.ToolCalls, trace.ToolCall{ID: c.ID, Function: trace.Function{Name: c.Function.Name, Arguments: c.Function.Arguments}})
		}
	}
	d.key = append(d.key[:0], h[:]...)
	d.key = trace.AppendEvent(d.key, &k)
	return sha256.Sum256(d.key)
}

// isPrefix reports whether a is a prefix of b by message identity.
func (d *deriver) isPrefix(a, b []trace.Event) bool {
	if len(a) > len(b) {
		return false
	}
	var ha, hb hash
	for i := range a {
		ha, hb = d.chain(ha, &a[i]), d.chain(hb, &b[i])
		if ha != hb {
			return false
		}
	}
	return true
}

func (d *deriver) chat(n *node) {
	msgs := n.in
	if len(n.out) > 0 {
		if d.isPrefix(n.in, n.out) {
			msgs = n.out // the output is the whole conversation
		} else {
			msgs = append(slices.Clip(n.in), n.out...)
		}
	}
	var h hash
	emitting := false
	for i := range msgs {
		m := msgs[i]
		h = d.chain(h, &m)
		if !emitting {
			if _, ok := d.prefixes[h]; ok {
				continue
			}
			emitting = true
		}
		d.prefixes[h] = struct{}{}
		if m.Role == "tool" && d.repeatsOutput(&m) {
			continue
		}
		m.SpanID = n.sp.SpanID
		m.ToolCalls = slices.Clone(m.ToolCalls)
		d.events = append(d.events, m)
		if m.Role == "tool" && m.ToolCallID != "" {
			d.answer(m.ToolCallID)
		}
		if len(m.ToolCalls) > 0 {
			c := &conv{h: h}
			for j, tc := range m.ToolCalls {
				k := len(d.calls)
				d.byName[tc.Function.Name] = append(d.byName[tc.Function.Name], k)
				if tc.ID != "" {
					d.byID[tc.ID] = append(d.byID[tc.ID], k)
				}
				d.calls = append(d.calls, pendingCall{id: tc.ID, name: tc.Function.Name, event: len(d.events) - 1, call: j, conv: c})
			}
		}
	}
}

// repeatsOutput reports whether a tool message of a prompt repeats an
// output already emitted: one for the same tool_call_id, or, without ids,
// one a tool span gave for a tool of the same name.
func (d *deriver) repeatsOutput(m *trace.Event) bool {
	if m.ToolCallID != "" {
		return d.answered[m.ToolCallID]
	}
	name := ""
	if raw := m.Extra.Get("name"); raw != nil {
		if v := parseVal(raw); v.isStr() {
			name = v.str
		}
	}
	if name != "" && d.idless[name] > 0 {
		d.idless[name]--
		return true
	}
	if name == "" {
		if k := m.Content.String(); d.outputs[k] > 0 {
			d.outputs[k]--
			return true
		}
	}
	return false
}

// first returns the oldest unanswered call of a queue, dropping answered
// ones from its front; -1 when there is none.
func (d *deriver) first(q map[string][]int, key string) int {
	l := q[key]
	for len(l) > 0 && d.calls[l[0]].answered {
		l = l[1:]
	}
	q[key] = l
	if len(l) == 0 {
		return -1
	}
	return l[0]
}

// answer marks the call with the given id answered.
func (d *deriver) answer(id string) {
	d.answered[id] = true
	if i := d.first(d.byID, id); i >= 0 {
		d.calls[i].answered = true
	}
}

// tool emits a tool span: the output of the call it answers, or a call and
// its output when no model output made that call.
func (d *deriver) tool(n *node) {
	ti := n.tool
	i := -1
	if ti.id != "" {
		i = d.first(d.byID, ti.id)
	}
	if i < 0 {
		// The oldest unanswered call of that name, unless both have ids
		// that differ.
		if j := d.first(d.byName, ti.name); j >= 0 && (ti.id == "" || d.calls[j].id == "") {
			i = j
		}
	}
	out := trace.Event{Role: "tool", Content: toolResult(ti.result), SpanID: n.sp.SpanID}
	if i >= 0 {
		p := &d.calls[i]
		p.answered = true
		id := p.id
		if id == "" {
			// The model's call had no id: give it the tool span's.
			id = ti.id
			if id == "" {
				id = n.sp.SpanID
			}
			d.events[p.event].ToolCalls[p.call].ID = id
			d.idless[ti.name]++
		}
		if !ti.hasResult {
			return
		}
		d.outputs[out.Content.String()]++
		out.ToolCallID = id
		d.answered[id] = true
		if p.id != "" {
			p.conv.h = d.chain(p.conv.h, &out)
			d.prefixes[p.conv.h] = struct{}{}
		}
		d.events = append(d.events, out)
		return
	}
	if ti.args == nil && !ti.hasResult {
		return // nothing to show (BeeAI's tool ".finish" spans)
	}
	id := ti.id
	if id == "" {
		id = n.sp.SpanID
	}
	d.events = append(d.events, trace.Event{
		Role:      "assistant",
		Content:   trace.Content{Kind: trace.ContentNull},
		ToolCalls: []trace.ToolCall{toolCall(id, ti.name, ti.args)},
		SpanID:    n.sp.SpanID,
	})
	if ti.hasResult {
		out.ToolCallID = id
		d.answered[id] = true
		d.outputs[out.Content.String()]++
		d.events = append(d.events, out)
	}
}
