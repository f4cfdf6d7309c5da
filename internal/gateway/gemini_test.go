package gateway

import (
	"encoding/json"
	"errors"
	"fmt"
	"math/rand"
	"strings"
	"testing"

	"github.com/lookout-dev/lookout/internal/jsonscan"
	"github.com/lookout-dev/lookout/internal/trace"
)

// TestGeminiContents: how contents and parts become events.
func TestGeminiContents(t *testing.T) {
	id := func(name, args string, place int) string {
		return geminiCallID(name, canonJSON(json.RawMessage(args)), place)
	}
	for _, tc := range []struct{ name, body, want string }{
		{"roles, system instruction, text runs",
			`{"systemInstruction":{"parts":[{"text":"Be "},{"text":"brief."}]},"contents":[{"role":"user","parts":[{"text":"Hel"},{"text":"lo"}]},{"role":"model","parts":[{"text":"Hi."}]},{"parts":[{"text":"no role is user"}]}]}`,
			`[{"role":"system","content":"Be brief."},{"role":"user","content":"Hello"},{"role":"assistant","content":"Hi."},{"role":"user","content":"no role is user"}]`},
		{"snake_case members, as the API accepts them",
			`{"system_instruction":{"parts":[{"text":"S"}]},"contents":[{"role":"user","parts":[{"inline_data":{"mime_type":"image/png","data":"AA=="}},{"file_data":{"mime_type":"image/jpeg","file_uri":"https://generativelanguage.googleapis.com/v1beta/files/abc"}}]},{"role":"model","parts":[{"function_call":{"name":"f","args":{"a":1}}}]}]}`,
			`[{"role":"system","content":"S"},{"role":"user","content":[{"type":"image","image_url":"data:image/png;base64,AA=="},{"type":"image","image_url":"https://generativelanguage.googleapis.com/v1beta/files/abc"}]},{"role":"assistant","content":null,"tool_calls":[{"id":"` + id("f", `{"a":1}`, 0) + `","type":"function","function":{"name":"f","arguments":{"a":1}}}]}]`},
		{"media that is not an image, code execution: kept as parts",
			`{"contents":[{"role":"user","parts":[{"inlineData":{"mimeType":"audio/wav","data":"UklG"}},{"fileData":{"mimeType":"application/pdf","fileUri":"gs://b/a.pdf"}}]},{"role":"model","parts":[{"executableCode":{"language":"PYTHON","code":"print(1)"}},{"codeExecutionResult":{"outcome":"OUTCOME_OK","output":"1\n"}}]}]}`,
			`[{"role":"user","content":[{"type":"inlineData","inlineData":{"mimeType":"audio/wav","data":"UklG"}},{"type":"fileData","fileData":{"mimeType":"application/pdf","fileUri":"gs://b/a.pdf"}}]},{"role":"assistant","content":[{"type":"executableCode","executableCode":{"language":"PYTHON","code":"print(1)"}},{"type":"codeExecutionResult","codeExecutionResult":{"outcome":"OUTCOME_OK","output":"1\n"}}]}]`},
		{"thoughts run together; signatures go",
			`{"contents":[{"role":"model","parts":[{"text":"Think ","thought":true},{"text":"more.","thought":true,"thoughtSignature":"c2ln"},{"text":"Answer.","thoughtSignature":"c2ln"}]}]}`,
			`[{"role":"assistant","content":[{"type":"thinking","thinking":"Think more."},{"type":"text","text":"Answer."}]}]`},
		{"responses answer the earliest unanswered call of their name, before the text",
			`{"contents":[{"role":"model","parts":[{"text":"Checking."},{"functionCall":{"name":"w","args":{"c":"A"}}},{"functionCall":{"name":"w","args":{"c":"B"}}},{"functionCall":{"name":"t","args":{}}}]},` +
				`{"role":"user","parts":[{"text":"thanks"},{"functionResponse":{"name":"t","response":{"now":"12:00"}}},{"functionResponse":{"name":"w","response":{"r":"a"}}}]},` +
				`{"role":"function","parts":[{"functionResponse":{"name":"w","response":{"r":"b"}}},{"functionResponse":{"name":"nobody","response":{}}}]}]}`,
			`[{"role":"assistant","content":"Checking.","tool_calls":[{"id":"` + id("w", `{"c":"A"}`, 0) + `","type":"function","function":{"name":"w","arguments":{"c":"A"}}},{"id":"` + id("w", `{"c":"B"}`, 1) + `","type":"function","function":{"name":"w","arguments":{"c":"B"}}},{"id":"` + id("t", `{}`, 2) + `","type":"function","function":{"name":"t","arguments":{}}}]},` +
				`{"role":"tool","content":"{\"now\":\"12:00\"}","tool_call_id":"` + id("t", `{}`, 2) + `","name":"t"},{"role":"tool","content":"{\"r\":\"a\"}","tool_call_id":"` + id("w", `{"c":"A"}`, 0) + `","name":"w"},{"role":"user","content":"thanks"},` +
				`{"role":"tool","content":"{\"r\":\"b\"}","tool_call_id":"` + id("w", `{"c":"B"}`, 1) + `","name":"w"},{"role":"tool","content":"{}","name":"nobody"}]`},
		{"ids given are kept and link",
			`{"contents":[{"role":"model","parts":[{"functionCall":{"id":"x1","name":"w","args":{"c":"A"}}},{"functionCall":{"id":"x2","name":"w","args":{"c":"B"}}}]},{"role":"user","parts":[{"functionResponse":{"id":"x2","name":"w","response":{"r":"b"}}},{"functionResponse":{"name":"w","response":{"r":"a"}}}]}]}`,
			`[{"role":"assistant","content":null,"tool_calls":[{"id":"x1","type":"function","function":{"name":"w","arguments":{"c":"A"}}},{"id":"x2","type":"function","function":{"name":"w","arguments":{"c":"B"}}}]},{"role":"tool","content":"{\"r\":\"b\"}","tool_call_id":"x2","name":"w"},{"role":"tool","content":"{\"r\":\"a\"}","tool_call_id":"x1","name":"w"}]`},
		{"the same call in two turns: same id, each response to its own",
			`{"contents":[{"role":"model","parts":[{"functionCall":{"name":"poll","args":{}}}]},{"role":"user","parts":[{"functionResponse":{"name":"poll","response":{"s":"busy"}}}]},{"role":"model","parts":[{"functionCall":{"name":"poll","args":{}}}]},{"role":"user","parts":[{"functionResponse":{"name":"poll","response":{"s":"done"}}}]}]}`,
			`[{"role":"assistant","content":null,"tool_calls":[{"id":"` + id("poll", `{}`, 0) + `","type":"function","function":{"name":"poll","arguments":{}}}]},{"role":"tool","content":"{\"s\":\"busy\"}","tool_call_id":"` + id("poll", `{}`, 0) + `","name":"poll"},{"role":"assistant","content":null,"tool_calls":[{"id":"` + id("poll", `{}`, 0) + `","type":"function","function":{"name":"poll","arguments":{}}}]},{"role":"tool","content":"{\"s\":\"done\"}","tool_call_id":"` + id("poll", `{}`, 0) + `","name":"poll"}]`},
		{"a part with a call and text is the call",
			`{"contents":[{"role":"model","parts":[{"text":"hidden?","functionCall":{"name":"f","args":{}}}]}]}`,
			`[{"role":"assistant","content":null,"tool_calls":[{"id":"` + id("f", `{}`, 0) + `","type":"function","function":{"name":"f","arguments":{}}}]}]`},
		{"system instruction as a string; empty parts",
			`{"systemInstruction":"S","contents":[{"role":"user","parts":[]}]}`,
			`[{"role":"system","content":"S"},{"role":"user","content":""}]`},
	} {
		req, err := Gemini().ParseRequest([]byte(tc.body))
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		if got := eventsJSON(req.Events); got != tc.want {
			t.Errorf("%s:\n got %s\nwant %s", tc.name, got, tc.want)
		}
		if req.Model != "" || req.Stream {
			t.Errorf("%s: model %q stream %v: they are the proxy's to fill", tc.name, req.Model, req.Stream)
		}
	}
}

