package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"testing"
)

var fuzzSeeds = []string{
	initReq, initResp,
	`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"read_file","arguments":{"path":"/a"}}}`,
	`{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"a"},{"type":"image","data":"AA=="}],"isError":true,"structuredContent":{"a":1}}}`,
	`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`,
	`{"jsonrpc":"2.0","id":2,"result":{"tools":[{"name":"t","inputSchema":{}}]}}`,
	`{"jsonrpc":"2.0","id":3,"error":{"code":-1,"message":"m"}}`,
	`[{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"x"}},5,{"method":"notifications/cancelled","params":{"requestId":4}}]`,
	`{"id":1e400,"method":"tools/call","params":{"name":"y"}}`,
	`{"id":"\ud800","method":"tools/call","params":{"name":"\u0000"}}`,
	"not json", "", "[]", "{}", `{"id":{},"method":1}`,
}

// FuzzParse: Parse never panics, and what it accepts is JSON it can answer.
func FuzzParse(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		msgs, batch, err := Parse(data)
		if err != nil {
			if _, ok := err.(*Error); !ok {
				t.Fatalf("error of type %T", err)
			}
			if out := ErrorResponse(idOf(data), err.(*Error)); !json.Valid(out) {
				t.Fatalf("error answer is not JSON: %s", out)
			}
			return
		}
		if !batch && len(msgs) != 1 {
			t.Fatalf("%d messages, not a batch", len(msgs))
		}
		for _, m := range msgs {
			if !json.Valid(m.Raw) {
				t.Fatalf("raw message is not JSON: %q", m.Raw)
			}
			if m.Err == nil && !m.HasMethod && !m.IsResponse() {
				t.Fatalf("valid message that is neither request, notification nor response: %s", m.Raw)
			}
			if m.ID != nil {
				IDKey(m.ID)
				IDText(m.ID)
			}
		}
	})
}

// FuzzSession: whatever either side sends, the session never panics,
// everything it passes on or answers is valid JSON, and its own answers
// are one line each.
func FuzzSession(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add([]byte(s), []byte(fuzzSeeds[3]), byte(0))
	}
	f.Fuzz(func(t *testing.T, fromClient, fromServer []byte, verdict byte) {
		st := &recorder{verdict: func(req StepRequest) (StepResult, error) {
			for i := range req.Events {
				if req.Events[i].Extra == nil && req.Events[i].Role == "" {
					t.Fatalf("an event with neither role nor members")
				}
			}
			switch verdict % 3 {
			case 1:
				return StepResult{Blocked: true, Message: string(fromClient)}, nil
			case 2:
				return StepResult{}, ErrUnavailable
			}
			return StepResult{}, nil
		}}
		s := NewSession(Config{Session: "f", Stepper: st, FailOpen: verdict&4 != 0})
		ctx := context.Background()
		check := func(what string, b []byte) {
			if b != nil && !json.Valid(b) {
				t.Fatalf("%s is not JSON: %q", what, b)
			}
		}
		out := s.FromClient(ctx, fromClient)
		check("forward", out.Forward)
		check("reply", out.Reply)
		if bytes.ContainsAny(out.Reply, "\n\r") {
			t.Fatalf("the reply is not one line: %q", out.Reply)
		}
		check("to client", s.FromServer(ctx, fromServer))
		check("to client", s.FromServer(ctx, fromClient))
	})
}
