package upstreamtest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
)

// SDKDir is the Node package of agent scripts that use the official SDKs
// (internal/server/testdata/sdk in the source tree).
func SDKDir() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "server", "testdata", "sdk")
}

// ErrNoNode reports that node is not installed.
var ErrNoNode = errors.New("node is not installed (the SDK tests run the official Node SDKs; install Node.js 20 or later)")

// SDK runs the agent scripts (openai.mjs, anthropic.mjs, gemini.mjs) with
// node.
type SDK struct {
	Dir  string
	Node string
}

// FindSDK finds node and checks that dir's packages are installed. The
// error is ErrNoNode, or says which command installs what is missing.
func FindSDK(dir string) (*SDK, error) {
	node, err := exec.LookPath("node")
	if err != nil {
		return nil, ErrNoNode
	}
	for _, pkg := range []string{"openai", "@anthropic-ai/sdk", "@google/genai"} {
		if _, err := os.Stat(filepath.Join(dir, "node_modules", pkg, "package.json")); err != nil {
			return nil, fmt.Errorf("the SDK package %s is not installed in %s: run `make sdk-deps` (npm ci there)", pkg, dir)
		}
	}
	return &SDK{Dir: dir, Node: node}, nil
}

// SDKEnv configures one run of an agent script.
type SDKEnv struct {
	BaseURL string // the SDK's base URL
	APIKey  string // the provider key as the SDK sends it
	Model   string // "" for the script's default
	Stream  bool
	Headers map[string]string // extra headers on every request
	Prompt  string            // "" for "What's the weather in Paris?"
	System  string            // "" for the scripts' default system prompt
	// MaxTurns bounds the model calls (0: 4).
	MaxTurns int
}

// SDKRun is a script's summary of its run.
type SDKRun struct {
	Provider    string          `json:"provider"`
	Stream      bool            `json:"stream"`
	Calls       []SDKCall       `json:"calls"`
	ToolOutputs []SDKToolOutput `json:"tool_outputs"`
	FinalText   *string         `json:"final_text"`
	Error       *SDKError       `json:"error"`
}

// SDKCall is one model call: the parameters the SDK was given (for OpenAI
// and Anthropic exactly the request body it sends) and what it returned.
type SDKCall struct {
	Request        json.RawMessage `json:"request"`
	Response       *SDKResponse    `json:"response"`
	Chunks         int             `json:"chunks"`
	TextDeltas     []string        `json:"text_deltas"`
	ToolCallChunks int             `json:"tool_call_chunks"`
}

// SDKResponse is the answer as the SDK assembled it.
type SDKResponse struct {
	ID           string        `json:"id"`
	Model        string        `json:"model"`
	Text         string        `json:"text"`
	ToolCalls    []SDKToolCall `json:"tool_calls"`
	FinishReason string        `json:"finish_reason"`
	Usage        struct {
		InputTokens  *int64 `json:"input_tokens"`
		OutputTokens *int64 `json:"output_tokens"`
	} `json:"usage"`
}

