package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lookout-dev/lookout/internal/gateway/upstreamtest"
	"github.com/lookout-dev/lookout/internal/store"
	"github.com/lookout-dev/lookout/internal/store/sqlite"
	"github.com/lookout-dev/lookout/internal/trace"
)

// The gateway with clients we did not write: the official OpenAI,
// Anthropic and Gemini SDKs (testdata/sdk) run agent loops through a real
// server whose gateway sends every call to a fake provider on loopback
// (internal/gateway/upstreamtest).

const (
	sdkProviderKey = "sk-provider-7f3a9c21d4e8b6a0"
	sdkPrompt      = "What's the weather in Paris?"
	sdkSystem      = "You are a weather assistant. Use the tools."
)

// requireSDK finds node and the installed SDKs: without node the test
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

// gatewayRig is a server whose gateway sends each provider's calls to a
// fake answering from upstreamtest.AgentScript, and alice with a key.
type gatewayRig struct {
	f     *fixture
	fakes map[upstreamtest.Provider]*upstreamtest.Fake
	sdk   *upstreamtest.SDK
}

func newGatewayRig(t *testing.T, st store.Store, checkTimeout time.Duration) *gatewayRig {
	t.Helper()
	g := &gatewayRig{sdk: requireSDK(t), fakes: map[upstreamtest.Provider]*upstreamtest.Fake{}}
	for _, p := range upstreamtest.Providers {
		g.fakes[p] = upstreamtest.New(t, p, upstreamtest.AgentScript(p), upstreamtest.Options{Key: sdkProviderKey, SplitWrites: true})
	}
	g.f = newFixture(t, st, Config{Gateway: GatewayConfig{
		OpenAIURL:    g.fakes[upstreamtest.OpenAI].URL(),
		AnthropicURL: g.fakes[upstreamtest.Anthropic].URL(),
		GeminiURL:    g.fakes[upstreamtest.Gemini].URL(),
		CheckTimeout: checkTimeout,
	}})
	g.f.addUser("alice")
	return g
}

// run runs p's agent through the gateway into dataset, with alice's key
// the way Invariant's gateway takes it: after the provider key
// ("<key>;invariant-auth=<Lookout key>") or in Invariant-Authorization.
func (g *gatewayRig) run(t *testing.T, p upstreamtest.Provider, dataset string, stream, keySuffix bool, headers map[string]string) *upstreamtest.SDKRun {
	t.Helper()
	env := upstreamtest.SDKEnv{
		BaseURL: g.f.hs.URL + "/api/v1/gateway/" + dataset + "/" + string(p),
		APIKey:  sdkProviderKey, Stream: stream, Prompt: sdkPrompt, System: sdkSystem,
		Headers: map[string]string{},
	}
	for k, v := range headers {
		env.Headers[k] = v
	}
	if keySuffix {
		env.APIKey += ";invariant-auth=" + g.f.keys["alice"]
	} else {
		env.Headers["Invariant-Authorization"] = "Bearer " + g.f.keys["alice"]
	}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	run, err := g.sdk.Run(ctx, p, env)
	if err != nil {
		t.Fatal(err)
	}
	return run
}

// checkUpstream checks what the fake received since it had done calls in
// an agent run that went through:
// one request per model call, the provider key exactly (Lookout's suffix
// gone), no Lookout header or key, and the body the SDK sent.
func (g *gatewayRig) checkUpstream(t *testing.T, p upstreamtest.Provider, done int, run *upstreamtest.SDKRun) {
	t.Helper()
	reqs := g.fakes[p].Requests()[done:]
	if len(reqs) != len(run.Calls) {
		t.Fatalf("the provider received %d calls, want %d", len(reqs), len(run.Calls))
	}
	for i, r := range reqs {
		if r.Key() != sdkProviderKey {
			t.Errorf("call %d reached the provider with key %q, want %q", i, r.Key(), sdkProviderKey)
		}
		for name, vs := range r.Header {
			lower := strings.ToLower(name)
			if strings.HasPrefix(lower, "invariant-") || strings.HasPrefix(lower, "lookout-") {
				t.Errorf("call %d: Lookout's header %s reached the provider", i, name)
			}
			for _, v := range vs {
				if strings.Contains(v, "invariant-auth") || strings.Contains(v, g.f.keys["alice"]) {
					t.Errorf("call %d: header %s carries Lookout's key to the provider: %q", i, name, v)
				}
			}
		}
		sent := run.Calls[i].Request
		if p == upstreamtest.Gemini {
			// The SDK turns its parameters into the body; contents pass as given.
			var body, params struct {
				Contents json.RawMessage `json:"contents"`
			}
			json.Unmarshal(r.Body, &body)
			json.Unmarshal(sent, &params)
			if !upstreamtest.SameJSON(body.Contents, params.Contents) || !strings.Contains(string(r.Body), `"systemInstruction"`) || !strings.Contains(string(r.Body), `"functionDeclarations"`) {
				t.Errorf("call %d: the provider received\n%s\nwant the contents the SDK was given\n%s", i, r.Body, params.Contents)
			}
			continue
		}
		if !upstreamtest.SameJSON(r.Body, sent) {
			t.Errorf("call %d: the provider received\n%s\nwant what the SDK sent\n%s", i, r.Body, sent)
		}
	}
}

