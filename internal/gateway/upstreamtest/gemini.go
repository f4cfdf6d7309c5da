package upstreamtest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
)

// geminiAPI is the Gemini API's generateContent and streamGenerateContent:
// POST /{version}/models/{model}:{method}, the key in x-goog-api-key or
// ?key=, answers GenerateContentResponse objects; streamed, a server-sent
// event per response chunk with ?alt=sse (as the SDKs ask), else one JSON
// array written element by element.
type geminiAPI struct{}

var geminiPath = regexp.MustCompile(`^/(v1|v1beta|v1alpha)/models/([A-Za-z0-9._-]+):(generateContent|streamGenerateContent)$`)

func (geminiAPI) authenticate(r *http.Request, want string) *apiError {
	key := r.Header.Get("X-Goog-Api-Key")
	if key == "" {
		key = r.URL.Query().Get("key")
	}
	if key == "" {
		return &apiError{status: http.StatusForbidden, message: "Method doesn't allow unregistered callers (callers without established identity). Please use API Key or other form of API consumer identity to call this API."}
	}
	if !keyMatches(key, want) {
		return &apiError{status: http.StatusBadRequest, message: "API key not valid. Please pass a valid API key."}
	}
	return nil
}

type geminiFunctionCall struct {
	ID   string          `json:"id,omitempty"`
	Name string          `json:"name"`
	Args json.RawMessage `json:"args,omitempty"`
}

type geminiPart struct {
	Text                   *string             `json:"text,omitempty"`
	FunctionCall           *geminiFunctionCall `json:"functionCall,omitempty"`
	FunctionResponse       json.RawMessage     `json:"functionResponse,omitempty"`
	FunctionCallSnake      json.RawMessage     `json:"function_call,omitempty"`
	FunctionResponseSnakes json.RawMessage     `json:"function_response,omitempty"`
}

func (geminiAPI) parse(r *http.Request, body []byte) (parsed, *apiError) {
	m := geminiPath.FindStringSubmatch(r.URL.Path)
	if r.Method != http.MethodPost || m == nil {
		return parsed{}, &apiError{status: http.StatusNotFound, message: fmt.Sprintf("The requested URL %s was not found on this server.", r.URL.Path)}
	}
	p := parsed{model: m[2], stream: m[3] == "streamGenerateContent", sse: r.URL.Query().Get("alt") == "sse"}
	var req struct {
		Contents []struct {
			Role  string       `json:"role"`
			Parts []geminiPart `json:"parts"`
		} `json:"contents"`
	}
	if err := decodeObject(body, &req); err != nil {
		return parsed{}, &apiError{status: http.StatusBadRequest, message: "Invalid JSON payload received. " + err.Error()}
	}
	if len(req.Contents) == 0 {
		return parsed{}, &apiError{status: http.StatusBadRequest, message: "* GenerateContentRequest.contents: contents is not specified\n"}
	}
	calls := 0 // function calls of the previous model turn
	for i, c := range req.Contents {
		switch c.Role {
		case "", "user", "model", "function":
		default:
			return parsed{}, &apiError{status: http.StatusBadRequest, message: "Please use a valid role: user, model."}
		}
		if len(c.Parts) == 0 {
			return parsed{}, &apiError{status: http.StatusBadRequest, message: fmt.Sprintf("* GenerateContentRequest.contents[%d].parts: contents.parts must not be empty.\n", i)}
		}
		thisCalls, responses := 0, 0
		for _, part := range c.Parts {
			if part.FunctionCall != nil || part.FunctionCallSnake != nil {
				thisCalls++
			}
			if part.FunctionResponse != nil || part.FunctionResponseSnakes != nil {
				responses++
			}
		}
		if responses > 0 && responses != calls {
			return parsed{}, &apiError{status: http.StatusBadRequest, message: "Please ensure that the number of function response parts is equal to the number of function call parts of the function call turn."}
		}
		calls = thisCalls
		if c.Role == "model" {
			p.assistants++
		}
	}
	return p, nil
}

func (geminiAPI) errorBody(e *apiError) []byte {
	status := "INVALID_ARGUMENT"
	switch {
	case e.status == http.StatusUnauthorized:
		status = "UNAUTHENTICATED"
	case e.status == http.StatusForbidden:
		status = "PERMISSION_DENIED"
	case e.status == http.StatusNotFound:
		status = "NOT_FOUND"
	case e.status == http.StatusTooManyRequests:
		status = "RESOURCE_EXHAUSTED"
	case e.status == http.StatusServiceUnavailable:
		status = "UNAVAILABLE"
	case e.status >= 500:
		status = "INTERNAL"
	}
	type inner struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
		Status  string `json:"status"`
	}
	return mustJSON(map[string]inner{"error": {e.status, e.message, status}})
}

