package otlp

import (
	"fmt"
	"strings"
	"time"

	"github.com/lookout-dev/lookout/internal/formats/spantree"
	"github.com/lookout-dev/lookout/internal/jsonscan"
	"github.com/lookout-dev/lookout/internal/trace"
)

// Map groups spans by trace id, in the order trace ids first appear, and
// maps each group to one canonical trace. A trace that breaks a rule (see
// MapTrace) is left out and reported in the returned *Error; the others are
// returned all the same, so a receiver can answer with a partial success.
//
// Map holds no state. A receiver that assembles a trace from spans arriving
// over time maps each span once (MapSpans), keeps it mapped, and makes the
// trace of all its spans so far (deduplicated by span id) with
// AssembleTrace, which gives what Map would.
func Map(spans []Span) ([]*trace.Trace, error) {
	var order []string
	groups := map[string][]int{}
	for i := range spans {
		id := spans[i].TraceID
		if _, ok := groups[id]; !ok {
			order = append(order, id)
		}
		groups[id] = append(groups[id], i)
	}
	var traces []*trace.Trace
	var probs []*Problem
	for _, id := range order {
		t, p := mapGroup(spans, groups[id])
		if p != nil {
			probs = append(probs, p)
			continue
		}
		traces = append(traces, t)
	}
	if probs != nil {
		return traces, &Error{Problems: probs}
	}
	return traces, nil
}

// MapTrace maps the spans of one trace. It fails, with a *Problem naming
// the span (its index in spans), for: spans of different trace ids; a span
// id that is empty or holds '.' (addresses are dotted: spans.<id>...); a
// span id used twice; a parent chain that loops; an end time before the
// start time; a time outside the years 0000-9999 (which RFC 3339 cannot
// write); a value that is not JSON (attributes of the span, its events,
// links, resource and scope, Input, Output, Extra).
func MapTrace(spans []Span) (*trace.Trace, error) {
	idx := make([]int, len(spans))
	for i := range idx {
		idx[i] = i
	}
	t, p := mapGroup(spans, idx)
	if p != nil {
		return nil, p
	}
	return t, nil
}

// node is a span being mapped, with what the tree and the events need.
type node struct {
	mapped
	idx      int    // index into the input
	id       string // the span's id
	parentID string
	order    int // position among the trace's spans as given
	startNS  int64
	parent   *node

	// The span while it is mapped (mapSelf); nil in a node assembled from
	// a Mapped.
	sp    *Span
	cache []parsedAttr // attributes parsed so far (attr)
	vp    *valParser   // shared by the trace's nodes
}

type parsedAttr struct {
	key string
	v   *val
}

// mapped is what one span maps to on its own (mapSelf), all the trace
// takes of it: MapSpans keeps it, AssembleTrace builds the trace from it.
type mapped struct {
	traceID string
	span    trace.Span // canonical
	kind    string     // semantic kind: LLM, TOOL, AGENT, CHAIN, ... or "" (span.Kind)

	// The chat view of the span: its input and output as messages.
	in, out    []trace.Event
	structured bool // the view came from message shapes, not plain text
	tool       *toolInfo
}

// attr is the span's attribute key parsed (the last, should it be given
// twice), nil when there is none. A span has a few dozen attributes at
// most and mapping asks for a few: looked for in order, without the maps
// (of the attributes and of those parsed) built for every span before.
func (n *node) attr(key string) *val {
	for _, p := range n.cache {
		if p.key == key {
			return p.v
		}
	}
	as := n.sp.Attributes
	for i := len(as) - 1; i >= 0; i-- {
		if as[i].Key == key {
			v := n.parser().parse(as[i].Value)
			n.cache = append(n.cache, parsedAttr{key, v})
			return v
		}
	}
	return nil
}

// parser is the trace's value parser (each node its own when none was given).
func (n *node) parser() *valParser {
	if n.vp == nil {
		n.vp = newValParser()
	}
	return n.vp
}

