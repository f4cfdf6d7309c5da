package gateway

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/lookout-dev/lookout/internal/policy"
	"github.com/lookout-dev/lookout/internal/store"
	"github.com/lookout-dev/lookout/internal/trace"
)

// Proxy forwards model calls to their provider, checking and recording them.
type Proxy struct {
	Client   *http.Client // nil: http.DefaultClient
	Guard    *Guard
	Recorder *Recorder
	Log      *slog.Logger
	// MaxResponse bounds a non-streamed answer read from upstream (0: 64 MiB).
	MaxResponse int64

	reqOnce  sync.Once
	requests *requestCache // requests.go
}

// shaped is a provider whose requests a requestCache can read.
type shaped interface {
	shape() *requestShape
}

// Call is one call to proxy, as the server resolved it.
type Call struct {
	Provider Provider
	// Upstream is the URL the call goes to; Header the headers it carries
	// there (the provider key without Lookout's suffix, no Lookout headers).
	Upstream string
	Header   http.Header
	Body     []byte
	// OwnerID and DatasetID say where the call is recorded.
	OwnerID, DatasetID string
	Rails              []*Guardrail
	Params             map[string]any
	// Model and Stream override what the body says (Gemini names both in
	// the URL); Stream nil keeps the body's.
	Model  string
	Stream *bool
}

// callRecord is what the proxy learns of one call, recorded at its end.
type callRecord struct {
	c        *Call
	req      Request
	resp     Response
	conv     *Conversation
	stored   int // events of the conversation recorded before the call
	heads    []string
	span     trace.Span
	start    time.Time
	findings []Finding
	seen     map[string]bool // findings by guardrail and key, counted once
	sums     []eventsSum     // the request's events' prefix sums (snapshots.go)
	trace    *policy.Trace   // the request's events as the policies saw them
}

// Serve proxies one call and writes its answer.
func (p *Proxy) Serve(w http.ResponseWriter, r *http.Request, c *Call) {
	ctx := r.Context()
	req, pr, err := p.parseRequest(c)
	if err != nil {
		p.writeError(w, c, "[Lookout] the request cannot be read: "+err.Error(), nil)
		return
	}
	if c.Model != "" {
		req.Model = c.Model
	}
	if c.Stream != nil {
		req.Stream = *c.Stream
	}
	rec := &callRecord{c: c, req: req, start: time.Now(), seen: map[string]bool{}}
	rec.heads = pr.extendHeads(req.Events)
	rec.span = trace.Span{ID: newSpanID(), Name: strings.TrimSpace(c.Provider.Name() + " " + req.Model), Kind: "llm", Start: rec.start}
	rec.conv, rec.stored, err = p.Recorder.Lookup(ctx, c.OwnerID, c.DatasetID, rec.heads)
	if err != nil {
		p.log().Warn("gateway: finding the conversation failed; the call starts a trace", "err", err)
		rec.conv, rec.stored = &Conversation{dataset: c.DatasetID, owner: c.OwnerID}, 0
	}

	// The request, before it goes anywhere.
	v := p.Guard.check(ctx, c.Rails, req.Events, rec.stored, c.Params, pr.knownSums(), pr.takeTrace())
	rec.sums, rec.trace = v.sums, v.trace
	rec.add(v)
	if pr != nil {
		pr.heads, pr.sums = rec.heads, v.sums
		p.requests.keep(pr)
		// The next call of the conversation extends the request's Trace,
		// once this call's checks are done with it.
		defer pr.putTrace(rec.trace)
	}
	if v.Blocked {
		rec.span.Status, rec.span.StatusMessage = "blocked", v.Message()
		p.record(ctx, rec, nil, false)
		if req.Stream {
			w.Header().Set("Content-Type", "text/event-stream")
			w.Header().Set("Cache-Control", "no-cache")
			w.WriteHeader(http.StatusOK)
			w.Write(c.Provider.StreamError(v.Message(), v.Details()))
			return
		}
		p.writeError(w, c, v.Message(), v.Details())
		return
	}

	up, err := http.NewRequestWithContext(ctx, http.MethodPost, c.Upstream, bytes.NewReader(c.Body))
	if err != nil {
		p.fail(ctx, w, rec, http.StatusBadGateway, "[Lookout] the upstream URL is wrong: "+err.Error())
		return
	}
	up.Header = c.Header
	up.ContentLength = int64(len(c.Body))
	resp, err := p.client().Do(up)
	if err != nil {
		p.fail(ctx, w, rec, http.StatusBadGateway, "[Lookout] the upstream did not answer: "+err.Error())
		return
	}
	defer resp.Body.Close()
	mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	if req.Stream && resp.StatusCode/100 == 2 && mt == "text/event-stream" {
		p.stream(ctx, w, rec, resp)
		return
	}
	p.whole(ctx, w, rec, resp)
}

