package spantree

import (
	"crypto/sha256"
	"encoding/json"
	"slices"

	"github.com/lookout-dev/lookout/internal/jsonscan"
	"github.com/lookout-dev/lookout/internal/trace"
)

// Deriver turns the model-call and tool spans of one trace, given in the
// order they started, into chat events. Feed it with Chat and Tool, then
// take Events.
//
// Model calls give their input and output messages, except a prefix of the
// conversation an earlier span emitted already. Message identity is role,
// content (absent = null), tool calls (id, name, arguments) and
// tool_call_id; a tool output with an id is identified by role and id
// alone, so that its copy in a later prompt is recognised even when the
// text differs. A tool message of a prompt that repeats an output emitted
// already (same tool_call_id; without ids, the output of a tool span for a
// tool of that name, or with no name the same text) is not emitted again.
//
// A tool span answers the oldest unanswered call of a model's output made
// with its call id, else with one of its names (unless both have ids that
// differ): it gives that call's output, and a call that had no id takes the
// span's call id, or its span id. A tool span that answers no call gives a
// call of its own and its output.
type Deriver struct {
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

// NewDeriver returns a Deriver with no events yet.
func NewDeriver() *Deriver {
	return &Deriver{events: []trace.Event{}, prefixes: map[hash]struct{}{}, byName: map[string][]int{},
		byID: map[string][]int{}, answered: map[string]bool{}, idless: map[string]int{}, outputs: map[string]int{}}
}

// Events returns the events derived so far (never nil).
func (d *Deriver) Events() []trace.Event { return d.events }

// Chat takes a model call: its input messages and its output messages.
// When outMayRepeatIn is set and the output starts with the input, the
// output is the whole conversation; otherwise it follows the input.
func (d *Deriver) Chat(spanID string, in, out []trace.Event, outMayRepeatIn bool) {
	msgs := in
	if len(out) > 0 {
		if outMayRepeatIn && d.isPrefix(in, out) {
			msgs = out
		} else {
			msgs = append(slices.Clip(in), out...)
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
		m.SpanID = spanID
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

// Tool is what a tool span tells about its call.
type Tool struct {
	SpanID string
	// CallID is the id of the call the span answers, "" when not given.
	CallID string
	// Names are the tool's names, any of which a model's call may use; the
	// first is the name of a call the span makes itself.
	Names []string
	// Args are the arguments of a call the span makes itself; nil when
	// none were given ({} is written then).
	Args json.RawMessage
	// Result is the tool's output, when HasResult.
	Result    trace.Content
	HasResult bool
}

// Tool takes a tool span: the output of the call it answers, or a call
// and its output when no model output made that call. A span with neither
// arguments nor a result that answers no call gives nothing.
func (d *Deriver) Tool(t Tool) {
	name := ""
	if len(t.Names) > 0 {
		name = t.Names[0]
	}
	i := -1
	if t.CallID != "" {
		i = d.first(d.byID, t.CallID)
	}
	if i < 0 {
		// The oldest unanswered call of one of its names, unless both have
		// ids that differ.
		for _, n := range t.Names {
			if j := d.first(d.byName, n); j >= 0 && (t.CallID == "" || d.calls[j].id == "") && (i < 0 || j < i) {
				i = j
			}
		}
	}
	out := trace.Event{Role: "tool", Content: t.Result, SpanID: t.SpanID}
	if i >= 0 {
		p := &d.calls[i]
		p.answered = true
		id := p.id
		if id == "" {
			// The model's call had no id: give it the tool span's.
			id = t.CallID
			if id == "" {
				id = t.SpanID
			}
			d.events[p.event].ToolCalls[p.call].ID = id
			d.idless[p.name]++
		}
		if !t.HasResult {
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
	if t.Args == nil && !t.HasResult {
		return // nothing to show (BeeAI's tool ".finish" spans)
	}
	id := t.CallID
	if id == "" {
		id = t.SpanID
	}
	args := t.Args
	if args == nil {
		args = json.RawMessage(`{}`)
	}
	d.events = append(d.events, trace.Event{
		Role:      "assistant",
		Content:   trace.Content{Kind: trace.ContentNull},
		ToolCalls: []trace.ToolCall{{ID: id, Type: "function", Function: trace.Function{Name: name, Arguments: args}}},
		SpanID:    t.SpanID,
	})
	if t.HasResult {
		out.ToolCallID = id
		d.answered[id] = true
		d.outputs[out.Content.String()]++
		d.events = append(d.events, out)
	}
}

// chain extends a conversation hash by one message.
func (d *Deriver) chain(h hash, e *trace.Event) hash {
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
func (d *Deriver) isPrefix(a, b []trace.Event) bool {
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

// repeatsOutput reports whether a tool message of a prompt repeats an
// output already emitted: one for the same tool_call_id, or, without ids,
// one a tool span gave for a tool of the same name.
func (d *Deriver) repeatsOutput(m *trace.Event) bool {
	if m.ToolCallID != "" {
		return d.answered[m.ToolCallID]
	}
	name := ""
	if raw := m.Extra.Get("name"); len(raw) > 0 && raw[0] == '"' {
		name, _ = jsonscan.New(raw).String("name")
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
func (d *Deriver) first(q map[string][]int, key string) int {
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
func (d *Deriver) answer(id string) {
	d.answered[id] = true
	if i := d.first(d.byID, id); i >= 0 {
		d.calls[i].answered = true
	}
}
