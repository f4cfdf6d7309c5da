package upstreamtest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"
)

// openaiAPI is OpenAI's Chat Completions API: POST /v1/chat/completions,
// Authorization: Bearer <key>, answers chat.completion objects or
// chat.completion.chunk server-sent events ending in data: [DONE].
type openaiAPI struct{}

func (openaiAPI) authenticate(r *http.Request, want string) *apiError {
	auth := r.Header.Get("Authorization")
	key, ok := strings.CutPrefix(auth, "Bearer ")
	if !ok || key == "" {
		return &apiError{status: http.StatusUnauthorized, message: "You didn't provide an API key. You need to provide your API key in an Authorization header using Bearer auth (i.e. Authorization: Bearer YOUR_KEY), or as the password field (with blank username) if you're accessing the API from your browser and are prompted for a username and password. You can obtain an API key from https://platform.openai.com/account/api-keys."}
	}
	if !keyMatches(key, want) {
		return &apiError{status: http.StatusUnauthorized, code: "invalid_api_key",
			message: "Incorrect API key provided: " + redactKey(key) + ". You can find your API key at https://platform.openai.com/account/api-keys."}
	}
	return nil
}

// redactKey shows a key as OpenAI's errors do: its start and end only.
func redactKey(k string) string {
	if len(k) <= 8 {
		return strings.Repeat("*", len(k))
	}
	return k[:3] + strings.Repeat("*", 12) + k[len(k)-4:]
}

type openaiRequest struct {
	Model         *string         `json:"model"`
	Messages      []openaiMessage `json:"messages"`
	Stream        *bool           `json:"stream"`
	StreamOptions *struct {
		IncludeUsage bool `json:"include_usage"`
	} `json:"stream_options"`
}

type openaiMessage struct {
	Role       string          `json:"role"`
	Content    json.RawMessage `json:"content"`
	ToolCallID *string         `json:"tool_call_id"`
	ToolCalls  []struct {
		ID       string `json:"id"`
		Type     string `json:"type"`
		Function struct {
			Name      string          `json:"name"`
			Arguments json.RawMessage `json:"arguments"`
		} `json:"function"`
	} `json:"tool_calls"`
}

func (openaiAPI) parse(r *http.Request, body []byte) (parsed, *apiError) {
	if r.Method != http.MethodPost || r.URL.Path != "/v1/chat/completions" {
		return parsed{}, &apiError{status: http.StatusNotFound, message: fmt.Sprintf("Invalid URL (%s %s)", r.Method, r.URL.Path)}
	}
	var req openaiRequest
	if err := decodeObject(body, &req); err != nil {
		// JSON of the wrong shape: name the message at fault, as OpenAI does.
		var loose struct {
			Messages []json.RawMessage `json:"messages"`
		}
		if json.Unmarshal(body, &loose) == nil {
			for i, raw := range loose.Messages {
				var m openaiMessage
				if json.Unmarshal(raw, &m) != nil {
					return parsed{}, &apiError{status: http.StatusBadRequest, message: fmt.Sprintf("Invalid type for 'messages[%d]': expected an object, but got something else instead.", i), param: fmt.Sprintf("messages[%d]", i), code: "invalid_type"}
				}
			}
		}
		return parsed{}, &apiError{status: http.StatusBadRequest, message: "We could not parse the JSON body of your request. (HINT: This likely means you aren't using your HTTP library correctly. The OpenAI API expects a JSON payload, but what was sent was not valid JSON.)"}
	}
	if req.Model == nil || *req.Model == "" {
		return parsed{}, &apiError{status: http.StatusBadRequest, message: "you must provide a model parameter"}
	}
	if req.Messages == nil {
		return parsed{}, &apiError{status: http.StatusBadRequest, message: "Missing required parameter: 'messages'.", param: "messages", code: "missing_required_parameter"}
	}
	if len(req.Messages) == 0 {
		return parsed{}, &apiError{status: http.StatusBadRequest, message: "Invalid 'messages': empty array. Expected an array with minimum length 1, but got an empty array instead.", param: "messages", code: "empty_array"}
	}
	p := parsed{model: *req.Model, stream: req.Stream != nil && *req.Stream}
	if req.StreamOptions != nil {
		if !p.stream {
			return parsed{}, &apiError{status: http.StatusBadRequest, message: "The 'stream_options' parameter is only allowed when 'stream' is enabled.", param: "stream_options"}
		}
		p.includeUsage = req.StreamOptions.IncludeUsage
	}
	// Tool messages answer the calls of the assistant message before them;
	// every call must be answered before the conversation goes on.
	var pending []string
	pendingAt := 0
	for i, m := range req.Messages {
		switch m.Role {
		case "system", "developer", "user", "assistant", "tool", "function":
		default:
			return parsed{}, &apiError{status: http.StatusBadRequest, message: fmt.Sprintf("Invalid value: '%s'. Supported values are: 'system', 'assistant', 'user', 'function', 'tool', and 'developer'.", m.Role), param: fmt.Sprintf("messages[%d].role", i), code: "invalid_value"}
		}
		if m.Role == "tool" {
			j := -1
			if m.ToolCallID != nil {
				for k, id := range pending {
					if id == *m.ToolCallID {
						j = k
					}
				}
			}
			if j < 0 {
				return parsed{}, &apiError{status: http.StatusBadRequest, message: "Invalid parameter: messages with role 'tool' must be a response to a preceeding message with 'tool_calls'.", param: fmt.Sprintf("messages.[%d].role", i)}
			}
			pending = append(pending[:j], pending[j+1:]...)
			continue
		}
		if len(pending) > 0 {
			return parsed{}, &apiError{status: http.StatusBadRequest, message: "An assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'. The following tool_call_ids did not have response messages: " + strings.Join(pending, ", "), param: fmt.Sprintf("messages.[%d].role", pendingAt)}
		}
		if m.Role == "assistant" {
			p.assistants++
			for k, c := range m.ToolCalls {
				var args string
				if json.Unmarshal(c.Function.Arguments, &args) != nil {
					return parsed{}, &apiError{status: http.StatusBadRequest, message: fmt.Sprintf("Invalid type for 'messages[%d].tool_calls[%d].function.arguments': expected a string, but got something else instead.", i, k), param: fmt.Sprintf("messages[%d].tool_calls[%d].function.arguments", i, k), code: "invalid_type"}
				}
				pending = append(pending, c.ID)
			}
			pendingAt = i
		}
	}
	if len(pending) > 0 {
		return parsed{}, &apiError{status: http.StatusBadRequest, message: "An assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'. The following tool_call_ids did not have response messages: " + strings.Join(pending, ", "), param: fmt.Sprintf("messages.[%d].role", pendingAt)}
	}
	return p, nil
}