// TestGeminiCallIDs: an id depends on the call (name, arguments in any
// spelling, place), never on where its content is in the conversation.
func TestGeminiCallIDs(t *testing.T) {
	a := geminiCallID("f", canonJSON(json.RawMessage(`{"q": "caf\u00e9"}`)), 0)
	if b := geminiCallID("f", canonJSON(json.RawMessage(`{"q":"café"}`)), 0); a != b {
		t.Errorf("spelling changed the id: %s %s", a, b)
	}
	for _, other := range []string{
		geminiCallID("g", canonJSON(json.RawMessage(`{"q":"café"}`)), 0),
		geminiCallID("f", canonJSON(json.RawMessage(`{"q":"cafe"}`)), 0),
		geminiCallID("f", canonJSON(json.RawMessage(`{"q":"café"}`)), 1),
	} {
		if other == a {
			t.Errorf("different calls share id %s", a)
		}
	}
	if !strings.HasPrefix(a, "gemini-") || len(a) != len("gemini-")+16 {
		t.Errorf("id %s", a)
	}
	// The answer's calls keep their ids wherever the content is re-sent.
	resp, err := Gemini().ParseResponse(readTestdata(t, "gemini-response-tools.json"))
	if err != nil {
		t.Fatal(err)
	}
	content := `{"role":"model","parts":[{"functionCall":{"name":"get_weather","args":{"location":"Paris, France","unit":"celsius"}}},{"functionCall":{"name":"get_weather","args":{"unit":"celsius","location":"Zürich, Switzerland"}}}]}`
	for _, before := range []string{``, `{"role":"user","parts":[{"text":"a"}]},{"role":"model","parts":[{"text":"b"}]},`} {
		req, err := Gemini().ParseRequest([]byte(`{"contents":[` + before + content + `]}`))
		if err != nil {
			t.Fatal(err)
		}
		got := req.Events[len(req.Events)-1].ToolCalls
		if got[0].ID != resp.Events[0].ToolCalls[0].ID {
			t.Errorf("after %q: id %s, answer gave %s", before, got[0].ID, resp.Events[0].ToolCalls[0].ID)
		}
		// Member order is part of the arguments as sent: another order is
		// another call (clients send back what they got).
		if got[1].ID == resp.Events[0].ToolCalls[1].ID {
			t.Errorf("reordered arguments kept the id")
		}
	}
}

