package gateway

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"strings"

	"github.com/lookout-dev/lookout/internal/jsonscan"
	"github.com/lookout-dev/lookout/internal/trace"
)

// Gemini speaks the Gemini API's generateContent and streamGenerateContent
// (?alt=sse). The model and whether the answer streams are in the URL, not
// the body: ParseRequest leaves Model empty and Stream false, and the proxy
// fills them in from the route.
//
// Contents become canonical events this way, in requests and responses
// alike (member names are accepted in lowerCamelCase and snake_case, as the
// API accepts both):
//
//	systemInstruction {parts: [{text}]}   a "system" event
//	role "model" / "user"                 "assistant" / "user"
//	{text}                                text; a content's text parts run together
//	                                      into one (the API splits text anywhere)
//	{text, thought: true}                 a {type: "thinking", thinking} part
//	{inlineData} / {fileData} of an image {type: "image", image_url: data URL or fileUri}
//	{functionCall {name, args, id?}}      a tool call of the content's event
//	{functionResponse {name, response}}   a tool event {role: "tool", tool_call_id,
//	                                      content: the response as JSON text, name}
//	                                      placed before the rest of its content
//	anything else                         a part whose type is the member's name
//
// thoughtSignature is dropped: an opaque token for the model's own replay,
// not content.
//
// Call ids: Gemini often gives none. A call without one gets
// "gemini-" + 16 hex digits of a hash of its name, its arguments and its
// place among its content's calls, so the call an answer makes and the same
// call sent back in the next request get the same id (a position in the
// conversation would not do: ParseResponse does not know it). A
// functionResponse without an id answers the earliest unanswered call of its
// name in the request.
//
// OutputTokens counts thoughtsTokenCount too, as OpenAI's and Anthropic's
// output counts include reasoning.
func Gemini() Provider { return gemini{} }

type gemini struct{}

func (gemini) Name() string { return "gemini" }

// geminiKey is a member name in lowerCamelCase: the API reads both spellings.
func geminiKey(key string) string {
	if !strings.Contains(key, "_") {
		return key
	}
	var b strings.Builder
	up := false
	for i := 0; i < len(key); i++ {
		c := key[i]
		switch {
		case c == '_':
			up = true
		case up && c >= 'a' && c <= 'z':
			b.WriteByte(c - 'a' + 'A')
			up = false
		default:
			b.WriteByte(c)
			up = false
		}
	}
	return b.String()
}

func (gemini) ParseRequest(body []byte) (Request, error) {
	var req Request
	var system []trace.Event
	var contents []trace.Event
	hasContents := false
	calls := &geminiCalls{}
	s := jsonscan.New(body)
	err := decodeBody(s, "request body", func(key string) error {
		var err error
		switch geminiKey(key) {
		case "systemInstruction":
			system, err = decodeGeminiSystem(s)
		case "contents":
			hasContents = true
			if err = s.Expect(jsonscan.Array, "contents"); err != nil {
				return err
			}
			contents = []trace.Event{}
			err = s.Array(func(int) error {
				evs, err := decodeGeminiContent(s, calls)
				contents = append(contents, evs...)
				return err
			})
		case "tools":
			req.Tools, err = optRaw(s)
		default:
			err = s.Skip()
		}
		return err
	})
	if err == nil && !hasContents {
		err = s.ErrorAt(0, `the request has no "contents"`)
	}
	if err != nil {
		return Request{}, wrapError("gemini", "request", err)
	}
	req.Events = append(append([]trace.Event{}, system...), contents...)
	return req, nil
}

func decodeGeminiSystem(s *jsonscan.Scanner) ([]trace.Event, error) {
	switch s.Peek() {
	case jsonscan.Null:
		return nil, s.Null()
	case jsonscan.String:
		text, err := s.String("systemInstruction")
		return []trace.Event{{Role: "system", Content: trace.TextContent(text)}}, err
	}
	evs, err := decodeGeminiContent(s, &geminiCalls{})
	for i := range evs {
		if evs[i].Role == "user" {
			evs[i].Role = "system"
		}
	}
	return evs, err
}

// geminiCalls are the calls of a conversation so far, for linking the
// functionResponses without an id.
type geminiCalls struct {
	pending []geminiCall
}

type geminiCall struct{ id, name string }