func (n *node) attrStr(key string) string {
	s, _ := n.attr(key).text()
	return s
}

func mapGroup(spans []Span, idx []int) (*trace.Trace, *Problem) {
	t, _, p := mapNodes(spans, idx)
	return t, p
}

// CheckTrace reports the first span of one trace for which MapTrace would
// fail, without mapping the trace (MapSpans checks the same, and maps).
func CheckTrace(spans []Span) error {
	idx := make([]int, len(spans))
	for i := range idx {
		idx[i] = i
	}
	nodes, byID, _, p := indexNodes(spans, idx)
	if p == nil {
		_, p = tree(nodes, byID)
	}
	if p != nil {
		return p
	}
	return nil
}

// mapNodes maps one trace and also returns its nodes in tree order.
func mapNodes(spans []Span, idx []int) (*trace.Trace, []*node, *Problem) {
	nodes, byID, traceID, p := indexNodes(spans, idx)
	if p != nil {
		return nil, nil, p
	}
	ordered, p := tree(nodes, byID)
	if p != nil {
		return nil, nil, p
	}
	for _, n := range ordered {
		n.mapSelf()
	}
	return assemble(traceID, ordered), ordered, nil
}

// mapSelf maps the span of n on its own: its kind, canonical form and
// chat view need no other span.
func (n *node) mapSelf() {
	n.kind = classify(n)
	n.span = n.canonical()
	n.view()
}

// assemble makes the trace of mapped nodes in tree order: its spans, and
// the events derived from them all.
func assemble(traceID string, ordered []*node) *trace.Trace {
	t := &trace.Trace{ID: traceID}
	if len(ordered) > 0 {
		t.Name = ordered[0].span.Name
	}
	t.Spans = make([]trace.Span, len(ordered))
	for i, n := range ordered {
		t.Spans[i] = n.span
	}
	t.Events = deriveEvents(ordered)
	if f := sessionFields(t.Spans); f != nil {
		t.Metadata = trace.Fields(f).Object()
	}
	return t
}

// indexNodes makes the nodes of one trace's spans, checking each span.
func indexNodes(spans []Span, idx []int) ([]*node, map[string]*node, string, *Problem) {
	nodes := make([]*node, len(idx))
	byID := make(map[string]*node, len(idx))
	traceID := ""
	vp := newValParser()
	for j, i := range idx {
		sp := &spans[i]
		prob := func(format string, args ...any) *Problem {
			return &Problem{Span: i, TraceID: sp.TraceID, SpanID: sp.SpanID, Msg: fmt.Sprintf(format, args...)}
		}
		if j == 0 {
			traceID = sp.TraceID
		} else if sp.TraceID != traceID {
			return nil, nil, "", prob("belongs to trace %q, not %q: a trace's spans share one trace id", sp.TraceID, traceID)
		}
		switch {
		case sp.SpanID == "":
			return nil, nil, "", prob("the span has no span id")
		case strings.Contains(sp.SpanID, "."):
			return nil, nil, "", prob("the span id contains '.', which addresses (spans.<id>...) cannot hold")
		case !sp.Start.IsZero() && !sp.End.IsZero() && sp.End.Before(sp.Start):
			return nil, nil, "", prob("ends (%s) before it starts (%s)", sp.End.UTC().Format(time.RFC3339Nano), sp.Start.UTC().Format(time.RFC3339Nano))
		}
		if where, key, why := invalidJSON(sp); where != "" {
			return nil, nil, "", prob("%s %q: %s", where, key, why)
		}
		for _, tm := range []time.Time{sp.Start, sp.End} {
			if y := tm.UTC().Year(); !tm.IsZero() && (y < 0 || y > 9999) {
				return nil, nil, "", prob("time %s is outside the years 0000-9999", tm.UTC())
			}
		}
		if prev, dup := byID[sp.SpanID]; dup {
			return nil, nil, "", prob("span id %s is used twice (also by span #%d)", sp.SpanID, prev.idx)
		}
		n := &node{idx: i, id: sp.SpanID, parentID: sp.ParentID, sp: sp, order: j, vp: vp}
		n.traceID = sp.TraceID
		if !sp.Start.IsZero() {
			n.startNS = sp.Start.UnixNano()
		}
		nodes[j] = n
		byID[sp.SpanID] = n
	}
	return nodes, byID, traceID, nil
}

