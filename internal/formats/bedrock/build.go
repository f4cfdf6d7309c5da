package bedrock

import (
	"encoding/json"
	"strconv"
	"strings"
	"time"

	"github.com/lookout-dev/lookout/internal/jsonscan"
	"github.com/lookout-dev/lookout/internal/trace"
)

// RootSpanID is the id of the span of the whole invocation.
const RootSpanID = "root"

// group is one span in the making: the parts of one traceId (or of one
// returnControl invocation).
type group struct {
	id       string // span id
	origID   string // traceId or invocationId as given
	hasOrig  bool
	idAttr   string // "traceId" or "invocationId"
	kind     string
	phase    string
	callBase string

	collaborator                            bool
	collabName, agentID, aliasID, sessionID string

	parts rawList
	times timeRange

	model         string
	inTok, outTok int64
	hasUsage      bool
	isValid       json.RawMessage
	rationale     *string
	response      *string
	finalResponse *string
	action        string
	intervened    bool
	failureReason *string
	failureCode   json.RawMessage
	nCalls        int
	pending       [numCategories][]string
}

type timeRange struct {
	start, end time.Time
	set        bool
}

func (r *timeRange) add(t time.Time) {
	if !r.set {
		r.start, r.end, r.set = t, t, true
		return
	}
	if t.Before(r.start) {
		r.start = t
	}
	if t.After(r.end) {
		r.end = t
	}
}

type finalRef struct {
	text string
	span string
	pos  int // len(events) when it was seen
}

type builder struct {
	events []trace.Event
	groups []*group
	byKey  map[string]*group // "t:<traceId>", "u:<phase>" (no traceId), "r:<invocationId>"
	used   map[string]bool   // span ids

	times                              timeRange
	agentID, aliasID, version, session string
	sessions                           []string
	inTok, outTok                      int64
	hasUsage                           bool
	firstTraceID                       string

	chunks, files rawList
	chunkText     strings.Builder
	hasChunks     bool
	attribution   json.RawMessage

	userTried bool
	user      *trace.Event
	finals    []finalRef
	lastAsst  int // index of the assistant message that can take more tool calls, or -1
}

// build turns the parts of one invocation into a trace.
func build(parts []part) *trace.Trace {
	b := &builder{byKey: map[string]*group{}, used: map[string]bool{RootSpanID: true}, lastAsst: -1}
	for i := range parts {
		b.add(&parts[i])
	}
	return b.finish()
}

func (b *builder) add(p *part) {
	switch p.kind {
	case kindChunk:
		b.chunks.add(p.raw)
		b.chunkText.WriteString(p.chunk.text)
		b.hasChunks = true
		if p.chunk.attribution != nil {
			b.attribution = p.chunk.attribution
		}
		return
	case kindFiles:
		b.files.add(p.raw)
		return
	}
	g := b.groupFor(p)
	g.parts.add(p.raw)
	if p.hasTime {
		g.times.add(p.time)
		b.times.add(p.time)
	}
	if p.kind == kindReturnControl {
		for i := range p.calls {
			b.emitCall(g, &p.calls[i])
		}
		return
	}
	b.agentInfo(p, g)
	st := &p.st
	if st.model != "" && g.model == "" {
		g.model = st.model
	}
	if st.hasUsage {
		g.inTok += st.inTok
		g.outTok += st.outTok
		g.hasUsage = true
		b.inTok += st.inTok
		b.outTok += st.outTok
		b.hasUsage = true
	}
	if st.isValid != nil {
		g.isValid = st.isValid
	}
	if st.parsedRationale != nil {
		g.rationale = st.parsedRationale
	}
	if st.parsedText != nil {
		g.response = st.parsedText
	}
	if st.action != "" {
		if g.action == "" {
			g.action = st.action
		}
		if st.action == "INTERVENED" {
			g.intervened = true
		}
	}
	if st.failureReason != nil {
		g.failureReason = st.failureReason
	}
	if st.failureCode != nil {
		g.failureCode = st.failureCode
	}

	top := p.topLevel() && p.phase == "orchestration"
	switch p.stepName {
	case "modelInvocationInput":
		if top && !b.userTried && (st.promptType == "" || st.promptType == "ORCHESTRATION") {
			b.userTried = true
			if text, ok := userFromRequest(stringLit(st.textLit)); ok {
				b.user = &trace.Event{Role: "user", Content: trace.TextContent(text), SpanID: g.id}
			}
		}
	case "invocationInput":
		if top && !b.userTried && st.call != nil {
			b.userTried = true
			// With no model call before it, Bedrock looked the input up
			// in the knowledge base as it was given.
			if st.call.cat == catKB && st.hasText && strings.TrimSpace(st.text) != "" {
				b.user = &trace.Event{Role: "user", Content: trace.TextContent(st.text), SpanID: g.id}
			}
		}
	}
	if st.rationale != nil {
		b.events = append(b.events, trace.Event{Role: "assistant", Content: trace.TextContent(*st.rationale), SpanID: g.id})
		b.lastAsst = len(b.events) - 1
	}
	if st.call != nil {
		b.emitCall(g, st.call)
	}
	if st.out != nil {
		b.emitOutput(g, st.out)
	}
	if st.final != nil {
		g.finalResponse = st.final
		if p.topLevel() {
			b.finals = append(b.finals, finalRef{text: *st.final, span: g.id, pos: len(b.events)})
		}
	}
}

