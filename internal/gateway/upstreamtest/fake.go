// Package upstreamtest runs fake LLM providers on loopback: local HTTP
// servers that speak OpenAI Chat Completions, Anthropic Messages and Gemini
// generateContent / streamGenerateContent the way the real APIs do (paths,
// authentication, validation errors, JSON and server-sent event shapes),
// answering from a script. The gateway's tests point the official SDKs and
// Lookout's gateway at them; bench/gateway measures against them.
//
// Each fake counts the calls it receives and records every request
// (headers and body), so a test can show that a refused call never reached
// the provider and that the provider key arrived untouched.
package upstreamtest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Provider names the API a fake speaks.
type Provider string

// The providers.
const (
	OpenAI    Provider = "openai"
	Anthropic Provider = "anthropic"
	Gemini    Provider = "gemini"
)

// Providers lists every provider, in a stable order.
var Providers = []Provider{OpenAI, Anthropic, Gemini}

// Options tune a fake.
type Options struct {
	// Key is the provider key the fake accepts; any other is refused with
	// the provider's authentication error. "" accepts any non-empty key.
	Key string
	// Latency is how long the model "thinks" before the response headers.
	Latency time.Duration
	// ChunkDelay is the pause between two streamed events.
	ChunkDelay time.Duration
	// SplitWrites writes every streamed event in two writes flushed 1 ms
	// apart, cut in the middle of its data line, so the reader's
	// server-sent event parser meets partial lines.
	SplitWrites bool
	// NoRecording keeps the call count but not the requests (for
	// benchmarks, whose requests would fill memory).
	NoRecording bool
	// Lean answers the script's first turn without reading the request
	// beyond whether it streams (`"stream":true` anywhere in it): for
	// benchmarks of what stands between an agent and its provider, where
	// the fake's own parse of a long conversation would be most of the
	// machine's work. The key is still checked.
	Lean bool
}

// Request is one request a fake received, as it arrived.
type Request struct {
	Method   string
	Path     string
	RawQuery string
	Header   http.Header
	Body     []byte
	// Turn is the index of the scripted turn that answered, or -1 when
	// the request was refused (bad path, key or body).
	Turn   int
	Stream bool
	Status int
}

// Key is the provider key the request carried, where the provider reads
// it: OpenAI's Authorization bearer token, Anthropic's x-api-key, Gemini's
// x-goog-api-key or key query parameter.
func (r Request) Key() string {
	if k, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer "); ok {
		return k
	}
	if k := r.Header.Get("X-Api-Key"); k != "" {
		return k
	}
	if k := r.Header.Get("X-Goog-Api-Key"); k != "" {
		return k
	}
	for part := range strings.SplitSeq(r.RawQuery, "&") {
		if k, ok := strings.CutPrefix(part, "key="); ok {
			return k
		}
	}
	return ""
}

// Fake is a running fake provider.
type Fake struct {
	Provider Provider

	opt Options
	ln  net.Listener
	srv *http.Server

	calls  atomic.Int64
	served atomic.Int64 // responses started, for unique response ids
	mu     sync.Mutex
	script Script
	reqs   []Request
}

// Start runs a fake of provider p answering from script on 127.0.0.1.
func Start(p Provider, script Script, opt Options) (*Fake, error) {
	switch p {
	case OpenAI, Anthropic, Gemini:
	default:
		return nil, fmt.Errorf("upstreamtest: unknown provider %q", p)
	}
	if err := script.check(); err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("upstreamtest: listen: %w", err)
	}
	f := &Fake{Provider: p, opt: opt, ln: ln, script: script}
	f.srv = &http.Server{Handler: f, ReadHeaderTimeout: 10 * time.Second}
	go f.srv.Serve(ln)
	return f, nil
}

// check refuses a script the fake could not answer from.
func (s Script) check() error {
	for i, t := range s {
		for _, c := range t.Calls {
			if c.Name == "" {
				return fmt.Errorf("upstreamtest: turn %d: a call has no name", i)
			}
			if _, err := parseArguments(c); err != nil {
				return fmt.Errorf("turn %d: %w", i, err)
			}
		}
	}
	return nil
}