// answer returns the id a functionResponse answers and marks that call
// answered.
func (c *geminiCalls) answer(id, name string) string {
	for i, p := range c.pending {
		if (id != "" && p.id == id) || (id == "" && p.name == name) {
			c.pending = append(c.pending[:i], c.pending[i+1:]...)
			return p.id
		}
	}
	return id
}

// geminiCallID is the id of a call given none: a hash of its name, its
// arguments and its place among its content's calls.
func geminiCallID(name string, args json.RawMessage, place int) string {
	h := sha256.New()
	h.Write([]byte(name))
	h.Write([]byte{0})
	h.Write(args)
	h.Write(binary.AppendUvarint([]byte{0}, uint64(place)))
	return "gemini-" + hex.EncodeToString(h.Sum(nil)[:8])
}

// decodeGeminiContent reads one Content {role, parts} as its events.
func decodeGeminiContent(s *jsonscan.Scanner, calls *geminiCalls) ([]trace.Event, error) {
	if err := s.Expect(jsonscan.Object, "content"); err != nil {
		return nil, err
	}
	role := "user"
	var parts []trace.Part
	var toolCalls []trace.ToolCall
	var outputs []geminiOutput
	err := s.Object(func(key string) error {
		switch geminiKey(key) {
		case "role":
			r, err := optString(s, "role")
			switch r {
			case "model":
				role = "assistant"
			case "", "function":
				role = "user"
			default:
				role = r
			}
			return err
		case "parts":
			if s.Peek() == jsonscan.Null {
				return s.Null()
			}
			if err := s.Expect(jsonscan.Array, "parts"); err != nil {
				return err
			}
			return s.Array(func(int) error {
				return decodeGeminiPart(s, &parts, &toolCalls, &outputs)
			})
		}
		return s.Skip()
	})
	if err != nil {
		return nil, err
	}
	for i := range toolCalls {
		c := &toolCalls[i]
		if c.ID == "" {
			c.ID = geminiCallID(c.Function.Name, c.Function.Arguments, i)
		}
		calls.pending = append(calls.pending, geminiCall{id: c.ID, name: c.Function.Name})
	}
	var events []trace.Event
	for _, o := range outputs {
		o.event.ToolCallID = calls.answer(o.event.ToolCallID, o.name)
		events = append(events, o.event)
	}
	return messageEvents(role, mergeGeminiText(parts), toolCalls, events), nil
}

// geminiOutput is a functionResponse as a tool event, with the name of the
// function it answers.
type geminiOutput struct {
	event trace.Event
	name  string
}