func gmChunk(parts string, extra string) sseEvent {
	return sseEvent{data: []byte(`{"candidates":[{"content":{"parts":` + parts + `,"role":"model"},"index":0` + extra + `}],"modelVersion":"gemini-2.5-pro"}`)}
}

// TestGeminiStreamText: text split across chunks anywhere is one text; a
// chunk with a functionCall is held and the stream is settled at once.
func TestGeminiStreamText(t *testing.T) {
	rng := rand.New(rand.NewSource(5))
	text := "Line one — with \"quotes\" and 😀.\nLine two."
	for _, pieces := range splits(text, rng) {
		st := Gemini().NewStream()
		for i, p := range pieces {
			lit, _ := json.Marshal(p)
			extra := ""
			if i == len(pieces)-1 {
				extra = `,"finishReason":"STOP"`
			}
			if hold, done, err := st.Add("", gmChunk(`[{"text":`+string(lit)+`}]`, extra).data); hold || done || err != nil || !st.Settled() {
				t.Fatalf("hold %v done %v err %v", hold, done, err)
			}
		}
		hold, done, err := st.Add("", gmChunk(`[{"functionCall":{"name":"f","args":{"a":1}},"thoughtSignature":"c2ln"},{"text":""}]`, "").data)
		if !hold || done || err != nil || !st.Settled() {
			t.Fatalf("call chunk: hold %v done %v settled %v err %v", hold, done, st.Settled(), err)
		}
		r := st.Response()
		want := `[{"role":"assistant","content":` + string(trace.AppendString(nil, text)) + `,"tool_calls":[{"id":"` + geminiCallID("f", json.RawMessage(`{"a":1}`), 0) + `","type":"function","function":{"name":"f","arguments":{"a":1}}}]}]`
		if got := eventsJSON(r.Events); got != want || r.FinishReason != "STOP" || r.Model != "gemini-2.5-pro" {
			t.Fatalf("pieces %q:\n got %s %q %q\nwant %s", pieces, got, r.FinishReason, r.Model, want)
		}
	}
}

