package gateway

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/lookout-dev/lookout/internal/jsonscan"
	"github.com/lookout-dev/lookout/internal/trace"
)

// fuzzProviders are the providers a fuzz input's first byte picks from.
var fuzzProviders = []Provider{OpenAI(), Anthropic(), Gemini()}

func fuzzIndex(t testing.TB, name string) uint8 {
	for i, p := range fuzzProviders {
		if strings.HasPrefix(name, p.Name()+"-") {
			return uint8(i)
		}
	}
	t.Fatalf("%s: no provider", name)
	return 0
}

// requireStorable fails unless events encode to canonical JSON that reads back
// as the same JSON: what the gateway stores must survive the store.
func requireStorable(t *testing.T, what string, events []trace.Event) {
	t.Helper()
	a := trace.AppendEvents(nil, events)
	back, err := trace.DecodeEvents(jsonscan.New(a), "events")
	if err != nil {
		t.Fatalf("%s: events do not read back: %v\n%s", what, err, a)
	}
	if b := trace.AppendEvents(nil, back); !bytes.Equal(a, b) {
		t.Fatalf("%s: events changed on the way back:\n%s\n%s", what, a, b)
	}
}

// requirePlacedError fails unless err says where: a JSON error has a path, an
// upstream error a message.
func requirePlacedError(t *testing.T, what string, err error) {
	t.Helper()
	var se *jsonscan.Error
	var up *UpstreamError
	switch {
	case errors.As(err, &se):
		if !strings.HasPrefix(se.Path, "$") || se.Msg == "" {
			t.Fatalf("%s: error without a place: %v", what, err)
		}
	case errors.As(err, &up):
	default:
		t.Fatalf("%s: error of no known kind: %v", what, err)
	}
}

// FuzzParseRequest: no body makes a provider panic, and every error is
// placed; a body that reads gives events that survive canonical JSON, and
// the same events when read again. Response bodies go through
// ParseResponse the same way (it shares the content readers).
func FuzzParseRequest(f *testing.F) {
	for _, pattern := range []string{"*-request-*.json", "*-response-*.json"} {
		for _, name := range testdataFiles(f, pattern) {
			f.Add(fuzzIndex(f, name), readTestdata(f, name))
		}
	}
	for i, s := range []string{
		`{"messages":[{"role":"assistant","content":null,"tool_calls":[{"id":"a","function":{"name":"f","arguments":"{\"a\":\"\\u00e9\"}"}}],"refusal":null}]}`,
		`{"messages":[{"role":"user","content":[{"type":"tool_result","tool_use_id":"t","content":[{"type":"image","source":{"type":"base64","media_type":"image/png","data":"AA=="}}],"is_error":true},{"type":"thinking","thinking":"x","signature":"y"}]}],"system":[{"type":"text","text":"s"}]}`,
		`{"contents":[{"role":"model","parts":[{"function_call":{"name":"f","args":{}}},{"text":"t","thought":true}]},{"role":"user","parts":[{"functionResponse":{"name":"f","response":{}}}]}],"systemInstruction":"s"}`,
		`[{"candidates":[{"content":{"parts":[{"text":"a"}]}}]},{"error":{"code":500,"message":"m"}}]`,
	} {
		f.Add(uint8(i%3), []byte(s))
	}
	f.Fuzz(func(t *testing.T, which uint8, body []byte) {
		p := fuzzProviders[int(which)%len(fuzzProviders)]
		req, err := p.ParseRequest(body)
		if err != nil {
			requirePlacedError(t, p.Name()+" request", err)
		} else {
			requireStorable(t, p.Name()+" request", req.Events)
			again, _ := p.ParseRequest(body)
			if a, b := eventsJSON(req.Events), eventsJSON(again.Events); a != b {
				t.Fatalf("read twice, two answers:\n%s\n%s", a, b)
			}
			if req.Tools != nil && !jsonscan.Valid(req.Tools) {
				t.Fatalf("tools not JSON: %s", req.Tools)
			}
		}
		resp, err := p.ParseResponse(body)
		if err != nil {
			requirePlacedError(t, p.Name()+" response", err)
		} else {
			requireStorable(t, p.Name()+" response", resp.Events)
		}
	})
}

