package mcp

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strings"
	"sync"
	"time"
)

// HTTPProxy puts Lookout between clients and MCP servers that speak the
// Streamable HTTP transport: a POST carries the client's message(s) and is
// answered with JSON or with a stream of server-sent events, a GET opens
// the server's own event stream, a DELETE ends the session. Each MCP
// session (Mcp-Session-Id) is one Session, so one trace.
//
// For a server that runs without sessions (its initialize answer has no
// Mcp-Session-Id), the proxy gives the client a session id of its own
// ("lookout-...") so that the client's calls still make one trace; that
// id is never sent to the server.
//
// Session state (the requests awaiting answers, the server's name) is kept
// in memory for the last MaxSessions sessions used.
type HTTPProxy struct {
	// Client sends the requests to the servers (nil: one that waits at
	// most 5 minutes for a server's answer to begin).
	Client *http.Client
	// MaxMessage bounds a request body, a JSON answer and an event (0:
	// DefaultMaxMessage).
	MaxMessage int
	// MaxSessions bounds the sessions kept (0: 10,000); the least
	// recently used goes first.
	MaxSessions int
	// StepTimeout bounds each step (0: 30 s).
	StepTimeout time.Duration
	// Logf receives diagnostics (nil: discarded).
	Logf func(format string, args ...any)

	once     sync.Once
	mu       sync.Mutex
	sessions map[string]*httpSession
}

// Target is where one request goes, as the route resolved it.
type Target struct {
	// URL is the server's MCP endpoint.
	URL string
	// Header holds more headers for the server (its own credentials).
	Header http.Header
	// Scope separates sessions: a session id is looked up only among the
	// sessions of the same scope (such as the caller and the dataset).
	Scope string
	// Stepper records and checks this scope's steps.
	Stepper Stepper
	// Metadata are more members of a new trace's metadata.
	Metadata json.RawMessage
}

type httpSession struct {
	s        *Session
	minted   bool // the proxy's own session id: not sent to the server
	lastUsed time.Time
}

// MintedPrefix starts the session ids the proxy gives clients of servers
// without sessions.
const MintedPrefix = "lookout-"

func (p *HTTPProxy) init() {
	p.once.Do(func() {
		if p.Client == nil {
			tr := http.DefaultTransport.(*http.Transport).Clone()
			tr.ResponseHeaderTimeout = 5 * time.Minute
			p.Client = &http.Client{Transport: tr}
		}
		if p.MaxMessage <= 0 {
			p.MaxMessage = DefaultMaxMessage
		}
		if p.MaxSessions <= 0 {
			p.MaxSessions = 10000
		}
		if p.Logf == nil {
			p.Logf = func(string, ...any) {}
		}
		p.sessions = map[string]*httpSession{}
	})
}

func sessionKey(t Target, sid string) string { return t.Scope + "\x00" + t.URL + "\x00" + sid }

// session returns the session of sid, or a new one (kept only once the
// server names it, or sid is not empty).
func (p *HTTPProxy) session(t Target, sid string) *httpSession {
	p.mu.Lock()
	defer p.mu.Unlock()
	if sid != "" {
		if hs, ok := p.sessions[sessionKey(t, sid)]; ok {
			hs.lastUsed = time.Now()
			return hs
		}
	}
	hs := &httpSession{s: p.newSession(t), lastUsed: time.Now()}
	if sid != "" {
		p.keepLocked(sessionKey(t, sid), hs)
	}
	return hs
}

func (p *HTTPProxy) newSession(t Target) *Session {
	meta := t.Metadata
	if meta == nil {
		meta = json.RawMessage(`{"mcp_transport":"streamable-http"}`)
	}
	return NewSession(Config{Session: NewSessionID(), Stepper: t.Stepper, StepTimeout: p.StepTimeout,
		Metadata: meta, Logf: p.Logf})
}

