package eval

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/lookout-dev/lookout/internal/chat"
	"github.com/lookout-dev/lookout/internal/trace"
)

// LLM is an OpenAI-compatible chat completions endpoint used as a judge.
type LLM struct {
	URL    string // base URL, such as https://api.openai.com/v1 (…/chat/completions is appended)
	APIKey string
	Model  string
	Client *http.Client // nil: a client with a 2 minute timeout (the run's context bounds each call)
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
	ep := chat.Endpoint{URL: l.URL, APIKey: l.APIKey, Model: l.Model, Client: l.Client}
	content, err := ep.Complete(ctx, chat.Request{
		Model: c.Model, // "" keeps the configured model
		Messages: []chat.Message{
			{Role: "system", Content: "You grade an AI agent's trace on one criterion. " + want},
			{Role: "user", Content: c.Prompt + "\n\n" + string(subject)},
		},
	})
	if err != nil {
		return Result{}, fmt.Errorf("llm: %w", err)
	}
	return ParseVerdict(c, content)
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
