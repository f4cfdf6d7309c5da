package upstreamtest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
)

// anthropicAPI is Anthropic's Messages API: POST /v1/messages with
// the key and an anthropic-version header, answers message objects or the
// message_start ... message_stop server-sent events.
type anthropicAPI struct{}

// authenticate reads the key from x-api-key (API versions up to
// 2023-06-01, SDKs before 1.0) or from Authorization: Bearer (version
// 2026-10-21, @anthropic-ai/sdk 1.x); the API takes either.
func (anthropicAPI) authenticate(r *http.Request, want string) *apiError {
	key := r.Header.Get("X-Api-Key")
	if key == "" {
		key, _ = strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	}
	if key == "" {
		return &apiError{status: http.StatusUnauthorized, message: "x-api-key header is required"}
	}
	if !keyMatches(key, want) {
		return &apiError{status: http.StatusUnauthorized, message: "invalid x-api-key"}
	}
	return nil
}

type anthropicBlock struct {
	Type      string          `json:"type"`
	ID        string          `json:"id"`
	ToolUseID string          `json:"tool_use_id"`
	Input     json.RawMessage `json:"input"`
}

func (anthropicAPI) parse(r *http.Request, body []byte) (parsed, *apiError) {
	if r.Method != http.MethodPost || r.URL.Path != "/v1/messages" {
		return parsed{}, &apiError{status: http.StatusNotFound, code: "not_found_error", message: "Not Found"}
	}
	if r.Header.Get("Anthropic-Version") == "" {
		return parsed{}, &apiError{status: http.StatusBadRequest, message: "anthropic-version: header is required"}
	}
	var req struct {
		Model     *string `json:"model"`
		MaxTokens *int64  `json:"max_tokens"`
		Stream    *bool   `json:"stream"`
		Messages  []struct {
			Role    string          `json:"role"`
			Content json.RawMessage `json:"content"`
		} `json:"messages"`
	}
	if err := decodeObject(body, &req); err != nil {
		return parsed{}, &apiError{status: http.StatusBadRequest, message: "There was an error parsing the body of your request: " + err.Error()}
	}
	switch {
	case req.Model == nil:
		return parsed{}, &apiError{status: http.StatusBadRequest, message: "model: Field required"}
	case req.MaxTokens == nil:
		return parsed{}, &apiError{status: http.StatusBadRequest, message: "max_tokens: Field required"}
	case req.Messages == nil:
		return parsed{}, &apiError{status: http.StatusBadRequest, message: "messages: Field required"}
	}
	p := parsed{model: *req.Model, stream: req.Stream != nil && *req.Stream}
	// Every tool_use block must be answered by a tool_result block in the
	// next message, and a tool_result must answer the message before it.
	var uses []string // tool_use ids of the previous message
	for i, m := range req.Messages {
		if m.Role != "user" && m.Role != "assistant" {
			return parsed{}, &apiError{status: http.StatusBadRequest, message: fmt.Sprintf("messages.%d.role: Input should be 'user' or 'assistant'", i)}
		}
		var blocks []anthropicBlock
		var text string
		if json.Unmarshal(m.Content, &text) != nil {
			if err := json.Unmarshal(m.Content, &blocks); err != nil {
				return parsed{}, &apiError{status: http.StatusBadRequest, message: fmt.Sprintf("messages.%d.content: Input should be a valid list", i)}
			}
		}
		answered := map[string]bool{}
		var unexpected []string
		var nextUses []string
		for j, b := range blocks {
			switch b.Type {
			case "tool_result":
				if !slices.Contains(uses, b.ToolUseID) {
					unexpected = append(unexpected, b.ToolUseID)
				}
				answered[b.ToolUseID] = true
			case "tool_use":
				if m.Role != "assistant" {
					return parsed{}, &apiError{status: http.StatusBadRequest, message: fmt.Sprintf("messages.%d.content.%d: tool_use blocks may only be in assistant messages", i, j)}
				}
				var input map[string]any
				if json.Unmarshal(b.Input, &input) != nil || input == nil {
					return parsed{}, &apiError{status: http.StatusBadRequest, message: fmt.Sprintf("messages.%d.content.%d.tool_use.input: Input should be a valid dictionary", i, j)}
				}
				nextUses = append(nextUses, b.ID)
			}
		}
		if len(unexpected) > 0 {
			return parsed{}, &apiError{status: http.StatusBadRequest, message: fmt.Sprintf("messages.%d.content.0: unexpected `tool_use_id` found in `tool_result` blocks: %s. Each `tool_result` block must have a corresponding `tool_use` block in the previous message.", i, strings.Join(unexpected, ", "))}
		}
		var missing []string
		for _, id := range uses {
			if !answered[id] {
				missing = append(missing, id)
			}
		}
		if len(missing) > 0 {
			return parsed{}, &apiError{status: http.StatusBadRequest, message: fmt.Sprintf("messages.%d: `tool_use` ids were found without `tool_result` blocks immediately after: %s. Each `tool_use` block must have a corresponding `tool_result` block in the next message.", i-1, strings.Join(missing, ", "))}
		}
		uses = nextUses
		if m.Role == "assistant" {
			p.assistants++
		}
	}
	if len(uses) > 0 {
		return parsed{}, &apiError{status: http.StatusBadRequest, message: fmt.Sprintf("messages.%d: `tool_use` ids were found without `tool_result` blocks immediately after: %s. Each `tool_use` block must have a corresponding `tool_result` block in the next message.", len(req.Messages)-1, strings.Join(uses, ", "))}
	}
	return p, nil
}