// decodeGeminiPart reads one Part into the content's parts, calls or
// outputs.
func decodeGeminiPart(s *jsonscan.Scanner, parts *[]trace.Part, calls *[]trace.ToolCall, outputs *[]geminiOutput) error {
	if err := s.Expect(jsonscan.Object, "part"); err != nil {
		return err
	}
	start := s.Offset()
	// First pass: which kind of part this is.
	kind, thought := "", false
	err := s.Object(func(key string) error {
		switch k := geminiKey(key); k {
		case "thought":
			if s.Peek() == jsonscan.Bool {
				v, err := s.Bool("thought")
				thought = v
				return err
			}
		case "thoughtSignature", "videoMetadata", "partMetadata", "mediaResolution":
		case "functionCall", "functionResponse":
			// A part is one thing; should it hold more, a call must not
			// hide behind the rest.
			if kind != "functionCall" {
				kind = k
			}
		default:
			if kind == "" {
				kind = k
			}
		}
		return s.Skip()
	})
	if err != nil {
		return err
	}
	s.Seek(start)
	switch kind {
	case "text":
		var text string
		var extra trace.Fields
		err = s.Object(func(key string) error {
			switch k := geminiKey(key); k {
			case "text":
				var err error
				text, err = s.String("text")
				return err
			case "thought", "thoughtSignature":
				return s.Skip()
			default:
				return keepMember(s, &extra, k)
			}
		})
		if thought {
			*parts = append(*parts, trace.Part{Type: "thinking", Extra: append(trace.Fields{{Key: "thinking", Value: trace.AppendString(nil, text)}}, extra...)})
		} else {
			*parts = append(*parts, trace.Part{Type: "text", Text: text, Extra: extra})
		}
		return err
	case "functionCall":
		c := trace.ToolCall{Type: "function"}
		err = s.Object(func(key string) error {
			if geminiKey(key) != "functionCall" {
				return s.Skip()
			}
			if err := s.Expect(jsonscan.Object, "functionCall"); err != nil {
				return err
			}
			hasArgs := false
			err := s.Object(func(key string) error {
				var err error
				switch k := geminiKey(key); k {
				case "name":
					c.Function.Name, err = s.String("name")
				case "id":
					c.ID, err = optString(s, "id")
				case "args":
					if s.Peek() == jsonscan.Null {
						return s.Null()
					}
					if err := s.Expect(jsonscan.Object, "args"); err != nil {
						return err
					}
					hasArgs = true
					var raw json.RawMessage
					raw, err = s.Raw()
					c.Function.Arguments = canonJSON(raw)
				default:
					err = keepMember(s, &c.Extra, k)
				}
				return err
			})
			if !hasArgs {
				c.Function.Arguments = json.RawMessage(`{}`)
			}
			if err == nil && c.Function.Name == "" {
				return s.Errorf(`a functionCall needs a "name"`)
			}
			return err
		})
		*calls = append(*calls, c)
		return err
	case "functionResponse":
		e := trace.Event{Role: "tool", Content: trace.Content{Kind: trace.ContentNull}}
		name := ""
		err = s.Object(func(key string) error {
			if geminiKey(key) != "functionResponse" {
				return s.Skip()
			}
			if err := s.Expect(jsonscan.Object, "functionResponse"); err != nil {
				return err
			}
			return s.Object(func(key string) error {
				var err error
				switch k := geminiKey(key); k {
				case "name":
					name, err = s.String("name")
				case "id":
					e.ToolCallID, err = optString(s, "id")
				case "response":
					var raw json.RawMessage
					if raw, err = s.Raw(); err == nil {
						e.Content = trace.TextContent(string(canonJSON(raw)))
					}
				default:
					err = keepMember(s, &e.Extra, k)
				}
				return err
			})
		})
		e.Extra = append(trace.Fields{{Key: "name", Value: trace.AppendString(nil, name)}}, dropAbsent(e.Extra)...)
		*outputs = append(*outputs, geminiOutput{event: e, name: name})
		return err
	case "inlineData", "fileData":
		p := trace.Part{Type: kind}
		var data json.RawMessage
		err = s.Object(func(key string) error {
			k := geminiKey(key)
			if k != kind {
				return s.Skip() // thoughtSignature and the like
			}
			raw, err := s.Raw()
			data = canonJSON(raw)
			return err
		})
		if url, ok := geminiImageURL(kind, data); ok {
			p = imagePart(url)
		} else {
			p.Extra = trace.Fields{{Key: kind, Value: data}}
		}
		*parts = append(*parts, p)
		return err
	}
	// executableCode, codeExecutionResult and parts added later: kept.
	p := trace.Part{Type: kind}
	err = s.Object(func(key string) error {
		switch k := geminiKey(key); k {
		case "thoughtSignature":
			return s.Skip()
		default:
			return keepMember(s, &p.Extra, k)
		}
	})
	if kind == "" {
		p.Type = "empty"
	}
	*parts = append(*parts, p)
	return err
}

// geminiImageURL is the URL of an inline or file image: a data URL, or the
// file's URI. ok is false for other media.
func geminiImageURL(kind string, data json.RawMessage) (string, bool) {
	want := []string{"mimeType", "data"}
	if kind == "fileData" {
		want = []string{"mimeType", "fileUri"}
	}
	got := make([]string, 2)
	s := jsonscan.New(data)
	if s.Peek() != jsonscan.Object {
		return "", false
	}
	err := s.Object(func(key string) error {
		for i, w := range want {
			if geminiKey(key) == w && s.Peek() == jsonscan.String {
				v, err := s.String(key)
				got[i] = v
				return err
			}
		}
		return s.Skip()
	})
	if err != nil || !strings.HasPrefix(got[0], "image/") || got[1] == "" {
		return "", false
	}
	if kind == "fileData" {
		return got[1], true
	}
	return dataURL(got[0], got[1]), true
}