func (openaiAPI) errorBody(e *apiError) []byte {
	type body struct {
		Message string  `json:"message"`
		Type    string  `json:"type"`
		Param   *string `json:"param"`
		Code    *string `json:"code"`
	}
	b := body{Message: e.message, Type: "invalid_request_error"}
	switch {
	case e.status == http.StatusTooManyRequests:
		b.Type = "requests"
	case e.status >= 500:
		b.Type = "server_error"
	}
	if e.param != "" {
		b.Param = &e.param
	}
	if e.code != "" {
		b.Code = &e.code
	}
	return mustJSON(map[string]body{"error": b})
}

type openaiUsage struct {
	PromptTokens        int64 `json:"prompt_tokens"`
	CompletionTokens    int64 `json:"completion_tokens"`
	TotalTokens         int64 `json:"total_tokens"`
	PromptTokensDetails struct {
		CachedTokens int64 `json:"cached_tokens"`
		AudioTokens  int64 `json:"audio_tokens"`
	} `json:"prompt_tokens_details"`
	CompletionTokensDetails struct {
		ReasoningTokens          int64 `json:"reasoning_tokens"`
		AudioTokens              int64 `json:"audio_tokens"`
		AcceptedPredictionTokens int64 `json:"accepted_prediction_tokens"`
		RejectedPredictionTokens int64 `json:"rejected_prediction_tokens"`
	} `json:"completion_tokens_details"`
}

func newOpenAIUsage(in, out int64) openaiUsage {
	return openaiUsage{PromptTokens: in, CompletionTokens: out, TotalTokens: in + out}
}

type openaiToolCall struct {
	ID       string `json:"id"`
	Type     string `json:"type"`
	Function struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	} `json:"function"`
}

// openaiFingerprint is the system_fingerprint every answer reports.
const openaiFingerprint = "fp_07871e2ad8"

func openaiFinish(t Turn) string {
	if len(t.Calls) > 0 {
		return "tool_calls"
	}
	return "stop"
}

func (openaiAPI) complete(p parsed, t Turn, turn int, in, out int64, id string) []byte {
	type message struct {
		Role        string           `json:"role"`
		Content     *string          `json:"content"`
		Refusal     *string          `json:"refusal"`
		ToolCalls   []openaiToolCall `json:"tool_calls,omitempty"`
		Annotations []any            `json:"annotations"`
	}
	type choice struct {
		Index        int     `json:"index"`
		Message      message `json:"message"`
		Logprobs     *any    `json:"logprobs"`
		FinishReason string  `json:"finish_reason"`
	}
	type completion struct {
		ID                string      `json:"id"`
		Object            string      `json:"object"`
		Created           int64       `json:"created"`
		Model             string      `json:"model"`
		Choices           []choice    `json:"choices"`
		Usage             openaiUsage `json:"usage"`
		ServiceTier       string      `json:"service_tier"`
		SystemFingerprint string      `json:"system_fingerprint"`
	}
	m := message{Role: "assistant", Annotations: []any{}}
	if t.Text != "" || len(t.Calls) == 0 {
		m.Content = &t.Text
	}
	for i, c := range t.Calls {
		tc := openaiToolCall{ID: callID("call_", 24, turn, i, c), Type: "function"}
		tc.Function.Name, tc.Function.Arguments = c.Name, c.Arguments
		m.ToolCalls = append(m.ToolCalls, tc)
	}
	return mustJSON(completion{
		ID: "chatcmpl-" + id, Object: "chat.completion", Created: time.Now().Unix(), Model: p.model,
		Choices: []choice{{Message: m, FinishReason: openaiFinish(t)}},
		Usage:   newOpenAIUsage(in, out), ServiceTier: "default", SystemFingerprint: openaiFingerprint,
	})
}

