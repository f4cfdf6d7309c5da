// Package chat calls an OpenAI-compatible chat completions endpoint
// (OpenAI, Ollama, vLLM, llama.cpp's server, LiteLLM, ...). The judge of llm
// criteria (internal/eval) and the model-backed policy detectors
// (internal/policy) share it.
//
// A call is bounded by its context: give it one with a deadline. A 429
// answer is retried, after the Retry-After the server asks for or an
// exponential backoff, for as long as the retry still fits before the
// deadline; then the call fails with ErrRateLimited.
package chat

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Endpoint is an OpenAI-compatible chat completions service.
type Endpoint struct {
	// URL is the base URL, such as https://api.openai.com/v1 or
	// http://127.0.0.1:11434/v1; requests go to URL + "/chat/completions".
	URL string
	// APIKey is sent as "Authorization: Bearer <key>"; empty sends none.
	APIKey string
	// Model is the model of requests that name none.
	Model string
	// Client sends the requests; nil uses a client whose two-minute
	// timeout backs up the caller's deadline.
	Client *http.Client

	// backoff is the first wait after a 429 without Retry-After (doubled
	// each time); zero means 500ms. Tests shorten it.
	backoff time.Duration
}

// Message is one message of a conversation.
type Message struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

// Request is one chat completion.
type Request struct {
	// Model overrides Endpoint.Model when set.
	Model       string
	Messages    []Message
	Temperature float64
	// MaxTokens caps the answer; zero sends no limit.
	MaxTokens int
	// JSON asks for a JSON object (response_format {"type": "json_object"}).
	JSON bool
}

// Errors a call can end with, besides *StatusError and context errors.
var (
	// ErrRateLimited: the endpoint kept answering 429 until a retry no
	// longer fitted before the deadline (or after maxAttempts).
	ErrRateLimited = errors.New("rate limited (HTTP 429)")
	// ErrMalformed: the answer is not a chat completion.
	ErrMalformed = errors.New("malformed answer")
)

// StatusError is an answer with a status other than 200 (other than a 429
// that was retried).
type StatusError struct {
	Status int
	Body   string // the start of the body, for the message
}

func (e *StatusError) Error() string { return fmt.Sprintf("status %d: %s", e.Status, e.Body) }

const (
	// maxAnswer bounds the body read from the endpoint.
	maxAnswer = 4 << 20
	// maxAttempts bounds the calls of one Complete when 429s keep coming
	// and the context has no deadline.
	maxAttempts = 8
	// maxBackoff caps the exponential backoff between 429s.
	maxBackoff = 10 * time.Second
)

var defaultClient = &http.Client{Timeout: 2 * time.Minute}

// String names the endpoint in error messages: its URL and model.
func (e *Endpoint) String() string { return e.URL + " (model " + e.Model + ")" }

// Complete sends a request and returns the content of the first choice.
// Errors: *StatusError for an answer other than 200; ErrRateLimited when
// 429s outlast the deadline; ErrMalformed for a body that is not a chat
// completion; the context's error (wrapped) when it ends first.
func (e *Endpoint) Complete(ctx context.Context, r Request) (string, error) {
	model := r.Model
	if model == "" {
		model = e.Model
	}
	body := map[string]any{"model": model, "messages": r.Messages, "temperature": r.Temperature}
	if r.MaxTokens > 0 {
		body["max_tokens"] = r.MaxTokens
	}
	if r.JSON {
		body["response_format"] = map[string]string{"type": "json_object"}
	}
	raw, err := json.Marshal(body)
	if err != nil {
		return "", err
	}
	backoff := e.backoff
	if backoff <= 0 {
		backoff = 500 * time.Millisecond
	}
	for attempt := 1; ; attempt++ {
		content, retryAfter, err := e.once(ctx, raw)
		var se *StatusError
		if err == nil || !errors.As(err, &se) || se.Status != http.StatusTooManyRequests {
			return content, err
		}
		wait := retryAfter
		if wait < 0 {
			wait = min(backoff<<(attempt-1), maxBackoff)
		}
		if attempt >= maxAttempts {
			return "", fmt.Errorf("%w: still refused after %d attempts: %s", ErrRateLimited, attempt, se.Body)
		}
		if dl, ok := ctx.Deadline(); ok && time.Now().Add(wait).After(dl) {
			return "", fmt.Errorf("%w: %d attempts; the next, after %s, would pass the deadline: %s", ErrRateLimited, attempt, wait.Round(time.Millisecond), se.Body)
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return "", fmt.Errorf("%w after %d attempts: %w", ErrRateLimited, attempt, deadlineErr(ctx))
		case <-t.C:
		}
	}
}

// once sends one request. retryAfter is the wait a 429 asked for, or -1.
func (e *Endpoint) once(ctx context.Context, body []byte) (content string, retryAfter time.Duration, err error) {
	retryAfter = -1
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, strings.TrimRight(e.URL, "/")+"/chat/completions", bytes.NewReader(body))
	if err != nil {
		return "", retryAfter, err
	}
	req.Header.Set("Content-Type", "application/json")
	if e.APIKey != "" {
		req.Header.Set("Authorization", "Bearer "+e.APIKey)
	}
	hc := e.Client
	if hc == nil {
		hc = defaultClient
	}
	resp, err := hc.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return "", retryAfter, deadlineErr(ctx)
		}
		return "", retryAfter, err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswer))
	if err != nil {
		if ctx.Err() != nil {
			return "", retryAfter, deadlineErr(ctx)
		}
		return "", retryAfter, err
	}
	if resp.StatusCode != http.StatusOK {
		if resp.StatusCode == http.StatusTooManyRequests {
			retryAfter = parseRetryAfter(resp.Header.Get("Retry-After"), time.Now())
		}
		return "", retryAfter, &StatusError{Status: resp.StatusCode, Body: clip(string(raw), 300)}
	}
	var out struct {
		Choices []struct {
			Message struct {
				Content *string `json:"content"`
			} `json:"message"`
		} `json:"choices"`
	}
	if err := json.Unmarshal(raw, &out); err != nil || len(out.Choices) == 0 || out.Choices[0].Message.Content == nil {
		return "", retryAfter, fmt.Errorf("%w: not a chat completion with content: %s", ErrMalformed, clip(string(raw), 300))
	}
	return *out.Choices[0].Message.Content, retryAfter, nil
}

// deadlineErr says why ctx ended, in words the caller's message can carry.
func deadlineErr(ctx context.Context) error {
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return fmt.Errorf("no answer before the deadline: %w", ctx.Err())
	}
	return fmt.Errorf("stopped: %w", ctx.Err())
}

// parseRetryAfter reads a Retry-After header: seconds or an HTTP date.
// It returns -1 when there is none or it cannot be read; waits are capped
// at two minutes (a longer one fails the call at its deadline anyway).
func parseRetryAfter(h string, now time.Time) time.Duration {
	h = strings.TrimSpace(h)
	if h == "" {
		return -1
	}
	var d time.Duration
	if s, err := strconv.ParseFloat(h, 64); err == nil && s >= 0 {
		d = time.Duration(s * float64(time.Second))
	} else if t, err := http.ParseTime(h); err == nil {
		d = max(t.Sub(now), 0)
	} else {
		return -1
	}
	return min(d, 2*time.Minute)
}

// clip shortens s to at most n bytes, at a character boundary.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}

func utf8RuneStart(b byte) bool { return b&0xC0 != 0x80 }
