package upstreamtest_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/lookout-dev/lookout/internal/gateway/upstreamtest"
)

func TestSplitArguments(t *testing.T) {
	args := `{"city":"S\u00e3o Paulo \"SP\"","units":"metric"}`
	pieces := upstreamtest.SplitArguments(args)
	if got := strings.Join(pieces, ""); got != args {
		t.Fatalf("pieces join to %q, want %q", got, args)
	}
	if pieces[0] != "{" {
		t.Errorf("first piece %q, want the opening brace alone", pieces[0])
	}
	var insideEscape, afterBackslash, insideKey bool
	for i, p := range pieces[:len(pieces)-1] {
		next := pieces[i+1]
		insideEscape = insideEscape || strings.HasSuffix(p, `\u00`) || (strings.HasSuffix(p, `\`) && strings.HasPrefix(next, "u00"))
		afterBackslash = afterBackslash || (strings.HasSuffix(p, `\`) && strings.HasPrefix(next, `"`))
		insideKey = insideKey || (strings.HasSuffix(p, `"ci`) && strings.HasPrefix(next, `ty"`))
	}
	if !insideEscape || !afterBackslash || !insideKey {
		t.Errorf("pieces %q: cut inside a \\u escape %v, between a backslash and a quote %v, inside a key %v; want all", pieces, insideEscape, afterBackslash, insideKey)
	}
	// Every piece but the whole is not valid JSON on its own.
	for _, p := range pieces {
		if json.Valid([]byte(p)) && p != args {
			t.Errorf("piece %q is valid JSON alone: not an awkward cut", p)
		}
	}
}

func TestSplitText(t *testing.T) {
	text := "São Paulo: 18 °C ☁️ 🌦 done"
	pieces := upstreamtest.SplitText(text)
	if strings.Join(pieces, "") != text || len(pieces) < 4 {
		t.Fatalf("pieces %q", pieces)
	}
	for _, p := range pieces {
		if p == "" || !utf8.ValidString(p) {
			t.Errorf("piece %q is not whole runes", p)
		}
	}
	if upstreamtest.SplitText("") != nil {
		t.Error("empty text gives pieces")
	}
}

// post sends body to the fake and returns the response.
func post(t *testing.T, url string, body string, header ...string) (int, http.Header, []byte) {
	t.Helper()
	req, err := http.NewRequest("POST", url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, resp.Header, b
}

// TestRefusals: what a real provider refuses, the fake refuses in the
// provider's error format, before it answers from the script.
func TestRefusals(t *testing.T) {
	const key = "sk-right"
	oa := func(f *upstreamtest.Fake) string { return f.URL() + "/chat/completions" }
	an := func(f *upstreamtest.Fake) string { return f.URL() + "/v1/messages" }
	ge := func(f *upstreamtest.Fake) string { return f.URL() + "/v1beta/models/gemini-2.5-flash:generateContent" }
	user := `{"role":"user","content":"hi"}`
	tests := []struct {
		name     string
		p        upstreamtest.Provider
		url      func(*upstreamtest.Fake) string
		body     string
		header   []string
		status   int
		contains string // in the error message
	}{
		{"openai no key", upstreamtest.OpenAI, oa, `{"model":"m","messages":[` + user + `]}`, nil, 401, "You didn't provide an API key"},
		{"openai wrong key", upstreamtest.OpenAI, oa, `{"model":"m","messages":[` + user + `]}`, []string{"Authorization", "Bearer sk-wrong-key-123"}, 401, "Incorrect API key provided: sk-************-123"},
		{"openai key with a suffix", upstreamtest.OpenAI, oa, `{"model":"m","messages":[` + user + `]}`, []string{"Authorization", "Bearer sk-right;invariant-auth=inv"}, 401, "Incorrect API key"},
		{"openai bad path", upstreamtest.OpenAI, func(f *upstreamtest.Fake) string { return f.URL() + "/completions" }, `{}`, []string{"Authorization", "Bearer " + key}, 404, "Invalid URL (POST /v1/completions)"},
		{"openai not JSON", upstreamtest.OpenAI, oa, `{"model":`, []string{"Authorization", "Bearer " + key}, 400, "could not parse the JSON body"},
		{"openai a message not an object", upstreamtest.OpenAI, oa, `{"model":"m","messages":[` + user + `,5]}`, []string{"Authorization", "Bearer " + key}, 400, "Invalid type for 'messages[1]'"},
		{"openai no messages", upstreamtest.OpenAI, oa, `{"model":"m"}`, []string{"Authorization", "Bearer " + key}, 400, "Missing required parameter: 'messages'"},
		{"openai unanswered call", upstreamtest.OpenAI, oa, `{"model":"m","messages":[` + user + `,{"role":"assistant","tool_calls":[{"id":"call_1","type":"function","function":{"name":"f","arguments":"{}"}}]},` + user + `]}`, []string{"Authorization", "Bearer " + key}, 400, "did not have response messages: call_1"},
		{"openai stray tool output", upstreamtest.OpenAI, oa, `{"model":"m","messages":[` + user + `,{"role":"tool","tool_call_id":"call_9","content":"x"}]}`, []string{"Authorization", "Bearer " + key}, 400, "must be a response to a preceeding message with 'tool_calls'"},
		{"openai arguments not a string", upstreamtest.OpenAI, oa, `{"model":"m","messages":[` + user + `,{"role":"assistant","tool_calls":[{"id":"call_1","type":"function","function":{"name":"f","arguments":{}}}]},{"role":"tool","tool_call_id":"call_1","content":"x"}]}`, []string{"Authorization", "Bearer " + key}, 400, "expected a string"},
		{"openai stream_options without stream", upstreamtest.OpenAI, oa, `{"model":"m","stream_options":{"include_usage":true},"messages":[` + user + `]}`, []string{"Authorization", "Bearer " + key}, 400, "only allowed when 'stream' is enabled"},

		{"anthropic no key", upstreamtest.Anthropic, an, `{"model":"m","max_tokens":5,"messages":[` + user + `]}`, []string{"anthropic-version", "2023-06-01"}, 401, "x-api-key header is required"},
		{"anthropic wrong key", upstreamtest.Anthropic, an, `{"model":"m","max_tokens":5,"messages":[` + user + `]}`, []string{"anthropic-version", "2023-06-01", "x-api-key", "nope"}, 401, "invalid x-api-key"},
		{"anthropic no version", upstreamtest.Anthropic, an, `{"model":"m","max_tokens":5,"messages":[` + user + `]}`, []string{"x-api-key", key}, 400, "anthropic-version: header is required"},
		{"anthropic no max_tokens", upstreamtest.Anthropic, an, `{"model":"m","messages":[` + user + `]}`, []string{"x-api-key", key, "anthropic-version", "2023-06-01"}, 400, "max_tokens: Field required"},
		{"anthropic unanswered tool_use", upstreamtest.Anthropic, an, `{"model":"m","max_tokens":5,"messages":[` + user + `,{"role":"assistant","content":[{"type":"tool_use","id":"toolu_1","name":"f","input":{}}]},` + user + `]}`, []string{"x-api-key", key, "anthropic-version", "2023-06-01"}, 400, "`tool_use` ids were found without `tool_result` blocks immediately after: toolu_1"},
		{"anthropic stray tool_result", upstreamtest.Anthropic, an, `{"model":"m","max_tokens":5,"messages":[{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_9","content":"x"}]}]}`, []string{"x-api-key", key, "anthropic-version", "2023-06-01"}, 400, "unexpected `tool_use_id` found in `tool_result` blocks: toolu_9"},
		{"anthropic bad role", upstreamtest.Anthropic, an, `{"model":"m","max_tokens":5,"messages":[{"role":"system","content":"x"}]}`, []string{"x-api-key", key, "anthropic-version", "2023-06-01"}, 400, "messages.0.role: Input should be 'user' or 'assistant'"},

		{"gemini no key", upstreamtest.Gemini, ge, `{"contents":[{"role":"user","parts":[{"text":"hi"}]}]}`, nil, 403, "unregistered callers"},
		{"gemini wrong key", upstreamtest.Gemini, ge, `{"contents":[{"role":"user","parts":[{"text":"hi"}]}]}`, []string{"x-goog-api-key", "AIza-wrong"}, 400, "API key not valid"},
		{"gemini bad method", upstreamtest.Gemini, func(f *upstreamtest.Fake) string { return f.URL() + "/v1beta/models/gemini-2.5-flash:countTokens" }, `{}`, []string{"x-goog-api-key", key}, 404, "was not found"},
		{"gemini no contents", upstreamtest.Gemini, ge, `{}`, []string{"x-goog-api-key", key}, 400, "contents is not specified"},
		{"gemini responses do not match calls", upstreamtest.Gemini, ge, `{"contents":[{"role":"user","parts":[{"text":"hi"}]},{"role":"model","parts":[{"functionCall":{"name":"a","args":{}}},{"functionCall":{"name":"b","args":{}}}]},{"role":"user","parts":[{"functionResponse":{"name":"a","response":{}}}]}]}`, []string{"x-goog-api-key", key}, 400, "number of function response parts is equal to the number of function call parts"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := upstreamtest.New(t, tt.p, upstreamtest.WeatherScript(), upstreamtest.Options{Key: key})
			status, h, body := post(t, tt.url(f), tt.body, tt.header...)
			if status != tt.status {
				t.Fatalf("status %d, want %d: %s", status, tt.status, body)
			}
			if !strings.HasPrefix(h.Get("Content-Type"), "application/json") {
				t.Errorf("content type %q", h.Get("Content-Type"))
			}
			if msg := errorMessage(t, tt.p, body); !strings.Contains(msg, tt.contains) {
				t.Errorf("message %q, want it to contain %q", msg, tt.contains)
			}
			reqs := f.Requests()
			if f.Calls() != 1 || len(reqs) != 1 || reqs[0].Turn != -1 || reqs[0].Status != tt.status || string(reqs[0].Body) != tt.body {
				t.Errorf("recorded %d calls, %+v", f.Calls(), reqs)
			}
		})
	}
}

// errorMessage reads a provider error body, checking its shape.
func errorMessage(t *testing.T, p upstreamtest.Provider, body []byte) string {
	t.Helper()
	switch p {
	case upstreamtest.OpenAI:
		var e struct {
			Error struct {
				Message string  `json:"message"`
				Type    string  `json:"type"`
				Param   *string `json:"param"`
				Code    *string `json:"code"`
			} `json:"error"`
		}
		if err := json.Unmarshal(body, &e); err != nil || e.Error.Type == "" {
			t.Fatalf("not an OpenAI error: %s", body)
		}
		return e.Error.Message
	case upstreamtest.Anthropic:
		var e struct {
			Type  string `json:"type"`
			Error struct {
				Type    string `json:"type"`
				Message string `json:"message"`
			} `json:"error"`
		}
		if err := json.Unmarshal(body, &e); err != nil || e.Type != "error" || e.Error.Type == "" {
			t.Fatalf("not an Anthropic error: %s", body)
		}
		return e.Error.Message
	default:
		var e struct {
			Error struct {
				Code    int    `json:"code"`
				Message string `json:"message"`
				Status  string `json:"status"`
			} `json:"error"`
		}
		if err := json.Unmarshal(body, &e); err != nil || e.Error.Code == 0 || e.Error.Status == "" {
			t.Fatalf("not a Gemini error: %s", body)
		}
		return e.Error.Message
	}
}

// TestTurnByConversation: the answer is the turn the conversation reached,
// whatever the order of calls; past the script's end, the last turn.
func TestTurnByConversation(t *testing.T) {
	f := upstreamtest.New(t, upstreamtest.OpenAI, upstreamtest.WeatherScript(), upstreamtest.Options{})
	first := `{"model":"m","messages":[{"role":"user","content":"weather?"}]}`
	second := `{"model":"m","messages":[{"role":"user","content":"weather?"},{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Paris\"}"}}]},{"role":"tool","tool_call_id":"c1","content":"18"}]}`
	third := `{"model":"m","messages":[{"role":"user","content":"a"},{"role":"assistant","content":"b"},{"role":"user","content":"c"},{"role":"assistant","content":"d"},{"role":"user","content":"e"}]}`
	for _, c := range []struct {
		body     string
		turn     int
		toolCall bool
	}{{second, 1, false}, {first, 0, true}, {third, 1, false}} {
		status, _, body := post(t, f.URL()+"/chat/completions", c.body, "Authorization", "Bearer k")
		if status != 200 {
			t.Fatalf("status %d: %s", status, body)
		}
		var resp struct {
			Object  string `json:"object"`
			Choices []struct {
				Message struct {
					Content   *string           `json:"content"`
					ToolCalls []json.RawMessage `json:"tool_calls"`
				} `json:"message"`
				FinishReason string `json:"finish_reason"`
			} `json:"choices"`
		}
		json.Unmarshal(body, &resp)
		if resp.Object != "chat.completion" || len(resp.Choices) != 1 || (len(resp.Choices[0].Message.ToolCalls) > 0) != c.toolCall {
			t.Errorf("turn %d: %s", c.turn, body)
		}
		reqs := f.Requests()
		if last := reqs[len(reqs)-1]; last.Turn != c.turn || last.Stream {
			t.Errorf("recorded turn %d stream %v, want %d", last.Turn, last.Stream, c.turn)
		}
	}
}

// sse reads a server-sent event stream into (event, data) pairs.
func sse(t *testing.T, body []byte) [][2]string {
	t.Helper()
	var out [][2]string
	var name string
	var data []string
	sc := bufio.NewScanner(bytes.NewReader(body))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := strings.TrimSuffix(sc.Text(), "\r")
		switch {
		case line == "":
			if data != nil {
				out = append(out, [2]string{name, strings.Join(data, "\n")})
			}
			name, data = "", nil
		case strings.HasPrefix(line, "event: "):
			name = line[len("event: "):]
		case strings.HasPrefix(line, "data: "):
			data = append(data, line[len("data: "):])
		default:
			t.Fatalf("unexpected line %q", line)
		}
	}
	if data != nil {
		t.Fatalf("stream ends inside an event: %q", data)
	}
	return out
}

var twoCalls = upstreamtest.Script{{Text: "Checking.", InputTokens: 7, OutputTokens: 9, Calls: []upstreamtest.Call{
	{Name: "get_weather", Arguments: `{"city":"S\u00e3o Paulo"}`},
	{Name: "get_time", Arguments: `{"timezone":"America/Sao_Paulo"}`},
}}}

// TestOpenAIStream: names and arguments in different chunks, calls
// interleaved, last pieces sharing a chunk, usage alone in the last chunk.
func TestOpenAIStream(t *testing.T) {
	f := upstreamtest.New(t, upstreamtest.OpenAI, twoCalls, upstreamtest.Options{})
	status, h, body := post(t, f.URL()+"/chat/completions", `{"model":"gpt-4o","stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":"x"}]}`, "Authorization", "Bearer k")
	if status != 200 || !strings.HasPrefix(h.Get("Content-Type"), "text/event-stream") {
		t.Fatalf("status %d type %q", status, h.Get("Content-Type"))
	}
	events := sse(t, body)
	if last := events[len(events)-1]; last[1] != "[DONE]" {
		t.Fatalf("last event %q, want [DONE]", last)
	}
	type delta struct {
		Content   *string `json:"content"`
		ToolCalls []struct {
			Index    int    `json:"index"`
			ID       string `json:"id"`
			Function struct {
				Name      string `json:"name"`
				Arguments string `json:"arguments"`
			} `json:"function"`
		} `json:"tool_calls"`
	}
	var text string
	args := map[int]string{}
	names := map[int]string{}
	var order []int // call index of every tool call delta, in order
	shared, usageChunks := false, 0
	for i, ev := range events[:len(events)-1] {
		var c struct {
			Object  string `json:"object"`
			Choices []struct {
				Delta        delta   `json:"delta"`
				FinishReason *string `json:"finish_reason"`
			} `json:"choices"`
			Usage *struct {
				PromptTokens     int `json:"prompt_tokens"`
				CompletionTokens int `json:"completion_tokens"`
			} `json:"usage"`
		}
		if err := json.Unmarshal([]byte(ev[1]), &c); err != nil || c.Object != "chat.completion.chunk" {
			t.Fatalf("chunk %d: %v %s", i, err, ev[1])
		}
		if c.Usage != nil {
			usageChunks++
			if i != len(events)-2 || len(c.Choices) != 0 || c.Usage.PromptTokens != 7 || c.Usage.CompletionTokens != 9 {
				t.Errorf("usage chunk %d of %d: %s", i, len(events), ev[1])
			}
		}
		for _, ch := range c.Choices {
			if ch.Delta.Content != nil {
				text += *ch.Delta.Content
			}
			shared = shared || len(ch.Delta.ToolCalls) > 1
			for _, tc := range ch.Delta.ToolCalls {
				if tc.Function.Name != "" && tc.Function.Arguments != "" {
					t.Errorf("a chunk has both the name and arguments of call %d", tc.Index)
				}
				names[tc.Index] += tc.Function.Name
				args[tc.Index] += tc.Function.Arguments
				order = append(order, tc.Index)
			}
		}
	}
	if text != "Checking." || usageChunks != 1 || !shared {
		t.Errorf("text %q, %d usage chunks, shared chunk %v", text, usageChunks, shared)
	}
	for i, c := range twoCalls[0].Calls {
		if names[i] != c.Name || args[i] != c.Arguments {
			t.Errorf("call %d assembled as %s(%s), want %s(%s)", i, names[i], args[i], c.Name, c.Arguments)
		}
	}
	// Interleaved: call 1 shows up before call 0's last piece.
	first1, last0 := -1, -1
	for i, x := range order {
		if x == 1 && first1 < 0 {
			first1 = i
		}
		if x == 0 {
			last0 = i
		}
	}
	if first1 < 0 || first1 > last0 {
		t.Errorf("calls not interleaved: %v", order)
	}

	// Without include_usage no chunk has a usage member.
	_, _, body = post(t, f.URL()+"/chat/completions", `{"model":"gpt-4o","stream":true,"messages":[{"role":"user","content":"x"}]}`, "Authorization", "Bearer k")
	if bytes.Contains(body, []byte(`"usage"`)) {
		t.Error("usage sent without stream_options.include_usage")
	}
}

func TestAnthropicStream(t *testing.T) {
	f := upstreamtest.New(t, upstreamtest.Anthropic, twoCalls, upstreamtest.Options{})
	status, _, body := post(t, f.URL()+"/v1/messages", `{"model":"claude-sonnet-4-5","max_tokens":100,"stream":true,"messages":[{"role":"user","content":"x"}]}`, "x-api-key", "k", "anthropic-version", "2023-06-01")
	if status != 200 {
		t.Fatalf("status %d: %s", status, body)
	}
	events := sse(t, body)
	var names []string
	partial := map[int]string{}
	var text string
	for _, ev := range events {
		var e struct {
			Type  string `json:"type"`
			Index int    `json:"index"`
			Delta struct {
				Type        string `json:"type"`
				Text        string `json:"text"`
				PartialJSON string `json:"partial_json"`
				StopReason  string `json:"stop_reason"`
			} `json:"delta"`
			Usage struct {
				OutputTokens int `json:"output_tokens"`
			} `json:"usage"`
		}
		if err := json.Unmarshal([]byte(ev[1]), &e); err != nil || e.Type != ev[0] {
			t.Fatalf("event %q: %v %s", ev[0], err, ev[1])
		}
		if len(names) == 0 || names[len(names)-1] != e.Type {
			names = append(names, e.Type)
		}
		text += e.Delta.Text
		partial[e.Index] += e.Delta.PartialJSON
		if e.Type == "message_delta" && (e.Delta.StopReason != "tool_use" || e.Usage.OutputTokens != 9) {
			t.Errorf("message_delta %s", ev[1])
		}
	}
	want := "message_start ping content_block_start content_block_delta content_block_stop content_block_start content_block_delta content_block_stop content_block_start content_block_delta content_block_stop message_delta message_stop"
	if got := strings.Join(names, " "); got != want {
		t.Errorf("events\n%s\nwant\n%s", got, want)
	}
	if text != "Checking." || partial[1] != twoCalls[0].Calls[0].Arguments || partial[2] != twoCalls[0].Calls[1].Arguments {
		t.Errorf("text %q, inputs %v", text, partial)
	}
}

func TestGeminiStream(t *testing.T) {
	f := upstreamtest.New(t, upstreamtest.Gemini, twoCalls, upstreamtest.Options{})
	req := `{"contents":[{"role":"user","parts":[{"text":"x"}]}]}`
	check := func(chunks []json.RawMessage) {
		t.Helper()
		var text string
		var calls []string
		for i, raw := range chunks {
			var r struct {
				Candidates []struct {
					Content struct {
						Parts []struct {
							Text         *string `json:"text"`
							FunctionCall *struct {
								ID   string          `json:"id"`
								Name string          `json:"name"`
								Args json.RawMessage `json:"args"`
							} `json:"functionCall"`
						} `json:"parts"`
						Role string `json:"role"`
					} `json:"content"`
					FinishReason string `json:"finishReason"`
				} `json:"candidates"`
				UsageMetadata struct {
					PromptTokenCount     int `json:"promptTokenCount"`
					CandidatesTokenCount int `json:"candidatesTokenCount"`
				} `json:"usageMetadata"`
				ModelVersion string `json:"modelVersion"`
			}
			if err := json.Unmarshal(raw, &r); err != nil || len(r.Candidates) != 1 || r.Candidates[0].Content.Role != "model" || r.ModelVersion != "gemini-2.5-flash" {
				t.Fatalf("chunk %d: %v %s", i, err, raw)
			}
			last := i == len(chunks)-1
			if (r.Candidates[0].FinishReason == "STOP") != last || (r.UsageMetadata.CandidatesTokenCount == 9) != last || r.UsageMetadata.PromptTokenCount != 7 {
				t.Errorf("chunk %d of %d: finish reason and full usage belong to the last: %s", i, len(chunks), raw)
			}
			for _, p := range r.Candidates[0].Content.Parts {
				if p.Text != nil {
					text += *p.Text
				}
				if p.FunctionCall != nil {
					if p.FunctionCall.ID != "" {
						t.Errorf("a function call has an id the script did not give: %s", raw)
					}
					calls = append(calls, p.FunctionCall.Name+string(p.FunctionCall.Args))
				}
			}
		}
		want := []string{"get_weather" + twoCalls[0].Calls[0].Arguments, "get_time" + twoCalls[0].Calls[1].Arguments}
		if text != "Checking." || strings.Join(calls, " ") != strings.Join(want, " ") {
			t.Errorf("text %q calls %q", text, calls)
		}
	}
	// alt=sse: events separated by \r\n\r\n.
	status, h, body := post(t, f.URL()+"/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse", req, "x-goog-api-key", "k")
	if status != 200 || h.Get("Content-Type") != "text/event-stream" || !bytes.HasSuffix(body, []byte("}\r\n\r\n")) {
		t.Fatalf("status %d type %q: %q", status, h.Get("Content-Type"), body)
	}
	var chunks []json.RawMessage
	for _, ev := range sse(t, body) {
		chunks = append(chunks, json.RawMessage(ev[1]))
	}
	check(chunks)
	// Without alt=sse: one JSON array.
	status, _, body = post(t, f.URL()+"/v1beta/models/gemini-2.5-flash:streamGenerateContent?key=k", req)
	if status != 200 {
		t.Fatalf("status %d: %s", status, body)
	}
	chunks = nil
	if err := json.Unmarshal(body, &chunks); err != nil {
		t.Fatalf("not a JSON array: %v: %s", err, body)
	}
	check(chunks)
	if k := f.Requests()[1].Key(); k != "k" {
		t.Errorf("key from the query: %q", k)
	}
}

// TestUpstreamError: a scripted error is answered in the provider's format.
func TestUpstreamError(t *testing.T) {
	script := upstreamtest.Script{{Error: &upstreamtest.Error{Status: 529, Message: "Overloaded"}}}
	f := upstreamtest.New(t, upstreamtest.Anthropic, script, upstreamtest.Options{})
	status, _, body := post(t, f.URL()+"/v1/messages", `{"model":"m","max_tokens":5,"stream":true,"messages":[{"role":"user","content":"x"}]}`, "x-api-key", "k", "anthropic-version", "2023-06-01")
	if status != 529 || !strings.Contains(string(body), `"type":"overloaded_error","message":"Overloaded"`) {
		t.Errorf("status %d: %s", status, body)
	}
}

// TestPacing: Latency delays the answer, ChunkDelay spaces the events,
// NoRecording counts without keeping requests.
func TestPacing(t *testing.T) {
	f := upstreamtest.New(t, upstreamtest.OpenAI, upstreamtest.WeatherScript(), upstreamtest.Options{Latency: 30 * time.Millisecond, ChunkDelay: 5 * time.Millisecond, NoRecording: true})
	start := time.Now()
	_, _, body := post(t, f.URL()+"/chat/completions", `{"model":"m","stream":true,"messages":[{"role":"user","content":"x"}]}`, "Authorization", "Bearer k")
	n := len(sse(t, body))
	if min := 30*time.Millisecond + time.Duration(n-1)*5*time.Millisecond; time.Since(start) < min {
		t.Errorf("%d events in %v, want at least %v", n, time.Since(start), min)
	}
	if f.Calls() != 1 || len(f.Requests()) != 0 {
		t.Errorf("calls %d, recorded %d", f.Calls(), len(f.Requests()))
	}
}