// parseRequest reads the call's request: after a kept request it repeats
// (requests.go) when the provider allows.
func (p *Proxy) parseRequest(c *Call) (Request, *parsedRequest, error) {
	sp, ok := c.Provider.(shaped)
	if !ok {
		req, err := c.Provider.ParseRequest(c.Body)
		return req, nil, err
	}
	p.reqOnce.Do(func() { p.requests = newRequestCache(maxRequestBytes) })
	pr, err := p.requests.read(sp.shape(), c.OwnerID, c.Body)
	if err != nil {
		return Request{}, nil, err
	}
	return pr.Request, pr, nil
}

// whole proxies an answer read whole: checked before the agent gets it.
func (p *Proxy) whole(ctx context.Context, w http.ResponseWriter, rec *callRecord, resp *http.Response) {
	limit := p.MaxResponse
	if limit <= 0 {
		limit = 64 << 20
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, limit+1))
	if err != nil {
		p.fail(ctx, w, rec, http.StatusBadGateway, "[Lookout] reading the upstream's answer failed: "+err.Error())
		return
	}
	if int64(len(body)) > limit {
		p.fail(ctx, w, rec, http.StatusBadGateway, fmt.Sprintf("[Lookout] the upstream's answer is larger than %d MiB", limit>>20))
		return
	}
	if resp.StatusCode/100 != 2 {
		rec.span.Status, rec.span.StatusMessage = "error", fmt.Sprintf("upstream answered %d", resp.StatusCode)
		p.record(ctx, rec, nil, false)
		copyHeader(w.Header(), resp.Header)
		w.WriteHeader(resp.StatusCode)
		w.Write(body)
		return
	}
	out, err := rec.c.Provider.ParseResponse(body)
	if err != nil {
		// Not ours to refuse, but not checked either: a blocking guardrail
		// cannot vouch for an answer it cannot read.
		if hasBlocking(rec.c.Rails) {
			p.fail(ctx, w, rec, http.StatusBadGateway, "[Lookout] the upstream's answer cannot be read, so the guardrails cannot check it: "+err.Error())
			return
		}
		rec.span.Status, rec.span.StatusMessage = "error", "the answer cannot be read: "+err.Error()
		p.record(ctx, rec, nil, false)
		copyHeader(w.Header(), resp.Header)
		w.WriteHeader(resp.StatusCode)
		w.Write(body)
		return
	}
	rec.answered(out)
	all := append(append(make([]trace.Event, 0, len(rec.req.Events)+len(out.Events)), rec.req.Events...), out.Events...)
	v := p.Guard.check(ctx, rec.c.Rails, all, len(rec.req.Events), rec.c.Params, rec.sums, rec.trace)
	rec.add(v)
	if v.Blocked {
		rec.span.Status, rec.span.StatusMessage = "blocked", v.Message()
		p.record(ctx, rec, out.Events, true)
		p.writeError(w, rec.c, v.Message(), v.Details())
		return
	}
	p.record(ctx, rec, out.Events, false)
	copyHeader(w.Header(), resp.Header)
	w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(resp.StatusCode)
	w.Write(body)
}