// mergeGeminiText runs adjacent text parts together, and adjacent thought
// parts, so that text split across parts (or stream chunks) is one part.
func mergeGeminiText(parts []trace.Part) []trace.Part {
	var out []trace.Part
	for _, p := range parts {
		if n := len(out); n > 0 {
			last := &out[n-1]
			if p.Type == "text" && last.Type == "text" && len(p.Extra) == 0 && len(last.Extra) == 0 {
				last.Text += p.Text
				continue
			}
			// A thought part holds only its "thinking" member, unless the
			// part had members of its own: those stay apart.
			if p.Type == "thinking" && last.Type == "thinking" && len(p.Extra) == 1 && len(last.Extra) == 1 {
				a, _ := rawString(last.Extra[0].Value)
				b, _ := rawString(p.Extra[0].Value)
				last.Extra = trace.Fields{{Key: "thinking", Value: trace.AppendString(nil, a+b)}}
				continue
			}
		}
		out = append(out, p)
	}
	return out
}

func (gemini) ParseResponse(body []byte) (Response, error) {
	s := jsonscan.New(body)
	if s.Peek() == jsonscan.Array {
		// streamGenerateContent without alt=sse: a JSON array of chunks.
		st := &geminiStream{}
		err := s.Array(func(int) error {
			raw, err := s.Raw()
			if err == nil {
				_, _, err = st.Add("", raw)
			}
			return err
		})
		if err == nil {
			err = s.End()
		}
		if err != nil {
			return Response{}, wrapError("gemini", "response", err)
		}
		if st.upstream != nil {
			return Response{}, st.upstream
		}
		return st.Response(), nil
	}
	st := &geminiStream{}
	if err := st.decodeChunk(s); err != nil {
		return Response{}, wrapError("gemini", "response", err)
	}
	if st.upstream != nil {
		return Response{}, st.upstream
	}
	return st.Response(), nil
}

func (gemini) ErrorResponse(msg string, details any) (int, []byte) {
	return 400, geminiError(msg, details)
}

func (gemini) StreamError(msg string, details any) []byte {
	// @google/genai throws an ApiError on a chunk with an "error" object
	// whose numeric code is 400-599 (throwIfStreamErrorChunk).
	b := append([]byte("data: "), geminiError(msg, details)...)
	return append(b, "\r\n\r\n"...)
}

func geminiError(msg string, details any) []byte {
	b := []byte(`{"error":{"code":400,"message":`)
	b = trace.AppendString(b, msg)
	b = append(b, `,"status":"INVALID_ARGUMENT"`...)
	b = append(b, lookoutMember(details)...)
	return append(b, "}}"...)
}

func (gemini) NewStream() Stream { return &geminiStream{} }

// geminiStream assembles streamGenerateContent chunks: each is a whole
// GenerateContentResponse whose first candidate's parts continue the
// answer. A functionCall arrives whole in one chunk, so no call is ever
// open: a chunk carrying one is held, and the stream is settled right
// after, for the proxy to check it before it goes out. The stream has no
// end marker; the proxy takes the end of input as done.
type geminiStream struct {
	resp       Response
	seen       bool            // the first candidate had content
	role       string          // of the first candidate's content
	parts      json.RawMessage // the parts so far, as a JSON array
	calls      int             // functionCall parts so far
	blockCause string          // promptFeedback.blockReason
	upstream   *UpstreamError
}

func (st *geminiStream) Add(event string, data []byte) (hold, done bool, err error) {
	data = bytes.TrimSpace(data)
	if len(data) == 0 {
		return false, false, nil
	}
	calls := st.calls
	s := jsonscan.New(data)
	if err := st.decodeChunk(s); err != nil {
		return false, false, wrapError("gemini", "stream", err)
	}
	if st.upstream != nil {
		st.resp.FinishReason = "error"
		return false, false, nil
	}
	return st.calls > calls, false, nil
}