func (anthropicAPI) errorBody(e *apiError) []byte {
	typ := e.code
	if typ == "" {
		switch e.status {
		case http.StatusUnauthorized:
			typ = "authentication_error"
		case http.StatusForbidden:
			typ = "permission_error"
		case http.StatusNotFound:
			typ = "not_found_error"
		case http.StatusRequestEntityTooLarge:
			typ = "request_too_large"
		case http.StatusTooManyRequests:
			typ = "rate_limit_error"
		case 529:
			typ = "overloaded_error"
		default:
			typ = "invalid_request_error"
			if e.status >= 500 {
				typ = "api_error"
			}
		}
	}
	type inner struct {
		Type    string `json:"type"`
		Message string `json:"message"`
	}
	return mustJSON(struct {
		Type      string `json:"type"`
		Error     inner  `json:"error"`
		RequestID string `json:"request_id"`
	}{"error", inner{typ, e.message}, "req_011" + token(e.message, 21)})
}

type anthropicUsage struct {
	InputTokens              int64  `json:"input_tokens"`
	CacheCreationInputTokens int64  `json:"cache_creation_input_tokens"`
	CacheReadInputTokens     int64  `json:"cache_read_input_tokens"`
	OutputTokens             int64  `json:"output_tokens"`
	ServiceTier              string `json:"service_tier,omitempty"`
}

// anthropicContent is a response content block: text or tool_use.
type anthropicContent struct {
	Type  string          `json:"type"`
	Text  *string         `json:"text,omitempty"`
	ID    string          `json:"id,omitempty"`
	Name  string          `json:"name,omitempty"`
	Input json.RawMessage `json:"input,omitempty"`
}

type anthropicMessage struct {
	ID           string             `json:"id"`
	Type         string             `json:"type"`
	Role         string             `json:"role"`
	Model        string             `json:"model"`
	Content      []anthropicContent `json:"content"`
	StopReason   *string            `json:"stop_reason"`
	StopSequence *string            `json:"stop_sequence"`
	Usage        anthropicUsage     `json:"usage"`
}

func anthropicStop(t Turn) string {
	if len(t.Calls) > 0 {
		return "tool_use"
	}
	return "end_turn"
}