// URL is the provider's base URL as its SDK and Lookout's gateway take
// it: OpenAI's ends in /v1 (the SDK appends /chat/completions), Anthropic's
// and Gemini's are the bare origin (the SDKs append /v1/messages and
// /v1beta/models/...).
func (f *Fake) URL() string {
	u := "http://" + f.ln.Addr().String()
	if f.Provider == OpenAI {
		u += "/v1"
	}
	return u
}

// Close stops the fake and drops its open connections.
func (f *Fake) Close() { f.srv.Close() }

// SetScript replaces the script for the requests that come next.
func (f *Fake) SetScript(s Script) error {
	if err := s.check(); err != nil {
		return err
	}
	f.mu.Lock()
	f.script = s
	f.mu.Unlock()
	return nil
}

// Calls is the number of requests received, refused ones included.
func (f *Fake) Calls() int { return int(f.calls.Load()) }

// Requests are the requests received so far, in order of arrival.
func (f *Fake) Requests() []Request {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]Request(nil), f.reqs...)
}

// Reset forgets the requests and the call count.
func (f *Fake) Reset() {
	f.mu.Lock()
	f.reqs = nil
	f.calls.Store(0)
	f.mu.Unlock()
}

// apiError is a refusal in the provider's format.
type apiError struct {
	status  int
	message string
	// OpenAI's param and code, Anthropic's error type; "" for the default.
	param, code string
}

func (e *apiError) Error() string { return e.message }

// parsed is what a provider reads from a valid request.
type parsed struct {
	model        string
	stream       bool
	assistants   int  // assistant (model) messages so far: the turn to answer
	includeUsage bool // OpenAI's stream_options.include_usage
	sse          bool // Gemini's alt=sse (else a streamed JSON array)
}

// api is one provider's protocol.
type api interface {
	// authenticate checks the key; parse checks the path and body.
	authenticate(r *http.Request, want string) *apiError
	parse(r *http.Request, body []byte) (parsed, *apiError)
	errorBody(e *apiError) []byte
	complete(p parsed, t Turn, turn int, in, out int64, id string) []byte
	// events are the streamed answer, each framed for the wire.
	events(p parsed, t Turn, turn int, in, out int64, id string) [][]byte
	streamType(p parsed) string
}

func (f *Fake) api() api {
	switch f.Provider {
	case Anthropic:
		return anthropicAPI{}
	case Gemini:
		return geminiAPI{}
	}
	return openaiAPI{}
}

// maxBody bounds a request body, as the providers do.
const maxBody = 64 << 20

func (f *Fake) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.calls.Add(1)
	rec := Request{Method: r.Method, Path: r.URL.Path, RawQuery: r.URL.RawQuery, Header: r.Header.Clone(), Turn: -1}
	body, err := readBody(r)
	rec.Body = body
	status := f.serve(w, r, body, err, &rec)
	rec.Status = status
	if !f.opt.NoRecording {
		f.mu.Lock()
		f.reqs = append(f.reqs, rec)
		f.mu.Unlock()
	}
}

