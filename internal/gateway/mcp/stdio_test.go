package mcp

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestLineReader(t *testing.T) {
	long := strings.Repeat("x", 100)
	in := "a\r\n\n  \nb\n" + long + "\nc\n" + long + "long" + "\nd"
	r := NewLineReader(strings.NewReader(in), 100)
	var got []string
	for {
		line, err := r.Next()
		if errors.Is(err, errTooLong) {
			got = append(got, "TOO LONG")
			continue
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, string(line))
	}
	want := []string{"a", "b", long, "c", "TOO LONG", "d"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("got %q\nwant %q", got, want)
	}

	// A line across many buffer fills (the reader's buffer is 64 KiB).
	big := strings.Repeat("y", 200<<10)
	r = NewLineReader(strings.NewReader(big+"\nz\n"), 0)
	if line, err := r.Next(); err != nil || string(line) != big {
		t.Fatalf("big line: %d bytes, %v", len(line), err)
	}
	if line, err := r.Next(); err != nil || string(line) != "z" {
		t.Fatalf("after the big line: %q, %v", line, err)
	}
}

// fakeServer answers requests on stdio as a minimal MCP server: it echoes
// each tool call's arguments as text, and it first sends a request of its
// own and a line that is not JSON. It records what it read.
type fakeServer struct {
	stdin    *io.PipeReader
	stdout   *io.PipeWriter
	mu       sync.Mutex
	received []string
	done     chan struct{}
}

func startFakeServer() (*fakeServer, io.WriteCloser, io.Reader) {
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	f := &fakeServer{stdin: inR, stdout: outW, done: make(chan struct{})}
	go f.run()
	return f, inW, outR
}

func (f *fakeServer) run() {
	defer close(f.done)
	defer f.stdout.Close()
	f.stdout.Write([]byte("server log line, not JSON\n"))
	f.stdout.Write([]byte(`{"jsonrpc":"2.0","id":"s1","method":"sampling/createMessage","params":{"messages":[],"maxTokens":5}}` + "\n"))
	sc := bufio.NewScanner(f.stdin)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := sc.Text()
		f.mu.Lock()
		f.received = append(f.received, line)
		f.mu.Unlock()
		var m struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params struct {
				Arguments json.RawMessage `json:"arguments"`
			} `json:"params"`
		}
		if json.Unmarshal([]byte(line), &m) != nil || m.ID == nil || m.Method == "" {
			continue
		}
		var result []byte
		if m.Method == "tools/call" {
			text, _ := json.Marshal(string(m.Params.Arguments))
			result = []byte(`{"content":[{"type":"text","text":` + string(text) + `}]}`)
		} else {
			result = []byte(`{}`)
		}
		f.stdout.Write([]byte(`{"jsonrpc":"2.0","id":` + string(m.ID) + `,"result":` + string(result) + "}\n"))
	}
}

// syncBuffer is a bytes.Buffer safe for the relay's two writers.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func TestStdioRelay(t *testing.T) {
	rec := &recorder{verdict: blockTool("write_file")}
	var logMu sync.Mutex
	var logs []string
	logf := func(f string, a ...any) {
		logMu.Lock()
		logs = append(logs, f)
		logMu.Unlock()
	}
	s := NewSession(Config{Session: "mcp-x", Stepper: rec, Logf: logf})
	srv, serverIn, serverOut := startFakeServer()
	clientIn, clientW := io.Pipe()
	var clientOut syncBuffer
	relay := &Stdio{Session: s, ClientIn: clientIn, ClientOut: &clientOut, ServerIn: serverIn, ServerOut: serverOut, MaxMessage: 4096, Logf: logf}
	done := make(chan error, 1)
	go func() { done <- relay.Run(context.Background()) }()

	lines := []string{
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"clientInfo":{"name":"c"}}}`,
		`{"jsonrpc":"2.0","id":"s1","result":{"role":"assistant","content":{"type":"text","text":"sampled"},"model":"m"}}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"read_file","arguments":{"path":"/a"}}}`,
		`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"write_file","arguments":{"path":"/b"}}}`,
		`this is not JSON`,
		`{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"read_file","arguments":{"path":"` + strings.Repeat("z", 5000) + `"}}}`,
		`{"jsonrpc":"2.0","id":5,"method":"ping"}`,
	}
	for _, l := range lines {
		if _, err := clientW.Write([]byte(l + "\n")); err != nil {
			t.Fatal(err)
		}
	}
	clientW.Close()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the relay did not end after the client's input did")
	}
	<-srv.done // the server saw its input end

	srv.mu.Lock()
	received := strings.Join(srv.received, "\n")
	srv.mu.Unlock()
	wantReceived := strings.Join([]string{lines[0], lines[1], lines[2], lines[6]}, "\n")
	if received != wantReceived {
		t.Errorf("the server read\n%s\nwant\n%s", received, wantReceived)
	}

	// The client got only JSON-RPC lines: the server's request, the
	// answers, the refusal and the parse error, and nothing else.
	out := clientOut.String()
	var ids []string
	for _, line := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
		var m struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Error  *Error          `json:"error"`
		}
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("the client got a line that is not JSON: %q", line)
		}
		id := string(m.ID)
		if m.Error != nil {
			id += "!" + m.Error.Message
		}
		ids = append(ids, id)
	}
	want := map[string]bool{`"s1"`: true, `1`: true, `2`: true, `3!no write_file`: true, `5`: true,
		`null!Parse error: invalid character 'h' in literal true (expecting 'r') (at byte 2)`: true}
	if len(ids) != len(want) {
		t.Errorf("the client got %q", ids)
	}
	for _, id := range ids {
		if !want[id] {
			t.Errorf("unexpected message to the client: %s (all: %q)", id, ids)
		}
	}
	logMu.Lock()
	defer logMu.Unlock()
	joined := strings.Join(logs, "\n")
	for _, w := range []string{"server sent a message that is not valid JSON-RPC", "client sent a line that is too long", "client sent a message that is not valid JSON-RPC"} {
		if !strings.Contains(joined, w) {
			t.Errorf("no diagnostic %q in %q", w, logs)
		}
	}
}