func (p *HTTPProxy) keepLocked(key string, hs *httpSession) {
	if _, ok := p.sessions[key]; !ok && len(p.sessions) >= p.MaxSessions {
		var oldest string
		var at time.Time
		for k, s := range p.sessions {
			if oldest == "" || s.lastUsed.Before(at) {
				oldest, at = k, s.lastUsed
			}
		}
		delete(p.sessions, oldest)
	}
	p.sessions[key] = hs
}

func (p *HTTPProxy) keep(key string, hs *httpSession) {
	p.mu.Lock()
	p.keepLocked(key, hs)
	p.mu.Unlock()
}

func (p *HTTPProxy) forget(key string) {
	p.mu.Lock()
	delete(p.sessions, key)
	p.mu.Unlock()
}

// NewSessionID is a new random session id: "mcp-" and 32 hex digits.
func NewSessionID() string { return "mcp-" + randomHex() }

func randomHex() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// Serve handles one request of the route: POST, GET or DELETE.
func (p *HTTPProxy) Serve(w http.ResponseWriter, r *http.Request, t Target) {
	p.init()
	switch r.Method {
	case http.MethodPost:
		p.post(w, r, t)
	case http.MethodGet:
		p.get(w, r, t)
	case http.MethodDelete:
		p.delete(w, r, t)
	default:
		w.Header().Set("Allow", "GET, POST, DELETE")
		writeRPCError(w, http.StatusMethodNotAllowed, nil, CodeInvalidRequest, "method "+r.Method+" not allowed: an MCP endpoint takes POST, GET and DELETE")
	}
}

func (p *HTTPProxy) post(w http.ResponseWriter, r *http.Request, t Target) {
	ctx := r.Context()
	body, err := io.ReadAll(io.LimitReader(r.Body, int64(p.MaxMessage)+1))
	if err != nil {
		writeRPCError(w, http.StatusBadRequest, nil, CodeParseError, "reading the request: "+err.Error())
		return
	}
	if len(body) > p.MaxMessage {
		writeRPCError(w, http.StatusRequestEntityTooLarge, nil, CodeInvalidRequest, fmt.Sprintf("message of more than %d bytes", p.MaxMessage))
		return
	}
	sid := r.Header.Get("Mcp-Session-Id")
	hs := p.session(t, sid)
	out := hs.s.FromClient(ctx, body)
	switch {
	case out.Forward == nil && out.Reply == nil:
		w.WriteHeader(http.StatusAccepted) // nothing to answer, as for a notification
		return
	case out.Forward == nil:
		writeJSONBody(w, http.StatusOK, out.Reply)
		return
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, t.URL, bytes.NewReader(out.Forward))
	if err != nil {
		writeRPCError(w, http.StatusBadGateway, idOf(body), CodeGatewayError, "[Lookout] the MCP server's URL: "+err.Error())
		return
	}
	p.header(req, r, t, hs)
	req.Header.Set("Content-Type", "application/json")
	if req.Header.Get("Accept") == "" {
		req.Header.Set("Accept", "application/json, text/event-stream")
	}
	resp, err := p.Client.Do(req)
	if err != nil {
		writeRPCError(w, http.StatusBadGateway, idOf(body), CodeGatewayError, "[Lookout] the MCP server did not answer: "+err.Error())
		return
	}
	defer resp.Body.Close()

	// A new session: kept under the id the server gave it, or under an id
	// of the proxy's own when the server keeps no sessions.
	if sid == "" && resp.StatusCode/100 == 2 {
		if up := resp.Header.Get("Mcp-Session-Id"); up != "" {
			p.keep(sessionKey(t, up), hs)
		} else if isInitialize(out.Forward) {
			minted := MintedPrefix + randomHex()
			hs.minted = true
			p.keep(sessionKey(t, minted), hs)
			w.Header().Set("Mcp-Session-Id", minted)
		}
	}
	copyResponseHeader(w.Header(), resp.Header)
	switch {
	case resp.StatusCode == http.StatusAccepted && out.Reply != nil:
		w.Header().Del("Content-Type")
		writeJSONBody(w, http.StatusOK, out.Reply)
	case resp.StatusCode/100 != 2:
		p.copyBody(w, resp)
	case isEventStream(resp.Header):
		p.stream(ctx, w, resp, hs.s, out.Reply)
	case isJSON(resp.Header):
		answer, err := io.ReadAll(io.LimitReader(resp.Body, int64(p.MaxMessage)+1))
		if err != nil || len(answer) > p.MaxMessage {
			if err == nil {
				err = fmt.Errorf("more than %d bytes", p.MaxMessage)
			}
			writeRPCError(w, http.StatusBadGateway, idOf(body), CodeGatewayError, "[Lookout] reading the MCP server's answer: "+err.Error())
			return
		}
		if len(bytes.TrimSpace(answer)) > 0 {
			answer = hs.s.FromServer(ctx, answer)
		}
		writeJSONBody(w, resp.StatusCode, mergeAnswers(answer, out.Reply))
	default:
		p.copyBody(w, resp)
	}
}