// decodeChunk reads one GenerateContentResponse into the stream.
func (st *geminiStream) decodeChunk(s *jsonscan.Scanner) error {
	return decodeBody(s, "response", func(key string) error {
		switch geminiKey(key) {
		case "candidates":
			if s.Peek() == jsonscan.Null {
				return s.Null()
			}
			if err := s.Expect(jsonscan.Array, "candidates"); err != nil {
				return err
			}
			return s.Array(func(i int) error {
				if i > 0 {
					return s.Skip() // only the first candidate is recorded
				}
				return st.decodeCandidate(s)
			})
		case "usageMetadata":
			return st.decodeUsage(s)
		case "modelVersion":
			v, err := optString(s, "modelVersion")
			if v != "" {
				st.resp.Model = v
			}
			return err
		case "promptFeedback":
			got, err := peekMembers(s, "promptFeedback", "blockReason")
			if err != nil {
				return err
			}
			if r, ok := rawString(got[0]); ok {
				st.blockCause = r
			}
			return s.Skip()
		case "error":
			if s.Peek() != jsonscan.Null {
				st.upstream = &UpstreamError{Provider: "gemini", Message: errorMessage(s)}
				return nil
			}
		}
		return s.Skip()
	})
}

func (st *geminiStream) decodeCandidate(s *jsonscan.Scanner) error {
	if err := s.Expect(jsonscan.Object, "candidate"); err != nil {
		return err
	}
	return s.Object(func(key string) error {
		switch geminiKey(key) {
		case "finishReason":
			r, err := optString(s, "finishReason")
			if r != "" {
				st.resp.FinishReason = r
			}
			return err
		case "content":
			if s.Peek() == jsonscan.Null {
				return s.Null()
			}
			// Check the content as a request would be read, then keep its
			// parts raw to be read with the rest at the end.
			start := s.Offset()
			if _, err := decodeGeminiContent(s, &geminiCalls{}); err != nil {
				return err
			}
			s.Seek(start)
			st.seen = true
			return s.Object(func(key string) error {
				switch geminiKey(key) {
				case "role":
					r, err := optString(s, "role")
					if r != "" {
						st.role = r
					}
					return err
				case "parts":
					if s.Peek() == jsonscan.Null {
						return s.Null()
					}
					return s.Array(func(int) error {
						raw, err := trace.DecodeRaw(s)
						if isGeminiCall(raw) {
							st.calls++
						}
						if len(st.parts) > 0 {
							st.parts = append(st.parts, ',')
						}
						st.parts = append(st.parts, raw...)
						return err
					})
				}
				return s.Skip()
			})
		}
		return s.Skip()
	})
}

// isGeminiCall reports whether a part (valid JSON) is a functionCall.
func isGeminiCall(part json.RawMessage) bool {
	s := jsonscan.New(part)
	call := false
	if s.Peek() != jsonscan.Object {
		return false
	}
	_ = s.Object(func(key string) error {
		call = call || geminiKey(key) == "functionCall"
		return s.Skip()
	})
	return call
}

func (st *geminiStream) decodeUsage(s *jsonscan.Scanner) error {
	if s.Peek() == jsonscan.Null {
		return s.Null()
	}
	if err := s.Expect(jsonscan.Object, "usageMetadata"); err != nil {
		return err
	}
	var candidates, thoughts int64
	var hasOutput bool
	err := s.Object(func(key string) error {
		var err error
		switch geminiKey(key) {
		case "promptTokenCount":
			st.resp.Usage.InputTokens, err = optInt(s, key)
		case "candidatesTokenCount":
			candidates, err = optInt(s, key)
			hasOutput = true
		case "thoughtsTokenCount":
			thoughts, err = optInt(s, key)
			hasOutput = true
		default:
			err = s.Skip()
		}
		return err
	})
	if hasOutput {
		st.resp.Usage.OutputTokens = candidates + thoughts
	}
	return err
}

func (st *geminiStream) Settled() bool { return true }

func (st *geminiStream) Response() Response {
	resp := st.resp
	resp.Events = nil
	if resp.FinishReason == "" && !st.seen {
		resp.FinishReason = st.blockCause
	}
	if !st.seen {
		return resp
	}
	role := st.role
	if role == "" {
		role = "model"
	}
	b := []byte(`{"role":`)
	b = trace.AppendString(b, role)
	b = append(b, `,"parts":[`...)
	b = append(b, st.parts...)
	b = append(b, "]}"...)
	evs, err := decodeGeminiContent(jsonscan.New(b), &geminiCalls{})
	if err != nil {
		// Each content was checked as it came; parts read alone read
		// together too.
		return resp
	}
	resp.Events = evs
	return resp
}
