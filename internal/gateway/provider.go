package gateway

import (
	"github.com/lookout-dev/lookout/internal/trace"
)

// Provider speaks one LLM API. Implementations are pure: they parse and
// format bytes, and never do I/O.
type Provider interface {
	// Name is the route segment: "openai", "anthropic" or "gemini".
	Name() string
	// ParseRequest reads a request body: the conversation so far as events
	// (system prompt first), the model and whether the answer streams.
	// Errors name the JSON path of the problem.
	ParseRequest(body []byte) (Request, error)
	// ParseResponse reads a complete (non-streamed) response body.
	ParseResponse(body []byte) (Response, error)
	// NewStream returns an assembler for one streamed response.
	NewStream() Stream
	// ErrorResponse is the status and body of a refused call in the API's
	// own error format, carrying msg; details is Lookout's detail object
	// (the violations), put where the format allows extra members.
	ErrorResponse(msg string, details any) (status int, body []byte)
	// StreamError is the raw bytes of the server-sent event(s) that end a
	// stream with an error carrying msg, in the API's own format.
	StreamError(msg string, details any) []byte
}

// Request is what a call asks the model.
type Request struct {
	// Events is the conversation as sent: system prompt, user and assistant
	// messages, tool calls and tool outputs, in order.
	Events []trace.Event
	Model  string
	Stream bool
	// Tools are the tool definitions the request offers, as raw JSON (kept
	// in the call's span), or nil.
	Tools []byte
}

// Response is what the model answered.
type Response struct {
	// Events are the events the answer adds: usually one assistant message
	// with its text and tool calls.
	Events       []trace.Event
	Model        string
	Usage        Usage
	FinishReason string
}

// Usage is the token count of one call, as the provider reports it.
type Usage struct {
	InputTokens  int64
	OutputTokens int64
}

// Stream assembles one streamed response from its server-sent events.
//
// The proxy passes each event on at once unless Add says to hold it: an
// event carrying part of a tool call that is not complete yet. Once one
// event is held, every later event is held too (order is kept) until
// Settled reports that no tool call is open; then the proxy checks what was
// assembled and either releases what it held or ends the stream with
// StreamError, so a blocked tool call is never delivered.
type Stream interface {
	// Add consumes one event: its name ("" when the stream names none) and
	// its data (the lines after "data: ", joined by "\n"). done reports the
	// end of the answer (OpenAI's [DONE], Anthropic's message_stop, the
	// last Gemini chunk is seen at end of input instead).
	Add(event string, data []byte) (hold, done bool, err error)
	// Settled reports that every tool call started so far is complete.
	Settled() bool
	// Response is the answer assembled so far.
	Response() Response
}