type openaiFunctionDelta struct {
	Name      string `json:"name,omitempty"`
	Arguments string `json:"arguments"`
}

type openaiToolCallDelta struct {
	Index    int                 `json:"index"`
	ID       string              `json:"id,omitempty"`
	Type     string              `json:"type,omitempty"`
	Function openaiFunctionDelta `json:"function"`
}

type openaiDelta struct {
	Role      string                `json:"role,omitempty"`
	Content   *string               `json:"content,omitempty"`
	Refusal   json.RawMessage       `json:"refusal,omitempty"`
	ToolCalls []openaiToolCallDelta `json:"tool_calls,omitempty"`
}

// events streams the answer as OpenAI does: a first chunk with the role,
// the text in several deltas, then the tool calls: each call's first
// delta has its id and name with empty arguments, the arguments follow in
// pieces cut at awkward places, the calls interleaved (a later call starts
// before an earlier one is complete, and the last pieces of all the calls
// share one chunk); then a chunk with the finish reason, then (with
// stream_options.include_usage) a chunk with no choices and the usage,
// then [DONE].
func (openaiAPI) events(p parsed, t Turn, turn int, in, out int64, id string) [][]byte {
	type choice struct {
		Index        int         `json:"index"`
		Delta        openaiDelta `json:"delta"`
		Logprobs     *any        `json:"logprobs"`
		FinishReason *string     `json:"finish_reason"`
	}
	type chunk struct {
		ID                string          `json:"id"`
		Object            string          `json:"object"`
		Created           int64           `json:"created"`
		Model             string          `json:"model"`
		ServiceTier       string          `json:"service_tier"`
		SystemFingerprint string          `json:"system_fingerprint"`
		Choices           []choice        `json:"choices"`
		Usage             json.RawMessage `json:"usage,omitempty"`
	}
	created := time.Now().Unix()
	var evs [][]byte
	emit := func(choices []choice, usage json.RawMessage) {
		if usage == nil && p.includeUsage {
			usage = json.RawMessage("null")
		}
		c := chunk{ID: "chatcmpl-" + id, Object: "chat.completion.chunk", Created: created, Model: p.model,
			ServiceTier: "default", SystemFingerprint: openaiFingerprint, Choices: choices, Usage: usage}
		evs = append(evs, sseData(mustJSON(c)))
	}
	delta := func(d openaiDelta) { emit([]choice{{Delta: d}}, nil) }

	empty := ""
	delta(openaiDelta{Role: "assistant", Content: &empty, Refusal: json.RawMessage("null")})
	for _, piece := range SplitText(t.Text) {
		delta(openaiDelta{Content: &piece})
	}
	// Round-robin over the calls: step 0 of a call is its start (id, name,
	// no arguments), step k its k-th piece of arguments.
	pieces := make([][]string, len(t.Calls))
	longest := 0
	for i, c := range t.Calls {
		pieces[i] = SplitArguments(c.Arguments)
		longest = max(longest, len(pieces[i])+1)
	}
	var tail []openaiToolCallDelta // every call's last piece, sent together
	for step := 0; step < longest; step++ {
		for i, c := range t.Calls {
			switch {
			case step == 0:
				d := openaiToolCallDelta{Index: i, ID: callID("call_", 24, turn, i, c), Type: "function", Function: openaiFunctionDelta{Name: c.Name}}
				delta(openaiDelta{ToolCalls: []openaiToolCallDelta{d}})
			case step <= len(pieces[i]):
				d := openaiToolCallDelta{Index: i, Function: openaiFunctionDelta{Arguments: pieces[i][step-1]}}
				if step == len(pieces[i]) && len(t.Calls) > 1 {
					tail = append(tail, d)
					continue
				}
				delta(openaiDelta{ToolCalls: []openaiToolCallDelta{d}})
			}
		}
	}
	if len(tail) > 0 {
		delta(openaiDelta{ToolCalls: tail})
	}
	finish := openaiFinish(t)
	emit([]choice{{Delta: openaiDelta{}, FinishReason: &finish}}, nil)
	if p.includeUsage {
		emit([]choice{}, mustJSON(newOpenAIUsage(in, out)))
	}
	return append(evs, []byte("data: [DONE]\n\n"))
}

func (openaiAPI) streamType(parsed) string { return "text/event-stream; charset=utf-8" }

// sseData frames one data-only server-sent event.
func sseData(data []byte) []byte {
	b := make([]byte, 0, len(data)+8)
	b = append(b, "data: "...)
	b = append(b, data...)
	return append(b, "\n\n"...)
}