// stream proxies a streamed answer event by event: text goes on at once,
// events of a tool call are held until the call is complete and checked,
// and the end of the answer is held for the last check.
func (p *Proxy) stream(ctx context.Context, w http.ResponseWriter, rec *callRecord, resp *http.Response) {
	copyHeader(w.Header(), resp.Header)
	w.Header().Del("Content-Length")
	w.WriteHeader(resp.StatusCode)
	flusher, _ := w.(http.Flusher)
	flush := func() {
		if flusher != nil {
			flusher.Flush()
		}
	}
	st := rec.c.Provider.NewStream()
	sse := newSSEReader(resp.Body)
	var held [][]byte
	holding, ended, blocked, broken := false, false, false, false
	checked := -1 // the assembled events' count at the last check
	check := func() bool {
		out := st.Response()
		all := append(append([]trace.Event(nil), rec.req.Events...), out.Events...)
		v := p.Guard.check(ctx, rec.c.Rails, all, len(rec.req.Events), rec.c.Params, rec.sums, rec.trace)
		rec.add(v)
		checked = len(out.Events)
		if v.Blocked {
			rec.span.Status, rec.span.StatusMessage = "blocked", v.Message()
			w.Write(rec.c.Provider.StreamError(v.Message(), v.Details()))
			flush()
			return false
		}
		return true
	}
	release := func() {
		for _, b := range held {
			w.Write(b)
		}
		held, holding = nil, false
		flush()
	}
	for !blocked {
		ev, err := sse.next()
		if err != nil {
			if err != io.EOF {
				rec.span.Status, rec.span.StatusMessage = "error", "the stream broke: "+err.Error()
				broken = true
			}
			break
		}
		if ended { // after the end of the answer: keep order, hold it too
			held = append(held, ev.raw)
			continue
		}
		hold, done, err := st.Add(ev.name, ev.data)
		if err != nil && !broken {
			broken = true
			rec.span.Status, rec.span.StatusMessage = "error", "an event of the stream cannot be read: "+err.Error()
			p.log().Warn("gateway: unreadable stream event", "provider", rec.c.Provider.Name(), "err", err)
		}
		if hold || holding || done {
			holding = true
			held = append(held, ev.raw)
		} else {
			w.Write(ev.raw)
			flush()
		}
		if done {
			ended = true
			continue
		}
		if holding && st.Settled() {
			if !check() {
				blocked = true
				break
			}
			release()
		}
	}
	if !blocked && ctx.Err() == nil {
		// The last check covers what no check saw; with nothing new, the
		// earlier checks stand.
		if broken && hasBlocking(rec.c.Rails) {
			msg := "[Lookout] the upstream's stream cannot be read, so the guardrails cannot check it"
			w.Write(rec.c.Provider.StreamError(msg, nil))
			flush()
			blocked = true
		} else if checked != len(st.Response().Events) || holding {
			blocked = !check()
		}
		if !blocked {
			release()
		}
	}
	if ctx.Err() != nil && rec.span.Status == "" {
		rec.span.Status, rec.span.StatusMessage = "cancelled", "the agent went away"
	}
	out := st.Response()
	rec.answered(out)
	p.record(context.WithoutCancel(ctx), rec, out.Events, blocked && holdingToolCalls(out))
}

// holdingToolCalls reports whether the answer has tool calls, which a
// block withholds from the agent (text streamed before was delivered).
func holdingToolCalls(out Response) bool {
	for _, e := range out.Events {
		if len(e.ToolCalls) > 0 {
			return true
		}
	}
	return false
}

