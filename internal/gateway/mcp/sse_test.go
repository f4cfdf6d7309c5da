package mcp

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

func TestRelaySSE(t *testing.T) {
	ctx := context.Background()
	s := NewSession(Config{Session: "h", Stepper: &recorder{verdict: blockTool("x")}})
	for _, id := range []string{"1", "2"} {
		if out := s.FromClient(ctx, []byte(`{"jsonrpc":"2.0","id":`+id+`,"method":"tools/call","params":{"name":"read"}}`)); out.Forward == nil {
			t.Fatalf("call %s not forwarded", id)
		}
	}
	in := strings.Join([]string{
		": keep-alive",
		"",
		"id: e0",
		"data: ",
		"",
		"event: message",
		"id: e1",
		`data: {"jsonrpc":"2.0","method":"notifications/progress",`,
		`data:  "params":{"progress":1}}`,
		"",
		"id: e2\r",
		`data: {"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"SECRET"}]}}` + "\r",
		"\r",
		"event: other",
		"data: not json either",
		"",
		"id: e3",
		"data: not json",
		"",
		"id: e4",
		`data: {"jsonrpc":"2.0","id":2,"result":{"content":[{"type":"text","text":"fine"}]}}`,
		"",
		"id: e5",
		`data: {"jsonrpc":"2.0","id":9,"result":{}}`,
	}, "\n")
	var out bytes.Buffer
	flushes := 0
	err := relaySSE(ctx, s, strings.NewReader(in), &out, func() error { flushes++; return nil }, 1<<20, func(string, ...any) {})
	if err != nil {
		t.Fatal(err)
	}
	want := strings.Join([]string{
		": keep-alive",
		"",
		"id: e0",
		"data: ",
		"",
		"event: message",
		"id: e1",
		`data: {"jsonrpc":"2.0","method":"notifications/progress",`,
		`data:  "params":{"progress":1}}`,
		"",
		"id: e2",
		`data: {"jsonrpc":"2.0","id":1,"error":{"code":-32010,"message":"no secrets","data":{"lookout":{"trace_id":"t1"}}}}`,
		"",
		"event: other",
		"data: not json either",
		"",
		"id: e3",
		"",
		"id: e4",
		`data: {"jsonrpc":"2.0","id":2,"result":{"content":[{"type":"text","text":"fine"}]}}`,
		"",
		"id: e5",
		`data: {"jsonrpc":"2.0","id":9,"result":{}}`,
		"",
		"",
	}, "\n")
	if out.String() != want {
		t.Errorf("got\n%s\nwant\n%s", out.String(), want)
	}
	if flushes != 8 {
		t.Errorf("%d flushes, want one per event (8)", flushes)
	}

	// An event over the bound ends the relay with an error.
	out.Reset()
	err = relaySSE(ctx, s, strings.NewReader("data: "+strings.Repeat("a", 200)+"\n\n"), &out, func() error { return nil }, 100, func(string, ...any) {})
	if err == nil || !strings.Contains(err.Error(), "message too long") {
		t.Errorf("over the bound: %v", err)
	}
}
