package gateway

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lookout-dev/lookout/internal/jsonscan"
	"github.com/lookout-dev/lookout/internal/trace"
)

// The recorded shapes in testdata/ are named <provider>-<kind>-<case>.<ext>:
// kind "request" (a request body; "-stream" requests ask for a stream),
// "response" (a non-streamed answer) or "stream" (the same answer streamed,
// as the raw server-sent-event bytes). A stream and a response of the same
// case are the same answer.

var providers = map[string]Provider{"openai": OpenAI(), "anthropic": Anthropic(), "gemini": Gemini()}

func readTestdata(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func testdataFiles(t testing.TB, pattern string) []string {
	t.Helper()
	names, err := filepath.Glob(filepath.Join("testdata", pattern))
	if err != nil {
		t.Fatal(err)
	}
	if len(names) == 0 {
		t.Fatalf("no testdata matches %s", pattern)
	}
	for i := range names {
		names[i] = filepath.Base(names[i])
	}
	return names
}

// providerOf is the provider a testdata file is for.
func providerOf(t testing.TB, name string) Provider {
	p := providers[strings.SplitN(name, "-", 2)[0]]
	if p == nil {
		t.Fatalf("%s: no provider", name)
	}
	return p
}

// eventJSON is the canonical JSON of an event: equal JSON, equal events.
func eventJSON(e trace.Event) string { return string(trace.AppendEvent(nil, &e)) }

func eventsJSON(es []trace.Event) string { return string(trace.AppendEvents(nil, es)) }

// headKey is what the gateway's conversation hash covers (role, content
// text, non-text parts, tool call ids, names and compact arguments, the
// call an output answers): events that must hash alike have equal keys.
func headKey(e trace.Event) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s|%q|", e.Role, e.Content.String())
	for _, p := range e.Content.Parts {
		if p.Type != "text" {
			fmt.Fprintf(&b, "part %s %s|", p.Type, trace.AppendEvent(nil, &trace.Event{Extra: p.Extra}))
		}
	}
	for _, c := range e.ToolCalls {
		var args bytes.Buffer
		if err := json.Compact(&args, c.Function.Arguments); err != nil {
			args.Write(c.Function.Arguments)
		}
		fmt.Fprintf(&b, "call %s %s %s|", c.ID, c.Function.Name, args.Bytes())
	}
	return b.String() + e.ToolCallID
}

// runStream feeds events to a new stream of p, as the proxy does, and
// returns what each Add said.
type added struct {
	ev         sseEvent
	hold, done bool
	settled    bool
}

func runStream(t testing.TB, p Provider, events []sseEvent) (Stream, []added) {
	t.Helper()
	st := p.NewStream()
	var out []added
	for i, ev := range events {
		hold, done, err := st.Add(ev.name, ev.data)
		if err != nil {
			t.Fatalf("event %d (%s %s): %v", i, ev.name, ev.data, err)
		}
		out = append(out, added{ev, hold, done, st.Settled()})
	}
	return st, out
}

func sameResponse(t testing.TB, what string, got, want Response) {
	t.Helper()
	if g, w := eventsJSON(got.Events), eventsJSON(want.Events); g != w {
		t.Errorf("%s: events\n got %s\nwant %s", what, g, w)
	}
	if got.Model != want.Model || got.Usage != want.Usage || got.FinishReason != want.FinishReason {
		t.Errorf("%s: model %q usage %+v finish %q, want %q %+v %q", what, got.Model, got.Usage, got.FinishReason, want.Model, want.Usage, want.FinishReason)
	}
}

