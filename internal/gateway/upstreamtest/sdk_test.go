package upstreamtest_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/lookout-dev/lookout/internal/gateway/upstreamtest"
)

// requireSDK finds node and the installed SDKs. Without node the test
// skips locally and fails under CI; missing packages always fail.
func requireSDK(t *testing.T) *upstreamtest.SDK {
	t.Helper()
	sdk, err := upstreamtest.FindSDK(upstreamtest.SDKDir())
	if errors.Is(err, upstreamtest.ErrNoNode) && os.Getenv("CI") != "true" {
		t.Skip(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	return sdk
}

// agentScript is three turns that catch careless stream handling: two
// interleaved calls whose arguments hold \u escapes and escaped quotes,
// then a call with a script-given id, then text with multi-byte runes.
func agentScript(p upstreamtest.Provider) upstreamtest.Script {
	ids := map[upstreamtest.Provider]string{upstreamtest.OpenAI: "call_paris_1", upstreamtest.Anthropic: "toolu_01Paris", upstreamtest.Gemini: "fc-paris-1"}
	return upstreamtest.Script{
		{Text: "Let me check both.", InputTokens: 120, OutputTokens: 31, Calls: []upstreamtest.Call{
			{Name: "get_weather", Arguments: `{"city":"S\u00e3o Paulo \"SP\""}`},
			{Name: "get_time", Arguments: `{"timezone":"America/Sao_Paulo"}`},
		}},
		{InputTokens: 210, OutputTokens: 12, Calls: []upstreamtest.Call{{ID: ids[p], Name: "get_weather", Arguments: `{"city":"Paris"}`}}},
		{Text: "São Paulo: 18 °C, cloudy, 14:05 ☁️. Paris: 18 °C 🌦 — take a jacket.", InputTokens: 260, OutputTokens: 40},
	}
}

// sameJSON reports whether two JSON texts are the same value.
func sameJSON(t *testing.T, a, b []byte) bool {
	t.Helper()
	var x, y any
	if err := json.Unmarshal(a, &x); err != nil {
		t.Fatalf("not JSON: %v: %s", err, a)
	}
	if err := json.Unmarshal(b, &y); err != nil {
		t.Fatalf("not JSON: %v: %s", err, b)
	}
	xb, _ := json.Marshal(x)
	yb, _ := json.Marshal(y)
	return bytes.Equal(xb, yb)
}

// TestSDKsAgainstFakes runs each official SDK's agent loop directly
// against the fake of its provider: the SDK must parse every answer,
// streamed (with events split across writes) or not, into exactly the
// scripted calls and text, and send back requests the fake accepts.
func TestSDKsAgainstFakes(t *testing.T) {
	sdk := requireSDK(t)
	const key = "sk-test-0123456789abcdef"
	for _, p := range upstreamtest.Providers {
		for _, stream := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/stream=%v", p, stream), func(t *testing.T) {
				script := agentScript(p)
				fake := upstreamtest.New(t, p, script, upstreamtest.Options{Key: key, SplitWrites: stream})
				ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
				defer cancel()
				run, err := sdk.Run(ctx, p, upstreamtest.SDKEnv{BaseURL: fake.URL(), APIKey: key, Stream: stream})
				if err != nil {
					t.Fatal(err)
				}
				if run.Error != nil {
					t.Fatalf("the SDK raised %+v", *run.Error)
				}
				checkRun(t, p, script, run)
				checkReceived(t, p, key, fake, run)
			})
		}
	}
}

