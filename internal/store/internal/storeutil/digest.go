package storeutil

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/lookout-dev/lookout/internal/store"
	"github.com/lookout-dev/lookout/internal/trace"
	"github.com/lookout-dev/lookout/internal/usage"
)

// A trace's digest (store.Digest) is kept as JSON in its row's summary
// column, written with the trace and merged by appends (MergeDigest): a
// list reads it instead of the content. A NULL column is a trace written
// before the column existed; its digest is computed when a list first
// shows it and stored then (see sqlstore.FillDigests).

// usageReaders are reused: a reader keeps its buffers and is not safe for
// concurrent use (PrepareTraces encodes on several cores).
var usageReaders = sync.Pool{New: func() any { return usage.NewReader(nil) }}

// DigestOf computes what a list shows of t.
func DigestOf(t *trace.Trace) store.Digest {
	d, _ := digestOf(t)
	return d
}

// digestOf is t's digest and the bookkeeping of its tool calls that a
// merge needs.
func digestOf(t *trace.Trace) (store.Digest, toolBook) {
	var d store.Digest
	var book toolBook
	user := false
	for i := range t.Events {
		e := &t.Events[i]
		if e.Role == "user" && !user {
			user, d.FirstUser = true, CutUTF16(e.Content.String(), store.MaxFirstUser)
		}
		d.ToolCalls += len(e.ToolCalls)
		for k := range e.ToolCalls {
			c := &e.ToolCalls[k]
			d.Tools = addTool(d.Tools, c.Function.Name, 1, 0)
			if c.ID != "" && len(book.open) < maxOpenCalls {
				if book.open == nil {
					book.open = map[string]string{}
				}
				book.open[c.ID] = c.Function.Name
			}
		}
		if e.IsToolOutput() {
			book.output(&d, e.ToolCallID, toolName(e), ToolError(e))
		}
	}
	d.Usage = usageOf(t)
	return d, book
}

// maxOpenCalls bounds how many calls waiting for their output a digest
// keeps (for an append to name the tool of an output that errs).
const maxOpenCalls = 256

// toolBook is what a digest keeps of a trace's tool calls for appends:
// the calls with no output yet (id: tool name), and the outputs with no
// call before them (id: whether it errs and names no tool, so that a
// merge counts the error for the call it answers).
type toolBook struct {
	open    map[string]string
	orphans map[string]bool
}

// output counts an output answering call id: an error of its tool, named
// by the output (name) or by the call it answers; an output that names no
// tool and answers no call seen is an orphan, resolved by a merge.
func (b *toolBook) output(d *store.Digest, id, name string, isErr bool) {
	callName, open := b.open[id]
	if open {
		delete(b.open, id)
		if name == "" {
			name = callName
		}
	}
	if !open && id != "" {
		// Kept for a merge to close the call it answers; its error is
		// left for the merge to count when it names no tool.
		if b.orphans == nil {
			b.orphans = map[string]bool{}
		}
		b.orphans[id] = b.orphans[id] || isErr && name == ""
	}
	if name == "" && !open {
		return
	}
	if isErr {
		d.Tools = addTool(d.Tools, name, 0, 1)
	}
}

func addTool(m map[string]store.ToolStats, name string, calls, errs int) map[string]store.ToolStats {
	if m == nil {
		m = map[string]store.ToolStats{}
	}
	x := m[name]
	x.Calls, x.Errors = x.Calls+calls, x.Errors+errs
	m[name] = x
	return m
}

// toolName is the tool a tool output names ("name" beside its content,
// as OpenAI's function messages and tau-bench have), else "".
func toolName(e *trace.Event) string {
	var s string
	if raw := e.Extra.Get("name"); raw != nil && json.Unmarshal(raw, &s) == nil {
		return s
	}
	return ""
}

// ToolError reports whether a tool output reads as an error: marked
// is_error (Anthropic, MCP) or with an "error" member, beside its content
// or in its metadata, or a text that starts with "Error:" (as tau-bench's
// tools answer).
func ToolError(e *trace.Event) bool {
	if marked(e.Extra) {
		return true
	}
	if raw := e.Extra.Get("metadata"); raw != nil {
		var m map[string]json.RawMessage
		if json.Unmarshal(raw, &m) == nil && (isTrue(m["is_error"]) || isSet(m["error"])) {
			return true
		}
	}
	text := e.Content.String()
	return len(text) >= 6 && strings.EqualFold(text[:6], "error:")
}

func marked(f trace.Fields) bool { return isTrue(f.Get("is_error")) || isSet(f.Get("error")) }