// agentInfo records who produced a trace part.
func (b *builder) agentInfo(p *part, g *group) {
	if p.topLevel() {
		if b.agentID == "" {
			b.agentID = p.agentID
		}
		if b.aliasID == "" {
			b.aliasID = p.aliasID
		}
		if b.version == "" {
			b.version = p.version
		}
		if b.session == "" {
			b.session = p.sessionID
		}
		if b.firstTraceID == "" && p.hasTraceID {
			b.firstTraceID = p.traceID
		}
	} else if g.parts.n == 1 {
		g.collabName, g.agentID, g.aliasID, g.sessionID = p.collaborator, p.agentID, p.aliasID, p.sessionID
	}
	if p.sessionID != "" {
		for _, s := range b.sessions {
			if s == p.sessionID {
				return
			}
		}
		b.sessions = append(b.sessions, p.sessionID)
	}
}

// groupFor finds or opens the group of a part.
func (b *builder) groupFor(p *part) *group {
	var key, base, orig, idAttr, kind string
	hasOrig := false
	switch {
	case p.kind == kindReturnControl:
		key, orig, hasOrig, idAttr, kind = "r:"+p.invocationID, p.invocationID, p.invocationID != "", "invocationId", "return-control"
		base = "return-control"
		if p.invocationID != "" {
			base += "-" + sanitizeID(p.invocationID)
		}
	case p.hasTraceID:
		key, orig, hasOrig, idAttr, base = "t:"+p.traceID, p.traceID, true, "traceId", sanitizeID(p.traceID)
	default:
		key, base = "u:"+p.phase, sanitizeID(p.phase)+"-untraced"
	}
	if g := b.byKey[key]; g != nil {
		return g
	}
	if kind == "" {
		kind = p.phase
		if !p.topLevel() {
			kind = "collaborator"
		}
	}
	if base == "" {
		base = "span"
	}
	id := base
	for n := 2; b.used[id]; n++ {
		id = base + "-" + strconv.Itoa(n)
	}
	b.used[id] = true
	g := &group{id: id, origID: orig, hasOrig: hasOrig, idAttr: idAttr, kind: kind, phase: p.phase, callBase: id}
	g.collaborator = kind == "collaborator"
	if hasOrig && orig != "" {
		g.callBase = orig
	}
	b.byKey[key] = g
	b.groups = append(b.groups, g)
	return g
}

// sanitizeID keeps letters, digits, '-' and '_' so that the id can stand in
// a dotted address (spans.<id>.attributes.<key>).
func sanitizeID(s string) string {
	clean := true
	for i := 0; i < len(s); i++ {
		if !idByte(s[i]) {
			clean = false
			break
		}
	}
	if clean {
		return s
	}
	var sb strings.Builder
	for i := 0; i < len(s); i++ {
		if idByte(s[i]) {
			sb.WriteByte(s[i])
		} else if s[i] < 0x80 || s[i] >= 0xC0 { // one '_' per character, not per byte
			sb.WriteByte('_')
		}
	}
	return sb.String()
}

func idByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_'
}

func (b *builder) emitCall(g *group, c *call) {
	id := g.callBase + "-call-" + strconv.Itoa(g.nCalls)
	g.nCalls++
	tc := trace.ToolCall{ID: id, Type: "function", Function: trace.Function{Name: c.name, Arguments: c.args}}
	g.pending[c.cat] = append(g.pending[c.cat], id)
	if n := len(b.events); b.lastAsst >= 0 && b.lastAsst == n-1 && b.events[n-1].SpanID == g.id {
		b.events[n-1].ToolCalls = append(b.events[n-1].ToolCalls, tc)
		return
	}
	b.events = append(b.events, trace.Event{Role: "assistant", Content: trace.Content{Kind: trace.ContentNull}, ToolCalls: []trace.ToolCall{tc}, SpanID: g.id})
	b.lastAsst = len(b.events) - 1
}

func (b *builder) emitOutput(g *group, o *output) {
	id := ""
	if q := g.pending[o.cat]; len(q) > 0 {
		id = q[0]
		g.pending[o.cat] = q[1:]
	}
	b.events = append(b.events, trace.Event{Role: "tool", Content: o.content, ToolCallID: id, SpanID: g.id})
	b.lastAsst = -1
}

func (b *builder) finish() *trace.Trace {
	t := &trace.Trace{}
	events := b.events

	// The final answer, last.
	var last *finalRef
	if n := len(b.finals); n > 0 {
		last = &b.finals[n-1]
	}
	switch {
	case b.hasChunks:
		text := b.chunkText.String()
		span := RootSpanID
		if last != nil && last.text == text {
			span = last.span
		} else {
			for _, g := range b.groups {
				if g.phase == "post-processing" && g.response != nil && *g.response == text {
					span = g.id
					break
				}
			}
		}
		events = append(events, trace.Event{Role: "assistant", Content: trace.TextContent(text), SpanID: span})
	case last != nil:
		events = append(events, trace.Event{Role: "assistant", Content: trace.TextContent(last.text), SpanID: last.span})
	}
	// Earlier top-level final responses where they occurred (latest first,
	// so that earlier positions stay valid).
	if len(b.finals) > 1 {
		for i := len(b.finals) - 2; i >= 0; i-- {
			f := b.finals[i]
			ev := trace.Event{Role: "assistant", Content: trace.TextContent(f.text), SpanID: f.span}
			events = append(events, trace.Event{})
			copy(events[f.pos+1:], events[f.pos:])
			events[f.pos] = ev
		}
	}
	if b.user != nil {
		events = append(events, trace.Event{})
		copy(events[1:], events)
		events[0] = *b.user
	}
	if events == nil {
		events = []trace.Event{}
	}
	t.Events = events

	t.ID = uuidPrefix(b.firstTraceID)
	t.Metadata = b.metadata()
	t.Spans = make([]trace.Span, 0, 1+len(b.groups))
	t.Spans = append(t.Spans, b.rootSpan())
	for _, g := range b.groups {
		t.Spans = append(t.Spans, g.span())
	}
	return t
}

func (b *builder) metadata() json.RawMessage {
	var m args
	addStr(&m, "agentId", b.agentID)
	addStr(&m, "agentAliasId", b.aliasID)
	addStr(&m, "agentVersion", b.version)
	addStr(&m, "sessionId", b.session)
	if len(b.sessions) > 1 {
		m.add("sessionIds", stringList(b.sessions))
	}
	if b.attribution != nil {
		m.add("attribution", b.attribution)
	}
	if len(m.entries) == 0 {
		return nil
	}
	return m.json()
}

