package gateway

import (
	"bytes"
	"encoding/json"
	"strings"

	"github.com/lookout-dev/lookout/internal/jsonscan"
	"github.com/lookout-dev/lookout/internal/trace"
)

// OpenAI speaks the Chat Completions API (POST /v1/chat/completions).
//
// Request messages already have the canonical event shape and are read by
// trace.DecodeEvents, as every other OpenAI-shaped trace is. Members that
// say "none" (null or []: refusal, annotations, audio, ...) are dropped from
// request and response messages alike, so that the assistant message a
// client sends back as the SDK returned it is the event the answer made.
//
// Only the first choice is recorded and checked: with n > 1 the others
// pass through unchecked (agents use the first).
func OpenAI() Provider { return openAI{} }

type openAI struct{}

func (openAI) Name() string { return "openai" }

func (openAI) ParseRequest(body []byte) (Request, error) { return openAIRequest.request(body) }

func (openAI) shape() *requestShape { return openAIRequest }

var openAIRequest = &requestShape{provider: "openai", array: "messages", field: openAIField, message: openAIMessage}

func openAIField(st *requestState, s *jsonscan.Scanner, key string) error {
	if ok, err := st.common(s, key); ok {
		return err
	}
	var err error
	switch key {
	case "functions": // the deprecated form of tools
		st.functions, err = optRaw(s)
	default:
		err = s.Skip()
	}
	return err
}

func openAIMessage(s *jsonscan.Scanner) ([]trace.Event, error) {
	ev := make([]trace.Event, 1)
	if err := trace.DecodeEvent(s, &ev[0]); err != nil {
		return nil, err
	}
	tidyOpenAIEvent(&ev[0])
	return ev, nil
}

// tidyOpenAIEvent drops the members that say "none" and writes arguments
// and kept members in one spelling.
func tidyOpenAIEvent(e *trace.Event) {
	e.Extra = canonFields(dropAbsent(e.Extra))
	for i := range e.Content.Parts {
		e.Content.Parts[i].Extra = canonFields(e.Content.Parts[i].Extra)
	}
	for i := range e.ToolCalls {
		c := &e.ToolCalls[i]
		c.Function.Arguments = canonArguments(c.Function.Arguments)
		c.Extra = canonFields(c.Extra)
		c.Function.Extra = canonFields(c.Function.Extra)
	}
}

func canonFields(f trace.Fields) trace.Fields {
	for i := range f {
		f[i].Value = canonJSON(f[i].Value)
	}
	return f
}

func (openAI) ParseResponse(body []byte) (Response, error) {
	var resp Response
	var msg *trace.Event
	chosen, chosenIndex := false, int64(-1)
	var upstream *UpstreamError
	s := jsonscan.New(body)
	err := decodeBody(s, "response body", func(key string) error {
		switch key {
		case "model":
			var err error
			resp.Model, err = optString(s, "model")
			return err
		case "choices":
			if s.Peek() == jsonscan.Null {
				return s.Null()
			}
			return s.Array(func(int) error {
				var c openAIChoice
				if err := c.decode(s); err != nil {
					return err
				}
				// The choice with index 0, or the first one when none says.
				if !chosen || (chosenIndex != 0 && c.index == 0) {
					chosen, chosenIndex = true, c.index
					msg, resp.FinishReason = c.message, c.finishReason
				}
				return nil
			})
		case "usage":
			return decodeOpenAIUsage(s, &resp.Usage)
		case "error":
			if s.Peek() != jsonscan.Null {
				upstream = &UpstreamError{Provider: "openai", Message: errorMessage(s)}
				return nil
			}
		}
		return s.Skip()
	})
	if err != nil {
		return Response{}, wrapError("openai", "response", err)
	}
	if upstream != nil {
		return Response{}, upstream
	}
	if msg != nil {
		tidyOpenAIEvent(msg)
		resp.Events = []trace.Event{*msg}
	}
	return resp, nil
}

type openAIChoice struct {
	index        int64
	message      *trace.Event
	finishReason string
}