func isTrue(raw json.RawMessage) bool { return string(bytes.TrimSpace(raw)) == "true" }

// isSet: an error member that says something (not null, false or "").
func isSet(raw json.RawMessage) bool {
	switch string(bytes.TrimSpace(raw)) {
	case "", "null", "false", `""`:
		return false
	}
	return true
}

// firstUserSeen reports whether events hold a user event: the first user
// event's text is the digest's even when it is empty.
func firstUserSeen(events []trace.Event) bool {
	for i := range events {
		if events[i].Role == "user" {
			return true
		}
	}
	return false
}

// usageOf is t's usage with no price table: the costs recorded, and the
// tokens of the spans with none by model (priced when read).
func usageOf(t *trace.Trace) store.Usage {
	var u store.Usage
	u.Bounds = usage.BoundsOf(t)
	if len(t.Spans) == 0 {
		return u
	}
	r := usageReaders.Get().(*usage.Reader)
	defer usageReaders.Put(r)
	tot := r.Totals(t, func(i int, s *usage.Span) {
		if s.Has&usage.Aggregate != 0 {
			return
		}
		if s.Model != "" {
			lat, ok := s.Latency, s.Has&usage.HasLatency != 0
			if sp := &t.Spans[i]; !ok && !sp.Start.IsZero() && !sp.End.Before(sp.Start) {
				lat, ok = sp.End.Sub(sp.Start), true
			}
			if ok {
				if u.LLMLatency == nil {
					u.LLMLatency = map[int]int{}
				}
				u.LLMLatency[store.LatencyBucket(lat)]++
			}
		}
		if s.Has&(usage.HasInput|usage.HasOutput|usage.HasCost) != 0 {
			if u.Models == nil {
				u.Models = map[string]store.ModelUsage{}
			}
			m := u.Models[s.Model]
			m.Input, m.Output, m.Cost, m.Spans = m.Input+s.Input, m.Output+s.Output, m.Cost+s.Cost, m.Spans+1
			u.Models[s.Model] = m
		}
		if s.Has&usage.HasCost != 0 || s.Has&(usage.HasInput|usage.HasOutput) == 0 || s.Model == "" {
			return
		}
		if u.ByModel == nil {
			u.ByModel = map[string]store.ModelTokens{}
		}
		m := u.ByModel[s.Model]
		m.Input, m.Output, m.Spans = m.Input+s.Input, m.Output+s.Output, m.Spans+1
		u.ByModel[s.Model] = m
	})
	u.Input, u.Output, u.Total, u.Cost, u.Unpriced = tot.Input, tot.Output, tot.Total, tot.Cost, tot.Unpriced
	u.Has = tot.Has & (usage.HasInput | usage.HasOutput | usage.HasTotal | usage.HasCost)
	return u
}

// MergeDigest is the digest of a trace whose events and spans are those of
// a (the trace) followed by those of b (an append). Usage adds up part by
// part: a span appended whose tokens repeat those of spans stored before
// it is not recognised as their sum (usage.Aggregate), as it is when the
// whole trace is read.
func MergeDigest(a, b store.Digest, aHasUser bool) store.Digest {
	d, _ := mergeDigest(a, b, aHasUser, toolBook{}, toolBook{})
	return d
}

// mergeDigest is MergeDigest with the parts' tool bookkeeping: b's
// outputs that name no tool answer a's calls waiting for them.
func mergeDigest(a, b store.Digest, aHasUser bool, ab, bb toolBook) (store.Digest, toolBook) {
	if !aHasUser {
		a.FirstUser = b.FirstUser
	}
	a.ToolCalls += b.ToolCalls
	a.Tools = cloneTools(a.Tools)
	for name, x := range b.Tools {
		a.Tools = addTool(a.Tools, name, x.Calls, x.Errors)
	}
	book := toolBook{open: maps.Clone(ab.open), orphans: maps.Clone(ab.orphans)}
	for _, id := range slices.Sorted(maps.Keys(bb.orphans)) {
		book.output(&a, id, "", bb.orphans[id])
	}
	for id, name := range bb.open {
		if len(book.open) < maxOpenCalls {
			if book.open == nil {
				book.open = map[string]string{}
			}
			book.open[id] = name
		}
	}
	u, v := &a.Usage, b.Usage
	u.Input, u.Output, u.Total, u.Cost = u.Input+v.Input, u.Output+v.Output, u.Total+v.Total, u.Cost+v.Cost
	u.Has |= v.Has
	u.Unpriced += v.Unpriced
	for m, t := range v.ByModel {
		if u.ByModel == nil {
			u.ByModel = map[string]store.ModelTokens{}
		}
		x := u.ByModel[m]
		x.Input, x.Output, x.Spans = x.Input+t.Input, x.Output+t.Output, x.Spans+t.Spans
		u.ByModel[m] = x
	}
	u.Bounds = u.Bounds.Merge(v.Bounds)
	if len(v.Models) > 0 {
		u.Models = maps.Clone(u.Models)
		if u.Models == nil {
			u.Models = map[string]store.ModelUsage{}
		}
		for m, t := range v.Models {
			x := u.Models[m]
			x.Input, x.Output, x.Cost, x.Spans = x.Input+t.Input, x.Output+t.Output, x.Cost+t.Cost, x.Spans+t.Spans
			u.Models[m] = x
		}
	}
	if len(v.LLMLatency) > 0 {
		u.LLMLatency = maps.Clone(u.LLMLatency)
		if u.LLMLatency == nil {
			u.LLMLatency = map[int]int{}
		}
		for k, n := range v.LLMLatency {
			u.LLMLatency[k] += n
		}
	}
	return a, book
}