func (b *builder) rootSpan() trace.Span {
	sp := trace.Span{ID: RootSpanID, Kind: "invocation", Name: "invocation"}
	if b.agentID != "" {
		sp.Name += " " + b.agentID
	}
	if b.times.set {
		sp.Start, sp.End = b.times.start, b.times.end
	}
	var a args
	addStr(&a, "agentId", b.agentID)
	addStr(&a, "agentAliasId", b.aliasID)
	addStr(&a, "agentVersion", b.version)
	addStr(&a, "sessionId", b.session)
	if len(b.sessions) > 1 {
		a.add("sessionIds", stringList(b.sessions))
	}
	if b.hasUsage {
		a.add("inputTokens", strconv.AppendInt(nil, b.inTok, 10))
		a.add("outputTokens", strconv.AppendInt(nil, b.outTok, 10))
	}
	if len(a.entries) > 0 {
		sp.Attributes = a.json()
	}
	if b.chunks.n > 0 {
		sp.Extra = append(sp.Extra, trace.Field{Key: "chunks", Value: b.chunks.json()})
	}
	if b.files.n > 0 {
		sp.Extra = append(sp.Extra, trace.Field{Key: "files", Value: b.files.json()})
	}
	return sp
}

func (g *group) span() trace.Span {
	sp := trace.Span{ID: g.id, ParentID: RootSpanID, Kind: g.kind, Name: g.kind}
	if g.origID != "" {
		sp.Name += " " + g.origID
	}
	if g.times.set {
		sp.Start, sp.End = g.times.start, g.times.end
	}
	var a args
	if g.hasOrig {
		a.addString(g.idAttr, g.origID)
	}
	if g.collaborator {
		addStr(&a, "phase", g.phase)
		addStr(&a, "collaboratorName", g.collabName)
		addStr(&a, "agentId", g.agentID)
		addStr(&a, "agentAliasId", g.aliasID)
		addStr(&a, "sessionId", g.sessionID)
	}
	addStr(&a, "model", g.model)
	if g.hasUsage {
		a.add("inputTokens", strconv.AppendInt(nil, g.inTok, 10))
		a.add("outputTokens", strconv.AppendInt(nil, g.outTok, 10))
	}
	if g.isValid != nil {
		a.add("isValid", g.isValid)
	}
	addPtr(&a, "rationale", g.rationale)
	addPtr(&a, "response", g.response)
	if g.action != "" {
		action := g.action
		if g.intervened {
			action = "INTERVENED"
		}
		a.addString("action", action)
	}
	addPtr(&a, "failureReason", g.failureReason)
	if g.failureCode != nil {
		a.add("failureCode", g.failureCode)
	}
	if g.failureReason != nil || g.failureCode != nil {
		sp.Status = "ERROR"
		if g.failureReason != nil {
			sp.StatusMessage = *g.failureReason
		}
	}
	addPtr(&a, "finalResponse", g.finalResponse)
	if len(a.entries) > 0 {
		sp.Attributes = a.json()
	}
	sp.Extra = trace.Fields{{Key: "parts", Value: g.parts.json()}}
	return sp
}

func addStr(a *args, key, v string) {
	if v != "" {
		a.addString(key, v)
	}
}

func addPtr(a *args, key string, v *string) {
	if v != nil {
		a.addString(key, *v)
	}
}

func stringList(vs []string) []byte {
	b := []byte{'['}
	for i, v := range vs {
		if i > 0 {
			b = append(b, ',')
		}
		b = trace.AppendString(b, v)
	}
	return append(b, ']')
}

// rawList collects JSON values, compacted, into one JSON list.
type rawList struct {
	b []byte
	n int
}

func (l *rawList) add(raw []byte) {
	if l.n == 0 {
		l.b = append(make([]byte, 0, len(raw)+2), '[')
	} else {
		l.b = append(l.b, ',')
	}
	l.b = jsonscan.AppendCompact(l.b, raw)
	l.n++
}

func (l *rawList) json() json.RawMessage {
	if l.n == 0 {
		return json.RawMessage("[]")
	}
	return append(l.b, ']')
}

// stringLit decodes a JSON string literal ("" when there is none).
func stringLit(lit []byte) string {
	if lit == nil {
		return ""
	}
	v, err := jsonscan.New(lit).String("text")
	if err != nil {
		return ""
	}
	return v
}