func (c *openAIChoice) decode(s *jsonscan.Scanner) error {
	if err := s.Expect(jsonscan.Object, "choice"); err != nil {
		return err
	}
	c.index = -1
	return s.Object(func(key string) error {
		var err error
		switch key {
		case "index":
			c.index, err = s.Int64("index")
		case "message":
			c.message = &trace.Event{}
			err = trace.DecodeEvent(s, c.message)
		case "finish_reason":
			c.finishReason, err = optString(s, "finish_reason")
		default:
			err = s.Skip()
		}
		return err
	})
}

func decodeOpenAIUsage(s *jsonscan.Scanner, u *Usage) error {
	if s.Peek() == jsonscan.Null {
		return s.Null()
	}
	if err := s.Expect(jsonscan.Object, "usage"); err != nil {
		return err
	}
	return s.Object(func(key string) error {
		var err error
		switch key {
		case "prompt_tokens":
			u.InputTokens, err = optInt(s, key)
		case "completion_tokens":
			u.OutputTokens, err = optInt(s, key)
		default:
			err = s.Skip()
		}
		return err
	})
}

// errorMessage reads an error member, {"message": ...} or a string, for its
// message; it never fails, since the body is an error already.
func errorMessage(s *jsonscan.Scanner) string {
	raw, err := s.Raw()
	if err != nil {
		return "(unreadable error)"
	}
	if m, ok := rawString(raw); ok {
		return m
	}
	sub := jsonscan.New(raw)
	if got, err := peekMembers(sub, "error", "message"); err == nil {
		if m, ok := rawString(got[0]); ok {
			return m
		}
	}
	return string(trace.Compact(raw))
}

func (openAI) ErrorResponse(msg string, details any) (int, []byte) {
	return 400, openAIError(msg, details)
}

func (openAI) StreamError(msg string, details any) []byte {
	// A data event with an "error" member: the openai SDKs throw an
	// APIError carrying its message when they read one.
	b := append([]byte("data: "), openAIError(msg, details)...)
	return append(b, "\n\n"...)
}

func openAIError(msg string, details any) []byte {
	b := []byte(`{"error":{"message":`)
	b = trace.AppendString(b, msg)
	b = append(b, `,"type":"invalid_request_error","param":null,"code":"guardrail_violation"`...)
	b = append(b, lookoutMember(details)...)
	return append(b, "}}"...)
}

func (openAI) NewStream() Stream { return &openAIStream{} }

// openAIStream assembles chat.completion.chunk events. Deltas of the first
// choice are accumulated as the SDKs do (content, refusal and other string
// members appended, tool calls by index with arguments appended and id and
// name replaced); the message is then written in the non-streamed shape and
// read as ParseResponse reads it, so both give the same events.
type openAIStream struct {
	seen   bool // a delta of the first choice arrived
	role   string
	fields []*openAIDeltaField // content, refusal and the rest, in order
	calls  []*openAIStreamCall
	resp   Response
}

// openAIDeltaField is one accumulated member of the delta: strings are
// appended, any other value replaces the one before.
type openAIDeltaField struct {
	key   string
	text  strings.Builder
	isStr bool
	raw   json.RawMessage
}

type openAIStreamCall struct {
	index              int64
	id, typ, name      string
	args               strings.Builder
	open               bool
	extra, extraFields trace.Fields // members of the call and of its function, last value kept
}

// Add reads one event: a chunk, [DONE], or an error. An event carrying a
// tool-call delta is held; a call is complete once the choice finishes,
// the stream is done, or a delta of another call arrives while its
// arguments are whole JSON (calls interleaved by index stay open until
// their own arguments are whole).
func (st *openAIStream) Add(event string, data []byte) (hold, done bool, err error) {
	data = bytes.TrimSpace(data)
	if len(data) == 0 {
		return false, false, nil
	}
	if string(data) == "[DONE]" {
		st.closeCalls()
		return false, true, nil
	}
	s := jsonscan.New(data)
	isError := false
	err = decodeBody(s, "chunk", func(key string) error {
		switch key {
		case "model":
			m, err := optString(s, "model")
			if m != "" {
				st.resp.Model = m
			}
			return err
		case "choices":
			if s.Peek() == jsonscan.Null {
				return s.Null()
			}
			return s.Array(func(int) error {
				h, err := st.addChoice(s)
				hold = hold || h
				return err
			})
		case "usage":
			return decodeOpenAIUsage(s, &st.resp.Usage)
		case "error":
			isError = s.Peek() != jsonscan.Null
		}
		return s.Skip()
	})
	if err != nil {
		return false, false, wrapError("openai", "stream", err)
	}
	if isError {
		// The upstream ended the stream with an error: nothing follows.
		st.resp.FinishReason = "error"
		st.closeCalls()
		return false, true, nil
	}
	return hold, false, nil
}

