package gateway

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"reflect"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/lookout-dev/lookout/internal/policy"
	"github.com/lookout-dev/lookout/internal/store"
)

// TestRequestCacheSameAsWhole reads conversations that grow call by call,
// as agents send them, and requests that change, through a requestCache,
// and checks each read equals reading the body whole: events, model,
// stream and tools, heads and sums, and the error of a body that does not
// read.
func TestRequestCacheSameAsWhole(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	pad := strings.Repeat("You are a careful assistant. ", 150) // past minCachedBody soon
	openaiMsg := func(i int) string {
		switch i % 4 {
		case 0:
			return fmt.Sprintf(`{"role":"user","content":"question %d"}`, i)
		case 1:
			return fmt.Sprintf(`{"role":"assistant","content":null,"tool_calls":[{"id":"c%d","type":"function","function":{"name":"get","arguments":"{\"n\": %d}"}}]}`, i, i)
		case 2:
			return fmt.Sprintf(`{"role":"tool","tool_call_id":"c%d","content":"out %d"}`, i-1, i)
		}
		return fmt.Sprintf(`{"role":"assistant","content":[{"type":"text","text":"answer %d"}]}`, i)
	}
	anthropicMsg := func(i int) string {
		switch i % 4 {
		case 0:
			return fmt.Sprintf(`{"role":"user","content":"question %d"}`, i)
		case 1:
			return fmt.Sprintf(`{"role":"assistant","content":[{"type":"text","text":"looking"},{"type":"tool_use","id":"t%d","name":"get","input":{"n":%d}}]}`, i, i)
		case 2:
			return fmt.Sprintf(`{"role":"user","content":[{"type":"tool_result","tool_use_id":"t%d","content":"out %d"}]}`, i-1, i)
		}
		return fmt.Sprintf(`{"role":"assistant","content":"answer %d"}`, i)
	}
	type variant struct {
		name string
		p    Provider
		sh   *requestShape
		msg  func(int) string
		body func(msgs []string, n int) string
	}
	join := func(msgs []string, sep string) string { return strings.Join(msgs, ","+sep) }
	variants := []variant{
		{name: "openai", p: OpenAI(), sh: openAIRequest, msg: openaiMsg, body: func(m []string, n int) string {
			return `{"model":"gpt-4o","messages":[{"role":"system","content":"` + pad + `"},` + join(m, "") + `],"tools":[{"type":"function","function":{"name":"get"}}],"stream":` + fmt.Sprint(n%2 == 0) + `}`
		}},
		{name: "openai spaced, fields after", p: OpenAI(), sh: openAIRequest, msg: openaiMsg, body: func(m []string, n int) string {
			return "{\n  \"messages\": [\n    {\"role\":\"system\",\"content\":\"" + pad + "\"},\n    " + join(m, "\n    ") + "\n  ],\n  \"model\": \"m" + fmt.Sprint(n%3) + "\",\n  \"functions\": [{\"name\": \"f\"}]\n}\n"
		}},
		{name: "anthropic system first", p: Anthropic(), sh: anthropicRequest, msg: anthropicMsg, body: func(m []string, n int) string {
			return `{"model":"claude","max_tokens":10,"system":"` + pad + `","messages":[` + join(m, "") + `]}`
		}},
		{name: "anthropic system after", p: Anthropic(), sh: anthropicRequest, msg: anthropicMsg, body: func(m []string, n int) string {
			return `{"model":"claude","messages":[{"role":"user","content":"` + pad + `"},` + join(m, "") + `],"system":[{"type":"text","text":"sys ` + fmt.Sprint(n%2) + `"}]}`
		}},
	}
	for _, v := range variants {
		t.Run(v.name, func(t *testing.T) {
			c := newRequestCache(maxRequestBytes)
			resumed := 0
			type readReq struct {
				pr   *parsedRequest
				want Request
			}
			var read []readReq
			for conv := range 6 {
				var msgs []string
				for call := range 30 {
					msgs = append(msgs, v.msg(len(msgs)))
					if rng.IntN(3) == 0 {
						msgs = append(msgs, v.msg(len(msgs)))
					}
					if conv == 5 && call > 3 && rng.IntN(4) == 0 {
						// An earlier message sent back changed.
						k := rng.IntN(len(msgs))
						msgs[k] = strings.Replace(msgs[k], `"role"`, `"name":"x","role"`, 1)
					}
					body := v.body(msgs, call)
					if conv == 4 && call%7 == 6 {
						// A body that does not read after a kept prefix.
						body = strings.Replace(body, "]", "]]", 1)
						body = body[:len(body)-3] + `,"model":7}`
					}
					var branch *readReq
					if call%5 == 3 {
						// Another request from the same point (a retry that
						// went another way), read first.
						alt := v.body(append(slices.Clone(msgs[:len(msgs)-1]), v.msg(len(msgs)+7)), call)
						bw, _ := v.p.ParseRequest([]byte(alt))
						if bp, err := c.read(v.sh, "owner", []byte(alt)); err == nil {
							branch = &readReq{bp, bw}
						}
					}
					want, wantErr := v.p.ParseRequest([]byte(body))
					pr, err := c.read(v.sh, "owner", []byte(body))
					if branch != nil && err == nil && !reflect.DeepEqual(branch.pr.Request, branch.want) {
						t.Fatalf("conv %d call %d: a request read from the same point changed", conv, call)
					}
					if fmt.Sprint(err) != fmt.Sprint(wantErr) {
						t.Fatalf("conv %d call %d: error %v, read whole: %v", conv, call, err, wantErr)
					}
					if err != nil {
						continue
					}
					if !reflect.DeepEqual(pr.Request, want) {
						t.Fatalf("conv %d call %d: read after a kept request differs from read whole:\n%+v\n%+v", conv, call, pr.Request, want)
					}
					if pr.from != nil {
						resumed++
					}
					heads := pr.extendHeads(pr.Events)
					if !reflect.DeepEqual(heads, Heads(want.Events)) {
						t.Fatalf("conv %d call %d: heads differ", conv, call)
					}
					sums := prefixSums(pr.Events, pr.knownSums())
					if !reflect.DeepEqual(sums, prefixSums(want.Events, nil)) {
						t.Fatalf("conv %d call %d: sums differ", conv, call)
					}
					pr.heads, pr.sums = heads, sums
					c.keep(pr)
					// What was read before stays as it was read, whatever
					// was read after it.
					read = append(read, readReq{pr, want})
					for _, k := range []int{len(read) - 2, rng.IntN(len(read))} {
						if k >= 0 && !reflect.DeepEqual(read[k].pr.Request, read[k].want) {
							t.Fatalf("conv %d call %d: a request read earlier changed", conv, call)
						}
					}
				}
			}
			if resumed < 100 {
				t.Errorf("%d of 180 requests were read after a kept one; want most", resumed)
			}
		})
	}
}