// TestGeminiStreamEdges: usage is the last chunk's, thoughts count as
// output; a blocked prompt has no content and its block reason; an error
// chunk ends the answer.
func TestGeminiStreamEdges(t *testing.T) {
	st := Gemini().NewStream()
	for _, d := range []string{
		`{"candidates":[{"content":{"parts":[{"text":"a"}],"role":"model"}}],"usageMetadata":{"promptTokenCount":4,"totalTokenCount":4}}`,
		`{"candidates":[{"content":{"parts":[{"text":"b"}],"role":"model"},"finishReason":"MAX_TOKENS"}],"usageMetadata":{"promptTokenCount":4,"candidatesTokenCount":2,"thoughtsTokenCount":30,"totalTokenCount":36}}`,
	} {
		if _, _, err := st.Add("", []byte(d)); err != nil {
			t.Fatal(err)
		}
	}
	if r := st.Response(); r.Usage != (Usage{4, 32}) || r.FinishReason != "MAX_TOKENS" || eventsJSON(r.Events) != `[{"role":"assistant","content":"ab"}]` {
		t.Errorf("%+v %q %s", r.Usage, r.FinishReason, eventsJSON(r.Events))
	}
	blocked, err := Gemini().ParseResponse([]byte(`{"promptFeedback":{"blockReason":"SAFETY","safetyRatings":[]},"usageMetadata":{"promptTokenCount":8,"totalTokenCount":8},"modelVersion":"gemini-2.5-flash"}`))
	if err != nil || len(blocked.Events) != 0 || blocked.FinishReason != "SAFETY" {
		t.Errorf("blocked prompt: %v %s %q", err, eventsJSON(blocked.Events), blocked.FinishReason)
	}
	st = Gemini().NewStream()
	hold, done, err := st.Add("", []byte(`{"error":{"code":503,"message":"The model is overloaded.","status":"UNAVAILABLE"}}`))
	if hold || done || err != nil || st.Response().FinishReason != "error" {
		t.Errorf("error chunk: hold %v done %v err %v finish %q", hold, done, err, st.Response().FinishReason)
	}
}

// TestGeminiArrayStream: streamGenerateContent without alt=sse answers a
// JSON array of chunks; read as a response it is the streamed answer.
func TestGeminiArrayStream(t *testing.T) {
	for _, name := range testdataFiles(t, "gemini-stream-*.sse") {
		var chunks []string
		for _, ev := range frame(readTestdata(t, name)) {
			chunks = append(chunks, string(ev.data))
		}
		got, err := Gemini().ParseResponse([]byte("[" + strings.Join(chunks, ",\n") + "]"))
		if err != nil {
			t.Fatal(err)
		}
		want, err := Gemini().ParseResponse(readTestdata(t, strings.Replace(strings.TrimSuffix(name, ".sse"), "-stream-", "-response-", 1)+".json"))
		if err != nil {
			t.Fatal(err)
		}
		sameResponse(t, name, got, want)
	}
	if _, err := Gemini().ParseResponse([]byte(`[{"error":{"code":500,"message":"Internal error","status":"INTERNAL"}}]`)); !errors.As(err, new(*UpstreamError)) {
		t.Errorf("error in an array: %v", err)
	}
}

func TestGeminiStreamBadChunks(t *testing.T) {
	for _, tc := range []struct{ data, path string }{
		{`{"candidates":[{"content":{"parts":[{"functionCall":{"name":"f","args":"x"}}]}}]}`, "$.candidates[0].content.parts[0].functionCall.args"},
		{`{"candidates":[{"content":{"parts":[{"text":1}]}}]}`, "$.candidates[0].content.parts[0].text"},
		{`{"candidates":{}}`, "$.candidates"},
		{`{"usageMetadata":{"promptTokenCount":"3"}}`, "$.usageMetadata.promptTokenCount"},
		{`{"candidates":[]`, "$.candidates"},
	} {
		_, _, err := Gemini().NewStream().Add("", []byte(tc.data))
		var se *jsonscan.Error
		if !errors.As(err, &se) || se.Path != tc.path {
			t.Errorf("%s: %v, want path %s", tc.data, err, tc.path)
		}
	}
}

// TestGeminiOnlyFirstCandidate: other candidates are neither recorded nor
// held for.
func TestGeminiOnlyFirstCandidate(t *testing.T) {
	st := Gemini().NewStream()
	hold, _, err := st.Add("", []byte(`{"candidates":[{"content":{"parts":[{"text":"one"}]},"index":0},{"content":{"parts":[{"functionCall":{"name":"f"}}]},"index":1}]}`))
	if hold || err != nil || fmt.Sprint(eventsJSON(st.Response().Events)) != `[{"role":"assistant","content":"one"}]` {
		t.Errorf("hold %v err %v %s", hold, err, eventsJSON(st.Response().Events))
	}
}