func (st *openAIStream) addChoice(s *jsonscan.Scanner) (hold bool, err error) {
	got, err := peekMembers(s, "choice", "index")
	if err != nil {
		return false, err
	}
	if got[0] != nil && string(got[0]) != "0" {
		return false, s.Skip() // only the first choice is recorded
	}
	finish := ""
	err = s.Object(func(key string) error {
		var err error
		switch key {
		case "delta":
			hold, err = st.addDelta(s)
		case "finish_reason":
			finish, err = optString(s, "finish_reason")
		default:
			err = s.Skip()
		}
		return err
	})
	if finish != "" {
		st.resp.FinishReason = finish
		st.closeCalls()
	}
	return hold, err
}

func (st *openAIStream) addDelta(s *jsonscan.Scanner) (hold bool, err error) {
	if s.Peek() == jsonscan.Null {
		return false, s.Null()
	}
	if err := s.Expect(jsonscan.Object, "delta"); err != nil {
		return false, err
	}
	st.seen = true
	err = s.Object(func(key string) error {
		switch key {
		case "role":
			r, err := optString(s, "role")
			if r != "" {
				st.role = r
			}
			return err
		case "tool_calls":
			if s.Peek() == jsonscan.Null {
				return s.Null()
			}
			if err := s.Expect(jsonscan.Array, "tool_calls"); err != nil {
				return err
			}
			return s.Array(func(i int) error {
				hold = true
				return st.addCallDelta(s, int64(i))
			})
		}
		return st.addField(s, key)
	})
	return hold, err
}

// addField accumulates a delta member other than role and tool_calls.
func (st *openAIStream) addField(s *jsonscan.Scanner, key string) error {
	var f *openAIDeltaField
	for _, x := range st.fields {
		if x.key == key {
			f = x
			break
		}
	}
	isNull := s.Peek() == jsonscan.Null
	if key == "content" && !isNull && s.Peek() != jsonscan.String {
		return s.Errorf("content must be a string or null, not %s", s.Peek())
	}
	if f == nil {
		if isNull && key != "content" {
			return s.Null() // nothing yet: "none" adds no member
		}
		f = &openAIDeltaField{key: key}
		st.fields = append(st.fields, f)
	}
	switch s.Peek() {
	case jsonscan.String:
		v, err := s.String(key)
		f.text.WriteString(v)
		f.isStr, f.raw = true, nil
		return err
	case jsonscan.Null:
		return s.Null() // content: null before any text, or an idle member
	}
	raw, err := trace.DecodeRaw(s)
	f.raw, f.isStr = raw, false
	f.text.Reset()
	return err
}

