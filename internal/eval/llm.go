package eval

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/lookout-dev/lookout/internal/trace"
)

// LLM is an OpenAI-compatible chat completions endpoint used as a judge.
type LLM struct {
	URL    string // base URL, such as https://api.openai.com/v1 (…/chat/completions is appended)
	APIKey string
	Model  string
	Client *http.Client // nil: a client with a 2 minute timeout
}

// maxContext caps the trace text sent to the judge.
const maxContext = 100_000

func (l *LLM) judge(ctx context.Context, c Criterion, t *trace.Trace, tg target) (Result, error) {
	var subject []byte
	switch {
	case tg.span != nil:
		subject = trace.AppendSpans(nil, []trace.Span{*tg.span})
	case tg.address != "":
		subject = trace.AppendEvents(nil, []trace.Event{{Role: "assistant", ToolCalls: []trace.ToolCall{t.Events[tg.event].ToolCalls[tg.call]}}})
	default:
		subject = trace.AppendEvents(nil, t.Events)
	}
	if len(subject) > maxContext {
		subject = append(subject[:maxContext:maxContext], "…"...)
	}
	var want string
	switch c.Type {
	case TypeBool:
		want = "Answer PASS or FAIL on the first line, then a short reason."
	case TypeNumber:
		want = "Answer with a number on the first line, then a short reason."
	default:
		want = "Answer with exactly one of: " + strings.Join(c.Choices, ", ") + " on the first line, then a short reason."
	}
	model := c.Model
	if model == "" {
		model = l.Model
	}
	body, _ := json.Marshal(map[string]any{
		"model":       model,
		"temperature": 0,
		"messages": []map[string]string{
			{"role": "system", "content": "You grade an AI agent's trace on one criterion. " + want},
			{"role": "user", "content": c.Prompt + "\n\n" + string(subject)},
		},
	})
	req, err := http.NewRequestWithContext(ctx, "POST", strings.TrimRight(l.URL, "/")+"/chat/completions", bytes.NewReader(body))
	if err != nil {
		return Result{}, fmt.Errorf("llm: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	if l.APIKey != "" {
		req.Header.Set("Authorization", "Bearer "+l.APIKey)
	}
	hc := l.Client
	if hc == nil {
		hc = &http.Client{Timeout: 2 * time.Minute}
	}
	resp, err := hc.Do(req)
	if err != nil {
		return Result{}, fmt.Errorf("llm: %w", err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 4<<20))
	if err != nil {
		return Result{}, fmt.Errorf("llm: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		return Result{}, fmt.Errorf("llm: status %d: %.300s", resp.StatusCode, raw)
	}
	var out struct {
		Choices []struct {
			Message struct {
				Content string `json:"content"`
			} `json:"message"`
		} `json:"choices"`
	}
	if err := json.Unmarshal(raw, &out); err != nil || len(out.Choices) == 0 {
		return Result{}, fmt.Errorf("llm: not a chat completion: %.300s", raw)
	}
	return ParseVerdict(c, out.Choices[0].Message.Content)
}

// ParseVerdict reads a judge's answer: the first line holds the verdict
// (PASS/FAIL, yes/no, true/false; a number; or a label), the rest is the
// comment.
func ParseVerdict(c Criterion, text string) (Result, error) {
	first, rest, _ := strings.Cut(strings.TrimSpace(text), "\n")
	word := strings.Trim(strings.TrimSpace(first), "*.:!` \"'")
	if f := strings.Fields(word); len(f) > 0 && c.Type != TypeLabel {
		word = strings.Trim(f[0], "*.:!,` \"'")
	}
	r := Result{Comment: strings.TrimSpace(rest)}
	switch c.Type {
	case TypeBool:
		switch strings.ToLower(word) {
		case "pass", "yes", "true", "passed", "correct":
			r.Value = json.RawMessage("true")
		case "fail", "no", "false", "failed", "incorrect":
			r.Value = json.RawMessage("false")
		default:
			return Result{}, fmt.Errorf("llm: verdict %q is not PASS or FAIL", first)
		}
	case TypeNumber:
		f, err := strconv.ParseFloat(word, 64)
		if err != nil {
			return Result{}, fmt.Errorf("llm: verdict %q is not a number", first)
		}
		r.Value = json.RawMessage(strconv.FormatFloat(f, 'g', -1, 64))
	default:
		lr, err := labelResult(c, word)
		if err != nil {
			return Result{}, fmt.Errorf("llm: verdict: %w", err)
		}
		r.Value = lr.Value
	}
	return r, nil
}