// checkRun compares what the SDK returned with the script.
func checkRun(t *testing.T, p upstreamtest.Provider, script upstreamtest.Script, run *upstreamtest.SDKRun) {
	t.Helper()
	if len(run.Calls) != len(script) {
		t.Fatalf("%d model calls, want %d", len(run.Calls), len(script))
	}
	for i, turn := range script {
		c := run.Calls[i]
		r := c.Response
		if r == nil {
			t.Fatalf("call %d: no response", i)
		}
		if r.Text != turn.Text {
			t.Errorf("call %d: text %q, want %q", i, r.Text, turn.Text)
		}
		if len(r.ToolCalls) != len(turn.Calls) {
			t.Fatalf("call %d: %d tool calls, want %d: %+v", i, len(r.ToolCalls), len(turn.Calls), r.ToolCalls)
		}
		for j, want := range turn.Calls {
			got := r.ToolCalls[j]
			if got.Name != want.Name || !sameJSON(t, []byte(got.Arguments), []byte(want.Arguments)) {
				t.Errorf("call %d: tool call %d is %s(%s), want %s(%s)", i, j, got.Name, got.Arguments, want.Name, want.Arguments)
			}
			if p == upstreamtest.OpenAI && got.Arguments != want.Arguments {
				t.Errorf("call %d: OpenAI arguments %q, want the exact text %q", i, got.Arguments, want.Arguments)
			}
			switch {
			case want.ID != "" && got.ID != want.ID:
				t.Errorf("call %d: tool call id %q, want %q", i, got.ID, want.ID)
			case want.ID == "" && p == upstreamtest.Gemini && got.ID != "":
				t.Errorf("call %d: Gemini sent id %q for a call without one", i, got.ID)
			case want.ID == "" && p != upstreamtest.Gemini && got.ID == "":
				t.Errorf("call %d: tool call without an id", i)
			}
		}
		if r.Usage.InputTokens == nil || *r.Usage.InputTokens != turn.InputTokens || r.Usage.OutputTokens == nil || *r.Usage.OutputTokens != turn.OutputTokens {
			t.Errorf("call %d: usage %v/%v, want %d/%d", i, r.Usage.InputTokens, r.Usage.OutputTokens, turn.InputTokens, turn.OutputTokens)
		}
		wantFinish := map[upstreamtest.Provider][2]string{
			upstreamtest.OpenAI: {"stop", "tool_calls"}, upstreamtest.Anthropic: {"end_turn", "tool_use"}, upstreamtest.Gemini: {"STOP", "STOP"},
		}[p][min(len(turn.Calls), 1)]
		if r.FinishReason != wantFinish {
			t.Errorf("call %d: finish reason %q, want %q", i, r.FinishReason, wantFinish)
		}
		if run.Stream {
			if got := strings.Join(c.TextDeltas, ""); got != turn.Text {
				t.Errorf("call %d: streamed text %q, want %q", i, got, turn.Text)
			}
			if len(turn.Text) > 8 && len(c.TextDeltas) < 2 {
				t.Errorf("call %d: text came in %d delta(s), want several", i, len(c.TextDeltas))
			}
			if len(turn.Calls) > 0 && p != upstreamtest.Gemini && c.ToolCallChunks <= len(turn.Calls) {
				t.Errorf("call %d: tool calls came in %d chunks, want their arguments in pieces", i, c.ToolCallChunks)
			}
		}
	}
	if run.FinalText == nil || *run.FinalText != script[len(script)-1].Text {
		t.Errorf("final text %v, want %q", run.FinalText, script[len(script)-1].Text)
	}
	if len(run.ToolOutputs) != 3 {
		t.Errorf("%d tool outputs, want 3", len(run.ToolOutputs))
	}
}

// checkReceived compares what the fake received with what the SDK says it
// sent: one request per call, each answered by the turn its conversation
// reached, carrying the key, and (OpenAI, Anthropic: the whole body; Gemini:
// the contents, which the SDK passes through) the parameters given.
func checkReceived(t *testing.T, p upstreamtest.Provider, key string, fake *upstreamtest.Fake, run *upstreamtest.SDKRun) {
	t.Helper()
	reqs := fake.Requests()
	if fake.Calls() != len(run.Calls) || len(reqs) != len(run.Calls) {
		t.Fatalf("the fake received %d calls (%d recorded), the SDK made %d", fake.Calls(), len(reqs), len(run.Calls))
	}
	for i, r := range reqs {
		if r.Status != 200 || r.Turn != i || r.Stream != run.Stream {
			t.Errorf("request %d: status %d turn %d stream %v, want 200, %d, %v", i, r.Status, r.Turn, r.Stream, i, run.Stream)
		}
		if r.Key() != key {
			t.Errorf("request %d: key %q, want %q", i, r.Key(), key)
		}
		sent := run.Calls[i].Request
		switch p {
		case upstreamtest.Gemini:
			var body, params struct{ Contents json.RawMessage }
			json.Unmarshal(r.Body, &body)
			json.Unmarshal(sent, &params)
			if !sameJSON(t, body.Contents, params.Contents) {
				t.Errorf("request %d: contents\n%s\nwant\n%s", i, body.Contents, params.Contents)
			}
			if wantQuery := map[bool]string{true: "alt=sse", false: ""}[run.Stream]; r.RawQuery != wantQuery {
				t.Errorf("request %d: query %q, want %q", i, r.RawQuery, wantQuery)
			}
		default:
			if !sameJSON(t, r.Body, sent) {
				t.Errorf("request %d: body\n%s\nwant what the SDK was given\n%s", i, r.Body, sent)
			}
		}
	}
}