func (f *Fake) serve(w http.ResponseWriter, r *http.Request, body []byte, readErr error, rec *Request) int {
	a := f.api()
	refuse := func(e *apiError) int {
		writeJSON(w, e.status, a.errorBody(e))
		return e.status
	}
	switch {
	case readErr != nil:
		return refuse(&apiError{status: http.StatusBadRequest, message: "could not read the request body: " + readErr.Error()})
	case len(body) > maxBody:
		return refuse(&apiError{status: http.StatusRequestEntityTooLarge, message: "request body too large"})
	}
	if e := a.authenticate(r, f.opt.Key); e != nil {
		return refuse(e)
	}
	var p parsed
	if f.opt.Lean {
		p = parsed{model: "lean", stream: bytes.Contains(body, []byte(`"stream":true`))}
	} else {
		var e *apiError
		if p, e = a.parse(r, body); e != nil {
			return refuse(e)
		}
	}
	f.mu.Lock()
	t, turn := f.script.turn(p.assistants)
	f.mu.Unlock()
	rec.Turn, rec.Stream = turn, p.stream
	if !sleep(r.Context(), f.opt.Latency) {
		return 499 // the client left
	}
	if t.Error != nil {
		return refuse(&apiError{status: t.Error.Status, message: t.Error.Message})
	}
	in, out := t.usage(len(body))
	id := token(fmt.Sprint(f.served.Add(1), time.Now().UnixNano()), 29)
	if !p.stream {
		writeJSON(w, http.StatusOK, a.complete(p, t, turn, in, out, id))
		return http.StatusOK
	}
	h := w.Header()
	h.Set("Content-Type", a.streamType(p))
	h.Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	f.writeEvents(r.Context(), w, a.events(p, t, turn, in, out, id))
	return http.StatusOK
}

// readBody reads a request's body (up to maxBody and a byte), in one
// buffer of its declared length when it declares one, as a provider's
// server would: growing a buffer by doubling for a 100 KB conversation
// was the fake's largest cost.
func readBody(r *http.Request) ([]byte, error) {
	lr := io.LimitReader(r.Body, maxBody+1)
	n := r.ContentLength
	if n <= 0 || n > maxBody {
		return io.ReadAll(lr)
	}
	buf := make([]byte, n+1) // a byte more: a body longer than declared shows
	got := 0
	for got < len(buf) {
		m, err := lr.Read(buf[got:])
		got += m
		if err == io.EOF {
			break
		}
		if err != nil {
			return buf[:got], err
		}
	}
	return buf[:got], nil
}

// writeEvents writes a stream's framed events, paced by the options.
func (f *Fake) writeEvents(ctx context.Context, w http.ResponseWriter, events [][]byte) {
	rc := http.NewResponseController(w)
	for i, ev := range events {
		if i > 0 && !sleep(ctx, f.opt.ChunkDelay) {
			return
		}
		if f.opt.SplitWrites && len(ev) > 1 {
			cut := splitPoint(ev)
			if _, err := w.Write(ev[:cut]); err != nil {
				return
			}
			rc.Flush()
			if !sleep(ctx, time.Millisecond) {
				return
			}
			ev = ev[cut:]
		}
		if _, err := w.Write(ev); err != nil {
			return
		}
		rc.Flush()
	}
}

// splitPoint cuts an event inside its data line when it has one.
func splitPoint(ev []byte) int {
	if i := bytes.Index(ev, []byte("data:")); i >= 0 {
		end := bytes.IndexByte(ev[i:], '\n')
		if end < 0 {
			end = len(ev) - i
		}
		if end > 2 {
			return i + end/2
		}
	}
	return len(ev) / 2
}

// sleep waits d unless ctx ends first; it reports whether ctx is live.
func sleep(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

func writeJSON(w http.ResponseWriter, status int, body []byte) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	w.Write(body)
}

// mustJSON marshals values built by this package, which always marshal.
func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("upstreamtest: marshal %T: %v", v, err))
	}
	return b
}

// decodeObject unmarshals a JSON object body, refusing anything else.
func decodeObject(body []byte, v any) error {
	d := json.NewDecoder(bytes.NewReader(body))
	d.UseNumber()
	if err := d.Decode(v); err != nil {
		return err
	}
	if d.More() {
		return errors.New("unexpected data after the JSON value")
	}
	return nil
}

// keyMatches checks a presented key against the wanted one.
func keyMatches(got, want string) bool {
	return got != "" && (want == "" || got == want)
}

// TB is the part of testing.TB that New uses.
type TB interface {
	Helper()
	Fatal(args ...any)
	Cleanup(func())
}

// New starts a fake for a test: it fails the test if the fake cannot
// start and closes it when the test ends.
func New(t TB, p Provider, script Script, opt Options) *Fake {
	t.Helper()
	f, err := Start(p, script, opt)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(f.Close)
	return f
}