func (p *HTTPProxy) get(w http.ResponseWriter, r *http.Request, t Target) {
	sid := r.Header.Get("Mcp-Session-Id")
	hs := p.session(t, sid)
	if hs.minted {
		// A server without sessions has no stream of its own to open.
		w.Header().Set("Allow", "POST, DELETE")
		writeRPCError(w, http.StatusMethodNotAllowed, nil, CodeInvalidRequest, "this MCP server keeps no sessions, so it has no event stream to GET")
		return
	}
	req, err := http.NewRequestWithContext(r.Context(), http.MethodGet, t.URL, nil)
	if err != nil {
		writeRPCError(w, http.StatusBadGateway, nil, CodeGatewayError, "[Lookout] the MCP server's URL: "+err.Error())
		return
	}
	p.header(req, r, t, hs)
	req.Header.Set("Accept", "text/event-stream")
	resp, err := p.Client.Do(req)
	if err != nil {
		writeRPCError(w, http.StatusBadGateway, nil, CodeGatewayError, "[Lookout] the MCP server did not answer: "+err.Error())
		return
	}
	defer resp.Body.Close()
	copyResponseHeader(w.Header(), resp.Header)
	if resp.StatusCode/100 == 2 && isEventStream(resp.Header) {
		p.stream(r.Context(), w, resp, hs.s, nil)
		return
	}
	p.copyBody(w, resp)
}

func (p *HTTPProxy) delete(w http.ResponseWriter, r *http.Request, t Target) {
	sid := r.Header.Get("Mcp-Session-Id")
	if sid == "" {
		writeRPCError(w, http.StatusBadRequest, nil, CodeInvalidRequest, "DELETE needs the Mcp-Session-Id header")
		return
	}
	key := sessionKey(t, sid)
	hs := p.session(t, sid)
	defer p.forget(key)
	if hs.minted {
		w.WriteHeader(http.StatusOK)
		return
	}
	req, err := http.NewRequestWithContext(r.Context(), http.MethodDelete, t.URL, nil)
	if err != nil {
		writeRPCError(w, http.StatusBadGateway, nil, CodeGatewayError, "[Lookout] the MCP server's URL: "+err.Error())
		return
	}
	p.header(req, r, t, hs)
	resp, err := p.Client.Do(req)
	if err != nil {
		writeRPCError(w, http.StatusBadGateway, nil, CodeGatewayError, "[Lookout] the MCP server did not answer: "+err.Error())
		return
	}
	defer resp.Body.Close()
	copyResponseHeader(w.Header(), resp.Header)
	p.copyBody(w, resp)
}

