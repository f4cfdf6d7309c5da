package gateway

import (
	"bytes"
	"encoding/json"
	"sort"
	"strings"

	"github.com/lookout-dev/lookout/internal/jsonscan"
	"github.com/lookout-dev/lookout/internal/trace"
)

// Anthropic speaks the Messages API (POST /v1/messages).
//
// Content blocks become canonical events this way, in requests and
// responses alike:
//
//	system (string or text blocks)     a "system" event
//	text                               a text part ({type: "text", text})
//	image (source base64 or url)       {type: "image", image_url: "data:<media_type>;base64,..." or the url}
//	tool_use {id, name, input}         a tool call {id, type: "function", function: {name, arguments: input}}
//	tool_result {tool_use_id, content} a tool event {role: "tool", tool_call_id, content} placed before
//	                                   the rest of its message, in block order; is_error kept beside
//	thinking, redacted_thinking        a part of that type keeping the block's members (thinking and
//	                                   signature, or data), so the conversation can be replayed
//	anything else (document, server    a part of the block's type keeping its members
//	tool blocks, search results, ...)
//
// One text part with nothing beside it is string content. cache_control is
// dropped everywhere: clients move it from turn to turn, and it says how to
// cache, not what was said. InputTokens counts cache reads and writes too
// (Anthropic reports them apart from input_tokens).
func Anthropic() Provider { return anthropic{} }

type anthropic struct{}

func (anthropic) Name() string { return "anthropic" }

func (anthropic) ParseRequest(body []byte) (Request, error) { return anthropicRequest.request(body) }

func (anthropic) shape() *requestShape { return anthropicRequest }

var anthropicRequest = &requestShape{provider: "anthropic", array: "messages", field: anthropicField, message: decodeAnthropicMessage}

func anthropicField(st *requestState, s *jsonscan.Scanner, key string) error {
	if ok, err := st.common(s, key); ok {
		return err
	}
	var err error
	switch key {
	case "system":
		st.lead, err = decodeAnthropicSystem(s)
		st.leadSets++
	default:
		err = s.Skip()
	}
	return err
}

func decodeAnthropicSystem(s *jsonscan.Scanner) ([]trace.Event, error) {
	switch s.Peek() {
	case jsonscan.Null:
		return nil, s.Null()
	case jsonscan.String:
		text, err := s.String("system")
		return []trace.Event{{Role: "system", Content: trace.TextContent(text)}}, err
	case jsonscan.Array:
		b, err := decodeAnthropicBlocks(s)
		if err != nil {
			return nil, err
		}
		parts := append(b.parts, b.callParts()...)
		return []trace.Event{{Role: "system", Content: partsContent(parts, false)}}, nil
	}
	return nil, s.Errorf("system must be a string or a list of text blocks, not %s", s.Peek())
}

