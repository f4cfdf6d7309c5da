// Package usage reads what a trace's spans used (model, tokens in and out,
// cost, latency) from the conventions its source follows, and adds them up
// for the trace. It is Lookout's one reading of these conventions: the
// explorer shows what the server computes here.
//
// Where each member is read, first found wins:
//
//	| member     | Langfuse observation | attributes and metadata (a dotted key, or one ending in "." and the name)                                |
//	|------------|----------------------|-----------------------------------------------------------------------------------------------------------|
//	| model      | model                | gen_ai.response.model, gen_ai.request.model, llm.model_name, model_name, model                           |
//	| tokens in  | usageDetails.input   | input_tokens, prompt_tokens, token_count.prompt, inputTokens, promptTokens                              |
//	| tokens out | usageDetails.output  | output_tokens, completion_tokens, token_count.completion, outputTokens, completionTokens                 |
//	| total      | usageDetails.total   | total_tokens, token_count.total, totalTokens, tokens (Snorkel); else in + out                             |
//	| cost       | costDetails.total, else input + output | gen_ai.usage.cost, llm.cost.total, total_cost, totalCost; else input_cost, llm.cost.prompt, prompt_cost plus output_cost, llm.cost.completion, completion_cost (any-agent's gen_ai.usage.input_cost) |
//	| latency    | latency (seconds)    | latency (seconds; Snorkel)                                                                               |
//
// That covers OpenTelemetry GenAI (gen_ai.usage.input_tokens), OpenInference
// (llm.token_count.prompt, llm.cost.total), MLflow (mlflow.chat.tokenUsage,
// a JSON object in a string: such strings are read under keys that speak of
// usage or tokens, and no other payload is, since an agent's output may
// quote its children's usage), Langfuse, any-agent and Snorkel. Numbers may
// be JSON numbers or strings that are numbers (OpenInference writes both).
//
// A span whose source recorded no cost but whose model and tokens are known
// is priced from a table (Prices): that cost is marked estimated. A trace's
// totals add up every span, as Langfuse and Phoenix do.
package usage

import (
	"bytes"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/lookout-dev/lookout/internal/jsonscan"
	"github.com/lookout-dev/lookout/internal/trace"
)

// Which members a Span or Totals holds.
const (
	HasInput uint8 = 1 << iota
	HasOutput
	HasTotal
	HasCost
	HasLatency
	CostEstimated // the cost, or part of it, comes from the price table
	// Aggregate marks a span whose tokens are the sum of its descendants'
	// (an agent span that adds up its model calls): it is shown, and left
	// out of the trace's totals so nothing counts twice.
	Aggregate
)

// Span is what one span used. Members not recorded are zero and their Has
// bit is clear.
type Span struct {
	Model                string
	Input, Output, Total int64 // tokens; Total is in + out when not recorded
	Cost                 float64
	Latency              time.Duration // as recorded (Langfuse, Snorkel), not from the span's times
	Has                  uint8
}

// Empty reports whether the span recorded nothing of use.
func (u *Span) Empty() bool { return u.Model == "" && u.Has == 0 }

// Totals are a trace's sums.
type Totals struct {
	Input, Output, Total int64
	Cost                 float64
	// Unpriced counts spans that used tokens but have no cost: none
	// recorded and no price known for their model.
	Unpriced int
	// Duration is from the first span start to the last span end, else
	// from the first to the last event timestamp.
	Duration time.Duration
	Models   []string // in the order first seen
	Has      uint8    // HasDuration is HasLatency
}

// HasDuration marks a Totals' Duration as known.
const HasDuration = HasLatency