// waitTrace waits until dataset holds one trace of n events (the gateway
// records off the request path) and returns it, read over the API.
func waitTrace(t *testing.T, f *fixture, dataset string, n int) *trace.Trace {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second) // liveness only: a loaded machine
	last := "no dataset"
	for time.Now().Before(deadline) {
		var list struct{ Datasets []struct{ ID string } }
		f.must(200, "GET", "/api/v1/datasets?name="+dataset, "alice", "").json(t, &list)
		if len(list.Datasets) == 1 {
			var page struct{ Traces []struct{ ID string } }
			f.must(200, "GET", "/api/v1/datasets/"+list.Datasets[0].ID+"/traces", "alice", "").json(t, &page)
			last = fmt.Sprintf("%d traces", len(page.Traces))
			if len(page.Traces) == 1 {
				var tr trace.Trace
				body := f.must(200, "GET", "/api/v1/traces/"+page.Traces[0].ID, "alice", "").body
				if err := json.Unmarshal(body, &tr); err != nil {
					t.Fatalf("trace: %v\n%s", err, body)
				}
				last = fmt.Sprintf("one trace of %d events: %s", len(tr.Events), body)
				if len(tr.Events) == n {
					tr.ID = page.Traces[0].ID
					return &tr
				}
			}
			if len(page.Traces) > 1 {
				t.Fatalf("dataset %s holds %d traces, want one per conversation", dataset, len(page.Traces))
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("dataset %s: want one trace of %d events; have %s", dataset, n, last)
	return nil
}

// eventCount is the number of events the trace of run holds: the system
// prompt, the user's message, and per answered call the answer and the
// tool outputs sent back.
func eventCount(run *upstreamtest.SDKRun) int {
	n := 2
	for _, c := range run.Calls {
		if c.Response != nil {
			n++
		}
	}
	return n + len(run.ToolOutputs)
}

// checkConversation compares the stored trace with what the SDK sent and
// received: one trace for the whole agent run, the texts exact, each tool
// call with its name, arguments and id, each tool output linked to its
// call by id, each answer on the span of its call.
func checkConversation(t *testing.T, p upstreamtest.Provider, tr *trace.Trace, run *upstreamtest.SDKRun) {
	t.Helper()
	ev := tr.Events
	if ev[0].Role != "system" || ev[0].Content.String() != sdkSystem || ev[1].Role != "user" || ev[1].Content.String() != sdkPrompt {
		t.Errorf("the trace starts %s %q, %s %q; want the system prompt and the user's message", ev[0].Role, ev[0].Content.String(), ev[1].Role, ev[1].Content.String())
	}
	if len(tr.Spans) != len(run.Calls) {
		t.Fatalf("%d spans, want one per model call (%d)", len(tr.Spans), len(run.Calls))
	}
	k, out := 2, 0
	for i, c := range run.Calls {
		r := c.Response
		sp := tr.Spans[i]
		var attrs map[string]any
		json.Unmarshal(sp.Attributes, &attrs)
		if sp.Kind != "llm" || sp.Name != string(p)+" "+r.Model || sp.Status != "ok" {
			t.Errorf("span %d: kind %q name %q status %q, want llm, %q, ok", i, sp.Kind, sp.Name, sp.Status, string(p)+" "+r.Model)
		}
		if attrs["gen_ai.usage.input_tokens"] != float64(*r.Usage.InputTokens) || attrs["gen_ai.usage.output_tokens"] != float64(*r.Usage.OutputTokens) || attrs["lookout.stream"] != run.Stream {
			t.Errorf("span %d attributes %s: want usage %d/%d and stream %v", i, sp.Attributes, *r.Usage.InputTokens, *r.Usage.OutputTokens, run.Stream)
		}
		a := ev[k]
		k++
		if a.Role != "assistant" || a.Content.String() != r.Text || a.SpanID != sp.ID {
			t.Errorf("event %d: %s %q on span %q, want the assistant's %q on span %q", k-1, a.Role, a.Content.String(), a.SpanID, r.Text, sp.ID)
		}
		if len(a.ToolCalls) != len(r.ToolCalls) {
			t.Fatalf("event %d: %d tool calls, want %d", k-1, len(a.ToolCalls), len(r.ToolCalls))
		}
		for j, want := range r.ToolCalls {
			got := a.ToolCalls[j]
			if got.Function.Name != want.Name || !upstreamtest.SameJSON(got.Function.Arguments, []byte(want.Arguments)) {
				t.Errorf("event %d: tool call %d is %s(%s), want %s(%s)", k-1, j, got.Function.Name, got.Function.Arguments, want.Name, want.Arguments)
			}
			if (want.ID != "" && got.ID != want.ID) || got.ID == "" {
				t.Errorf("event %d: tool call %d has id %q, want %q (an id of its own where the provider gives none)", k-1, j, got.ID, want.ID)
			}
		}
		for j := range r.ToolCalls {
			o := ev[k]
			k++
			sent := run.ToolOutputs[out]
			out++
			text := o.Content.String()
			if o.Role != "tool" || o.ToolCallID != a.ToolCalls[j].ID || (text != sent.Output && !upstreamtest.SameJSON([]byte(text), []byte(sent.Output))) {
				t.Errorf("event %d: %s for %q: %q; want the tool output for %q: %q", k-1, o.Role, o.ToolCallID, text, a.ToolCalls[j].ID, sent.Output)
			}
		}
	}
	if k != len(ev) {
		t.Errorf("the trace holds %d events, want %d", len(ev), k)
	}
}

// TestGatewaySDKConversations runs each SDK's agent loop, streamed and
// not, through the gateway on both backends: the agent gets exactly what
// the provider answered, the provider gets exactly what the agent sent
// (its own key, no Lookout key), and the conversation is one trace.
func TestGatewaySDKConversations(t *testing.T) {
	requireSDK(t)
	forEachBackend(t, func(t *testing.T, st store.Store) {
		g := newGatewayRig(t, st, 0)
		for _, p := range upstreamtest.Providers {
			for _, stream := range []bool{false, true} {
				t.Run(fmt.Sprintf("%s/stream=%v", p, stream), func(t *testing.T) {
					dataset := fmt.Sprintf("agents-%s-%v", p, stream)
					done := g.fakes[p].Calls()
					// Streamed runs send the Lookout key in Invariant-Authorization,
					// the others after the provider key.
					run := g.run(t, p, dataset, stream, !stream, nil)
					for _, m := range upstreamtest.AgentScript(p).Mismatches(p, run) {
						t.Error(m)
					}
					if t.Failed() {
						t.FailNow()
					}
					g.checkUpstream(t, p, done, run)
					tr := waitTrace(t, g.f, dataset, eventCount(run))
					checkConversation(t, p, tr, run)
					if anns := annotationsOf(t, g.f, "alice", tr.ID); len(anns) != 0 {
						t.Errorf("annotations without a policy: %+v", anns)
					}
				})
			}
		}
	})
}

// headerPolicy escapes a policy for a header, as Invariant's clients do.
func headerPolicy(src string) string {
	return strings.NewReplacer(`\`, `\\`, "\n", `\n`, `"`, `\"`).Replace(src)
}

// runeRange is the address suffix "content:a-b" of the first occurrence of
// sub in s, in code points as the policy engine counts.
func runeRange(s, sub string) string {
	i := strings.Index(s, sub)
	a := len([]rune(s[:i]))
	return fmt.Sprintf("content:%d-%d", a, a+len([]rune(sub)))
}

// savePolicy gives a dataset of alice's (created if missing) a policy.
func (g *gatewayRig) savePolicy(t *testing.T, dataset, name, mode, src string) {
	t.Helper()
	ctx := context.Background()
	d, err := g.f.st.DatasetByName(ctx, g.f.user["alice"].ID, dataset)
	if errors.Is(err, store.ErrNotFound) {
		d.ID = g.f.createDataset("alice", dataset, false)
	} else if err != nil {
		t.Fatal(err)
	}
	if _, err := g.f.st.SavePolicy(ctx, store.Policy{DatasetID: d.ID, Name: name, Source: src, Mode: mode}); err != nil {
		t.Fatal(err)
	}
}

// annotated finds the annotations whose content holds text.
func annotated(anns []annotationJSON, text string) []annotationJSON {
	var out []annotationJSON
	for _, a := range anns {
		if strings.Contains(a.Content, text) {
			out = append(out, a)
		}
	}
	return out
}

// checkAnnotatedAt checks that there is an annotation at each wanted
// address and none outside them (a violation's ranges are a part and the
// parts within it, such as messages.7 and messages.7.content:36-41).
func checkAnnotatedAt(t *testing.T, anns []annotationJSON, want []string) {
	t.Helper()
	var got []string
	for _, a := range anns {
		got = append(got, a.Address)
		if a.Source != "analyzer" {
			t.Errorf("annotation at %s has source %q, want analyzer", a.Address, a.Source)
		}
	}
	for _, w := range want {
		if !slices.Contains(got, w) {
			t.Errorf("annotations at %v: none at %s", got, w)
		}
	}
	for _, a := range got {
		if !slices.ContainsFunc(want, func(w string) bool { return within(a, w) || within(w, a) }) {
			t.Errorf("annotation at %s, outside %v", a, want)
		}
	}
}

// within reports whether address a is b or a part of it.
func within(a, b string) bool {
	return a == b || strings.HasPrefix(a, b+".") || strings.HasPrefix(a, b+":")
}

// says reports whether an SDK's error message carries text: as it is, or
// escaped in the JSON body that some SDKs put in their message.
func says(msg, text string) bool {
	quoted, _ := json.Marshal(text)
	return strings.Contains(msg, text) || strings.Contains(msg, string(quoted[1:len(quoted)-1]))
}

// refused checks that the SDK raised the gateway's refusal carrying msg,
// before any tool call reached the agent.
func refused(t *testing.T, run *upstreamtest.SDKRun, msg string) {
	t.Helper()
	if run.Error == nil {
		t.Fatalf("the SDK raised nothing; want the refusal %q", msg)
	}
	if !says(run.Error.Message, "[Lookout] blocked by guardrail") || !says(run.Error.Message, msg) {
		t.Errorf("the SDK raised %s: %q; want the refusal carrying %q", run.Error.Name, run.Error.Message, msg)
	}
	if len(run.Calls) != 1 || run.Calls[0].Response != nil || run.Calls[0].ToolCallChunks != 0 || len(run.ToolOutputs) != 0 {
		t.Errorf("the refused call gave the agent something: %+v", run.Calls)
	}
}

// TestGatewaySDKGuardrails: each guardrail outcome as each SDK sees it.
func TestGatewaySDKGuardrails(t *testing.T) {
	requireSDK(t)
	st, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "lookout.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	g := newGatewayRig(t, st, 0)

	requestRule := "raise \"no weather talk about Paris\" if:\n    (msg: Message)\n    msg.role == \"user\"\n    \"Paris\" in msg.content"
	toolRule := "raise \"get_weather is not allowed\" if:\n    (call: ToolCall)\n    call is tool:get_weather"

	for _, p := range upstreamtest.Providers {
		t.Run(string(p), func(t *testing.T) {
			fake := g.fakes[p]
			script := upstreamtest.AgentScript(p)

			// A blocking policy sent with the request (Invariant's header, or
			// Lookout's): refused before the provider is called, in the
			// provider's error format, and recorded with the violation at
			// its range.
			for _, stream := range []bool{false, true} {
				t.Run(fmt.Sprintf("request blocked/stream=%v", stream), func(t *testing.T) {
					dataset := fmt.Sprintf("block-request-%s-%v", p, stream)
					header := map[bool]string{false: "Invariant-Guardrails", true: "Lookout-Guardrails"}[stream]
					before := fake.Calls()
					run := g.run(t, p, dataset, stream, stream, map[string]string{header: headerPolicy(requestRule)})
					refused(t, run, "no weather talk about Paris")
					if fake.Calls() != before {
						t.Errorf("the provider was called %d times for a refused request", fake.Calls()-before)
					}
					tr := waitTrace(t, g.f, dataset, 2)
					anns := annotated(annotationsOf(t, g.f, "alice", tr.ID), "no weather talk about Paris")
					want := "messages.1." + runeRange(sdkPrompt, "Paris")
					if !slices.ContainsFunc(anns, func(a annotationJSON) bool { return a.Address == want && a.Source == "analyzer" }) {
						t.Errorf("annotations %+v: want one at %s", anns, want)
					}
				})
			}

			// A saved blocking policy on tool calls: the answer's tool call
			// never reaches the agent; streamed, the stream raises after the
			// text that came before the call.
			for _, stream := range []bool{false, true} {
				t.Run(fmt.Sprintf("tool call blocked/stream=%v", stream), func(t *testing.T) {
					dataset := fmt.Sprintf("block-tool-%s-%v", p, stream)
					g.savePolicy(t, dataset, "no weather tool", store.PolicyBlock, toolRule)
					done := fake.Calls()
					run := g.run(t, p, dataset, stream, !stream, nil)
					refused(t, run, "get_weather is not allowed")
					if !says(run.Error.Message, `"no weather tool"`) {
						t.Errorf("the refusal %q does not name the policy", run.Error.Message)
					}
					if got := strings.Join(run.Calls[0].TextDeltas, ""); !strings.HasPrefix(script[0].Text, got) {
						t.Errorf("streamed text %q is not the start of %q", got, script[0].Text)
					}
					if fake.Calls() != done+1 {
						t.Errorf("the provider was called %d times, want once", fake.Calls()-done)
					}
					tr := waitTrace(t, g.f, dataset, 2)
					if len(tr.Spans) != 1 || tr.Spans[0].Status != "blocked" {
						t.Errorf("spans %+v: want the call's span, blocked", tr.Spans)
					}
					if anns := annotated(annotationsOf(t, g.f, "alice", tr.ID), "get_weather is not allowed"); len(anns) == 0 {
						t.Error("no annotation of the blocked tool call")
					}
				})
			}

			// Policies in log mode: the calls go through unchanged, and each
			// violation is an annotation at its exact range, once.
			t.Run("log", func(t *testing.T) {
				dataset := "log-" + string(p)
				g.savePolicy(t, dataset, "weather watch", store.PolicyLog, "raise \"weather looked up\" if:\n    (call: ToolCall)\n    call is tool:get_weather")
				g.savePolicy(t, dataset, "paris watch", store.PolicyLog, "raise \"mentions Paris\" if:\n    (msg: Message)\n    msg.role == \"assistant\"\n    \"Paris\" in msg.content")
				done := fake.Calls()
				run := g.run(t, p, dataset, true, false, nil)
				for _, m := range script.Mismatches(p, run) {
					t.Error(m)
				}
				if fake.Calls() != done+len(script) {
					t.Errorf("the provider was called %d times, want %d", fake.Calls()-done, len(script))
				}
				tr := waitTrace(t, g.f, dataset, eventCount(run))
				anns := annotationsOf(t, g.f, "alice", tr.ID)
				var want []string // where get_weather was called
				last := 0
				for i, e := range tr.Events {
					for j, c := range e.ToolCalls {
						if c.Function.Name == "get_weather" {
							want = append(want, fmt.Sprintf("messages.%d.tool_calls.%d", i, j))
						}
					}
					if e.Role == "assistant" {
						last = i
					}
				}
				checkAnnotatedAt(t, annotated(anns, "weather looked up"), want)
				paris := fmt.Sprintf("messages.%d.%s", last, runeRange(script[len(script)-1].Text, "Paris"))
				checkAnnotatedAt(t, annotated(anns, "mentions Paris"), []string{paris})
				seen := map[string]bool{}
				for _, a := range anns {
					if seen[a.Address+"\x00"+a.Content] {
						t.Errorf("annotation %q at %s recorded twice", a.Content, a.Address)
					}
					seen[a.Address+"\x00"+a.Content] = true
				}
			})

			// A policy that fails (here: saved, no longer loads) refuses the
			// call when it blocks and lets it through when it logs; the trace
			// says so either way.
			for _, mode := range []string{store.PolicyBlock, store.PolicyLog} {
				t.Run("failing policy/"+mode, func(t *testing.T) {
					dataset := fmt.Sprintf("broken-%s-%s", p, mode)
					g.savePolicy(t, dataset, "broken", mode, "raise \"unfinished\" if:\n    (msg: Message\n")
					done := fake.Calls()
					stream := mode == store.PolicyLog
					run := g.run(t, p, dataset, stream, true, nil)
					n := 2
					if mode == store.PolicyBlock {
						if run.Error == nil || !says(run.Error.Message, `guardrail "broken" failed`) || !says(run.Error.Message, "fails closed") {
							t.Fatalf("the SDK got %+v; want the refusal saying the guardrail failed", run.Error)
						}
						if fake.Calls() != done {
							t.Errorf("the provider was called despite a failed blocking guardrail")
						}
					} else {
						for _, m := range script.Mismatches(p, run) {
							t.Error(m)
						}
						n = eventCount(run)
					}
					tr := waitTrace(t, g.f, dataset, n)
					want := map[string]string{store.PolicyBlock: "fails closed", store.PolicyLog: "fails open"}[mode]
					if anns := annotated(annotationsOf(t, g.f, "alice", tr.ID), want); len(anns) == 0 {
						t.Errorf("no annotation says the guardrail %s", want)
					}
				})
			}
		})
	}
}

// TestGatewaySDKCheckTimeout: a check that runs out of time fails closed
// for a blocking policy and open for a logging one, as the SDKs see it.
func TestGatewaySDKCheckTimeout(t *testing.T) {
	requireSDK(t)
	st, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "lookout.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	g := newGatewayRig(t, st, time.Nanosecond)
	rule := "raise \"a jacket\" if:\n    (msg: Message)\n    \"jacket\" in msg.content"
	for _, p := range upstreamtest.Providers {
		for _, mode := range []string{store.PolicyBlock, store.PolicyLog} {
			t.Run(string(p)+"/"+mode, func(t *testing.T) {
				dataset := fmt.Sprintf("slow-%s-%s", p, mode)
				g.savePolicy(t, dataset, "slow", mode, rule)
				done := g.fakes[p].Calls()
				run := g.run(t, p, dataset, mode == store.PolicyLog, false, nil)
				n := 2
				if mode == store.PolicyBlock {
					if run.Error == nil || !says(run.Error.Message, `guardrail "slow" failed`) {
						t.Fatalf("the SDK got %+v; want the refusal saying the guardrail failed", run.Error)
					}
					if g.fakes[p].Calls() != done {
						t.Error("the provider was called despite a timed-out blocking guardrail")
					}
				} else {
					for _, m := range upstreamtest.AgentScript(p).Mismatches(p, run) {
						t.Error(m)
					}
					n = eventCount(run)
				}
				tr := waitTrace(t, g.f, dataset, n)
				if anns := annotated(annotationsOf(t, g.f, "alice", tr.ID), `guardrail "slow" failed`); len(anns) == 0 {
					t.Error("no annotation says the guardrail failed")
				}
			})
		}
	}
}

// TestGatewayInvariantShapes sends the request shapes of Invariant's
// gateway with plain HTTP: the dataset in the path, the Lookout key in
// Invariant-Authorization or after the provider key in whichever place the
// provider reads its key. Each reaches the provider with the provider key
// alone; a wrong Lookout key never reaches it.
func TestGatewayInvariantShapes(t *testing.T) {
	st, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "lookout.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	fakes := map[upstreamtest.Provider]*upstreamtest.Fake{}
	for _, p := range upstreamtest.Providers {
		fakes[p] = upstreamtest.New(t, p, upstreamtest.WeatherScript(), upstreamtest.Options{Key: sdkProviderKey})
	}
	f := newFixture(t, st, Config{Gateway: GatewayConfig{
		OpenAIURL: fakes[upstreamtest.OpenAI].URL(), AnthropicURL: fakes[upstreamtest.Anthropic].URL(), GeminiURL: fakes[upstreamtest.Gemini].URL(),
	}})
	f.addUser("alice")
	key := f.keys["alice"]
	suffixed := sdkProviderKey + ";invariant-auth=" + key
	openaiBody := `{"model":"gpt-4o","messages":[{"role":"user","content":"weather in Paris?"}]}`
	anthropicBody := `{"model":"claude-sonnet-4-5","max_tokens":100,"messages":[{"role":"user","content":"weather in Paris?"}]}`
	geminiBody := `{"contents":[{"role":"user","parts":[{"text":"weather in Paris?"}]}]}`
	geminiPath := "/gemini/v1beta/models/gemini-2.5-flash:generateContent"
	tests := []struct {
		name      string
		p         upstreamtest.Provider
		path      string // after /api/v1/gateway/{dataset}
		body      string
		header    []string
		status    int
		wantQuery string // the query the provider receives
	}{
		{"openai Invariant-Authorization", upstreamtest.OpenAI, "/openai/chat/completions", openaiBody, []string{"Authorization", "Bearer " + sdkProviderKey, "Invariant-Authorization", "Bearer " + key}, 200, ""},
		{"openai key suffix", upstreamtest.OpenAI, "/openai/chat/completions", openaiBody, []string{"Authorization", "Bearer " + suffixed}, 200, ""},
		{"anthropic x-api-key suffix", upstreamtest.Anthropic, "/anthropic/v1/messages", anthropicBody, []string{"X-Api-Key", suffixed, "Anthropic-Version", "2023-06-01"}, 200, ""},
		{"anthropic bearer suffix", upstreamtest.Anthropic, "/anthropic/v1/messages", anthropicBody, []string{"Authorization", "Bearer " + suffixed, "Anthropic-Version", "2026-10-21"}, 200, ""},
		{"anthropic Invariant-Authorization", upstreamtest.Anthropic, "/anthropic/v1/messages", anthropicBody, []string{"X-Api-Key", sdkProviderKey, "Anthropic-Version", "2023-06-01", "Invariant-Authorization", "Bearer " + key}, 200, ""},
		{"gemini x-goog-api-key suffix", upstreamtest.Gemini, geminiPath, geminiBody, []string{"X-Goog-Api-Key", suffixed}, 200, ""},
		{"gemini key in the query with a suffix", upstreamtest.Gemini, geminiPath + "?key=" + suffixed, geminiBody, nil, 200, "key=" + sdkProviderKey},
		{"gemini key in the query, escaped", upstreamtest.Gemini, geminiPath + "?key=" + strings.ReplaceAll(strings.ReplaceAll(suffixed, ";", "%3B"), "=", "%3D"), geminiBody, nil, 200, "key=" + sdkProviderKey},
		{"openai wrong Lookout key", upstreamtest.OpenAI, "/openai/chat/completions", openaiBody, []string{"Authorization", "Bearer " + sdkProviderKey + ";invariant-auth=lk_wrong"}, 401, ""},
		{"anthropic no Lookout key", upstreamtest.Anthropic, "/anthropic/v1/messages", anthropicBody, []string{"X-Api-Key", sdkProviderKey, "Anthropic-Version", "2023-06-01"}, 401, ""},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fake := fakes[tt.p]
			before := len(fake.Requests())
			dataset := fmt.Sprintf("invariant-shape-%d", i)
			r := f.do("POST", "/api/v1/gateway/"+dataset+tt.path, "", strings.NewReader(tt.body), append([]string{"Content-Type", "application/json"}, tt.header...)...)
			if r.status != tt.status {
				t.Fatalf("status %d, want %d: %s", r.status, tt.status, r.body)
			}
			reqs := fake.Requests()[before:]
			if tt.status != http.StatusOK {
				if len(reqs) != 0 {
					t.Errorf("a refused call reached the provider")
				}
				return
			}
			if len(reqs) != 1 || reqs[0].Key() != sdkProviderKey || reqs[0].RawQuery != tt.wantQuery || !upstreamtest.SameJSON(reqs[0].Body, []byte(tt.body)) {
				t.Fatalf("the provider received %+v; want the body with key %q and query %q", reqs, sdkProviderKey, tt.wantQuery)
			}
			waitTrace(t, f, dataset, 2)
		})
	}
}