func cloneTools(m map[string]store.ToolStats) map[string]store.ToolStats { return maps.Clone(m) }

// HasUser reports whether events hold an event with role "user".
func HasUser(events []trace.Event) bool { return firstUserSeen(events) }

// CutUTF16 cuts s to at most n UTF-16 code units (the explorer's string
// length), not splitting a character.
func CutUTF16(s string, n int) string {
	units := 0
	for i, r := range s {
		w := 1
		if r >= 0x10000 {
			w = 2
		}
		if units+w > n {
			return s[:i]
		}
		units += w
	}
	return s
}

// digestJSON is the stored form of a digest. HasUser records whether the
// trace has a user event (its text may be empty), which an append needs
// to know.
type digestJSON struct {
	FirstUser  string                `json:"first_user,omitempty"`
	HasUser    bool                  `json:"has_user,omitempty"`
	ToolCalls  int                   `json:"tool_calls,omitempty"`
	Input      int64                 `json:"input_tokens,omitempty"`
	Output     int64                 `json:"output_tokens,omitempty"`
	Total      int64                 `json:"total_tokens,omitempty"`
	Has        uint8                 `json:"has,omitempty"`
	Cost       float64               `json:"cost,omitempty"`
	Unpriced   int                   `json:"unpriced,omitempty"`
	ByModel    map[string][3]int64   `json:"by_model,omitempty"` // model: [in, out, spans]
	SpanFirst  int64                 `json:"span_first,omitempty"`
	SpanLast   int64                 `json:"span_last,omitempty"`
	EventFirst int64                 `json:"event_first,omitempty"`
	EventLast  int64                 `json:"event_last,omitempty"`
	Tools      map[string]int        `json:"tools,omitempty"`       // name: calls
	ToolErrors map[string]int        `json:"tool_errors,omitempty"` // name: errors, when some
	Models     map[string][4]float64 `json:"models,omitempty"`      // model: [in, out, cost, spans]
	LLMLatency map[string]int        `json:"llm_lat,omitempty"`     // bucket: spans
	Open       map[string]string     `json:"open,omitempty"`        // toolBook
	Orphans    map[string]bool       `json:"orphans,omitempty"`
}

// StoredDigest is a digest and whether its trace has a user event, as kept.
type StoredDigest struct {
	store.Digest
	HasUser bool
	book    toolBook
}

// EncodeDigest is the stored form of a digest.
func EncodeDigest(d StoredDigest) []byte {
	u := &d.Usage
	j := digestJSON{FirstUser: d.FirstUser, HasUser: d.HasUser, ToolCalls: d.ToolCalls, Input: u.Input, Output: u.Output, Total: u.Total,
		Has: u.Has, Cost: u.Cost, Unpriced: u.Unpriced,
		SpanFirst: micros(u.Bounds.SpanFirst), SpanLast: micros(u.Bounds.SpanLast), EventFirst: micros(u.Bounds.EventFirst), EventLast: micros(u.Bounds.EventLast)}
	if len(u.ByModel) > 0 {
		j.ByModel = make(map[string][3]int64, len(u.ByModel))
		for m, t := range u.ByModel {
			j.ByModel[m] = [3]int64{t.Input, t.Output, int64(t.Spans)}
		}
	}
	for name, x := range d.Tools {
		if j.Tools == nil {
			j.Tools = make(map[string]int, len(d.Tools))
		}
		j.Tools[name] = x.Calls
		if x.Errors > 0 {
			if j.ToolErrors == nil {
				j.ToolErrors = map[string]int{}
			}
			j.ToolErrors[name] = x.Errors
		}
	}
	if len(u.Models) > 0 {
		j.Models = make(map[string][4]float64, len(u.Models))
		for m, t := range u.Models {
			j.Models[m] = [4]float64{float64(t.Input), float64(t.Output), t.Cost, float64(t.Spans)}
		}
	}
	if len(u.LLMLatency) > 0 {
		j.LLMLatency = make(map[string]int, len(u.LLMLatency))
		for k, n := range u.LLMLatency {
			j.LLMLatency[strconv.Itoa(k)] = n
		}
	}
	j.Open, j.Orphans = d.book.open, d.book.orphans
	b, err := json.Marshal(&j)
	if err != nil {
		panic(err) // strings, numbers and maps of them always marshal
	}
	return b
}