// The names each member is found under, in order of precedence.
var (
	modelNames  = []string{"gen_ai.response.model", "gen_ai.request.model", "llm.model_name", "model_name", "model"}
	inputNames  = []string{"input_tokens", "prompt_tokens", "token_count.prompt", "inputTokens", "promptTokens"}
	outputNames = []string{"output_tokens", "completion_tokens", "token_count.completion", "outputTokens", "completionTokens"}
	totalNames  = []string{"total_tokens", "token_count.total", "totalTokens", "tokens"}
	costNames   = []string{"gen_ai.usage.cost", "llm.cost.total", "total_cost", "totalCost"}
	inCostNames = []string{"input_cost", "llm.cost.prompt", "prompt_cost"}
	outCostName = []string{"output_cost", "llm.cost.completion", "completion_cost"}
	latNames    = []string{"latency"}
)

// Which member a found value is for.
const (
	fModel = iota
	fInput
	fOutput
	fTotal
	fCost
	fInCost
	fOutCost
	fLatency
	nFields
)

var fieldNames = [nFields][]string{modelNames, inputNames, outputNames, totalNames, costNames, inCostNames, outCostName, latNames}

// lastParts holds the last dotted part of every name: a key that matches
// a name ends with the name, so its last part is the name's.
var lastParts = func() map[string]bool {
	m := map[string]bool{}
	for _, names := range fieldNames {
		for _, n := range names {
			m[n[strings.LastIndexByte(n, '.')+1:]] = true
		}
	}
	return m
}()

// finder keeps, for each member, the best value found so far: the lowest
// rank (index in its names), the first in document order among equals.
type finder struct {
	rank  [nFields]int8 // -1: none yet
	num   [nFields]float64
	model string
	key   []byte // the dotted key being read
	s     jsonscan.Scanner
}

func (f *finder) reset() {
	for i := range f.rank {
		f.rank[i] = -1
	}
	f.model = ""
}

// matches reports whether key is name or ends with "." and name.
func matches(key []byte, name string) bool {
	if len(key) < len(name) || string(key[len(key)-len(name):]) != name {
		return false
	}
	return len(key) == len(name) || key[len(key)-len(name)-1] == '.'
}

// maxDepth is how deep into nested objects keys are read (as the explorer
// did: a key of at most four parts).
const maxDepth = 4

// walk reads an attributes or metadata object. Malformed JSON stops it
// where it breaks; what was found before stays.
func (f *finder) walk(raw []byte) {
	if len(raw) == 0 || raw[0] != '{' {
		return
	}
	f.key = f.key[:0]
	f.s.Reset(raw)
	_ = f.object(&f.s, 1)
}

func (f *finder) object(s *jsonscan.Scanner, depth int) error {
	// The key is only appended to f.key: borrowed, not copied.
	return s.ObjectBorrowed(func(k string) error {
		n := len(f.key)
		if n > 0 {
			f.key = append(f.key, '.')
		}
		f.key = append(f.key, k...)
		err := f.value(s, depth)
		f.key = f.key[:n]
		return err
	})
}

func (f *finder) value(s *jsonscan.Scanner, depth int) error {
	switch s.Peek() {
	case jsonscan.Object:
		if depth >= maxDepth {
			return s.Skip()
		}
		return f.object(s, depth+1)
	case jsonscan.Number:
		if !f.wanted() {
			return s.Skip()
		}
		t, err := s.NumberText("a number")
		if err != nil {
			return err
		}
		if x, err := strconv.ParseFloat(t, 64); err == nil {
			f.offer(x, "", false)
		}
		return nil
	case jsonscan.String:
		// Most attributes are payloads: skipped unread, not copied.
		if !f.wanted() && !aboutUsage(f.key) {
			return s.Skip()
		}
		v, err := s.String("a string")
		if err != nil {
			return err
		}
		// A JSON object in a string under a key about usage or tokens
		// (mlflow.chat.tokenUsage) is read as the object.
		if len(v) < 20000 && strings.HasPrefix(strings.TrimLeft(v, " \t\r\n"), "{") && aboutUsage(f.key) {
			var inner jsonscan.Scanner
			inner.Reset([]byte(v))
			if inner.Peek() == jsonscan.Object {
				if depth < maxDepth {
					_ = f.object(&inner, depth+1)
				}
				return nil
			}
		}
		x, isNum := parseNum(v)
		f.offer(x, v, isNum)
		return nil
	default:
		return s.Skip()
	}
}