// FuzzStream: no byte stream makes a Stream panic, and every error is
// placed; when a stream says done it is settled; what it assembled, at any
// point, survives canonical JSON.
func FuzzStream(f *testing.F) {
	for _, name := range testdataFiles(f, "*-stream-*.sse") {
		f.Add(fuzzIndex(f, name), readTestdata(f, name))
	}
	for i, s := range []string{
		"data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":1,\"id\":\"b\",\"function\":{\"name\":\"g\",\"arguments\":\"{\\\"\"}},{\"index\":0,\"function\":{\"arguments\":\"{}\"}}]},\"finish_reason\":null}]}\n\ndata: [DONE]\n\n",
		"event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"tool_use\",\"id\":\"a\",\"name\":\"f\",\"input\":{}}}\n\nevent: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"{\\\"a\\\":\"}}\n\n",
		"data: {\"candidates\":[{\"content\":{\"parts\":[{\"functionCall\":{\"name\":\"f\",\"args\":{}}}]}}]}\r\n\r\ndata: {\"error\":{\"code\":400,\"message\":\"m\"}}\r\n\r\n",
	} {
		f.Add(uint8(i%3), []byte(s))
	}
	f.Fuzz(func(t *testing.T, which uint8, data []byte) {
		p := fuzzProviders[int(which)%len(fuzzProviders)]
		st := p.NewStream()
		for i, ev := range frame(data, 17) {
			_, done, err := st.Add(ev.name, ev.data)
			if err != nil {
				requirePlacedError(t, p.Name()+" stream", err)
				return
			}
			if done && !st.Settled() {
				t.Fatalf("event %d: done but not settled", i)
			}
			if i%8 == 0 {
				requireStorable(t, p.Name()+" stream", st.Response().Events)
			}
		}
		requireStorable(t, p.Name()+" stream", st.Response().Events)
	})
}

// FuzzRequestCache reads a request through a requestCache after another
// whose bytes it begins with, up to any point, and checks it reads as the
// body read whole does: the same events, model, stream and tools, the same
// error.
func FuzzRequestCache(f *testing.F) {
	for _, name := range testdataFiles(f, "*-request-*.json") {
		b := readTestdata(f, name)
		f.Add(fuzzIndex(f, name), b, uint16(len(b)/2), []byte(`,{"role":"user","content":"more"}]}`))
	}
	f.Add(uint8(0), []byte(`{"model":"m","messages":[{"role":"user","content":"a"},{"role":"assistant","content":"b"}],"stream":true}`),
		uint16(51), []byte(`,{"role":"user","content":"c"}],"tools":[{"type":"function","function":{"name":"f"}}]}`))
	f.Add(uint8(1), []byte(`{"system":"s","messages":[{"role":"user","content":"a"}]}`), uint16(50), []byte(`,{"role":"assistant","content":[{"type":"tool_use","id":"t","name":"f","input":{}}]}],"system":"t"}`))
	f.Fuzz(func(t *testing.T, which uint8, first []byte, cut uint16, tail []byte) {
		p := fuzzProviders[int(which)%len(fuzzProviders)]
		sp, ok := p.(shaped)
		if !ok || len(first) == 0 {
			return
		}
		c := newRequestCache(maxRequestBytes)
		c.minBody = 0
		if pr, err := c.read(sp.shape(), "o", first); err == nil {
			pr.heads = Heads(pr.Events)
			pr.sums = prefixSums(pr.Events, nil)
			c.keep(pr)
		}
		second := append(append([]byte(nil), first[:int(cut)%(len(first)+1)]...), tail...)
		want, wantErr := p.ParseRequest(second)
		pr, err := c.read(sp.shape(), "o", second)
		if fmt.Sprint(err) != fmt.Sprint(wantErr) {
			t.Fatalf("error %v, read whole: %v", err, wantErr)
		}
		if err != nil {
			return
		}
		if a, b := eventsJSON(pr.Events), eventsJSON(want.Events); a != b || pr.Model != want.Model || pr.Stream != want.Stream || !bytes.Equal(pr.Tools, want.Tools) {
			t.Fatalf("read after a kept request:\n%s %q %v %s\nread whole:\n%s %q %v %s", a, pr.Model, pr.Stream, pr.Tools, b, want.Model, want.Stream, want.Tools)
		}
		if h := pr.extendHeads(pr.Events); !slices.Equal(h, Heads(want.Events)) {
			t.Fatal("heads differ from the whole read's")
		}
	})
}