// DecodeDigest reads a stored digest.
func DecodeDigest(b []byte) (StoredDigest, error) {
	var j digestJSON
	if err := json.Unmarshal(b, &j); err != nil {
		return StoredDigest{}, fmt.Errorf("stored trace summary: %w", err)
	}
	d := StoredDigest{HasUser: j.HasUser}
	d.FirstUser, d.ToolCalls = j.FirstUser, j.ToolCalls
	u := &d.Usage
	u.Input, u.Output, u.Total, u.Has, u.Cost, u.Unpriced = j.Input, j.Output, j.Total, j.Has, j.Cost, j.Unpriced
	u.Bounds = usage.Bounds{SpanFirst: fromMicros(j.SpanFirst), SpanLast: fromMicros(j.SpanLast), EventFirst: fromMicros(j.EventFirst), EventLast: fromMicros(j.EventLast)}
	if len(j.ByModel) > 0 {
		u.ByModel = make(map[string]store.ModelTokens, len(j.ByModel))
		for m, t := range j.ByModel {
			u.ByModel[m] = store.ModelTokens{Input: t[0], Output: t[1], Spans: int(t[2])}
		}
	}
	for name, n := range j.Tools {
		if d.Tools == nil {
			d.Tools = make(map[string]store.ToolStats, len(j.Tools))
		}
		d.Tools[name] = store.ToolStats{Calls: n, Errors: j.ToolErrors[name]}
	}
	for name, n := range j.ToolErrors {
		if _, ok := j.Tools[name]; !ok { // errors of calls made before an append
			if d.Tools == nil {
				d.Tools = map[string]store.ToolStats{}
			}
			d.Tools[name] = store.ToolStats{Errors: n}
		}
	}
	if len(j.Models) > 0 {
		u.Models = make(map[string]store.ModelUsage, len(j.Models))
		for m, t := range j.Models {
			u.Models[m] = store.ModelUsage{Input: int64(t[0]), Output: int64(t[1]), Cost: t[2], Spans: int(t[3])}
		}
	}
	if len(j.LLMLatency) > 0 {
		u.LLMLatency = make(map[int]int, len(j.LLMLatency))
		for k, n := range j.LLMLatency {
			b, err := strconv.Atoi(k)
			if err != nil {
				return StoredDigest{}, fmt.Errorf("stored trace summary: latency bucket %q", k)
			}
			u.LLMLatency[b] = n
		}
	}
	d.book = toolBook{open: j.Open, orphans: j.Orphans}
	return d, nil
}

// StoredDigestOf is the digest of t as EncodeDigest takes it.
func StoredDigestOf(t *trace.Trace) StoredDigest {
	d, book := digestOf(t)
	return StoredDigest{Digest: d, HasUser: HasUser(t.Events), book: book}
}

// AppendDigest is the stored digest of a trace (stored, its stored digest)
// with events and spans appended.
func AppendDigest(stored []byte, events []trace.Event, spans []trace.Span) ([]byte, error) {
	d, err := DecodeDigest(stored)
	if err != nil {
		return nil, err
	}
	part := StoredDigestOf(&trace.Trace{Events: events, Spans: spans})
	d.Digest, d.book = mergeDigest(d.Digest, part.Digest, d.HasUser, d.book, part.book)
	d.HasUser = d.HasUser || part.HasUser
	return EncodeDigest(d), nil
}

// micros is t in microseconds since 1970, 0 for the zero time.
func micros(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixMicro()
}

func fromMicros(n int64) time.Time {
	if n == 0 {
		return time.Time{}
	}
	return time.UnixMicro(n).UTC()
}