// wanted reports whether the current key is one a member is read from.
func (f *finder) wanted() bool {
	// Most keys are none: their last part is no name's last part, told by
	// one lookup instead of matching every name (a fifth of the walk).
	last := f.key
	if i := bytes.LastIndexByte(last, '.'); i >= 0 {
		last = last[i+1:]
	}
	if !lastParts[string(last)] {
		return false
	}
	for fi := range fieldNames {
		for _, name := range fieldNames[fi] {
			if matches(f.key, name) {
				return true
			}
		}
	}
	return false
}

// aboutUsage reports whether a key mentions usage or tokens, in any case.
func aboutUsage(key []byte) bool {
	for i := range key {
		c := key[i] | 0x20
		if c == 'u' && i+5 <= len(key) && strings.EqualFold(string(key[i:i+5]), "usage") {
			return true
		}
		if c == 't' && i+5 <= len(key) && strings.EqualFold(string(key[i:i+5]), "token") {
			return true
		}
	}
	return false
}

// parseNum reads a string that is a number ("12", "0.5", "1e-3"), as
// OpenInference often writes them.
func parseNum(v string) (float64, bool) {
	v = strings.TrimSpace(v)
	if v == "" || !(v[0] == '-' || '0' <= v[0] && v[0] <= '9') {
		return 0, false
	}
	x, err := strconv.ParseFloat(v, 64)
	if err != nil || math.IsInf(x, 0) || math.IsNaN(x) {
		return 0, false
	}
	return x, true
}

// offer considers a value found under the current key: a number (isNum, or
// str == "" for a JSON number) for the counts, a non-empty string for the
// model.
func (f *finder) offer(x float64, str string, isNum bool) {
	num := isNum || str == ""
	for fi := range fieldNames {
		if fi == fModel {
			if str == "" {
				continue
			}
		} else if !num {
			continue
		}
		r := f.rank[fi]
		for i, name := range fieldNames[fi] {
			if r >= 0 && int8(i) >= r {
				break
			}
			if matches(f.key, name) {
				f.rank[fi] = int8(i)
				if fi == fModel {
					f.model = str
				} else {
					f.num[fi] = x
				}
				break
			}
		}
	}
}

func (f *finder) got(fi int) (float64, bool) {
	if f.rank[fi] < 0 {
		return 0, false
	}
	return f.num[fi], true
}

// Reader reads spans' usage, reusing its buffers; it is not safe for
// concurrent use. The zero Reader prices nothing (no table).
type Reader struct {
	Prices *Prices
	f      finder
	obj    finder // Langfuse's usageDetails and costDetails
	// Kept between traces, to reuse.
	spans []Span
	below []sums
	index map[string]int
}

// NewReader returns a reader pricing with p (nil: no estimates).
func NewReader(p *Prices) *Reader { return &Reader{Prices: p} }

