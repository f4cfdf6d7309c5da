package trace

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lookout-dev/lookout/internal/jsonscan"
)

// full exercises every member of the model plus unknown members at each level.
const full = `{"id":"t1","name":"run 1","index":3,"metadata":{"model":"gpt-4o"},` +
	`"events":[{"role":"system","content":null},` +
	`{"role":"user","content":[{"type":"text","text":"hi"},{"type":"image_url","image_url":{"url":"data:x"}}],"x_event":1},` +
	`{"role":"assistant","content":"ok","tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":{"a":[1,2]}},"x_call":true},{"id":"c2","type":"function","function":{"name":"g","arguments":"not json"}}],"span_id":"s2"},` +
	`{"role":"tool","content":"42","tool_call_id":"c1"},{"role":"critic"}],` +
	`"spans":[{"id":"s1","name":"root","start_time":"2024-01-02T03:04:05.123456789Z","end_time":"2024-01-02T03:04:06Z","attributes":{"k":"v"},"x_span":[]},` +
	`{"id":"s2","parent_id":"s1","name":"llm","kind":"LLM","status":"OK","inputs":{"q":1},"outputs":"a"}],` +
	`"annotations":[{"address":"messages[1].content:L0","content":"look","source":"user"}],` +
	`"x_trace":{"nested":[null,true]}}`

func decodeTrace(data string) (*Trace, error) {
	var t Trace
	err := json.Unmarshal([]byte(data), &t)
	return &t, err
}

// TestCanonicalRoundTrip: decode then encode gives back equal JSON, unknown
// members included, and encoding is a fixed point.
func TestCanonicalRoundTrip(t *testing.T) {
	tr, err := decodeTrace(full)
	if err != nil {
		t.Fatal(err)
	}
	if len(tr.Events) != 5 || len(tr.Spans) != 2 || len(tr.Annotations) != 1 {
		t.Fatalf("decoded %d events, %d spans, %d annotations", len(tr.Events), len(tr.Spans), len(tr.Annotations))
	}
	if tr.Events[0].Content.Kind != ContentNull || tr.Events[4].Content.Kind != ContentAbsent || tr.Events[1].Content.Kind != ContentParts {
		t.Errorf("content kinds %v %v %v", tr.Events[0].Content.Kind, tr.Events[4].Content.Kind, tr.Events[1].Content.Kind)
	}
	if tr.Spans[0].Start.Nanosecond() != 123456789 || tr.Spans[1].ParentID != "s1" {
		t.Errorf("spans decoded wrong: %+v", tr.Spans)
	}
	out := AppendTrace(nil, tr)
	var want, got any
	if err := json.Unmarshal([]byte(full), &want); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("encoded JSON invalid: %v\n%s", err, out)
	}
	wb, _ := json.Marshal(want)
	gb, _ := json.Marshal(got)
	if !bytes.Equal(wb, gb) {
		t.Errorf("round trip changed the trace:\nwant %s\ngot  %s", wb, gb)
	}
	tr2, err := decodeTrace(string(out))
	if err != nil {
		t.Fatal(err)
	}
	if out2 := AppendTrace(nil, tr2); !bytes.Equal(out, out2) {
		t.Errorf("encoding is not a fixed point:\n%s\n%s", out, out2)
	}
}

func TestCanonicalErrors(t *testing.T) {
	cases := []struct{ in, path, msg string }{
		{`{"events":{}}`, "$.events", ""},
		{`{"events":[{"role":1}]}`, "$.events[0].role", ""},
		{`{"events":[{"role":"user","tool_calls":{}}]}`, "$.events[0].tool_calls", ""},
		{`{"events":[],"index":"3"}`, "$.index", ""},
		{`{"events":[],"metadata":[]}`, "$.metadata", ""},
		{`{"events":[],"spans":[{"id":"s","start_time":"yesterday"}]}`, "$.spans[0].start_time", "RFC 3339"},
		{`{"events":[],"spans":[{"id":"s","start_time":"0000-01-01T00:00:00+01:00"}]}`, "$.spans[0].start_time", "0000-9999"},
		{`{"events":[],"spans":[{"id":"s","end_time":"9999-12-31T23:30:00-01:00"}]}`, "$.spans[0].end_time", "0000-9999"},
	}
	for _, c := range cases {
		_, err := decodeTrace(c.in)
		var je *jsonscan.Error
		if !errors.As(err, &je) {
			t.Errorf("%s: error %v, want a *jsonscan.Error", c.in, err)
			continue
		}
		if je.Path != c.path || !strings.Contains(je.Msg, c.msg) {
			t.Errorf("%s: error at %s %q, want at %s saying %q", c.in, je.Path, je.Msg, c.path, c.msg)
		}
	}
	// Arguments that are neither an object nor a string are kept verbatim.
	odd := `{"events":[{"role":"assistant","tool_calls":[{"function":{"name":"f","arguments":[1]}}]}]}`
	if tr, err := decodeTrace(odd); err != nil || !strings.Contains(string(AppendTrace(nil, tr)), `"arguments":[1]`) {
		t.Errorf("list arguments not kept: %v", err)
	}
	// The year bounds in UTC are inclusive.
	for _, ok := range []string{"0000-01-01T00:00:00Z", "9999-12-31T23:59:59.999999999Z", "0000-01-01T00:30:00+00:30"} {
		tr, err := decodeTrace(`{"events":[],"spans":[{"id":"s","start_time":"` + ok + `"}]}`)
		if err != nil {
			t.Errorf("%s rejected: %v", ok, err)
			continue
		}
		if _, err := decodeTrace(string(AppendTrace(nil, tr))); err != nil {
			t.Errorf("%s does not read back: %v", ok, err)
		}
	}
}

