package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/lookout-dev/lookout/internal/trace"
)

// Stepper sends a session's next events to Lookout as one guarded step:
// the events are checked against the dataset's guardrails with the
// session's earlier events as the past, then appended to the session's
// trace (created by the first step, with Metadata).
type Stepper interface {
	Step(ctx context.Context, req StepRequest) (StepResult, error)
}

// StepRequest is the body of POST /api/v1/gateway/{dataset}/steps.
type StepRequest struct {
	Session  string
	Events   []trace.Event
	Metadata json.RawMessage // a JSON object, or nil
}

// StepResult is its answer.
type StepResult struct {
	TraceID string
	First   int  // the index in the trace of the first event sent
	Blocked bool // a guardrail in block mode was violated
	// Message is the blocking rules' messages joined by "; ".
	Message    string
	Violations json.RawMessage // the violations as the API lists them, or nil
}

// ErrUnavailable marks a step that failed because Lookout did not answer
// it (unreachable, out of time, a 5xx answer): with FailOpen the message
// goes on unchecked. Any other error always refuses the message.
var ErrUnavailable = errors.New("the Lookout server is unavailable")

// Config configures a Session.
type Config struct {
	// Session names the Lookout session: one trace (1-200 characters).
	Session string
	Stepper Stepper
	// FailOpen passes a message on unchecked (and says so in Logf) when
	// its step fails with ErrUnavailable; otherwise it is refused.
	FailOpen bool
	// StepTimeout bounds each step (0: 30 s).
	StepTimeout time.Duration
	// MaxPending bounds the requests awaiting an answer that the session
	// tracks (tools/call, tools/list, initialize); more are refused
	// (0: 10,000).
	MaxPending int
	// Metadata are more members of the trace's metadata, such as
	// {"mcp_transport": "stdio"}: a JSON object or nil.
	Metadata json.RawMessage
	// Logf receives diagnostics, one line each (nil: discarded).
	Logf func(format string, args ...any)
}

// Session is one MCP client session between a client and a server. Its
// methods are safe for concurrent use: the two directions of a relay call
// them from their own goroutines. Steps are sent one at a time, so the
// trace has the events in the order they were checked.
type Session struct {
	cfg Config

	mu         sync.Mutex
	pending    map[string]pendingRequest // by IDKey
	serverInfo json.RawMessage
	clientInfo json.RawMessage
	serverName string
	protocol   string

	stepMu   sync.Mutex
	recorded bool // a step succeeded: the trace exists
}

// pendingRequest is a request of the client awaiting the server's answer.
type pendingRequest struct {
	method     string
	toolCallID string
}

// NewSession starts a session.
func NewSession(cfg Config) *Session {
	if cfg.StepTimeout <= 0 {
		cfg.StepTimeout = 30 * time.Second
	}
	if cfg.MaxPending <= 0 {
		cfg.MaxPending = 10000
	}
	if cfg.Logf == nil {
		cfg.Logf = func(string, ...any) {}
	}
	if len(cfg.Metadata) > 0 && json.Valid(cfg.Metadata) {
		cfg.Metadata = trace.Compact(cfg.Metadata)
	} else {
		cfg.Metadata = nil
	}
	return &Session{cfg: cfg, pending: map[string]pendingRequest{}}
}

// ID is the Lookout session id.
func (s *Session) ID() string { return s.cfg.Session }

// Outcome is what becomes of a client's message: Forward goes on to the
// server, Reply goes back to the client at once; either may be nil.
type Outcome struct {
	Forward []byte
	Reply   []byte
}

// FromClient handles one message or batch from the client. A tools/call
// request is sent to Lookout as a step first: when it is blocked (or
// cannot be checked and the session fails closed) the client gets a
// JSON-RPC error and the server never sees the request. A message that is
// not valid JSON-RPC is answered with the JSON-RPC error for it and not
// passed on, so nothing reaches the server that Lookout could not read.
// Everything else is passed on unchanged.
func (s *Session) FromClient(ctx context.Context, data []byte) Outcome {
	data = bytes.TrimSpace(data)
	msgs, batch, err := Parse(data)
	if err != nil {
		e := err.(*Error)
		s.cfg.Logf("client sent a message that is not valid JSON-RPC, answered with an error: %s: %.200q", e.Message, data)
		return Outcome{Reply: ErrorResponse(idOf(data), e)}
	}
	var fwd, reply [][]byte
	for i := range msgs {
		m := &msgs[i]
		if m.Err != nil {
			s.cfg.Logf("client sent a batch element that is not valid JSON-RPC, answered with an error: %s", m.Err.Message)
			reply = append(reply, ErrorResponse(m.ID, m.Err))
			continue
		}
		r, pass := s.fromClient(ctx, m)
		if r != nil {
			reply = append(reply, r)
		}
		if pass {
			fwd = append(fwd, m.Raw)
		}
	}
	out := Outcome{Reply: joinBatch(reply, batch)}
	if len(fwd) == len(msgs) {
		out.Forward = data
	} else {
		out.Forward = joinBatch(fwd, batch)
	}
	return out
}

