package mcp

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		code    int    // the *Error's code; 0: parsed
		batch   bool   // parsed as a batch
		kinds   string // per message: r request, n notification, s response, e invalid element
		method  string // the first message's method
		errText string // in the error's message
	}{
		{"request", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x"}}`, 0, false, "r", "tools/call", ""},
		{"string id", `{"jsonrpc":"2.0","id":"a-1","method":"ping"}`, 0, false, "r", "ping", ""},
		{"notification", `{"jsonrpc":"2.0","method":"notifications/initialized"}`, 0, false, "n", "notifications/initialized", ""},
		{"result", `{"jsonrpc":"2.0","id":1,"result":{}}`, 0, false, "s", "", ""},
		{"error answer", `{"jsonrpc":"2.0","id":1,"error":{"code":-1,"message":"m"}}`, 0, false, "s", "", ""},
		{"spaces around", " \t{\"id\":1,\"method\":\"ping\"} \r", 0, false, "r", "ping", ""},
		{"batch", `[{"id":1,"method":"a"},{"method":"b"},{"id":2,"result":1},5]`, 0, true, "rnse", "a", ""},
		{"empty", ``, CodeParseError, false, "", "", "empty"},
		{"not JSON", `{"id":1,"method":`, CodeParseError, false, "", "", "at byte"},
		{"trailing garbage", `{"id":1,"method":"ping"} x`, CodeParseError, false, "", "", ""},
		{"two messages on a line", `{"id":1,"method":"ping"}{"id":2,"method":"ping"}`, CodeParseError, false, "", "", ""},
		{"scalar", `"tools/call"`, CodeInvalidRequest, false, "", "", "JSON object"},
		{"empty batch", `[]`, CodeInvalidRequest, false, "", "", "empty batch"},
		{"method not a string", `{"id":1,"method":5}`, CodeInvalidRequest, false, "", "", "method"},
		{"method null", `{"id":1,"method":null}`, CodeInvalidRequest, false, "", "", "method"},
		{"id an object", `{"id":{},"method":"ping"}`, CodeInvalidRequest, false, "", "", "id must"},
		{"id true", `{"id":true,"method":"ping"}`, CodeInvalidRequest, false, "", "", "id must"},
		{"answer without id", `{"result":{}}`, CodeInvalidRequest, false, "", "", "neither"},
		{"id alone", `{"id":3}`, CodeInvalidRequest, false, "", "", "neither"},
		// Members match exactly, as JavaScript reads them: "METHOD" is not
		// the method (Go's encoding/json would fold the case).
		{"case-folded key", `{"id":1,"METHOD":"tools/call","result":1}`, 0, false, "s", "", ""},
		// The last of duplicate members wins, as in JavaScript and Python.
		{"duplicate method", `{"id":1,"method":"ping","method":"tools/call"}`, 0, false, "r", "tools/call", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			msgs, batch, err := Parse([]byte(tc.in))
			if tc.code != 0 {
				e, ok := err.(*Error)
				if !ok || e.Code != tc.code {
					t.Fatalf("err %v, want code %d", err, tc.code)
				}
				if !strings.Contains(e.Message, tc.errText) {
					t.Errorf("message %q lacks %q", e.Message, tc.errText)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if batch != tc.batch {
				t.Errorf("batch %v", batch)
			}
			var kinds strings.Builder
			for _, m := range msgs {
				switch {
				case m.Err != nil:
					kinds.WriteByte('e')
				case m.IsRequest():
					kinds.WriteByte('r')
				case m.IsResponse():
					kinds.WriteByte('s')
				case m.HasMethod:
					kinds.WriteByte('n')
				default:
					kinds.WriteByte('?')
				}
			}
			if kinds.String() != tc.kinds {
				t.Errorf("kinds %q, want %q", kinds.String(), tc.kinds)
			}
			if msgs[0].Method != tc.method {
				t.Errorf("method %q, want %q", msgs[0].Method, tc.method)
			}
		})
	}
}

func TestIDKey(t *testing.T) {
	same := [][]string{{`1`, `1.0`, `1e0`, `10E-1`}, {`"1"`}, {`"a"`, `"\u0061"`}, {`-0`, `0`}}
	keys := map[string]int{}
	for g, group := range same {
		for _, id := range group {
			k, ok := IDKey(json.RawMessage(id))
			if !ok {
				t.Fatalf("IDKey(%s) not ok", id)
			}
			if prev, seen := keys[k]; seen && prev != g {
				t.Errorf("IDKey(%s) = %q, the key of group %d", id, k, prev)
			}
			keys[k] = g
		}
	}
	if len(keys) != len(same) {
		t.Errorf("%d distinct keys for %d groups: %v", len(keys), len(same), keys)
	}
	for _, id := range []string{``, `null`} {
		if _, ok := IDKey(json.RawMessage(id)); ok {
			t.Errorf("IDKey(%q) ok", id)
		}
	}
	if got := IDText(json.RawMessage(`"a/b"`)); got != "a/b" {
		t.Errorf("IDText string: %q", got)
	}
	if got := IDText(json.RawMessage(`17`)); got != "17" {
		t.Errorf("IDText number: %q", got)
	}
}

func TestErrorResponse(t *testing.T) {
	got := string(ErrorResponse(nil, &Error{Code: CodeParseError, Message: "Parse error"}))
	if got != `{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error"}}` {
		t.Errorf("got %s", got)
	}
	got = string(ErrorResponse(json.RawMessage(`"x"`), &Error{Code: CodeBlocked, Message: "no <writes>", Data: map[string]int{"a": 1}}))
	if got != `{"jsonrpc":"2.0","id":"x","error":{"code":-32010,"message":"no \u003cwrites\u003e","data":{"a":1}}}` {
		t.Errorf("got %s", got)
	}
	// Data that cannot be marshalled is left out, never a broken answer.
	got = string(ErrorResponse(json.RawMessage(`1`), &Error{Code: 1, Message: "m", Data: func() {}}))
	if got != `{"jsonrpc":"2.0","id":1,"error":{"code":1,"message":"m"}}` {
		t.Errorf("got %s", got)
	}
}