// FuzzCanonical: anything the decoder accepts encodes to JSON that decodes
// to the same encoding.
func FuzzCanonical(f *testing.F) {
	f.Add([]byte(full))
	seeds, _ := filepath.Glob("../../examples/*.json")
	for _, p := range seeds {
		if b, err := os.ReadFile(p); err == nil && len(b) < 1<<16 {
			f.Add(b)
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		tr, err := decodeTrace(string(data))
		if err != nil {
			return
		}
		out := AppendTrace(nil, tr)
		if !json.Valid(out) {
			t.Fatalf("invalid JSON out: %s", out)
		}
		tr2, err := decodeTrace(string(out))
		if err != nil {
			t.Fatalf("own output rejected: %v\n%s", err, out)
		}
		if out2 := AppendTrace(nil, tr2); !bytes.Equal(out, out2) {
			t.Fatalf("not a fixed point:\n%s\n%s", out, out2)
		}
	})
}

func TestFieldsObject(t *testing.T) {
	for _, c := range []struct {
		f    Fields
		want string
	}{
		{nil, `{}`},
		{Fields{{Key: "b", Value: json.RawMessage(`1`)}, {Key: "a\"", Value: json.RawMessage(`{"x":[]}`)}}, `{"b":1,"a\"":{"x":[]}}`},
	} {
		if got := string(c.f.Object()); got != c.want {
			t.Errorf("Object() = %s, want %s", got, c.want)
		}
	}
}

// TestParseArgumentsRule: arguments text is taken as an object only when it
// meets the rule at the door (jsonscan); otherwise it stays the text it was.
func TestParseArgumentsRule(t *testing.T) {
	for text, want := range map[string]string{
		`{"a": 1}`:         `{"a":1}`,
		`{"a":1,"a":2}`:    `"{\"a\":1,\"a\":2}"`,
		`{"n": 1e400}`:     `"{\"n\": 1e400}"`,
		`{"s": "\ud800"}`:  `"{\"s\": \"\\ud800\"}"`,
		`not JSON {"a":1}`: `"not JSON {\"a\":1}"`,
	} {
		if got := string(ParseArguments(text, nil)); got != want {
			t.Errorf("ParseArguments(%q) = %s, want %s", text, got, want)
		}
	}
}

// FuzzAppendString: the string read back is the one encoding/json writes
// and reads back, and U+2028 and U+2029 are escaped.
func FuzzAppendString(f *testing.F) {
	for _, s := range []string{"", "plain", "a \"quoted\" run of more than eight plain bytes\\ and a backslash",
		"tab\there, newline\n, nul \x00 and \x1f in a long enough run", "é and \u2028 and \u2029 after plain text",
		"\xff invalid \xc3 UTF-8 after plain bytes", "<script>alert(1)</script> & more"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		out := AppendString(nil, s)
		var back string
		if err := json.Unmarshal(out, &back); err != nil {
			t.Fatalf("AppendString(%q) = %s: %v", s, out, err)
		}
		// encoding/json, like AppendString, puts a U+FFFD for each byte of
		// invalid UTF-8.
		var std string
		b, _ := json.Marshal(s)
		if err := json.Unmarshal(b, &std); err != nil {
			t.Fatal(err)
		}
		if back != std {
			t.Fatalf("AppendString(%q) reads back %q, want %q", s, back, std)
		}
		if bytes.Contains(out, []byte("\u2028")) || bytes.Contains(out, []byte("\u2029")) {
			t.Fatalf("AppendString(%q) = %s: U+2028/U+2029 not escaped", s, out)
		}
	})
}