func (st *openAIStream) addCallDelta(s *jsonscan.Scanner, position int64) error {
	got, err := peekMembers(s, "tool call delta", "index")
	if err != nil {
		return err
	}
	index := position
	if got[0] != nil {
		sub := jsonscan.New(got[0])
		sub.SetRoot(s.Path() + ".index")
		if index, err = sub.Int64("index"); err != nil {
			return err
		}
	}
	var c *openAIStreamCall
	for _, x := range st.calls {
		if x.index == index {
			c = x
		} else if x.open && jsonscan.Valid([]byte(x.args.String())) {
			x.open = false // another call goes on while this one is whole
		}
	}
	if c == nil {
		c = &openAIStreamCall{index: index}
		st.calls = append(st.calls, c)
	}
	c.open = true
	return s.Object(func(key string) error {
		switch key {
		case "index":
			return s.Skip()
		case "id":
			v, err := optString(s, "id")
			if v != "" {
				c.id = v
			}
			return err
		case "type":
			v, err := optString(s, "type")
			if v != "" {
				c.typ = v
			}
			return err
		case "function":
			if s.Peek() == jsonscan.Null {
				return s.Null()
			}
			if err := s.Expect(jsonscan.Object, "function"); err != nil {
				return err
			}
			return s.Object(func(key string) error {
				switch key {
				case "name":
					v, err := optString(s, "name")
					if v != "" {
						c.name = v
					}
					return err
				case "arguments":
					v, err := optString(s, "arguments")
					c.args.WriteString(v)
					return err
				}
				return setMember(s, &c.extraFields, key)
			})
		}
		return setMember(s, &c.extra, key)
	})
}

// setMember keeps the last value of a member.
func setMember(s *jsonscan.Scanner, f *trace.Fields, key string) error {
	raw, err := trace.DecodeRaw(s)
	if err != nil {
		return err
	}
	for i := range *f {
		if (*f)[i].Key == key {
			(*f)[i].Value = raw
			return nil
		}
	}
	*f = append(*f, trace.Field{Key: key, Value: raw})
	return nil
}

func (st *openAIStream) closeCalls() {
	for _, c := range st.calls {
		c.open = false
	}
}

func (st *openAIStream) Settled() bool {
	for _, c := range st.calls {
		if c.open {
			return false
		}
	}
	return true
}

func (st *openAIStream) Response() Response {
	resp := st.resp
	resp.Events = nil
	if !st.seen {
		return resp
	}
	e := trace.Event{}
	if err := trace.DecodeEvent(jsonscan.New(st.message()), &e); err != nil {
		// Add lets through only what message writes as a valid message.
		e = trace.Event{Role: "assistant", Content: trace.Content{Kind: trace.ContentNull}}
	}
	tidyOpenAIEvent(&e)
	resp.Events = []trace.Event{e}
	return resp
}

// message writes the assembled message in the shape of a non-streamed
// response's choices[0].message.
func (st *openAIStream) message() []byte {
	role := st.role
	if role == "" {
		role = "assistant"
	}
	b := append([]byte(`{"role":`), trace.AppendString(nil, role)...)
	hasContent := false
	for _, f := range st.fields {
		if f.key == "role" || f.key == "tool_calls" {
			continue
		}
		if f.key == "content" {
			hasContent = true
		} else if f.isStr && f.text.Len() == 0 {
			continue // "refusal": "" deltas add nothing
		}
		b = append(b, ',')
		b = trace.AppendString(b, f.key)
		b = append(b, ':')
		switch {
		case f.isStr:
			b = trace.AppendString(b, f.text.String())
		case f.raw != nil:
			b = append(b, f.raw...)
		default:
			b = append(b, "null"...)
		}
	}
	if !hasContent {
		b = append(b, `,"content":null`...)
	}
	if len(st.calls) > 0 {
		b = append(b, `,"tool_calls":[`...)
		for i, c := range st.calls {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, '{')
			if c.id != "" {
				b = append(b, `"id":`...)
				b = trace.AppendString(b, c.id)
				b = append(b, ',')
			}
			typ := c.typ
			if typ == "" {
				typ = "function"
			}
			b = append(b, `"type":`...)
			b = trace.AppendString(b, typ)
			b = appendFields(b, c.extra)
			b = append(b, `,"function":{"name":`...)
			b = trace.AppendString(b, c.name)
			b = append(b, `,"arguments":`...)
			b = trace.AppendString(b, c.args.String())
			b = appendFields(b, c.extraFields)
			b = append(b, "}}"...)
		}
		b = append(b, ']')
	}
	return append(b, '}')
}

// appendFields appends `,"key":value` per member.
func appendFields(b []byte, f trace.Fields) []byte {
	for _, x := range f {
		b = append(b, ',')
		b = trace.AppendString(b, x.Key)
		b = append(b, ':')
		b = append(b, x.Value...)
	}
	return b
}