// decodeAnthropicMessage reads {role, content} as its events.
func decodeAnthropicMessage(s *jsonscan.Scanner) ([]trace.Event, error) {
	if err := s.Expect(jsonscan.Object, "message"); err != nil {
		return nil, err
	}
	start := s.Offset()
	role := ""
	var b anthropicBlocks
	hasContent := false
	err := s.Object(func(key string) error {
		var err error
		switch key {
		case "role":
			role, err = s.String("role")
		case "content":
			hasContent = true
			switch s.Peek() {
			case jsonscan.String:
				var text string
				text, err = s.String("content")
				b.parts = []trace.Part{{Type: "text", Text: text}}
			case jsonscan.Array:
				b, err = decodeAnthropicBlocks(s)
			default:
				err = s.Errorf("content must be a string or a list of content blocks, not %s", s.Peek())
			}
		default:
			err = s.Skip()
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	if role == "" || !hasContent {
		return nil, s.ErrorAt(start, `a message needs a "role" and a "content"`)
	}
	return messageEvents(role, b.parts, b.calls, b.outputs), nil
}

// anthropicBlocks is a list of content blocks sorted by what they become.
type anthropicBlocks struct {
	parts   []trace.Part
	calls   []trace.ToolCall
	outputs []trace.Event
}

// callParts keeps tool calls and outputs as parts where they cannot be
// events of their own (inside a system prompt or a tool result).
func (b *anthropicBlocks) callParts() []trace.Part {
	var parts []trace.Part
	for _, c := range b.calls {
		p := trace.Part{Type: "tool_use", Extra: trace.Fields{
			{Key: "id", Value: trace.AppendString(nil, c.ID)},
			{Key: "name", Value: trace.AppendString(nil, c.Function.Name)},
			{Key: "input", Value: c.Function.Arguments},
		}}
		parts = append(parts, p)
	}
	for _, o := range b.outputs {
		p := trace.Part{Type: "tool_result", Extra: trace.Fields{
			{Key: "tool_use_id", Value: trace.AppendString(nil, o.ToolCallID)},
			{Key: "content", Value: trace.AppendString(nil, o.Content.String())},
		}}
		parts = append(parts, p)
	}
	return parts
}

func decodeAnthropicBlocks(s *jsonscan.Scanner) (anthropicBlocks, error) {
	var b anthropicBlocks
	err := s.Array(func(int) error {
		return decodeAnthropicBlock(s, &b)
	})
	return b, err
}

// decodeAnthropicBlock reads one content block into b.
func decodeAnthropicBlock(s *jsonscan.Scanner, b *anthropicBlocks) error {
	got, err := peekMembers(s, "content block", "type")
	if err != nil {
		return err
	}
	typ, ok := rawString(got[0])
	if !ok || typ == "" {
		return s.Errorf(`a content block needs a "type" string`)
	}
	switch typ {
	case "text":
		p := trace.Part{Type: "text"}
		hasText := false
		err := s.Object(func(key string) error {
			switch key {
			case "type", "cache_control":
				return s.Skip()
			case "text":
				hasText = true
				var err error
				p.Text, err = s.String("text")
				return err
			}
			return keepMember(s, &p.Extra, key)
		})
		if err == nil && !hasText {
			return s.Errorf(`a text block needs a "text" string`)
		}
		p.Extra = dropAbsent(p.Extra)
		b.parts = append(b.parts, p)
		return err
	case "image":
		p := trace.Part{Type: "image"}
		err := s.Object(func(key string) error {
			switch key {
			case "type", "cache_control":
				return s.Skip()
			case "source":
				if url, ok, err := anthropicImageURL(s); ok || err != nil {
					p.Extra = append(p.Extra, trace.Field{Key: "image_url", Value: trace.AppendString(nil, url)})
					return err
				}
			}
			return keepMember(s, &p.Extra, key)
		})
		p.Extra = dropAbsent(p.Extra)
		b.parts = append(b.parts, p)
		return err
	case "tool_use":
		c := trace.ToolCall{Type: "function"}
		hasInput := false
		err := s.Object(func(key string) error {
			var err error
			switch key {
			case "type", "cache_control":
				err = s.Skip()
			case "id":
				c.ID, err = s.String("id")
			case "name":
				c.Function.Name, err = s.String("name")
			case "input":
				hasInput = true
				c.Function.Arguments, err = anthropicInput(s)
			default:
				err = keepMember(s, &c.Extra, key)
			}
			return err
		})
		if !hasInput {
			c.Function.Arguments = json.RawMessage(`{}`)
		}
		c.Extra = dropAbsent(c.Extra)
		b.calls = append(b.calls, c)
		return err
	case "tool_result":
		e := trace.Event{Role: "tool", Content: trace.TextContent("")}
		err := s.Object(func(key string) error {
			var err error
			switch key {
			case "type", "cache_control":
				err = s.Skip()
			case "tool_use_id":
				e.ToolCallID, err = s.String("tool_use_id")
			case "content":
				switch s.Peek() {
				case jsonscan.String:
					var text string
					text, err = s.String("content")
					e.Content = trace.TextContent(text)
				case jsonscan.Array:
					var inner anthropicBlocks
					inner, err = decodeAnthropicBlocks(s)
					e.Content = partsContent(append(inner.parts, inner.callParts()...), false)
				case jsonscan.Null:
					err = s.Null()
				default:
					err = s.Errorf("tool_result content must be a string or a list of content blocks, not %s", s.Peek())
				}
			case "is_error":
				// false is the default: keep only true, so that a client
				// that writes it out and one that does not agree.
				var isErr bool
				if isErr, err = optBool(s, "is_error"); isErr {
					e.Extra = append(e.Extra, trace.Field{Key: "is_error", Value: json.RawMessage("true")})
				}
			default:
				err = keepMember(s, &e.Extra, key)
			}
			return err
		})
		e.Extra = dropAbsent(e.Extra)
		b.outputs = append(b.outputs, e)
		return err
	}
	// thinking, redacted_thinking and every other block: kept as a part.
	p := trace.Part{Type: typ}
	err = s.Object(func(key string) error {
		switch key {
		case "type", "cache_control":
			return s.Skip()
		}
		return keepMember(s, &p.Extra, key)
	})
	p.Extra = dropAbsent(p.Extra)
	b.parts = append(b.parts, p)
	return err
}

// anthropicInput reads a tool_use input: an object, or (from a stream whose
// partial JSON never became whole) the text received.
func anthropicInput(s *jsonscan.Scanner) (json.RawMessage, error) {
	switch s.Peek() {
	case jsonscan.Object:
		raw, err := s.Raw()
		return canonJSON(raw), err
	case jsonscan.String:
		text, err := s.String("input")
		return trace.AppendString(nil, text), err
	}
	return nil, s.Errorf("input must be an object, not %s", s.Peek())
}

// anthropicImageURL reads an image source as a URL: a data URL for base64
// data, the url for a url source; ok is false for other sources (files),
// which the caller keeps as they are. It consumes the value only when ok.
func anthropicImageURL(s *jsonscan.Scanner) (url string, ok bool, err error) {
	got, err := peekMembers(s, "source", "type", "media_type", "data", "url")
	if err != nil {
		return "", false, err
	}
	typ, _ := rawString(got[0])
	switch typ {
	case "base64":
		mt, ok1 := rawString(got[1])
		data, ok2 := rawString(got[2])
		if ok1 && ok2 {
			return dataURL(mt, data), true, s.Skip()
		}
	case "url":
		if u, ok := rawString(got[3]); ok {
			return u, true, s.Skip()
		}
	}
	return "", false, nil
}

func (anthropic) ParseResponse(body []byte) (Response, error) {
	var resp Response
	var upstream *UpstreamError
	role := "assistant"
	var b anthropicBlocks
	hasContent := false
	s := jsonscan.New(body)
	err := decodeBody(s, "response body", func(key string) error {
		var err error
		switch key {
		case "model":
			resp.Model, err = optString(s, "model")
		case "role":
			var r string
			if r, err = optString(s, "role"); r != "" {
				role = r
			}
		case "content":
			hasContent = true
			if err = s.Expect(jsonscan.Array, "content"); err == nil {
				b, err = decodeAnthropicBlocks(s)
			}
		case "stop_reason":
			resp.FinishReason, err = optString(s, "stop_reason")
		case "usage":
			err = decodeAnthropicUsage(s, &resp.Usage)
		case "error":
			if s.Peek() != jsonscan.Null {
				upstream = &UpstreamError{Provider: "anthropic", Message: errorMessage(s)}
				return nil
			}
			err = s.Skip()
		default:
			err = s.Skip()
		}
		return err
	})
	if err != nil {
		return Response{}, wrapError("anthropic", "response", err)
	}
	if upstream != nil {
		return Response{}, upstream
	}
	if hasContent {
		resp.Events = messageEvents(role, b.parts, b.calls, b.outputs)
	}
	return resp, nil
}

// decodeAnthropicUsage reads usage; members absent leave the count as it
// was (a stream's message_delta repeats only some of them).
func decodeAnthropicUsage(s *jsonscan.Scanner, u *Usage) error {
	if s.Peek() == jsonscan.Null {
		return s.Null()
	}
	if err := s.Expect(jsonscan.Object, "usage"); err != nil {
		return err
	}
	var input, cacheWrite, cacheRead int64
	var hasInput bool
	err := s.Object(func(key string) error {
		var err error
		switch key {
		case "input_tokens":
			input, err = optInt(s, key)
			hasInput = true
		case "cache_creation_input_tokens":
			cacheWrite, err = optInt(s, key)
			hasInput = true
		case "cache_read_input_tokens":
			cacheRead, err = optInt(s, key)
			hasInput = true
		case "output_tokens":
			u.OutputTokens, err = optInt(s, key)
		default:
			err = s.Skip()
		}
		return err
	})
	if hasInput {
		u.InputTokens = input + cacheWrite + cacheRead
	}
	return err
}

func (anthropic) ErrorResponse(msg string, details any) (int, []byte) {
	return 400, anthropicError(msg, details)
}

func (anthropic) StreamError(msg string, details any) []byte {
	// The anthropic SDKs throw an APIError on an "error" event.
	b := append([]byte("event: error\ndata: "), anthropicError(msg, details)...)
	return append(b, "\n\n"...)
}

func anthropicError(msg string, details any) []byte {
	b := []byte(`{"type":"error","error":{"type":"invalid_request_error","message":`)
	b = trace.AppendString(b, msg)
	b = append(b, lookoutMember(details)...)
	return append(b, "}}"...)
}

func (anthropic) NewStream() Stream { return &anthropicStream{} }

// anthropicStream assembles Messages stream events. Each content block is
// rebuilt from its content_block_start and deltas into the block a
// non-streamed response holds, and the blocks are read as ParseResponse
// reads them. Events of a tool_use block are held from its start to its
// content_block_stop.
type anthropicStream struct {
	resp   Response
	role   string
	blocks map[int64]*anthropicStreamBlock
}

type anthropicStreamBlock struct {
	start     trace.Fields // the members of content_block_start's block
	typ       string
	open      bool // a tool_use block before its stop
	text      strings.Builder
	thinking  strings.Builder
	signature strings.Builder
	partial   strings.Builder
	citations []json.RawMessage
	touched   map[string]bool // the members deltas changed
}

func (st *anthropicStream) Add(event string, data []byte) (hold, done bool, err error) {
	data = bytes.TrimSpace(data)
	if len(data) == 0 {
		return false, false, nil
	}
	s := jsonscan.New(data)
	got, err := peekMembers(s, "event data", "type", "index")
	if err != nil {
		return false, false, wrapError("anthropic", "stream", err)
	}
	typ, _ := rawString(got[0])
	if event == "error" || typ == "error" {
		st.resp.FinishReason = "error"
		st.closeBlocks()
		return false, true, nil
	}
	var index int64
	if got[1] != nil {
		sub := jsonscan.New(got[1])
		sub.SetRoot("$.index")
		if index, err = sub.Int64("index"); err != nil {
			return false, false, wrapError("anthropic", "stream", err)
		}
	}
	switch typ {
	case "message_start":
		err = decodeBody(s, "event data", func(key string) error {
			if key != "message" {
				return s.Skip()
			}
			if err := s.Expect(jsonscan.Object, "message"); err != nil {
				return err
			}
			return s.Object(func(key string) error {
				var err error
				switch key {
				case "model":
					st.resp.Model, err = optString(s, "model")
				case "role":
					st.role, err = optString(s, "role")
				case "usage":
					err = decodeAnthropicUsage(s, &st.resp.Usage)
				default:
					err = s.Skip()
				}
				return err
			})
		})
	case "content_block_start":
		blk := &anthropicStreamBlock{touched: map[string]bool{}}
		err = decodeBody(s, "event data", func(key string) error {
			if key != "content_block" {
				return s.Skip()
			}
			got, err := peekMembers(s, "content_block", "type")
			if err != nil {
				return err
			}
			blk.typ, _ = rawString(got[0])
			// A block that would not read in a response is refused now:
			// leaving it out later could hide a tool call from the check.
			start := s.Offset()
			if err := decodeAnthropicBlock(s, &anthropicBlocks{}); err != nil {
				return err
			}
			s.Seek(start)
			return s.Object(func(key string) error {
				return keepMember(s, &blk.start, key)
			})
		})
		if err == nil {
			if st.blocks == nil {
				st.blocks = map[int64]*anthropicStreamBlock{}
			}
			st.blocks[index] = blk
			blk.open = blk.typ == "tool_use"
			hold = blk.open
		}
	case "content_block_delta":
		blk := st.blocks[index]
		if blk == nil {
			return false, false, wrapError("anthropic", "stream", s.ErrorAt(0, "content_block_delta for block %d, which did not start", index))
		}
		err = decodeBody(s, "event data", func(key string) error {
			if key != "delta" {
				return s.Skip()
			}
			return blk.addDelta(s)
		})
		hold = blk.typ == "tool_use"
		if hold {
			blk.open = true
		}
	case "content_block_stop":
		if blk := st.blocks[index]; blk != nil {
			hold = blk.typ == "tool_use"
			blk.open = false
		}
		err = s.Skip()
	case "message_delta":
		err = decodeBody(s, "event data", func(key string) error {
			switch key {
			case "delta":
				if err := s.Expect(jsonscan.Object, "delta"); err != nil {
					return err
				}
				return s.Object(func(key string) error {
					if key == "stop_reason" {
						r, err := optString(s, key)
						if r != "" {
							st.resp.FinishReason = r
						}
						return err
					}
					return s.Skip()
				})
			case "usage":
				return decodeAnthropicUsage(s, &st.resp.Usage)
			}
			return s.Skip()
		})
	case "message_stop":
		st.closeBlocks()
		return false, true, s.Skip()
	default: // ping, and events added later
		err = s.Skip()
	}
	if err != nil {
		return false, false, wrapError("anthropic", "stream", err)
	}
	return hold, false, nil
}

// addDelta applies one content_block_delta's delta to the block.
func (blk *anthropicStreamBlock) addDelta(s *jsonscan.Scanner) error {
	got, err := peekMembers(s, "delta", "type")
	if err != nil {
		return err
	}
	typ, _ := rawString(got[0])
	return s.Object(func(key string) error {
		var dst *strings.Builder
		member := ""
		switch {
		case typ == "text_delta" && key == "text":
			dst, member = &blk.text, "text"
		case typ == "thinking_delta" && key == "thinking":
			dst, member = &blk.thinking, "thinking"
		case typ == "signature_delta" && key == "signature":
			dst, member = &blk.signature, "signature"
		case typ == "input_json_delta" && key == "partial_json":
			dst, member = &blk.partial, "input"
		case typ == "citations_delta" && key == "citation":
			raw, err := trace.DecodeRaw(s)
			blk.citations = append(blk.citations, raw)
			blk.touched["citations"] = true
			return err
		default:
			return s.Skip()
		}
		v, err := s.String(key)
		dst.WriteString(v)
		blk.touched[member] = true
		return err
	})
}

func (st *anthropicStream) closeBlocks() {
	for _, b := range st.blocks {
		b.open = false
	}
}

func (st *anthropicStream) Settled() bool {
	for _, b := range st.blocks {
		if b.open {
			return false
		}
	}
	return true
}

func (st *anthropicStream) Response() Response {
	resp := st.resp
	resp.Events = nil
	if st.blocks == nil && st.role == "" {
		return resp
	}
	role := st.role
	if role == "" {
		role = "assistant"
	}
	var b anthropicBlocks
	for _, raw := range st.content() {
		// Each block was checked when it started, and deltas only add
		// strings to it; one that still does not read is left out.
		var one anthropicBlocks
		if decodeAnthropicBlock(jsonscan.New(raw), &one) == nil {
			b.parts = append(b.parts, one.parts...)
			b.calls = append(b.calls, one.calls...)
			b.outputs = append(b.outputs, one.outputs...)
		}
	}
	resp.Events = messageEvents(role, b.parts, b.calls, b.outputs)
	return resp
}

// content writes the blocks, in index order, in the shape a non-streamed
// response's content holds them.
func (st *anthropicStream) content() [][]byte {
	indexes := make([]int64, 0, len(st.blocks))
	for i := range st.blocks {
		indexes = append(indexes, i)
	}
	sort.Slice(indexes, func(a, b int) bool { return indexes[a] < indexes[b] })
	blocks := make([][]byte, len(indexes))
	for n, i := range indexes {
		blocks[n] = st.blocks[i].appendBlock(nil)
	}
	return blocks
}

func (blk *anthropicStreamBlock) appendBlock(b []byte) []byte {
	value := func(member string) json.RawMessage {
		switch member {
		case "text":
			return trace.AppendString(nil, blk.text.String())
		case "thinking":
			return trace.AppendString(nil, blk.thinking.String())
		case "signature":
			return trace.AppendString(nil, blk.signature.String())
		case "input":
			text := blk.partial.String()
			if strings.TrimSpace(text) == "" {
				return nil // keep the start's input ({})
			}
			if jsonscan.Valid([]byte(text)) && firstByte(text) == '{' {
				return trace.Compact([]byte(text))
			}
			return trace.AppendString(nil, text) // never became whole
		case "citations":
			c := []byte{'['}
			for i, x := range blk.citations {
				if i > 0 {
					c = append(c, ',')
				}
				c = append(c, x...)
			}
			return append(c, ']')
		}
		return nil
	}
	b = append(b, '{')
	written := map[string]bool{}
	n := 0
	add := func(key string, v json.RawMessage) {
		if n > 0 {
			b = append(b, ',')
		}
		n++
		b = trace.AppendString(b, key)
		b = append(b, ':')
		b = append(b, v...)
		written[key] = true
	}
	for _, f := range blk.start {
		v := f.Value
		if blk.touched[f.Key] {
			if nv := value(f.Key); nv != nil {
				v = nv
			}
		}
		add(f.Key, v)
	}
	for _, m := range []string{"text", "thinking", "signature", "input", "citations"} {
		if blk.touched[m] && !written[m] {
			if v := value(m); v != nil {
				add(m, v)
			}
		}
	}
	return append(b, '}')
}

func firstByte(s string) byte {
	s = strings.TrimLeft(s, " \t\r\n")
	if s == "" {
		return 0
	}
	return s[0]
}