// fail answers an error of Lookout's own (upstream unreachable, answer
// unreadable) in the provider's format, and records the call with it.
func (p *Proxy) fail(ctx context.Context, w http.ResponseWriter, rec *callRecord, status int, msg string) {
	rec.span.Status, rec.span.StatusMessage = "error", msg
	p.record(context.WithoutCancel(ctx), rec, nil, false)
	_, body := rec.c.Provider.ErrorResponse(msg, nil)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	w.Write(body)
}

func (p *Proxy) writeError(w http.ResponseWriter, c *Call, msg string, details any) {
	status, body := c.Provider.ErrorResponse(msg, details)
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(status)
	w.Write(body)
}

func (rec *callRecord) answered(out Response) {
	if out.Model != "" {
		rec.span.Name = strings.TrimSpace(rec.c.Provider.Name() + " " + out.Model)
	}
	rec.resp = out
}

// add keeps a verdict's findings, each (guardrail, violation) once.
func (rec *callRecord) add(v Verdict) {
	for _, f := range v.Findings {
		key := f.Guardrail.ID + "\x00" + f.Guardrail.Name + "\x00"
		if f.Violation != nil {
			key += f.Violation.Key + "\x00" + strings.Join(f.Violation.Ranges, ",")
		} else {
			key += "failed"
		}
		if rec.seen[key] {
			continue
		}
		rec.seen[key] = true
		rec.findings = append(rec.findings, f)
	}
}

// record registers the call with the recorder: the request's events, then
// the answer's (withheld ones go to the call's span instead, since the
// agent never saw them), the call's span and the findings as annotations.
func (p *Proxy) record(ctx context.Context, rec *callRecord, answer []trace.Event, withheld bool) {
	if rec.c.DatasetID == "" {
		return
	}
	sp := rec.span
	sp.End = time.Now()
	if sp.Status == "" {
		sp.Status = "ok"
	}
	sp.Attributes = spanAttributes(rec, sp.End.Sub(rec.start))
	// The events the conversation held are shared with the recorder, not
	// copied: copying a long conversation's events on every call cost more
	// than the rest of recording it.
	m := len(rec.req.Events)
	stored := min(rec.stored, m)
	prior := rec.req.Events[:stored:stored]
	own := append(make([]trace.Event, 0, m-stored+len(answer)), rec.req.Events[stored:]...)
	if withheld {
		if raw, err := json.Marshal(json.RawMessage(trace.AppendEvents(nil, answer))); err == nil {
			sp.Outputs = raw
		}
	} else {
		for i := range answer {
			e := answer[i]
			e.SpanID = sp.ID
			own = append(own, e)
		}
	}
	n := stored + len(own)
	anns := annotationsAt(rec.findings, sp.ID, m, n, withheld)
	head := ""
	if n := len(rec.heads); n > 0 {
		head = rec.heads[n-1]
	}
	if added := own[max(0, len(rec.heads)-stored):]; len(added) > 0 {
		hs := ExtendHeads(head, added)
		head = hs[len(hs)-1]
	}
	if err := p.Recorder.Record(ctx, rec.conv, prior, own, []trace.Span{sp}, anns, head); err != nil {
		p.log().Error("gateway: the call is not recorded", "dataset", rec.c.DatasetID, "err", err)
	}
}

// Annotations are the findings new to a step of n events in all, as
// analyzer annotations at their places in the trace; a finding that names
// no place (a guardrail that failed) is put on the last event.
func Annotations(fs []Finding, n int) []store.Annotation {
	return annotationsAt(fs, "", n, n, false)
}