// TestRecordedStreams: every recorded stream, framed from its bytes however
// they are chunked (one byte at a time puts a boundary everywhere), gives
// the Response its non-streamed twin gives; it ends settled, and done where
// the API has an end marker.
func TestRecordedStreams(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	for _, name := range testdataFiles(t, "*-stream-*.sse") {
		t.Run(name, func(t *testing.T) {
			p := providerOf(t, name)
			data := readTestdata(t, name)
			want, err := p.ParseResponse(readTestdata(t, strings.Replace(strings.TrimSuffix(name, ".sse"), "-stream-", "-response-", 1)+".json"))
			if err != nil {
				t.Fatal(err)
			}
			if len(want.Events) == 0 {
				t.Fatal("the response twin has no events")
			}
			chunkings := [][]int{nil, {1}, {7, 1, 300}}
			for range 20 {
				chunkings = append(chunkings, []int{1 + rng.Intn(40), 1 + rng.Intn(400)})
			}
			for _, sizes := range chunkings {
				events := frame(data, sizes...)
				st, adds := runStream(t, p, events)
				sameResponse(t, fmt.Sprintf("chunks %v", sizes), st.Response(), want)
				if !st.Settled() {
					t.Errorf("chunks %v: not settled at the end", sizes)
				}
				last := adds[len(adds)-1]
				if wantDone := p.Name() != "gemini"; last.done != wantDone {
					t.Errorf("chunks %v: last event done = %v, want %v", sizes, last.done, wantDone)
				}
				for i, a := range adds[:len(adds)-1] {
					if a.done {
						t.Errorf("chunks %v: event %d says done before the end", sizes, i)
					}
				}
			}
		})
	}
}

// TestRecordedStreamsHold plays the proxy on every recorded stream: events
// are passed on until one is held, then held until Settled; at each such
// point the calls assembled so far are checked. Every tool call that goes
// out must have been checked whole (as the final answer has it) before any
// of its events went out; events of text-only streams are never held.
func TestRecordedStreamsHold(t *testing.T) {
	for _, name := range testdataFiles(t, "*-stream-*.sse") {
		t.Run(name, func(t *testing.T) {
			p := providerOf(t, name)
			events := frame(readTestdata(t, name))
			st := p.NewStream()
			final := map[string]string{}   // call id -> final arguments
			checked := map[string]string{} // call id, and name + arguments -> arguments checked
			tracker := &callTracker{p: p}
			var pendingCalls []map[string]bool
			holding, anyHeld := false, false
			var pending []sseEvent
			release := func() {
				for i, ev := range pending {
					for id := range pendingCalls[i] {
						if checked[id] == "" {
							t.Errorf("event %s %s of call %s went out before the call was checked", ev.name, ev.data, id)
						}
					}
				}
				pending, pendingCalls = nil, nil
			}
			for _, ev := range events {
				hold, _, err := st.Add(ev.name, ev.data)
				if err != nil {
					t.Fatal(err)
				}
				calls := tracker.ids(ev)
				if len(calls) > 0 && !hold {
					t.Errorf("event carrying a tool call not held: %s", ev.data)
				}
				pending, pendingCalls = append(pending, ev), append(pendingCalls, calls)
				holding = holding || hold
				anyHeld = anyHeld || hold
				if holding && !st.Settled() {
					continue
				}
				if holding {
					for _, e := range st.Response().Events {
						for _, c := range e.ToolCalls {
							checked[c.ID] = string(c.Function.Arguments)
							checked[c.Function.Name+" "+string(c.Function.Arguments)] = string(c.Function.Arguments)
						}
					}
					holding = false
				}
				release()
			}
			release()
			for _, e := range st.Response().Events {
				for _, c := range e.ToolCalls {
					final[c.ID] = string(c.Function.Arguments)
				}
			}
			for id, args := range final {
				if checked[id] != args {
					t.Errorf("call %s checked with arguments %s, final %s", id, checked[id], args)
				}
			}
			if tools := len(final) > 0; anyHeld != tools {
				t.Errorf("held something: %v, has tool calls: %v", anyHeld, tools)
			}
		})
	}
}

// callTracker names the tool calls each event carries a part of, read
// independently of the code under test: OpenAI deltas and Anthropic blocks
// by their index (the id comes with a call's first event), Gemini calls by
// name and arguments (their ids are made up by the code under test).
type callTracker struct {
	p       Provider
	byIndex map[float64]string
}