// Span reads one span's usage.
func (r *Reader) Span(sp *trace.Span) Span {
	var u Span
	f := &r.f
	f.reset()
	// Langfuse observations carry model, usageDetails, costDetails and
	// latency as members of their own (kept in Extra); they come first.
	var ud, cd, meta []byte
	for _, x := range sp.Extra {
		switch x.Key {
		case "model":
			if m, ok := jsonString(x.Value); ok && m != "" {
				u.Model = m
			}
		case "usageDetails":
			ud = x.Value
		case "costDetails":
			cd = x.Value
		case "latency":
			if s, ok := jsonNumber(x.Value); ok {
				u.Latency, u.Has = seconds(s), u.Has|HasLatency
			}
		case "metadata":
			meta = x.Value
		}
	}
	if len(ud) > 0 {
		in, out, tot := r.details(ud)
		if v, ok := in.get(); ok {
			u.Input, u.Has = round(v), u.Has|HasInput
		}
		if v, ok := out.get(); ok {
			u.Output, u.Has = round(v), u.Has|HasOutput
		}
		if v, ok := tot.get(); ok {
			u.Total, u.Has = round(v), u.Has|HasTotal
		}
	}
	if len(cd) > 0 {
		in, out, tot := r.details(cd)
		if v, ok := tot.get(); ok {
			u.Cost, u.Has = v, u.Has|HasCost
		} else if in.ok || out.ok {
			u.Cost, u.Has = in.v+out.v, u.Has|HasCost
		}
	}
	f.walk(sp.Attributes)
	f.walk(meta) // after: at equal rank the attributes' value stays
	if u.Model == "" && f.rank[fModel] >= 0 {
		u.Model = f.model
	}
	if u.Has&HasInput == 0 {
		if v, ok := f.got(fInput); ok {
			u.Input, u.Has = round(v), u.Has|HasInput
		}
	}
	if u.Has&HasOutput == 0 {
		if v, ok := f.got(fOutput); ok {
			u.Output, u.Has = round(v), u.Has|HasOutput
		}
	}
	if u.Has&HasTotal == 0 {
		if v, ok := f.got(fTotal); ok {
			u.Total, u.Has = round(v), u.Has|HasTotal
		} else if u.Has&(HasInput|HasOutput) != 0 {
			u.Total, u.Has = u.Input+u.Output, u.Has|HasTotal
		}
	}
	if u.Has&HasCost == 0 {
		if v, ok := f.got(fCost); ok {
			u.Cost, u.Has = v, u.Has|HasCost
		} else {
			in, iok := f.got(fInCost)
			out, ook := f.got(fOutCost)
			if iok || ook {
				u.Cost, u.Has = in+out, u.Has|HasCost
			}
		}
	}
	if u.Has&HasLatency == 0 {
		if v, ok := f.got(fLatency); ok {
			u.Latency, u.Has = seconds(v), u.Has|HasLatency
		}
	}
	if u.Has&HasCost == 0 && u.Has&(HasInput|HasOutput) != 0 && u.Model != "" {
		if p, _, ok := r.Prices.Lookup(u.Model); ok {
			u.Cost = (float64(u.Input)*p.Input + float64(u.Output)*p.Output) / 1e6
			u.Has |= HasCost | CostEstimated
		}
	}
	return u
}

type optNum struct {
	v  float64
	ok bool
}

func (o optNum) get() (float64, bool) { return o.v, o.ok }

// details reads input, output and total of a Langfuse usageDetails or
// costDetails object (other members, such as input_cached_tokens, are
// parts of these).
func (r *Reader) details(raw []byte) (in, out, tot optNum) {
	if len(raw) == 0 || raw[0] != '{' {
		return
	}
	s := &r.obj.s
	s.Reset(raw)
	_ = s.Object(func(k string) error {
		var o *optNum
		switch k {
		case "input":
			o = &in
		case "output":
			o = &out
		case "total":
			o = &tot
		default:
			return s.Skip()
		}
		switch s.Peek() {
		case jsonscan.Number:
			x, err := s.Float64("a number")
			if err != nil {
				return err
			}
			*o = optNum{x, true}
			return nil
		case jsonscan.String:
			v, err := s.String("a number")
			if err != nil {
				return err
			}
			if x, ok := parseNum(v); ok {
				*o = optNum{x, true}
			}
			return nil
		}
		return s.Skip()
	})
	return
}

func jsonString(raw []byte) (string, bool) {
	if len(raw) == 0 || raw[0] != '"' {
		return "", false
	}
	var s jsonscan.Scanner
	s.Reset(raw)
	v, err := s.String("a string")
	return v, err == nil
}

func jsonNumber(raw []byte) (float64, bool) {
	if len(raw) == 0 {
		return 0, false
	}
	if raw[0] == '"' {
		v, ok := jsonString(raw)
		if !ok {
			return 0, false
		}
		return parseNum(v)
	}
	x, err := strconv.ParseFloat(string(raw), 64)
	if err != nil || math.IsInf(x, 0) || math.IsNaN(x) {
		return 0, false
	}
	return x, true
}