// uuidPrefix returns the UUID that starts a Bedrock traceId
// ("37901850-e166-4283-bb79-dc573285869d-0"), or "".
func uuidPrefix(id string) string {
	if len(id) < 36 || len(id) > 36 && id[36] != '-' {
		return ""
	}
	for i := 0; i < 36; i++ {
		c := id[i]
		switch i {
		case 8, 13, 18, 23:
			if c != '-' {
				return ""
			}
		default:
			if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F') {
				return ""
			}
		}
	}
	return id[:36]
}

// userFromRequest finds the user's input in a modelInvocationInput text that
// is a JSON-encoded model request {"system", "messages": [{role, content}]}:
// the content of its last "user" message, unless that is a tool result.
// Bedrock writes content as Java's rendering of the content blocks,
// "[{text=..., type=text}]"; that wrapping is removed when there is one
// text block. Other texts (Claude 2 "Human:" prompts) give nothing.
func userFromRequest(text string) (string, bool) {
	if firstNonSpace(text) != '{' {
		return "", false
	}
	s := jsonscan.New([]byte(text))
	var last string
	found := false
	err := s.Object(func(key string) error {
		if key != "messages" || s.Peek() != jsonscan.Array {
			return s.Skip()
		}
		return s.Array(func(int) error {
			if s.Peek() != jsonscan.Object {
				return s.Skip()
			}
			var role, content string
			hasContent := false
			err := s.Object(func(k string) error {
				switch {
				case k == "role" && s.Peek() == jsonscan.String:
					v, err := s.String(k)
					role = v
					return err
				case k == "content" && s.Peek() == jsonscan.String:
					v, err := s.String(k)
					content, hasContent = v, true
					return err
				case k == "content" && s.Peek() == jsonscan.Array:
					v, ok, err := textBlocks(s)
					content, hasContent = v, ok
					return err
				}
				return s.Skip()
			})
			if err == nil && role == "user" {
				last, found = content, hasContent
			}
			return err
		})
	})
	if err != nil || s.End() != nil || !found {
		return "", false
	}
	c := unwrapBlocks(last)
	if isToolResult(c) || strings.TrimSpace(c) == "" {
		return "", false
	}
	return c, true
}

// textBlocks joins the text of [{type: "text", text}] blocks; any other
// block makes the content not a plain user input.
func textBlocks(s *jsonscan.Scanner) (string, bool, error) {
	var parts []string
	ok := true
	err := s.Array(func(int) error {
		if s.Peek() != jsonscan.Object {
			ok = false
			return s.Skip()
		}
		var typ, text string
		hasText := false
		err := s.Object(func(k string) error {
			switch {
			case k == "type" && s.Peek() == jsonscan.String:
				v, err := s.String(k)
				typ = v
				return err
			case k == "text" && s.Peek() == jsonscan.String:
				v, err := s.String(k)
				text, hasText = v, true
				return err
			}
			return s.Skip()
		})
		if !hasText || typ != "" && typ != "text" {
			ok = false
		}
		parts = append(parts, text)
		return err
	})
	return strings.Join(parts, "\n"), ok && len(parts) > 0, err
}

// unwrapBlocks removes Bedrock's "[{text=..., type=text}]" wrapping of a
// single text block.
func unwrapBlocks(c string) string {
	const pre, post = "[{text=", "}]"
	if len(c) < len(pre)+len(post) || !strings.HasPrefix(c, pre) || !strings.HasSuffix(c, post) {
		return c
	}
	mid := c[len(pre) : len(c)-len(post)]
	mid = strings.TrimSuffix(mid, ", type=text")
	if strings.Contains(mid, "}, {") {
		return c // several blocks: not unwrapped
	}
	return mid
}

func isToolResult(c string) bool {
	t := strings.TrimSpace(c)
	return strings.HasPrefix(t, "[{tool_use_id=") || strings.Contains(t, "type=tool_result") ||
		strings.HasPrefix(t, "<function_results>")
}

func firstNonSpace(s string) byte {
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case ' ', '\t', '\n', '\r':
			continue
		}
		return s[i]
	}
	return 0
}
