// Package chattest is a fake OpenAI-compatible chat completions endpoint
// for tests: a local HTTP server that records each request and answers as
// the test's function says (a model's content, an error status, a body
// that is not a chat completion, or no answer until the client leaves).
package chattest

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// Request is what a client sent.
type Request struct {
	Model          string
	Messages       []Message
	Temperature    *float64
	MaxTokens      int
	ResponseFormat string // response_format.type, "" when absent
	Authorization  string // the header
	At             time.Time
}

// Message is one message of a request.
type Message struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

// System is the request's system message ("" without one).
func (r *Request) System() string {
	for _, m := range r.Messages {
		if m.Role == "system" {
			return m.Content
		}
	}
	return ""
}

// User is the request's last user message.
func (r *Request) User() string {
	for i := len(r.Messages) - 1; i >= 0; i-- {
		if r.Messages[i].Role == "user" {
			return r.Messages[i].Content
		}
	}
	return ""
}

// Reply is how the fake answers one request.
type Reply struct {
	// Content is the model's answer (status 200), unless Status or Body
	// says otherwise.
	Content string
	// Status other than 0 or 200 answers with that status and Body (or a
	// JSON error object); RetryAfter sets the Retry-After header.
	Status     int
	RetryAfter string
	// Body, when set, is sent as it is instead of a chat completion.
	Body string
	// Hang holds the answer until the client gives up (or 30 seconds).
	Hang bool
}

// Server is a running fake endpoint; URL is its base URL (…/v1).
type Server struct {
	URL string

	srv    *httptest.Server
	answer func(*Request) Reply

	mu       sync.Mutex
	requests []Request
}

// New starts a fake that answers with answer (called concurrently), and
// stops it when the test ends.
func New(t testing.TB, answer func(*Request) Reply) *Server {
	s := &Server{answer: answer}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	s.URL = s.srv.URL + "/v1"
	t.Cleanup(s.srv.Close)
	return s
}

// Requests are the requests received so far, in order of arrival.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.requests...)
}

// Count is the number of requests received so far.
func (s *Server) Count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.requests)
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || r.URL.Path != "/v1/chat/completions" {
		http.Error(w, `{"error": {"message": "not found"}}`, http.StatusNotFound)
		return
	}
	var body struct {
		Model          string    `json:"model"`
		Messages       []Message `json:"messages"`
		Temperature    *float64  `json:"temperature"`
		MaxTokens      int       `json:"max_tokens"`
		ResponseFormat *struct {
			Type string `json:"type"`
		} `json:"response_format"`
	}
	if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
		http.Error(w, `{"error": {"message": "bad request body"}}`, http.StatusBadRequest)
		return
	}
	req := Request{Model: body.Model, Messages: body.Messages, Temperature: body.Temperature, MaxTokens: body.MaxTokens,
		Authorization: r.Header.Get("Authorization"), At: time.Now()}
	if body.ResponseFormat != nil {
		req.ResponseFormat = body.ResponseFormat.Type
	}
	s.mu.Lock()
	s.requests = append(s.requests, req)
	s.mu.Unlock()
	rep := s.answer(&req)
	if rep.Hang {
		select {
		case <-r.Context().Done():
		case <-time.After(30 * time.Second):
		}
		return
	}
	w.Header().Set("Content-Type", "application/json")
	if rep.RetryAfter != "" {
		w.Header().Set("Retry-After", rep.RetryAfter)
	}
	switch {
	case rep.Status != 0 && rep.Status != http.StatusOK:
		w.WriteHeader(rep.Status)
		if rep.Body == "" {
			rep.Body = `{"error": {"message": "` + strings.ToLower(http.StatusText(rep.Status)) + `"}}`
		}
		w.Write([]byte(rep.Body))
	case rep.Body != "":
		w.Write([]byte(rep.Body))
	default:
		out, _ := json.Marshal(map[string]any{
			"id": "chatcmpl-test", "object": "chat.completion", "model": body.Model,
			"choices": []any{map[string]any{"index": 0, "finish_reason": "stop",
				"message": map[string]any{"role": "assistant", "content": rep.Content}}},
		})
		w.Write(out)
	}
}