func round(x float64) int64 {
	if x >= math.MaxInt64 || x <= math.MinInt64 {
		return 0
	}
	return int64(math.Round(x))
}

func seconds(s float64) time.Duration {
	if s < 0 || s > 1e9 {
		return 0
	}
	return time.Duration(s * float64(time.Second))
}

// OfTrace adds up a trace's usage with prices p (nil: no estimates).
func OfTrace(t *trace.Trace, p *Prices) Totals {
	return NewReader(p).Totals(t, nil)
}

// Totals adds up a trace's usage. When each is not nil, it is called with
// every span's usage that is not empty, in span order.
//
// Every span counts, as in Langfuse and Phoenix, except one whose tokens
// in, out and total equal the sums of its descendants' that count: some
// sources (pydantic-ai, Semantic Kernel) repeat their model calls' usage on
// the agent span above them.
func (r *Reader) Totals(t *trace.Trace, each func(i int, u *Span)) Totals {
	var tot Totals
	us := r.spans[:0]
	tokens := 0 // spans that record tokens
	for i := range t.Spans {
		sp := &t.Spans[i]
		us = append(us, r.Span(sp))
		if us[i].Has&(HasInput|HasOutput|HasTotal) != 0 {
			tokens++
		}
	}
	r.spans = us
	if tokens > 1 {
		r.markAggregates(t.Spans, us)
	}
	for i := range us {
		u := &us[i]
		if u.Empty() {
			continue
		}
		if u.Has&Aggregate == 0 {
			tot.add(u)
		} else if u.Model != "" && !contains(tot.Models, u.Model) {
			tot.Models = append(tot.Models, u.Model)
		}
		if each != nil {
			each(i, u)
		}
	}
	b := Bounds{}
	b.SpanFirst, b.SpanLast = spanTimes(t.Spans)
	if b.SpanFirst.IsZero() {
		b.EventFirst, b.EventLast = eventTimes(t.Events)
	}
	if d, ok := b.Duration(); ok {
		tot.Duration, tot.Has = d, tot.Has|HasDuration
	}
	return tot
}

// Bounds are the times a trace's duration is read from: its spans' first
// start and last end, and its events' first and last timestamps. The
// bounds of two parts of a trace merge into the whole's (Merge), so that a
// trace appended to keeps its duration without being read again.
type Bounds struct {
	SpanFirst, SpanLast, EventFirst, EventLast time.Time
}

// BoundsOf are t's bounds.
func BoundsOf(t *trace.Trace) Bounds {
	var b Bounds
	b.SpanFirst, b.SpanLast = spanTimes(t.Spans)
	b.EventFirst, b.EventLast = eventTimes(t.Events)
	return b
}

// Merge returns the bounds of a trace made of the parts b and o bound.
func (b Bounds) Merge(o Bounds) Bounds {
	b.SpanFirst, b.SpanLast = minTime(b.SpanFirst, o.SpanFirst), maxTime(b.SpanLast, o.SpanLast)
	b.EventFirst, b.EventLast = minTime(b.EventFirst, o.EventFirst), maxTime(b.EventLast, o.EventLast)
	return b
}

// Duration is from the first span start to the last span end, else from
// the first to the last event timestamp; ok is false when neither is
// known.
func (b Bounds) Duration() (d time.Duration, ok bool) {
	first, last := b.SpanFirst, b.SpanLast
	if first.IsZero() {
		first, last = b.EventFirst, b.EventLast
	}
	if first.IsZero() || last.Before(first) {
		return 0, false
	}
	return last.Sub(first), true
}

// minTime is the earlier of a and b, a zero time being unknown.
func minTime(a, b time.Time) time.Time {
	if a.IsZero() || !b.IsZero() && b.Before(a) {
		return b
	}
	return a
}