// fromClient handles one valid message: pass reports that it goes on to
// the server, reply is the client's answer in its place.
func (s *Session) fromClient(ctx context.Context, m *Message) (reply []byte, pass bool) {
	if !m.IsRequest() {
		switch m.Method {
		case "notifications/cancelled":
			s.cancelled(m.Params)
		case "tools/call":
			// A call without an id could not be answered with a refusal,
			// nor its result checked; clients never send one.
			s.cfg.Logf("client sent a tools/call without an id, dropped")
			return nil, false
		}
		return nil, true
	}
	var r []byte
	switch m.Method {
	case "initialize":
		var p struct {
			ClientInfo      json.RawMessage `json:"clientInfo"`
			ProtocolVersion string          `json:"protocolVersion"`
		}
		if json.Unmarshal(m.Params, &p) == nil {
			s.mu.Lock()
			s.clientInfo, s.protocol = p.ClientInfo, p.ProtocolVersion
			s.mu.Unlock()
		}
		r = s.track(m, pendingRequest{method: m.Method})
	case "tools/list":
		r = s.track(m, pendingRequest{method: m.Method})
	case "tools/call":
		r = s.toolCall(ctx, m)
	}
	return r, r == nil
}

// track remembers a request whose answer the session reads.
func (s *Session) track(m *Message, req pendingRequest) []byte {
	key, ok := IDKey(m.ID)
	if !ok {
		return ErrorResponse(m.ID, &Error{Code: CodeInvalidRequest, Message: "Invalid Request: a " + m.Method + " request needs a string or number id"})
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, again := s.pending[key]; !again && len(s.pending) >= s.cfg.MaxPending {
		return ErrorResponse(m.ID, &Error{Code: CodeGatewayError, Message: fmt.Sprintf("[Lookout] more than %d requests await an answer; this one was not sent", s.cfg.MaxPending)})
	}
	s.pending[key] = req
	return nil
}

// toolCall checks a tools/call request before it goes on.
func (s *Session) toolCall(ctx context.Context, m *Message) []byte {
	if _, ok := IDKey(m.ID); !ok {
		return ErrorResponse(m.ID, &Error{Code: CodeInvalidRequest, Message: "Invalid Request: a tools/call request needs a string or number id"})
	}
	p, err := parseCallParams(m.Params)
	if err != nil {
		return ErrorResponse(m.ID, &Error{Code: CodeInvalidParams, Message: "Invalid params: " + err.Error()})
	}
	callID := s.cfg.Session + "/" + IDText(m.ID)
	s.mu.Lock()
	server := s.serverName
	s.mu.Unlock()
	ev := callEvent(callID, p, server)
	if refusal := s.check(ctx, m.ID, ev, "the call of tool "+p.Name, "it was not run"); refusal != nil {
		return refusal
	}
	return s.track(m, pendingRequest{method: m.Method, toolCallID: callID})
}

// cancelled forgets a request the client gave up: its late answer, if
// any, goes to a client that no longer waits for it.
func (s *Session) cancelled(params json.RawMessage) {
	var p struct {
		RequestID json.RawMessage `json:"requestId"`
	}
	if json.Unmarshal(params, &p) != nil {
		return
	}
	if key, ok := IDKey(p.RequestID); ok {
		s.mu.Lock()
		delete(s.pending, key)
		s.mu.Unlock()
	}
}

// FromServer handles one message or batch from the server and returns
// what the client gets (nil: nothing). The answer to a tools/call or
// tools/list request is sent to Lookout as a step first, and replaced by
// a JSON-RPC error when it is blocked (or cannot be checked and the
// session fails closed). What is not valid JSON-RPC is dropped and
// reported to Logf: the client could not read it, and Lookout could not
// check it. Everything else is passed on unchanged.
func (s *Session) FromServer(ctx context.Context, data []byte) []byte {
	data = bytes.TrimSpace(data)
	msgs, batch, err := Parse(data)
	if err != nil {
		s.cfg.Logf("server sent a message that is not valid JSON-RPC, dropped: %s: %.200q", err.(*Error).Message, data)
		return nil
	}
	parts := make([][]byte, 0, len(msgs))
	changed := false
	for i := range msgs {
		m := &msgs[i]
		if m.Err != nil {
			s.cfg.Logf("server sent a batch element that is not valid JSON-RPC, dropped: %s", m.Err.Message)
			changed = true
			continue
		}
		out := s.fromServer(ctx, m)
		if out == nil {
			out = m.Raw
		} else {
			changed = true
		}
		parts = append(parts, out)
	}
	if !changed {
		return data
	}
	return joinBatch(parts, batch)
}

// fromServer handles one valid message; a non-nil answer replaces it.
func (s *Session) fromServer(ctx context.Context, m *Message) []byte {
	if !m.IsResponse() {
		return nil
	}
	key, ok := IDKey(m.ID)
	if !ok {
		return nil
	}
	s.mu.Lock()
	req, found := s.pending[key]
	delete(s.pending, key)
	server := s.serverName
	s.mu.Unlock()
	if !found {
		return nil
	}
	switch req.method {
	case "initialize":
		var r struct {
			ServerInfo      json.RawMessage `json:"serverInfo"`
			ProtocolVersion string          `json:"protocolVersion"`
		}
		if m.Result != nil && json.Unmarshal(m.Result, &r) == nil {
			var info struct {
				Name string `json:"name"`
			}
			_ = json.Unmarshal(r.ServerInfo, &info)
			s.mu.Lock()
			s.serverInfo, s.serverName = r.ServerInfo, info.Name
			if r.ProtocolVersion != "" {
				s.protocol = r.ProtocolVersion
			}
			s.mu.Unlock()
		}
	case "tools/list":
		if m.Result == nil {
			return nil
		}
		ev, ok := toolsEvent(m.Result, server)
		if !ok {
			return nil
		}
		return s.check(ctx, m.ID, ev, "the tools list", "it was not passed on")
	case "tools/call":
		var ev trace.Event
		if m.Result != nil {
			ev = resultEvent(req.toolCallID, m.Result, server)
		} else {
			ev = errorEvent(req.toolCallID, m.Error, server)
		}
		return s.check(ctx, m.ID, ev, "the result of tool call "+IDText(m.ID), "it was not passed on")
	}
	return nil
}

// check sends ev as a step and returns the JSON-RPC error that answers
// request id instead of the message, or nil when the message goes on.
func (s *Session) check(ctx context.Context, id json.RawMessage, ev trace.Event, what, consequence string) []byte {
	res, err := s.step(ctx, ev)
	switch {
	case err != nil && s.cfg.FailOpen && errors.Is(err, ErrUnavailable):
		s.cfg.Logf("%s passed unchecked (--fail-open): %v", what, err)
		return nil
	case err != nil:
		s.cfg.Logf("%s refused: the guardrails could not check it: %v", what, err)
		return ErrorResponse(id, &Error{Code: CodeGatewayError,
			Message: fmt.Sprintf("[Lookout] the guardrails could not check %s, so %s: %v", what, consequence, err)})
	case res.Blocked:
		msg := res.Message
		if msg == "" {
			msg = "[Lookout] blocked by a guardrail"
		}
		s.cfg.Logf("%s blocked: %s", what, msg)
		e := &Error{Code: CodeBlocked, Message: msg}
		if res.TraceID != "" || len(res.Violations) > 0 {
			e.Data = blockedData{Lookout: blockedDetails{TraceID: res.TraceID, Violations: res.Violations}}
		}
		return ErrorResponse(id, e)
	}
	return nil
}

// blockedData is the data of a blocked call's error.
type blockedData struct {
	Lookout blockedDetails `json:"lookout"`
}

type blockedDetails struct {
	TraceID    string          `json:"trace_id,omitempty"`
	Violations json.RawMessage `json:"violations,omitempty"`
}

// step sends one event; the first step that succeeds creates the trace,
// with the session's metadata.
func (s *Session) step(ctx context.Context, ev trace.Event) (StepResult, error) {
	s.stepMu.Lock()
	defer s.stepMu.Unlock()
	ctx, cancel := context.WithTimeout(ctx, s.cfg.StepTimeout)
	defer cancel()
	req := StepRequest{Session: s.cfg.Session, Events: []trace.Event{ev}}
	if !s.recorded {
		req.Metadata = s.metadata()
	}
	res, err := s.cfg.Stepper.Step(ctx, req)
	if err == nil {
		s.recorded = true
	}
	return res, err
}

// metadata is the trace's metadata: {"source": "mcp", "mcp_server",
// "mcp_client" (their names), "mcp_server_info", "mcp_client_info" (as
// the initialize request and answer gave them), "mcp_protocol_version",
// then Config.Metadata's members}.
func (s *Session) metadata() json.RawMessage {
	s.mu.Lock()
	defer s.mu.Unlock()
	var clientName struct {
		Name string `json:"name"`
	}
	_ = json.Unmarshal(s.clientInfo, &clientName)
	fields := []trace.Field{{Key: "source", Value: json.RawMessage(`"mcp"`)}}
	str := func(key, v string) {
		if v != "" {
			fields = append(fields, trace.Field{Key: key, Value: trace.AppendString(nil, v)})
		}
	}
	raw := func(key string, v json.RawMessage) {
		if len(v) > 0 && v[0] == '{' {
			fields = append(fields, trace.Field{Key: key, Value: trace.Compact(v)})
		}
	}
	str("mcp_server", s.serverName)
	str("mcp_client", clientName.Name)
	raw("mcp_server_info", s.serverInfo)
	raw("mcp_client_info", s.clientInfo)
	str("mcp_protocol_version", s.protocol)
	var b bytes.Buffer
	b.WriteByte('{')
	for i, f := range fields {
		if i > 0 {
			b.WriteByte(',')
		}
		b.Write(trace.AppendString(nil, f.Key))
		b.WriteByte(':')
		b.Write(f.Value)
	}
	if extra := s.cfg.Metadata; len(extra) > 2 && extra[0] == '{' {
		b.WriteByte(',')
		b.Write(extra[1 : len(extra)-1])
	}
	b.WriteByte('}')
	return b.Bytes()
}