// SDKToolCall is a tool call as the SDK returned it; Arguments is the
// arguments' JSON text (OpenAI's string as sent; the others' object
// re-serialised by the script). ID is "" where the provider gives none.
type SDKToolCall struct {
	ID        string `json:"id"`
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

// SDKToolOutput is a tool's output the agent sent back.
type SDKToolOutput struct {
	ID     string `json:"id"`
	Name   string `json:"name"`
	Output string `json:"output"`
}

// SDKError is the error the SDK raised.
type SDKError struct {
	Name         string `json:"name"`
	Status       *int   `json:"status"`
	Message      string `json:"message"`
	DuringStream bool   `json:"during_stream"`
}

// Run runs p's script and decodes its summary. A script that fails to run
// or prints no summary is an error carrying its stderr.
func (s *SDK) Run(ctx context.Context, p Provider, env SDKEnv) (*SDKRun, error) {
	turns, stream := "", ""
	if env.MaxTurns > 0 {
		turns = strconv.Itoa(env.MaxTurns)
	}
	if env.Stream {
		stream = "1"
	}
	cmd := exec.CommandContext(ctx, s.Node, string(p)+".mjs")
	cmd.Dir = s.Dir
	cmd.Env = append(os.Environ(),
		"LOOKOUT_SDK_BASE_URL="+env.BaseURL,
		"LOOKOUT_SDK_API_KEY="+env.APIKey,
		"LOOKOUT_SDK_MODEL="+env.Model,
		"LOOKOUT_SDK_PROMPT="+env.Prompt,
		"LOOKOUT_SDK_SYSTEM="+env.System,
		"LOOKOUT_SDK_MAX_TURNS="+turns,
		"LOOKOUT_SDK_STREAM="+stream,
		"LOOKOUT_SDK_HEADERS=",
	)
	if len(env.Headers) > 0 {
		h, err := json.Marshal(env.Headers)
		if err != nil {
			return nil, err
		}
		cmd.Env = append(cmd.Env, "LOOKOUT_SDK_HEADERS="+string(h))
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("node %s.mjs: %w\nstderr:\n%s", p, err, stderr.Bytes())
	}
	var run SDKRun
	if err := json.Unmarshal(stdout.Bytes(), &run); err != nil {
		return nil, fmt.Errorf("node %s.mjs printed no summary: %w\nstdout:\n%s\nstderr:\n%s", p, err, stdout.Bytes(), stderr.Bytes())
	}
	return &run, nil
}

// Mismatches lists where run differs from what the script makes p's SDK
// return: each call's text, tool calls (names, arguments, ids), usage and
// finish reason; streamed, the text deltas (several, joining to the text)
// and the tool calls' pieces; the final text and the tool outputs sent
// back. Empty when the run is exactly the script.
func (s Script) Mismatches(p Provider, run *SDKRun) []string {
	var out []string
	bad := func(format string, args ...any) { out = append(out, fmt.Sprintf(format, args...)) }
	if run.Error != nil {
		bad("the SDK raised %s (status %v): %s", run.Error.Name, run.Error.Status, run.Error.Message)
	}
	if len(run.Calls) != len(s) {
		bad("%d model calls, want %d", len(run.Calls), len(s))
		return out
	}
	outputs := 0
	for i, turn := range s {
		c := run.Calls[i]
		r := c.Response
		if r == nil {
			bad("call %d: no response", i)
			continue
		}
		if r.Text != turn.Text {
			bad("call %d: text %q, want %q", i, r.Text, turn.Text)
		}
		if len(r.ToolCalls) != len(turn.Calls) {
			bad("call %d: %d tool calls, want %d: %+v", i, len(r.ToolCalls), len(turn.Calls), r.ToolCalls)
			continue
		}
		outputs += len(turn.Calls)
		for j, want := range turn.Calls {
			got := r.ToolCalls[j]
			if got.Name != want.Name || !SameJSON([]byte(got.Arguments), []byte(want.Arguments)) {
				bad("call %d: tool call %d is %s(%s), want %s(%s)", i, j, got.Name, got.Arguments, want.Name, want.Arguments)
			}
			if p == OpenAI && got.Arguments != want.Arguments {
				bad("call %d: OpenAI arguments %q, want the exact text %q", i, got.Arguments, want.Arguments)
			}
			switch {
			case want.ID != "" && got.ID != want.ID:
				bad("call %d: tool call id %q, want %q", i, got.ID, want.ID)
			case want.ID == "" && p == Gemini && got.ID != "":
				bad("call %d: Gemini gave id %q to a call without one", i, got.ID)
			case want.ID == "" && p != Gemini && got.ID == "":
				bad("call %d: tool call without an id", i)
			}
		}
		if u := r.Usage; u.InputTokens == nil || *u.InputTokens != turn.InputTokens || u.OutputTokens == nil || *u.OutputTokens != turn.OutputTokens {
			bad("call %d: usage %v/%v, want %d/%d", i, deref(u.InputTokens), deref(u.OutputTokens), turn.InputTokens, turn.OutputTokens)
		}
		if want := finishReason(p, turn); r.FinishReason != want {
			bad("call %d: finish reason %q, want %q", i, r.FinishReason, want)
		}
		if run.Stream {
			if got := strings.Join(c.TextDeltas, ""); got != turn.Text {
				bad("call %d: streamed text %q, want %q", i, got, turn.Text)
			}
			if len(SplitText(turn.Text)) > 1 && len(c.TextDeltas) < 2 {
				bad("call %d: the text came in %d delta(s), want several", i, len(c.TextDeltas))
			}
			if len(turn.Calls) > 0 && p != Gemini && c.ToolCallChunks <= len(turn.Calls) {
				bad("call %d: the tool calls came in %d chunks, want their arguments in pieces", i, c.ToolCallChunks)
			}
		}
	}
	if last := s[len(s)-1]; len(last.Calls) == 0 && (run.FinalText == nil || *run.FinalText != last.Text) {
		bad("final text %v, want %q", deref(run.FinalText), last.Text)
	}
	if len(run.ToolOutputs) != outputs {
		bad("%d tool outputs sent back, want %d", len(run.ToolOutputs), outputs)
	}
	return out
}

func deref[T any](p *T) any {
	if p == nil {
		return nil
	}
	return *p
}

// finishReason is the finish reason p's SDK reports for a turn.
func finishReason(p Provider, t Turn) string {
	switch p {
	case OpenAI:
		return openaiFinish(t)
	case Anthropic:
		return anthropicStop(t)
	}
	return "STOP" // Gemini's, with or without function calls
}

// SameJSON reports whether a and b are the same JSON value (member order
// and spacing aside); false when either is not JSON.
func SameJSON(a, b []byte) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	xb, _ := json.Marshal(x)
	yb, _ := json.Marshal(y)
	return bytes.Equal(xb, yb)
}
