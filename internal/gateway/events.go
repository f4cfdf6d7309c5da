package gateway

import (
	"encoding/json"
	"fmt"

	"github.com/lookout-dev/lookout/internal/jsonscan"
	"github.com/lookout-dev/lookout/internal/trace"
)

// What the three providers share when they turn messages into canonical
// events and write errors. The rule that matters most: a message the model
// answered must come out of ParseResponse (or a Stream) exactly as it comes
// out of ParseRequest when the client sends it back in the next call, since
// the gateway finds a conversation's trace by the hashes of its events.

// messageEvents turns one provider message into events: the tool outputs it
// carries first (Anthropic's tool_result blocks, Gemini's functionResponse
// parts, in block order), then the message itself with its content parts
// and tool calls, unless the message was nothing but tool outputs.
func messageEvents(role string, parts []trace.Part, calls []trace.ToolCall, outputs []trace.Event) []trace.Event {
	events := outputs
	if len(outputs) > 0 && len(parts) == 0 && len(calls) == 0 {
		return events
	}
	return append(events, trace.Event{Role: role, Content: partsContent(parts, len(calls) > 0), ToolCalls: calls})
}

// partsContent is the content of a message: one plain text part becomes a
// string (so that "content": "hi" and [{"type": "text", "text": "hi"}] are
// the same event), no parts null beside tool calls (as OpenAI writes it) or
// an empty string, anything else the list of parts.
func partsContent(parts []trace.Part, hasCalls bool) trace.Content {
	switch {
	case len(parts) == 0 && hasCalls:
		return trace.Content{Kind: trace.ContentNull}
	case len(parts) == 0:
		return trace.TextContent("")
	case len(parts) == 1 && parts[0].Type == "text" && len(parts[0].Extra) == 0:
		return trace.TextContent(parts[0].Text)
	}
	return trace.Content{Kind: trace.ContentParts, Parts: parts}
}