func (ct *callTracker) ids(ev sseEvent) map[string]bool {
	if ct.byIndex == nil {
		ct.byIndex = map[float64]string{}
	}
	ids := map[string]bool{}
	var v map[string]any
	if json.Unmarshal(ev.data, &v) != nil {
		return ids
	}
	switch ct.p.Name() {
	case "openai":
		for _, c := range asList(v["choices"]) {
			delta := asMap(asMap(c)["delta"])
			for _, tc := range asList(delta["tool_calls"]) {
				index, _ := asMap(tc)["index"].(float64)
				if id, _ := asMap(tc)["id"].(string); id != "" {
					ct.byIndex[index] = id
				}
				ids[ct.byIndex[index]] = true
			}
		}
	case "anthropic":
		index, _ := v["index"].(float64)
		if b := asMap(v["content_block"]); b["type"] == "tool_use" {
			ct.byIndex[index] = b["id"].(string)
		}
		if id := ct.byIndex[index]; id != "" && v["type"] != "message_delta" {
			ids[id] = true
		}
	case "gemini":
		for _, c := range asList(v["candidates"]) {
			for _, part := range asList(asMap(asMap(c)["content"])["parts"]) {
				if fc := asMap(asMap(part)["functionCall"]); fc != nil {
					args, _ := json.Marshal(fc["args"])
					ids[fmt.Sprint(fc["name"], " ", string(canonJSON(args)))] = true
				}
			}
		}
	}
	return ids
}

func asList(v any) []any         { l, _ := v.([]any); return l }
func asMap(v any) map[string]any { m, _ := v.(map[string]any); return m }

// TestResentAnswers: the answer's message sent back as the SDKs send it
// (OpenAI's choices[0].message as is, Anthropic's content as the assistant
// content, Gemini's candidates[0].content) reads as the very events the
// answer gave, so the conversation's next call hashes onto its trace.
func TestResentAnswers(t *testing.T) {
	for _, name := range testdataFiles(t, "*-response-*.json") {
		t.Run(name, func(t *testing.T) {
			p := providerOf(t, name)
			body := readTestdata(t, name)
			resp, err := p.ParseResponse(body)
			if err != nil {
				t.Fatal(err)
			}
			reqName := strings.Replace(name, "-response-", "-request-", 1)
			orig := readTestdata(t, reqName)
			first, err := p.ParseRequest(orig)
			if err != nil {
				t.Fatal(err)
			}
			next, err := p.ParseRequest(resend(t, p.Name(), orig, body))
			if err != nil {
				t.Fatal(err)
			}
			n := len(first.Events)
			if eventsJSON(next.Events[:n]) != eventsJSON(first.Events) {
				t.Fatalf("the earlier events changed:\n%s\n%s", eventsJSON(next.Events[:n]), eventsJSON(first.Events))
			}
			got := next.Events[n:]
			if len(got) != len(resp.Events) {
				t.Fatalf("re-sent answer reads as %d events, the answer gave %d:\n%s\n%s", len(got), len(resp.Events), eventsJSON(got), eventsJSON(resp.Events))
			}
			for i := range got {
				if eventJSON(got[i]) != eventJSON(resp.Events[i]) {
					t.Errorf("event %d:\nre-sent %s\nanswer  %s", i, eventJSON(got[i]), eventJSON(resp.Events[i]))
				}
				if headKey(got[i]) != headKey(resp.Events[i]) {
					t.Errorf("event %d hashes apart", i)
				}
			}
		})
	}
}