func (anthropicAPI) complete(p parsed, t Turn, turn int, in, out int64, id string) []byte {
	m := anthropicMessage{ID: "msg_01" + id[:22], Type: "message", Role: "assistant", Model: p.model,
		Content: []anthropicContent{},
		Usage:   anthropicUsage{InputTokens: in, OutputTokens: out, ServiceTier: "standard"}}
	if t.Text != "" || len(t.Calls) == 0 {
		m.Content = append(m.Content, anthropicContent{Type: "text", Text: &t.Text})
	}
	for i, c := range t.Calls {
		m.Content = append(m.Content, anthropicContent{Type: "tool_use", ID: callID("toolu_01", 22, turn, i, c), Name: c.Name, Input: json.RawMessage(c.Arguments)})
	}
	stop := anthropicStop(t)
	m.StopReason = &stop
	return mustJSON(m)
}

// events streams the answer as Anthropic does: message_start (with the
// input tokens), a ping, then one content block after another (text in
// several text_delta events; each tool_use with empty input at its start,
// then its input as partial_json pieces cut at awkward places, the first
// one empty), message_delta with the stop reason and the final usage,
// message_stop.
func (anthropicAPI) events(p parsed, t Turn, turn int, in, out int64, id string) [][]byte {
	type delta struct {
		Type        string  `json:"type"`
		Text        *string `json:"text,omitempty"`
		PartialJSON *string `json:"partial_json,omitempty"`
	}
	type stop struct {
		StopReason   string  `json:"stop_reason"`
		StopSequence *string `json:"stop_sequence"`
	}
	type event struct {
		Type         string            `json:"type"`
		Message      *anthropicMessage `json:"message,omitempty"`
		Index        *int              `json:"index,omitempty"`
		ContentBlock *anthropicContent `json:"content_block,omitempty"`
		Delta        any               `json:"delta,omitempty"`
		Usage        *anthropicUsage   `json:"usage,omitempty"`
	}
	var evs [][]byte
	emit := func(e event) {
		data := mustJSON(e)
		b := make([]byte, 0, len(e.Type)+len(data)+16)
		b = append(b, "event: "...)
		b = append(b, e.Type...)
		b = append(b, "\ndata: "...)
		b = append(b, data...)
		evs = append(evs, append(b, "\n\n"...))
	}
	start := anthropicMessage{ID: "msg_01" + id[:22], Type: "message", Role: "assistant", Model: p.model,
		Content: []anthropicContent{}, Usage: anthropicUsage{InputTokens: in, OutputTokens: 1, ServiceTier: "standard"}}
	emit(event{Type: "message_start", Message: &start})
	emit(event{Type: "ping"})
	index := 0
	block := func(b anthropicContent, deltas []delta) {
		i := index
		emit(event{Type: "content_block_start", Index: &i, ContentBlock: &b})
		for _, d := range deltas {
			emit(event{Type: "content_block_delta", Index: &i, Delta: d})
		}
		emit(event{Type: "content_block_stop", Index: &i})
		index++
	}
	if t.Text != "" || len(t.Calls) == 0 {
		var deltas []delta
		for _, piece := range SplitText(t.Text) {
			deltas = append(deltas, delta{Type: "text_delta", Text: &piece})
		}
		empty := ""
		block(anthropicContent{Type: "text", Text: &empty}, deltas)
	}
	for i, c := range t.Calls {
		var deltas []delta
		for _, piece := range append([]string{""}, SplitArguments(c.Arguments)...) {
			deltas = append(deltas, delta{Type: "input_json_delta", PartialJSON: &piece})
		}
		block(anthropicContent{Type: "tool_use", ID: callID("toolu_01", 22, turn, i, c), Name: c.Name, Input: json.RawMessage("{}")}, deltas)
	}
	emit(event{Type: "message_delta", Delta: stop{StopReason: anthropicStop(t)}, Usage: &anthropicUsage{InputTokens: in, OutputTokens: out}})
	emit(event{Type: "message_stop"})
	return evs
}

func (anthropicAPI) streamType(parsed) string { return "text/event-stream; charset=utf-8" }