// invalidJSON names a value of sp that is not JSON, or breaks the rule at
// the door (jsonscan), and why: every attribute, event, link, resource and
// scope attribute, the payloads and the extras. An attribute given twice
// in one list breaks it too (it becomes a member of an object).
func invalidJSON(sp *Span) (where, key, why string) {
	lists := []struct {
		what  string
		attrs []Attr
	}{{"attribute", sp.Attributes}, {"resource attribute", sp.Resource}, {"scope attribute", sp.Scope.Attributes}}
	for _, e := range sp.Events {
		lists = append(lists, struct {
			what  string
			attrs []Attr
		}{"event attribute", e.Attributes})
	}
	for _, l := range sp.Links {
		lists = append(lists, struct {
			what  string
			attrs []Attr
		}{"link attribute", l.Attributes})
	}
	bad := func(v []byte) string {
		if sp.encoded {
			return ""
		}
		if err := jsonscan.CheckStrict(v); err != nil {
			if se, ok := err.(*jsonscan.Error); ok && se.Rule {
				return fmt.Sprintf("the value breaks a rule at %s: %s", se.Path, se.Msg)
			}
			return "the value is not JSON"
		}
		return ""
	}
	var seen map[string]bool
	for _, l := range lists {
		clear(seen)
		for i, a := range l.attrs {
			if why := bad(a.Value); why != "" {
				return l.what, a.Key, why
			}
			dup := false
			if len(l.attrs) <= 16 {
				for _, b := range l.attrs[:i] {
					dup = dup || b.Key == a.Key
				}
			} else {
				if seen == nil {
					seen = map[string]bool{}
				}
				dup, seen[a.Key] = seen[a.Key], true
			}
			if dup {
				return l.what, a.Key, "given twice"
			}
		}
	}
	if why := bad(sp.Input); sp.Input != nil && why != "" {
		return "payload", "input", why
	}
	if why := bad(sp.Output); sp.Output != nil && why != "" {
		return "payload", "output", why
	}
	for _, f := range sp.Extra {
		if why := bad(f.Value); why != "" {
			return "extra", f.Key, why
		}
	}
	return "", "", ""
}

// tree orders spans parents before children, siblings (and roots) by start
// time, then input order. A span whose parent is not among the spans is an
// orphan: it keeps its ParentID and is placed among the roots.
func tree(nodes []*node, byID map[string]*node) ([]*node, *Problem) {
	for _, n := range nodes {
		n.parent = nil
		if n.parentID != "" {
			n.parent = byID[n.parentID]
		}
	}
	// nodes[i].order is i.
	order, loop := spantree.Order(len(nodes), func(i int) int {
		if p := nodes[i].parent; p != nil {
			return p.order
		}
		return -1
	}, func(i int) int64 { return nodes[i].startNS })
	if loop >= 0 {
		n := nodes[loop]
		return nil, &Problem{Span: n.idx, TraceID: n.traceID, SpanID: n.id,
			Msg: fmt.Sprintf("the span is its own ancestor: its parent chain loops (parent %s)", n.parentID)}
	}
	out := make([]*node, len(order))
	for k, i := range order {
		out[k] = nodes[i]
	}
	return out, nil
}