type geminiContent struct {
	Parts []geminiPart `json:"parts"`
	Role  string       `json:"role"`
}

type geminiCandidate struct {
	Content      geminiContent `json:"content"`
	FinishReason string        `json:"finishReason,omitempty"`
	Index        int           `json:"index"`
}

type geminiUsage struct {
	PromptTokenCount     int64 `json:"promptTokenCount"`
	CandidatesTokenCount int64 `json:"candidatesTokenCount,omitempty"`
	TotalTokenCount      int64 `json:"totalTokenCount"`
	PromptTokensDetails  []struct {
		Modality   string `json:"modality"`
		TokenCount int64  `json:"tokenCount"`
	} `json:"promptTokensDetails,omitempty"`
}

type geminiResponse struct {
	Candidates    []geminiCandidate `json:"candidates"`
	UsageMetadata geminiUsage       `json:"usageMetadata"`
	ModelVersion  string            `json:"modelVersion"`
	ResponseID    string            `json:"responseId"`
}

func geminiFullUsage(in, out int64) geminiUsage {
	u := geminiUsage{PromptTokenCount: in, CandidatesTokenCount: out, TotalTokenCount: in + out}
	u.PromptTokensDetails = append(u.PromptTokensDetails, struct {
		Modality   string `json:"modality"`
		TokenCount int64  `json:"tokenCount"`
	}{"TEXT", in})
	return u
}

// geminiCallPart is a function call part; the call's id only when the
// script gives one (the Gemini API sends none).
func geminiCallPart(c Call) geminiPart {
	return geminiPart{FunctionCall: &geminiFunctionCall{ID: c.ID, Name: c.Name, Args: json.RawMessage(c.Arguments)}}
}

func (geminiAPI) complete(p parsed, t Turn, turn int, in, out int64, id string) []byte {
	var parts []geminiPart
	if t.Text != "" || len(t.Calls) == 0 {
		parts = append(parts, geminiPart{Text: &t.Text})
	}
	for _, c := range t.Calls {
		parts = append(parts, geminiCallPart(c))
	}
	return mustJSON(geminiResponse{
		Candidates:    []geminiCandidate{{Content: geminiContent{Parts: parts, Role: "model"}, FinishReason: "STOP"}},
		UsageMetadata: geminiFullUsage(in, out), ModelVersion: p.model, ResponseID: id[:22],
	})
}

// events streams the answer as Gemini does: each chunk a whole
// GenerateContentResponse; the text in several chunks; function calls
// whole (the Gemini API does not stream arguments), the first in a chunk
// of its own and the others together in the next; the last chunk has the
// finish reason and the full usage, the earlier ones the prompt count only.
func (geminiAPI) events(p parsed, t Turn, turn int, in, out int64, id string) [][]byte {
	var chunks [][]geminiPart
	for _, piece := range SplitText(t.Text) {
		chunks = append(chunks, []geminiPart{{Text: &piece}})
	}
	if len(t.Calls) > 0 {
		chunks = append(chunks, []geminiPart{geminiCallPart(t.Calls[0])})
	}
	if len(t.Calls) > 1 {
		var rest []geminiPart
		for _, c := range t.Calls[1:] {
			rest = append(rest, geminiCallPart(c))
		}
		chunks = append(chunks, rest)
	}
	if len(chunks) == 0 {
		empty := ""
		chunks = append(chunks, []geminiPart{{Text: &empty}})
	}
	var evs [][]byte
	for i, parts := range chunks {
		r := geminiResponse{
			Candidates:    []geminiCandidate{{Content: geminiContent{Parts: parts, Role: "model"}}},
			UsageMetadata: geminiUsage{PromptTokenCount: in, TotalTokenCount: in},
			ModelVersion:  p.model, ResponseID: id[:22],
		}
		if i == len(chunks)-1 {
			r.Candidates[0].FinishReason = "STOP"
			r.UsageMetadata = geminiFullUsage(in, out)
		}
		data := mustJSON(r)
		var b []byte
		switch {
		case p.sse:
			b = append(append(append(b, "data: "...), data...), "\r\n\r\n"...)
		case i == 0:
			b = append(append(b, '['), data...)
		default:
			b = append(append(b, "\n,\r\n"...), data...)
		}
		evs = append(evs, b)
	}
	if !p.sse {
		evs = append(evs, []byte("\n]"))
	}
	return evs
}

func (geminiAPI) streamType(p parsed) string {
	if p.sse {
		return "text/event-stream"
	}
	return "application/json; charset=UTF-8"
}