// dropAbsent removes members whose value is null or an empty list: the APIs
// use both to say "none" (OpenAI's refusal: null, annotations: []), and a
// client may send a message back with or without them.
func dropAbsent(f trace.Fields) trace.Fields {
	out := f[:0]
	for _, x := range f {
		if v := string(x.Value); v == "null" || v == "[]" {
			continue
		}
		out = append(out, x)
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// canonArguments writes tool-call arguments in one spelling (see
// canonJSON); arguments that are a JSON string (text that is not an object)
// stay a string.
func canonArguments(args json.RawMessage) json.RawMessage {
	if len(args) == 0 {
		return args
	}
	return canonJSON(args)
}

// canonJSON writes a valid JSON value in one spelling: compact, every
// string escaped as trace.AppendString escapes it ("Z\u00fcrich" and
// "Zürich" are one string). Streams hand over the model's JSON text,
// responses the provider's re-encoding of it, and clients their own: the
// same value must give the same bytes for a conversation's hashes to match.
// Member order and number spelling are kept. Input that does not scan is
// returned as it is.
func canonJSON(raw json.RawMessage) json.RawMessage {
	s := jsonscan.New(raw)
	out, err := appendCanon(make([]byte, 0, len(raw)), s)
	if err != nil || s.End() != nil {
		return raw
	}
	return out
}

func appendCanon(b []byte, s *jsonscan.Scanner) ([]byte, error) {
	switch s.Peek() {
	case jsonscan.Object:
		b = append(b, '{')
		n := 0
		err := s.Object(func(key string) error {
			if n > 0 {
				b = append(b, ',')
			}
			n++
			b = trace.AppendString(b, key)
			b = append(b, ':')
			var err error
			b, err = appendCanon(b, s)
			return err
		})
		return append(b, '}'), err
	case jsonscan.Array:
		b = append(b, '[')
		err := s.Array(func(i int) error {
			if i > 0 {
				b = append(b, ',')
			}
			var err error
			b, err = appendCanon(b, s)
			return err
		})
		return append(b, ']'), err
	case jsonscan.String:
		v, err := s.String("value")
		return trace.AppendString(b, v), err
	}
	raw, err := s.Raw() // number, true, false, null
	return append(b, raw...), err
}

// decodeBody reads the top-level object of a body, calling fn per member,
// and fails on anything after it.
func decodeBody(s *jsonscan.Scanner, what string, fn func(key string) error) error {
	if err := s.Expect(jsonscan.Object, what); err != nil {
		return err
	}
	if err := s.Object(fn); err != nil {
		return err
	}
	return s.End()
}

// optString reads a string or null ("" for null).
func optString(s *jsonscan.Scanner, what string) (string, error) {
	if s.Peek() == jsonscan.Null {
		return "", s.Null()
	}
	return s.String(what)
}

// optBool reads a boolean or null (false for null).
func optBool(s *jsonscan.Scanner, what string) (bool, error) {
	if s.Peek() == jsonscan.Null {
		return false, s.Null()
	}
	return s.Bool(what)
}

// optInt reads an integer or null (0 for null).
func optInt(s *jsonscan.Scanner, what string) (int64, error) {
	if s.Peek() == jsonscan.Null {
		return 0, s.Null()
	}
	return s.Int64(what)
}

// optRaw reads any value as compact JSON; null gives nil.
func optRaw(s *jsonscan.Scanner) (json.RawMessage, error) {
	if s.Peek() == jsonscan.Null {
		return nil, s.Null()
	}
	return trace.DecodeRaw(s)
}

// keepMember appends a member to f, its value in canonical spelling.
func keepMember(s *jsonscan.Scanner, f *trace.Fields, key string) error {
	raw, err := s.Raw()
	if err != nil {
		return err
	}
	*f = append(*f, trace.Field{Key: key, Value: canonJSON(raw)})
	return nil
}

// peekMembers reads the object at the scanner's position for the members
// want asks about (their raw values, nil when absent) and leaves the scanner
// where it was, so that the caller can read the object knowing them, e.g.
// its "type" or "index" before members that come earlier.
func peekMembers(s *jsonscan.Scanner, what string, want ...string) ([]json.RawMessage, error) {
	if err := s.Expect(jsonscan.Object, what); err != nil {
		return nil, err
	}
	start := s.Offset()
	got := make([]json.RawMessage, len(want))
	err := s.Object(func(key string) error {
		for i, w := range want {
			if key == w {
				raw, err := s.Raw()
				got[i] = raw
				return err
			}
		}
		return s.Skip()
	})
	s.Seek(start)
	return got, err
}

// rawString is the text of a raw JSON string value, and whether it was one.
func rawString(raw json.RawMessage) (string, bool) {
	if len(raw) == 0 || raw[0] != '"' {
		return "", false
	}
	v, err := jsonscan.New(raw).String("value")
	return v, err == nil
}

// wrapError names the provider and what was read; a *jsonscan.Error inside
// carries the JSON path.
func wrapError(provider, what string, err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("%s %s: %w", provider, what, err)
}

// UpstreamError is an error the provider itself answered with, in a body
// the gateway was asked to read as an answer.
type UpstreamError struct {
	Provider string
	Message  string
}

func (e *UpstreamError) Error() string {
	return e.Provider + " answered with an error: " + e.Message
}

// lookoutMember is `,"lookout":<details>` to put in an error object, or
// nothing when there are no details or they do not marshal.
func lookoutMember(details any) []byte {
	if details == nil {
		return nil
	}
	raw, err := json.Marshal(details)
	if err != nil || string(raw) == "null" {
		return nil
	}
	return append([]byte(`,"lookout":`), raw...)
}

// dataURL is an inline image as the URL the canonical image part holds.
func dataURL(mimeType, data string) string {
	return "data:" + mimeType + ";base64," + data
}

// imagePart is the canonical image part: {type: "image", image_url}.
func imagePart(url string) trace.Part {
	return trace.Part{Type: "image", Extra: trace.Fields{{Key: "image_url", Value: trace.AppendString(nil, url)}}}
}