// canonical is the canonical span of n.
func (n *node) canonical() trace.Span {
	sp := n.sp
	c := trace.Span{
		ID: sp.SpanID, ParentID: sp.ParentID, Name: sp.Name, Kind: n.kind,
		Start: sp.Start, End: sp.End, Status: sp.Status, StatusMessage: sp.StatusMessage,
		Attributes: objectOf(sp.Attributes),
	}
	if !c.Start.IsZero() {
		c.Start = c.Start.UTC()
	}
	if !c.End.IsZero() {
		c.End = c.End.UTC()
	}
	if sp.Input != nil {
		c.Inputs = trace.Compact(sp.Input)
	}
	if sp.Output != nil {
		c.Outputs = trace.Compact(sp.Output)
	}
	if sp.Kind != "" {
		c.Extra = append(c.Extra, trace.Field{Key: "span_kind", Value: trace.AppendString(nil, sp.Kind)})
	}
	if sp.Type != "" {
		c.Extra = append(c.Extra, trace.Field{Key: "type", Value: trace.AppendString(nil, sp.Type)})
	}
	if len(sp.Events) > 0 {
		b := []byte{'['}
		for i, e := range sp.Events {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, `{"name":`...)
			b = trace.AppendString(b, e.Name)
			if !e.Time.IsZero() {
				b = append(b, `,"time":"`...)
				b = e.Time.UTC().AppendFormat(b, time.RFC3339Nano)
				b = append(b, '"')
			}
			if len(e.Attributes) > 0 {
				b = append(b, `,"attributes":`...)
				b = append(b, objectOf(e.Attributes)...)
			}
			b = append(b, '}')
		}
		c.Extra = append(c.Extra, trace.Field{Key: "events", Value: append(b, ']')})
	}
	if len(sp.Links) > 0 {
		b := []byte{'['}
		for i, l := range sp.Links {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, `{"trace_id":`...)
			b = trace.AppendString(b, l.TraceID)
			b = append(b, `,"span_id":`...)
			b = trace.AppendString(b, l.SpanID)
			if len(l.Attributes) > 0 {
				b = append(b, `,"attributes":`...)
				b = append(b, objectOf(l.Attributes)...)
			}
			b = append(b, '}')
		}
		c.Extra = append(c.Extra, trace.Field{Key: "links", Value: append(b, ']')})
	}
	if len(sp.Resource) > 0 {
		c.Extra = append(c.Extra, trace.Field{Key: "resource", Value: objectOf(sp.Resource)})
	}
	if sc := sp.Scope; sc.Name != "" || sc.Version != "" || len(sc.Attributes) > 0 {
		b := []byte(`{"name":`)
		b = trace.AppendString(b, sc.Name)
		if sc.Version != "" {
			b = append(b, `,"version":`...)
			b = trace.AppendString(b, sc.Version)
		}
		if len(sc.Attributes) > 0 {
			b = append(b, `,"attributes":`...)
			b = append(b, objectOf(sc.Attributes)...)
		}
		c.Extra = append(c.Extra, trace.Field{Key: "scope", Value: append(b, '}')})
	}
	for _, f := range sp.Extra {
		c.Extra = append(c.Extra, trace.Field{Key: reservedKey(f.Key), Value: trace.Compact(f.Value)})
	}
	c.Extra = uniqueFields(c.Extra)
	return c
}

// uniqueFields keeps the last of fields with the same key, at the first
// one's place, so that the span's JSON has no repeated member.
func uniqueFields(f trace.Fields) trace.Fields {
	if len(f) < 2 {
		return f
	}
	if len(f) <= 16 { // the usual few: no map, and no copy without a repeat
		repeated := false
		for i := 1; i < len(f) && !repeated; i++ {
			for _, x := range f[:i] {
				repeated = repeated || x.Key == f[i].Key
			}
		}
		if !repeated {
			return f
		}
	}
	seen := make(map[string]int, len(f))
	out := f[:0:0]
	for _, x := range f {
		if i, ok := seen[x.Key]; ok {
			out[i].Value = x.Value
			continue
		}
		seen[x.Key] = len(out)
		out = append(out, x)
	}
	return out
}