// header sets the headers the server gets: the MCP transport's own from
// the client's request (never its credentials for Lookout), then the
// target's.
func (p *HTTPProxy) header(req, r *http.Request, t Target, hs *httpSession) {
	for _, k := range []string{"Accept", "Mcp-Protocol-Version", "Last-Event-Id"} {
		if v := r.Header.Values(k); len(v) > 0 {
			req.Header[k] = v
		}
	}
	if sid := r.Header.Get("Mcp-Session-Id"); sid != "" && !hs.minted {
		req.Header.Set("Mcp-Session-Id", sid)
	}
	for k, v := range t.Header {
		req.Header[http.CanonicalHeaderKey(k)] = v
	}
}

// stream relays the server's event stream, after the events of reply (the
// answers Lookout gave in the server's place).
func (p *HTTPProxy) stream(ctx context.Context, w http.ResponseWriter, resp *http.Response, s *Session, reply []byte) {
	rc := http.NewResponseController(w)
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.Header().Del("Content-Length")
	w.WriteHeader(resp.StatusCode)
	if reply != nil {
		w.Write(sseMessage(reply))
	}
	if err := rc.Flush(); err != nil {
		p.Logf("streaming to the client: %v", err)
		return
	}
	if err := relaySSE(ctx, s, resp.Body, w, rc.Flush, p.MaxMessage, p.Logf); err != nil && !errors.Is(err, context.Canceled) {
		p.Logf("relaying the MCP server's event stream: %v", err)
	}
}

// copyBody passes an answer on as it is (at most MaxMessage bytes of it).
func (p *HTTPProxy) copyBody(w http.ResponseWriter, resp *http.Response) {
	w.WriteHeader(resp.StatusCode)
	io.Copy(w, io.LimitReader(resp.Body, int64(p.MaxMessage)))
}

// responseHeaders are the server's headers the client gets.
var responseHeaders = []string{"Content-Type", "Mcp-Session-Id", "Mcp-Protocol-Version", "Cache-Control", "Www-Authenticate", "Retry-After", "Allow"}

func copyResponseHeader(dst, src http.Header) {
	for _, k := range responseHeaders {
		if v := src.Values(k); len(v) > 0 {
			dst[k] = v
		}
	}
}

func mediaType(h http.Header) string {
	mt, _, _ := mime.ParseMediaType(h.Get("Content-Type"))
	return strings.ToLower(mt)
}

func isEventStream(h http.Header) bool { return mediaType(h) == "text/event-stream" }
func isJSON(h http.Header) bool        { return mediaType(h) == "application/json" }

// isInitialize reports a body holding an initialize request.
func isInitialize(body []byte) bool {
	msgs, _, err := Parse(body)
	if err != nil {
		return false
	}
	for _, m := range msgs {
		if m.Err == nil && m.IsRequest() && m.Method == "initialize" {
			return true
		}
	}
	return false
}

// mergeAnswers puts Lookout's answers (reply) with the server's: one JSON
// array when both are there.
func mergeAnswers(answer, reply []byte) []byte {
	answer, reply = bytes.TrimSpace(answer), bytes.TrimSpace(reply)
	if len(reply) == 0 {
		return answer
	}
	if len(answer) == 0 {
		return reply
	}
	a, r := unwrapArray(answer), unwrapArray(reply)
	switch {
	case len(a) == 0:
		return joinBatch([][]byte{r}, true)
	case len(r) == 0:
		return joinBatch([][]byte{a}, true)
	}
	return joinBatch([][]byte{a, r}, true)
}

// unwrapArray is an array's elements without the brackets (a message as
// it is), to join into one array.
func unwrapArray(b []byte) []byte {
	if len(b) >= 2 && b[0] == '[' {
		return bytes.TrimSpace(b[1 : len(b)-1])
	}
	return b
}

func writeJSONBody(w http.ResponseWriter, status int, body []byte) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	w.Write(body)
}

// writeRPCError answers with a JSON-RPC error, the body MCP clients read.
func writeRPCError(w http.ResponseWriter, status int, id json.RawMessage, code int, msg string) {
	writeJSONBody(w, status, ErrorResponse(id, &Error{Code: code, Message: msg}))
}
