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