// resend appends the answer's message to the request's conversation, as
// the SDKs give it, with no change.
func resend(t *testing.T, provider string, request, response []byte) []byte {
	t.Helper()
	var req map[string]json.RawMessage
	var resp map[string]json.RawMessage
	if err := json.Unmarshal(request, &req); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(response, &resp); err != nil {
		t.Fatal(err)
	}
	var msg json.RawMessage
	key := "messages"
	switch provider {
	case "openai":
		var choices []map[string]json.RawMessage
		_ = json.Unmarshal(resp["choices"], &choices)
		msg = choices[0]["message"]
	case "anthropic":
		msg = json.RawMessage(`{"role":"assistant","content":` + string(resp["content"]) + `}`)
	case "gemini":
		var cands []map[string]json.RawMessage
		_ = json.Unmarshal(resp["candidates"], &cands)
		msg, key = cands[0]["content"], "contents"
	}
	var list []json.RawMessage
	if err := json.Unmarshal(req[key], &list); err != nil {
		t.Fatal(err)
	}
	req[key], _ = json.Marshal(append(list, msg))
	out, err := json.Marshal(req)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestFollowups: the recorded second calls of the tool conversations
// re-send the first answer as the SDKs return it; they read as the first
// request's events, the answer's events, then the tool outputs answering
// the answer's calls in order.
func TestFollowups(t *testing.T) {
	for _, name := range testdataFiles(t, "*-request-tools-followup.json") {
		t.Run(name, func(t *testing.T) {
			p := providerOf(t, name)
			first, err := p.ParseRequest(readTestdata(t, strings.Replace(name, "-followup", "", 1)))
			if err != nil {
				t.Fatal(err)
			}
			answer, err := p.ParseResponse(readTestdata(t, strings.Replace(name, "-request-tools-followup", "-response-tools", 1)))
			if err != nil {
				t.Fatal(err)
			}
			next, err := p.ParseRequest(readTestdata(t, name))
			if err != nil {
				t.Fatal(err)
			}
			prefix := append(append([]trace.Event{}, first.Events...), answer.Events...)
			if len(next.Events) <= len(prefix) || eventsJSON(next.Events[:len(prefix)]) != eventsJSON(prefix) {
				t.Fatalf("follow-up does not start with the first call and its answer:\n%s\n%s", eventsJSON(next.Events), eventsJSON(prefix))
			}
			var calls []trace.ToolCall
			for _, e := range answer.Events {
				calls = append(calls, e.ToolCalls...)
			}
			outs := next.Events[len(prefix):]
			if len(calls) != 2 || len(outs) < 2 {
				t.Fatalf("%d calls, %d events after them", len(calls), len(outs))
			}
			for i, c := range calls {
				if outs[i].Role != "tool" || outs[i].ToolCallID != c.ID || c.ID == "" {
					t.Errorf("output %d: %s does not answer call %s", i, eventJSON(outs[i]), c.ID)
				}
				if !strings.Contains(outs[i].Content.String(), "celsius") {
					t.Errorf("output %d content %q", i, outs[i].Content.String())
				}
			}
		})
	}
}

// TestRecordedRequests: every recorded request reads, with the model and
// stream flag it says (Gemini's are in the URL), tools when it offers
// some, and events that encode to valid JSON.
func TestRecordedRequests(t *testing.T) {
	for _, name := range testdataFiles(t, "*-request-*.json") {
		t.Run(name, func(t *testing.T) {
			p := providerOf(t, name)
			body := readTestdata(t, name)
			req, err := p.ParseRequest(body)
			if err != nil {
				t.Fatal(err)
			}
			var raw map[string]any
			if err := json.Unmarshal(body, &raw); err != nil {
				t.Fatal(err)
			}
			wantModel, _ := raw["model"].(string)
			wantStream, _ := raw["stream"].(bool)
			if req.Model != wantModel || req.Stream != wantStream {
				t.Errorf("model %q stream %v, want %q %v", req.Model, req.Stream, wantModel, wantStream)
			}
			if (raw["tools"] != nil) != (req.Tools != nil) || req.Tools != nil && !jsonscan.Valid(req.Tools) {
				t.Errorf("tools %s", req.Tools)
			}
			if len(req.Events) < 1 || !json.Valid([]byte(eventsJSON(req.Events))) {
				t.Errorf("events %s", eventsJSON(req.Events))
			}
			again, _ := p.ParseRequest(body)
			if eventsJSON(again.Events) != eventsJSON(req.Events) {
				t.Error("parsing twice gave different events")
			}
		})
	}
}

// TestErrorFormats: the refusals are in each API's own error shape, carry
// the message and Lookout's details, and a stream error is one event the
// SDKs turn into an exception (OpenAI: a data event with an "error" object;
// Anthropic: an "error" event; Gemini: a data chunk with an "error" object
// whose numeric code is 400-599, framed by CRLF CRLF).
func TestErrorFormats(t *testing.T) {
	msg := "[Lookout] blocked by guardrail \"no secrets\": found \"sk-…\"\nline two"
	details := map[string]any{"violations": []any{map[string]any{"key": "k", "policy": map[string]any{"name": "no secrets"}}}}
	for _, tc := range []struct {
		provider string
		message  string // the JSON pointer-ish path to the message
		checks   map[string]any
	}{
		{"openai", "error.message", map[string]any{"error.type": "invalid_request_error", "error.code": "guardrail_violation", "error.param": nil}},
		{"anthropic", "error.message", map[string]any{"type": "error", "error.type": "invalid_request_error"}},
		{"gemini", "error.message", map[string]any{"error.code": 400.0, "error.status": "INVALID_ARGUMENT"}},
	} {
		t.Run(tc.provider, func(t *testing.T) {
			p := providers[tc.provider]
			for _, withDetails := range []bool{true, false} {
				var d any
				if withDetails {
					d = details
				}
				status, body := p.ErrorResponse(msg, d)
				if status != 400 {
					t.Errorf("status %d", status)
				}
				stream := p.StreamError(msg, d)
				events := frame(stream)
				if len(events) != 1 {
					t.Fatalf("stream error frames as %d events: %q", len(events), stream)
				}
				wantName := ""
				if tc.provider == "anthropic" {
					wantName = "error"
				}
				if events[0].name != wantName {
					t.Errorf("stream error event name %q", events[0].name)
				}
				if tc.provider == "gemini" && !bytes.HasSuffix(stream, []byte("\r\n\r\n")) {
					t.Errorf("gemini stream error not ended by CRLF CRLF: %q", stream)
				}
				for what, b := range map[string][]byte{"body": body, "stream data": events[0].data} {
					var v map[string]any
					if err := json.Unmarshal(b, &v); err != nil {
						t.Fatalf("%s: %v: %s", what, err, b)
					}
					if got := lookup(v, tc.message); got != msg {
						t.Errorf("%s: message %v", what, got)
					}
					for path, want := range tc.checks {
						if got := lookup(v, path); got != want {
							t.Errorf("%s: %s = %v, want %v", what, path, got, want)
						}
					}
					if got := lookup(v, "error.lookout"); (got != nil) != withDetails {
						t.Errorf("%s: details %v", what, got)
					} else if withDetails && lookup(v, "error.lookout.violations") == nil {
						t.Errorf("%s: details lost: %v", what, got)
					}
				}
				// The stream error also ends an assembling stream as the
				// upstream's own error would.
				st := p.NewStream()
				_, done, err := st.Add(events[0].name, events[0].data)
				if err != nil || (done != (tc.provider != "gemini")) || st.Response().FinishReason != "error" {
					t.Errorf("own stream error read back: done %v err %v finish %q", done, err, st.Response().FinishReason)
				}
			}
		})
	}
}

func lookup(v any, path string) any {
	for _, k := range strings.Split(path, ".") {
		v = asMap(v)[k]
	}
	return v
}

// TestUpstreamErrorBodies: an error body read as an answer is an
// *UpstreamError with the provider's message, not an empty answer.
func TestUpstreamErrorBodies(t *testing.T) {
	for name, body := range map[string]string{
		"openai":    `{"error": {"message": "Incorrect API key provided", "type": "invalid_request_error", "param": null, "code": "invalid_api_key"}}`,
		"anthropic": `{"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}, "request_id": "req_011CSHoEeqs5C35K2UUqR7Fy"}`,
		"gemini":    `{"error": {"code": 429, "message": "Resource has been exhausted", "status": "RESOURCE_EXHAUSTED"}}`,
	} {
		_, err := providers[name].ParseResponse([]byte(body))
		var up *UpstreamError
		if !errors.As(err, &up) || up.Provider != name || up.Message == "" || strings.Contains(up.Message, "{") {
			t.Errorf("%s: %v", name, err)
		}
	}
}
