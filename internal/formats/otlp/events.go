package otlp

import (
	"github.com/lookout-dev/lookout/internal/formats/spantree"
	"github.com/lookout-dev/lookout/internal/trace"
)

// ---- events ----
//
// Chat events come from model calls (LLM spans) and tool spans, visited in
// start-time order; see the package documentation for the rules and
// spantree.Deriver for how a conversation is followed.

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
	spantree.ByStart(sel, func(n *node) int64 { return n.startNS })
	d := spantree.NewDeriver()
	for _, n := range sel {
		if n.kind != KindTool {
			d.Chat(n.id, n.in, n.out, true)
			continue
		}
		ti := n.tool
		t := spantree.Tool{SpanID: n.id, CallID: ti.id, Names: []string{ti.name}, Args: ti.args, HasResult: ti.hasResult}
		if ti.hasResult {
			t.Result = ti.result
		}
		d.Tool(t)
	}
	return d.Events()
}