// annotationsAt are the findings new to a call, as analyzer annotations at
// their places in the trace of n events: a range in a withheld answer
// (events from m on, not in the trace) is put on the call's span.
func annotationsAt(fs []Finding, spanID string, m, n int, withheld bool) []store.Annotation {
	var out []store.Annotation
	for _, f := range fs {
		if !f.New {
			continue
		}
		extra := map[string]any{"policy_id": f.Guardrail.ID, "policy_name": f.Guardrail.Name, "mode": f.Guardrail.Mode, "gateway": true}
		var addrs []string
		if f.Violation != nil {
			extra["key"] = f.Violation.Key
			if len(f.Violation.Kwargs) > 0 {
				extra["kwargs"] = f.Violation.Kwargs
			}
			seen := map[string]bool{}
			for _, a := range f.Violation.Addresses() {
				if withheld && eventOf(a) >= m {
					a = "spans." + spanID
				}
				if !seen[a] {
					seen[a] = true
					addrs = append(addrs, a)
				}
			}
		} else {
			extra["failed"] = true
		}
		if len(addrs) == 0 {
			switch {
			case (withheld || n == 0) && spanID != "":
				addrs = []string{"spans." + spanID}
			case n > 0:
				addrs = []string{"messages." + strconv.Itoa(n-1)}
			default:
				continue // nowhere to put it: the verdict still says it
			}
		}
		raw, err := json.Marshal(extra)
		if err != nil {
			delete(extra, "kwargs")
			raw, _ = json.Marshal(extra)
		}
		for _, a := range addrs {
			out = append(out, store.Annotation{Address: a, Content: f.Message(), Source: "analyzer", Extra: raw})
		}
	}
	return out
}

// eventOf is the event index an address "messages.N..." names, or -1.
func eventOf(addr string) int {
	rest, ok := strings.CutPrefix(addr, "messages.")
	if !ok {
		return -1
	}
	end := strings.IndexAny(rest, ".:")
	if end >= 0 {
		rest = rest[:end]
	}
	n, err := strconv.Atoi(rest)
	if err != nil {
		return -1
	}
	return n
}

func spanAttributes(rec *callRecord, took time.Duration) json.RawMessage {
	a := map[string]any{
		"gen_ai.system":        rec.c.Provider.Name(),
		"gen_ai.request.model": rec.req.Model,
		"lookout.stream":       rec.req.Stream,
		"lookout.latency_ms":   float64(took.Microseconds()) / 1000,
	}
	if out := rec.resp; out.Model != "" || out.Usage != (Usage{}) || out.FinishReason != "" {
		if out.Model != "" {
			a["gen_ai.response.model"] = out.Model
		}
		a["gen_ai.usage.input_tokens"] = out.Usage.InputTokens
		a["gen_ai.usage.output_tokens"] = out.Usage.OutputTokens
		if out.FinishReason != "" {
			a["gen_ai.response.finish_reasons"] = []string{out.FinishReason}
		}
	}
	if len(rec.req.Tools) > 0 && json.Valid(rec.req.Tools) {
		a["gen_ai.request.tools"] = json.RawMessage(rec.req.Tools)
	}
	raw, err := json.Marshal(a)
	if err != nil {
		delete(a, "gen_ai.request.tools")
		raw, _ = json.Marshal(a)
	}
	return raw
}

func hasBlocking(rails []*Guardrail) bool {
	for _, r := range rails {
		if r.Blocks() {
			return true
		}
	}
	return false
}

// hopHeaders are not forwarded (RFC 9110, 7.6.1), nor is Content-Length,
// which the answer written sets itself.
var hopHeaders = map[string]bool{
	"Connection": true, "Keep-Alive": true, "Proxy-Authenticate": true, "Proxy-Authorization": true,
	"Te": true, "Trailer": true, "Transfer-Encoding": true, "Upgrade": true, "Content-Length": true,
}

func copyHeader(dst, src http.Header) {
	for k, vs := range src {
		if hopHeaders[k] {
			continue
		}
		dst[k] = append([]string(nil), vs...)
	}
}

func newSpanID() string {
	var b [8]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

func (p *Proxy) client() *http.Client {
	if p.Client != nil {
		return p.Client
	}
	return http.DefaultClient
}

func (p *Proxy) log() *slog.Logger {
	if p.Log != nil {
		return p.Log
	}
	return slog.New(slog.DiscardHandler)
}