// maxTime is the later of a and b, a zero time being unknown.
func maxTime(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// spanTimes are the spans' first start and last end (a span with no end
// ending at its start).
func spanTimes(spans []trace.Span) (first, last time.Time) {
	for i := range spans {
		sp := &spans[i]
		if !sp.Start.IsZero() && (first.IsZero() || sp.Start.Before(first)) {
			first = sp.Start
		}
		end := sp.End
		if end.IsZero() {
			end = sp.Start
		}
		if !end.IsZero() && end.After(last) {
			last = end
		}
	}
	return first, last
}

// sums are the tokens of a subtree's spans that count.
type sums struct{ in, out, total int64 }

// markAggregates sets Aggregate on the spans whose tokens repeat their
// descendants'. Spans come parents first, so children are summed into
// their parents going backwards.
func (r *Reader) markAggregates(spans []trace.Span, us []Span) {
	if r.index == nil {
		r.index = map[string]int{}
	}
	clear(r.index)
	for i := range spans {
		if _, dup := r.index[spans[i].ID]; !dup {
			r.index[spans[i].ID] = i
		}
	}
	below := r.below[:0]
	for range spans {
		below = append(below, sums{})
	}
	r.below = below
	for i := len(spans) - 1; i >= 0; i-- {
		u, b := &us[i], below[i]
		own := sums{u.Input, u.Output, u.Total}
		counts := own
		if u.Has&(HasInput|HasOutput|HasTotal) != 0 && b != (sums{}) && own == b {
			u.Has |= Aggregate
			counts = sums{}
		}
		if p, ok := r.index[spans[i].ParentID]; ok && p < i {
			below[p].in += counts.in + b.in
			below[p].out += counts.out + b.out
			below[p].total += counts.total + b.total
		}
	}
}

func (tot *Totals) add(u *Span) {
	if u.Model != "" && !contains(tot.Models, u.Model) {
		tot.Models = append(tot.Models, u.Model)
	}
	tot.Has |= u.Has & (HasInput | HasOutput | HasTotal | HasCost | CostEstimated)
	tot.Input += u.Input
	tot.Output += u.Output
	tot.Total += u.Total
	tot.Cost += u.Cost
	if u.Has&HasCost == 0 && u.Has&(HasInput|HasOutput|HasTotal) != 0 {
		tot.Unpriced++
	}
}

func contains(xs []string, s string) bool {
	for _, x := range xs {
		if x == s {
			return true
		}
	}
	return false
}

// eventTimes are the first and last of the events' "timestamp" members
// (RFC 3339 text, or seconds or milliseconds since 1970).
func eventTimes(events []trace.Event) (first, last time.Time) {
	for i := range events {
		raw := events[i].Extra.Get("timestamp")
		if raw == nil {
			continue
		}
		ts, ok := parseTime(raw)
		if !ok {
			continue
		}
		if first.IsZero() || ts.Before(first) {
			first = ts
		}
		if ts.After(last) {
			last = ts
		}
	}
	return first, last
}

func parseTime(raw []byte) (time.Time, bool) {
	if s, ok := jsonString(raw); ok {
		if ts, err := time.Parse(time.RFC3339Nano, s); err == nil {
			return ts, true
		}
		if x, ok := parseNum(s); ok {
			return unixTime(x)
		}
		return time.Time{}, false
	}
	if x, ok := jsonNumber(raw); ok {
		return unixTime(x)
	}
	return time.Time{}, false
}

// unixTime reads seconds, or milliseconds when the number is too large to
// be seconds of this era (past the year 5138).
func unixTime(x float64) (time.Time, bool) {
	if x <= 0 {
		return time.Time{}, false
	}
	if x > 1e11 {
		x /= 1000
	}
	if x > 1e11 {
		return time.Time{}, false
	}
	sec, frac := math.Modf(x)
	return time.Unix(int64(sec), int64(frac*1e9)).UTC(), true
}
