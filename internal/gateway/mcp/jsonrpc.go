package mcp

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
)

// JSON-RPC error codes. The -320xx codes are Lookout's own, from the range
// JSON-RPC leaves to implementations.
const (
	CodeParseError     = -32700
	CodeInvalidRequest = -32600
	CodeInvalidParams  = -32602
	// CodeBlocked answers a request that a guardrail blocked: a tools/call
	// (the tool did not run), or one whose result was refused.
	CodeBlocked = -32010
	// CodeGatewayError answers a request that could not be checked: Lookout
	// was unreachable or failed, or too many requests were unanswered.
	CodeGatewayError = -32011
)

// Message is one JSON-RPC message: a request (method and id), a
// notification (method, no id) or a response (id and result or error).
type Message struct {
	// Raw is the message as received, forwarded unchanged when it passes.
	Raw json.RawMessage
	// ID is the raw id, or nil when the message has none.
	ID        json.RawMessage
	Method    string
	HasMethod bool
	Params    json.RawMessage
	Result    json.RawMessage
	Error     json.RawMessage
	// Err is why a batch element is not a valid message (a single message
	// that is not valid is an error of Parse instead).
	Err *Error
}

// IsRequest reports a request: a method and an id.
func (m *Message) IsRequest() bool { return m.HasMethod && m.ID != nil }

// IsResponse reports a response: no method, an id, a result or an error.
func (m *Message) IsResponse() bool { return !m.HasMethod && m.ID != nil }

// Error is a JSON-RPC error object.
type Error struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
	Data    any    `json:"data,omitempty"`
}

func (e *Error) Error() string { return fmt.Sprintf("JSON-RPC error %d: %s", e.Code, e.Message) }

// Parse reads one JSON-RPC message or batch, such as a stdio line or an
// HTTP body. A single message that is not valid JSON or not a valid
// message is an *Error (parse error or invalid request) to answer with; in
// a batch each invalid element carries its own Err.
//
// Members are matched exactly (not case-folded) and the last of duplicate
// members wins, as JavaScript's and Python's JSON parsers read them, so
// the message checked is the message the other side acts on.
func Parse(data []byte) (msgs []Message, batch bool, err error) {
	data = bytes.TrimSpace(data)
	if len(data) == 0 {
		return nil, false, &Error{Code: CodeParseError, Message: "Parse error: empty message"}
	}
	if !json.Valid(data) {
		return nil, false, &Error{Code: CodeParseError, Message: "Parse error: " + syntaxError(data)}
	}
	if data[0] != '[' {
		m, perr := parseOne(data)
		if perr != nil {
			return nil, false, perr
		}
		return []Message{m}, false, nil
	}
	var elems []json.RawMessage
	if err := json.Unmarshal(data, &elems); err != nil {
		return nil, false, &Error{Code: CodeParseError, Message: "Parse error: " + err.Error()}
	}
	if len(elems) == 0 {
		return nil, false, &Error{Code: CodeInvalidRequest, Message: "Invalid Request: empty batch"}
	}
	msgs = make([]Message, len(elems))
	for i, e := range elems {
		m, perr := parseOne(e)
		if perr != nil {
			m = Message{Raw: e, Err: perr}
			m.ID = idOf(e)
		}
		msgs[i] = m
	}
	return msgs, true, nil
}

// syntaxError describes why data is not JSON, with the byte offset.
func syntaxError(data []byte) string {
	var v any
	err := json.Unmarshal(data, &v)
	var se *json.SyntaxError
	if errors.As(err, &se) {
		return fmt.Sprintf("%s (at byte %d)", se.Error(), se.Offset)
	}
	if err != nil {
		return err.Error()
	}
	return "not JSON"
}

