package otlp

import (
	"slices"
	"strconv"
	"strings"

	"github.com/lookout-dev/lookout/internal/trace"
)

// Flattened message attributes: OpenInference writes
// llm.input_messages.<i>.message.role and friends, the older GenAI
// conventions (OpenLLMetry) gen_ai.prompt.<i>.role. ftree holds such keys
// as a tree of their dotted segments.
type ftree struct {
	leaf *val
	kids map[string]*ftree
}

func (t *ftree) put(path []string, v *val) {
	for _, seg := range path {
		if t.kids == nil {
			t.kids = map[string]*ftree{}
		}
		k := t.kids[seg]
		if k == nil {
			k = &ftree{}
			t.kids[seg] = k
		}
		t = k
	}
	t.leaf = v
}

func (t *ftree) kid(path ...string) *ftree {
	for _, seg := range path {
		if t == nil {
			return nil
		}
		t = t.kids[seg]
	}
	return t
}

func (t *ftree) str(path ...string) (string, bool) {
	k := t.kid(path...)
	if k == nil || k.leaf == nil {
		return "", false
	}
	if s, ok := k.leaf.text(); ok {
		return s, true
	}
	return k.leaf.asText(), true
}

func (t *ftree) value(path ...string) *val {
	k := t.kid(path...)
	if k == nil {
		return nil
	}
	return k.leaf
}

// indexed returns the kids whose names are indices, in index order.
func (t *ftree) indexed() []*ftree {
	if t == nil {
		return nil
	}
	type ik struct {
		i int
		t *ftree
	}
	var l []ik
	for name, k := range t.kids {
		if i, err := strconv.Atoi(name); err == nil && i >= 0 {
			l = append(l, ik{i, k})
		}
	}
	slices.SortFunc(l, func(a, b ik) int { return a.i - b.i })
	out := make([]*ftree, len(l))
	for j := range l {
		out[j] = l[j].t
	}
	return out
}

// flat collects the attributes under prefix (which ends with '.'); nil when
// there are none.
func (n *node) flat(prefix string) *ftree {
	var t *ftree
	for _, a := range n.sp.Attributes {
		if !strings.HasPrefix(a.Key, prefix) || len(a.Key) == len(prefix) {
			continue
		}
		if t == nil {
			t = &ftree{}
		}
		t.put(strings.Split(a.Key[len(prefix):], "."), n.attr(a.Key))
	}
	return t
}

// openInferenceMessages reads llm.input_messages / llm.output_messages.
func openInferenceMessages(t *ftree, defRole string) []trace.Event {
	var out []trace.Event
	for _, it := range t.indexed() {
		m := it.kid("message")
		if m == nil {
			continue
		}
		role, ok := m.str("role")
		if !ok {
			role = defRole
		}
		e := trace.Event{Role: normRole(role)}
		if c, ok := m.str("content"); ok {
			e.Content = trace.TextContent(c)
		} else if cs := m.kid("contents").indexed(); len(cs) > 0 {
			var parts []trace.Part
			for _, c := range cs {
				mc := c.kid("message_content")
				typ, _ := mc.str("type")
				if t, ok := mc.str("text"); ok && (typ == "" || typ == "text") {
					parts = append(parts, trace.Part{Type: "text", Text: t})
					continue
				}
				if u, ok := mc.str("image", "image", "url"); ok {
					parts = append(parts, trace.Part{Type: "image_url", Extra: trace.Fields{{Key: "image_url", Value: objectOf([]Attr{{Key: "url", Value: trace.AppendString(nil, u)}})}}})
					continue
				}
				if typ != "" {
					parts = append(parts, trace.Part{Type: typ})
				}
			}
			if len(parts) == 1 && parts[0].Type == "text" {
				e.Content = trace.TextContent(parts[0].Text)
			} else if len(parts) > 0 {
				e.Content = trace.Content{Kind: trace.ContentParts, Parts: parts}
			}
		}
		for _, tc := range m.kid("tool_calls").indexed() {
			c := tc.kid("tool_call")
			id, _ := c.str("id")
			name, _ := c.str("function", "name")
			e.ToolCalls = append(e.ToolCalls, toolCall(id, name, c.value("function", "arguments")))
		}
		if len(e.ToolCalls) > 0 && e.Content.Kind == trace.ContentAbsent {
			e.Content = trace.Content{Kind: trace.ContentNull}
		}
		if id, ok := m.str("tool_call_id"); ok {
			e.ToolCallID = id
		}
		if name, ok := m.str("name"); ok && name != "" {
			e.Extra = trace.Fields{{Key: "name", Value: trace.AppendString(nil, name)}}
		}
		out = append(out, e)
	}
	return out
}

// promptMessages reads gen_ai.prompt.<i>.* / gen_ai.completion.<i>.*
// (OpenLLMetry): role, content, tool_calls.<j>.{id, name, arguments},
// tool_call_id.
func promptMessages(t *ftree, defRole string) []trace.Event {
	var out []trace.Event
	for _, m := range t.indexed() {
		role, ok := m.str("role")
		if !ok {
			role = defRole
		}
		e := trace.Event{Role: normRole(role)}
		if c := m.value("content"); c != nil {
			e.Content = textOf(c)
		}
		for _, tc := range m.kid("tool_calls").indexed() {
			id, _ := tc.str("id")
			name, _ := tc.str("name")
			e.ToolCalls = append(e.ToolCalls, toolCall(id, name, tc.value("arguments")))
		}
		if len(e.ToolCalls) > 0 && e.Content.Kind == trace.ContentAbsent {
			e.Content = trace.Content{Kind: trace.ContentNull}
		}
		if id, ok := m.str("tool_call_id"); ok {
			e.ToolCallID = id
		}
		out = append(out, e)
	}
	return out
}