// TestRequestCacheBounded checks the cache keeps to its byte bound.
func TestRequestCacheBounded(t *testing.T) {
	c := newRequestCache(1 << 20)
	for i := range 200 {
		body := fmt.Sprintf(`{"model":"m%03d","messages":[{"role":"user","content":"%s"}]}`, i, strings.Repeat("x", 8<<10))
		pr, err := c.read(openAIRequest, "owner", []byte(body))
		if err != nil {
			t.Fatal(err)
		}
		c.keep(pr)
	}
	if c.bytes > c.maxBytes || c.lru.Len() == 0 || c.lru.Len() >= 200 {
		t.Errorf("kept %d requests of %d bytes (bound %d)", c.lru.Len(), c.bytes, c.maxBytes)
	}
}

// TestProxyLongConversationSameAsFull runs one long conversation through
// two proxies, one reading each request after the kept one and extending
// its Trace (the default), the other analyzing every call in full, with
// log-mode guardrails whose rules look back over the whole conversation,
// and checks both recorded the same findings at the same places.
func TestProxyLongConversationSameAsFull(t *testing.T) {
	ctx := context.Background()
	st, u, d := recorderStore(t)
	d2, err := st.CreateDataset(ctx, store.Dataset{OwnerID: u.ID, Name: "full", Metadata: json.RawMessage(`{}`)})
	if err != nil {
		t.Fatal(err)
	}
	var n atomic.Int64
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		i := (n.Add(1) - 1) / 2 // both proxies' calls i get the same answer
		msg := fmt.Sprintf(`{"role":"assistant","content":"step %d"}`, i)
		if i%3 == 0 {
			to := "bob@example.com"
			if i%9 == 0 {
				to = "eve@evil.com"
			}
			msg = fmt.Sprintf(`{"role":"assistant","content":null,"tool_calls":[{"id":"c%d","type":"function","function":{"name":"send_email","arguments":"{\"to\":\"%s\"}"}}]}`, i, to)
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"id":"x","object":"chat.completion","model":"m","choices":[{"index":0,"message":%s,"finish_reason":"stop"}],"usage":{"prompt_tokens":1,"completion_tokens":1}}`, msg)
	}))
	defer up.Close()
	pol, err := policy.ParseFile("p.iv", `
raise "mail to evil" if:
    (call: ToolCall)
    call is tool:send_email({to: r".*@evil\.com"})

raise "secret then mail" if:
    (out: ToolOutput) -> (call: ToolCall)
    "secret" in out.content
    call is tool:send_email

raise "many mails" if:
    count(min=3):
        (c: ToolCall)
        c is tool:send_email
`)
	if err != nil {
		t.Fatal(err)
	}
	rails := []*Guardrail{{ID: "p", Name: "p", Mode: "log", Policy: pol}}
	proxies := []*Proxy{
		{Guard: &Guard{}, Recorder: NewRecorder(st, nil)},
		{Guard: &Guard{Full: true}, Recorder: NewRecorder(st, nil)},
	}
	datasets := []string{d.ID, d2.ID}
	msgs := []string{`{"role":"system","content":"` + strings.Repeat("Be brief. ", 500) + `"}`, `{"role":"user","content":"go"}`}
	for call := range 60 {
		body := []byte(`{"model":"m","messages":[` + strings.Join(msgs, ",") + `]}`)
		var answers []string
		for k, p := range proxies {
			w := httptest.NewRecorder()
			c := &Call{Provider: OpenAI(), Upstream: up.URL, Header: http.Header{}, Body: body, OwnerID: u.ID, DatasetID: datasets[k], Rails: rails}
			p.Serve(w, httptest.NewRequest("POST", "/", nil), c)
			if w.Code != http.StatusOK {
				t.Fatalf("call %d: status %d: %s", call, w.Code, w.Body)
			}
			answers = append(answers, w.Body.String())
		}
		if answers[0] != answers[1] {
			t.Fatalf("call %d: the two proxies answered differently:\n%s\n%s", call, answers[0], answers[1])
		}
		var resp struct {
			Choices []struct {
				Message json.RawMessage `json:"message"`
			} `json:"choices"`
		}
		if err := json.Unmarshal([]byte(answers[0]), &resp); err != nil || len(resp.Choices) != 1 {
			t.Fatalf("call %d: %v", call, err)
		}
		msgs = append(msgs, string(resp.Choices[0].Message))
		if strings.Contains(msgs[len(msgs)-1], "tool_calls") {
			var m struct {
				ToolCalls []struct{ ID string } `json:"tool_calls"`
			}
			json.Unmarshal(resp.Choices[0].Message, &m)
			out := "sent"
			if call%4 == 0 {
				out = "sent; the secret is 42"
			}
			msgs = append(msgs, fmt.Sprintf(`{"role":"tool","tool_call_id":"%s","content":"%s"}`, m.ToolCalls[0].ID, out))
		}
		msgs = append(msgs, fmt.Sprintf(`{"role":"user","content":"next %d"}`, call))
	}
	var found [2][]string
	for k, p := range proxies {
		if err := p.Recorder.Close(ctx); err != nil {
			t.Fatal(err)
		}
		traces, _, err := st.ListTraces(ctx, datasets[k], store.Page{Limit: 10})
		if err != nil || len(traces) != 1 {
			t.Fatalf("proxy %d: %d traces (%v), want the conversation as one", k, len(traces), err)
		}
		anns, err := st.ListAnnotations(ctx, traces[0].ID)
		if err != nil {
			t.Fatal(err)
		}
		for _, a := range anns {
			found[k] = append(found[k], a.Address+" "+a.Content)
		}
	}
	if len(found[1]) < 3 {
		t.Fatalf("the full analysis found %d findings; the test wants several", len(found[1]))
	}
	if !reflect.DeepEqual(found[0], found[1]) {
		t.Errorf("findings differ:\nextended: %q\nfull:     %q", found[0], found[1])
	}
	if c := proxies[0].requests; c == nil || c.hits < 50 {
		t.Errorf("the proxy read %v requests after a kept one; want nearly all 60", c)
	}
}

// TestRequestCacheByOwner checks one owner's kept requests are not read
// after by another's (how fast a request reads would tell what others sent).
func TestRequestCacheByOwner(t *testing.T) {
	c := newRequestCache(maxRequestBytes)
	msgs := `{"role":"system","content":"` + strings.Repeat("x", 8<<10) + `"},{"role":"user","content":"hi"}`
	pr, err := c.read(openAIRequest, "alice", []byte(`{"model":"m","messages":[`+msgs+`]}`))
	if err != nil {
		t.Fatal(err)
	}
	c.keep(pr)
	next := []byte(`{"model":"m","messages":[` + msgs + `,{"role":"assistant","content":"hello"}]}`)
	for _, tc := range []struct {
		owner string
		after bool
	}{{"bob", false}, {"alice", true}} {
		pr, err := c.read(openAIRequest, tc.owner, next)
		if err != nil {
			t.Fatal(err)
		}
		if got := pr.from != nil; got != tc.after {
			t.Errorf("%s's request read after alice's kept one: %v, want %v", tc.owner, got, tc.after)
		}
	}
}
