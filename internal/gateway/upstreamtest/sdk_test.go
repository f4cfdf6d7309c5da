package upstreamtest_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
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
				script := upstreamtest.AgentScript(p)
				fake := upstreamtest.New(t, p, script, upstreamtest.Options{Key: key, SplitWrites: stream})
				ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
				defer cancel()
				run, err := sdk.Run(ctx, p, upstreamtest.SDKEnv{BaseURL: fake.URL(), APIKey: key, Stream: stream})
				if err != nil {
					t.Fatal(err)
				}
				for _, m := range script.Mismatches(p, run) {
					t.Error(m)
				}
				if t.Failed() {
					t.FailNow()
				}
				checkReceived(t, p, key, fake, run)
			})
		}
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
			if !upstreamtest.SameJSON(body.Contents, params.Contents) {
				t.Errorf("request %d: contents\n%s\nwant\n%s", i, body.Contents, params.Contents)
			}
			if wantQuery := map[bool]string{true: "alt=sse", false: ""}[run.Stream]; r.RawQuery != wantQuery {
				t.Errorf("request %d: query %q, want %q", i, r.RawQuery, wantQuery)
			}
		default:
			if !upstreamtest.SameJSON(r.Body, sent) {
				t.Errorf("request %d: body\n%s\nwant what the SDK was given\n%s", i, r.Body, sent)
			}
		}
	}
}