// parseOne reads a message object (data is valid JSON).
func parseOne(data json.RawMessage) (Message, *Error) {
	m := Message{Raw: data}
	if len(data) == 0 || data[0] != '{' {
		return m, &Error{Code: CodeInvalidRequest, Message: "Invalid Request: a message must be a JSON object"}
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(data, &obj); err != nil {
		return m, &Error{Code: CodeParseError, Message: "Parse error: " + err.Error()}
	}
	if id, ok := obj["id"]; ok {
		if !validID(id) {
			return m, &Error{Code: CodeInvalidRequest, Message: "Invalid Request: id must be a string, a number or null"}
		}
		m.ID = id
	}
	if raw, ok := obj["method"]; ok {
		if err := json.Unmarshal(raw, &m.Method); err != nil || raw[0] != '"' {
			return m, &Error{Code: CodeInvalidRequest, Message: "Invalid Request: method must be a string"}
		}
		m.HasMethod = true
		m.Params = obj["params"]
		return m, nil
	}
	m.Result, m.Error = obj["result"], obj["error"]
	if m.ID == nil || m.Result == nil && m.Error == nil {
		return m, &Error{Code: CodeInvalidRequest, Message: "Invalid Request: neither a request (method) nor a response (id with result or error)"}
	}
	return m, nil
}

func validID(id json.RawMessage) bool {
	switch id[0] {
	case '"', 'n', '-', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9':
		return true
	}
	return false
}

// idOf is the id of an invalid message when it has a usable one, for the
// error that answers it.
func idOf(data json.RawMessage) json.RawMessage {
	var obj map[string]json.RawMessage
	if json.Unmarshal(data, &obj) != nil {
		return nil
	}
	if id, ok := obj["id"]; ok && validID(id) {
		return id
	}
	return nil
}

// IDKey is the value of an id as a map key: ids are equal when their
// values are, so 1 and 1.0 are one id (JavaScript answers 1.0 as 1) while
// 1 and "1" are two. ok is false for a null or absent id.
func IDKey(id json.RawMessage) (key string, ok bool) {
	if len(id) == 0 {
		return "", false
	}
	switch id[0] {
	case '"':
		var s string
		if json.Unmarshal(id, &s) != nil {
			return "", false
		}
		return "s" + s, true
	case 'n':
		return "", false
	}
	f, err := strconv.ParseFloat(string(id), 64)
	if err != nil {
		// beyond float64's range: compare the text
		return "t" + string(id), true
	}
	if f == 0 {
		f = math.Abs(f) // -0 is 0, as JavaScript writes it
	}
	return "n" + strconv.FormatFloat(f, 'g', -1, 64), true
}

// IDText is an id as text for a tool call id: a string's value, a number's
// digits.
func IDText(id json.RawMessage) string {
	if len(id) > 0 && id[0] == '"' {
		var s string
		if json.Unmarshal(id, &s) == nil {
			return s
		}
	}
	return string(id)
}

// ErrorResponse is the JSON-RPC error response to the request id (null
// when id is nil).
func ErrorResponse(id json.RawMessage, e *Error) []byte {
	if id == nil {
		id = json.RawMessage("null")
	}
	b, err := json.Marshal(struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Error   *Error          `json:"error"`
	}{"2.0", id, e})
	if err != nil {
		// Data that does not marshal: answer without it.
		b, _ = json.Marshal(struct {
			JSONRPC string          `json:"jsonrpc"`
			ID      json.RawMessage `json:"id"`
			Error   *Error          `json:"error"`
		}{"2.0", id, &Error{Code: e.Code, Message: e.Message}})
	}
	return b
}

// joinBatch writes messages as one JSON array (or the one message itself
// when batch is false and there is one).
func joinBatch(parts [][]byte, batch bool) []byte {
	if len(parts) == 0 {
		return nil
	}
	if !batch && len(parts) == 1 {
		return parts[0]
	}
	n := 2
	for _, p := range parts {
		n += len(p) + 1
	}
	b := make([]byte, 0, n)
	b = append(b, '[')
	for i, p := range parts {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, p...)
	}
	return append(b, ']')
}
