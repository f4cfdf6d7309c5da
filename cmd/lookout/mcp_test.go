package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lookout-dev/lookout/client"
	"github.com/lookout-dev/lookout/internal/trace"
)

// The MCP gateway end to end: the MCP SDK's own client (node) calls real
// MCP servers from npm through `lookout mcp` and through the server's
// /api/v1/gateway/mcp/streamable route; the trace is read back through the
// API. The packages are pinned in testdata/mcp (make mcp-deps).

// mcpTestdata checks that node and the npm packages are there: under
// CI=true their absence fails the test, elsewhere it skips it.
func mcpTestdata(t *testing.T) string {
	t.Helper()
	dir, err := filepath.Abs("testdata/mcp")
	if err != nil {
		t.Fatal(err)
	}
	missing := ""
	if _, err := exec.LookPath("node"); err != nil {
		missing = "node is not installed"
	} else if _, err := os.Stat(filepath.Join(dir, "node_modules/@modelcontextprotocol/sdk/package.json")); err != nil {
		missing = "the MCP test packages are not installed: run `make mcp-deps`"
	}
	if missing != "" {
		if os.Getenv("CI") == "true" {
			t.Fatal(missing)
		}
		t.Skip(missing)
	}
	return dir
}

// mcpResult is what testdata/mcp/client.mjs prints.
type mcpResult struct {
	Results []struct {
		OK    json.RawMessage `json:"ok"`
		Error *struct {
			Code    int             `json:"code"`
			Message string          `json:"message"`
			Data    json.RawMessage `json:"data"`
		} `json:"error"`
	} `json:"results"`
	Server struct {
		Name string `json:"name"`
	} `json:"server"`
	SessionID string `json:"sessionId"`
}

// text is the text of result i's first content item.
func (r *mcpResult) text(t *testing.T, i int) string {
	t.Helper()
	if r.Results[i].Error != nil {
		t.Fatalf("result %d is an error: %+v", i, *r.Results[i].Error)
	}
	var res struct {
		Content []struct {
			Text string `json:"text"`
		} `json:"content"`
		IsError bool `json:"isError"`
	}
	if err := json.Unmarshal(r.Results[i].OK, &res); err != nil || len(res.Content) == 0 {
		t.Fatalf("result %d: %s (%v)", i, r.Results[i].OK, err)
	}
	if res.IsError {
		t.Fatalf("result %d is a tool error: %s", i, r.Results[i].OK)
	}
	return res.Content[0].Text
}

// blocked checks that result i is Lookout's refusal with msg.
func (r *mcpResult) blocked(t *testing.T, i int, msg string) {
	t.Helper()
	e := r.Results[i].Error
	if e == nil {
		t.Fatalf("result %d is not an error: %s", i, r.Results[i].OK)
	}
	if e.Code != -32010 || !strings.Contains(e.Message, msg) {
		t.Fatalf("result %d: code %d message %q, want -32010 with %q", i, e.Code, e.Message, msg)
	}
}

// runMCPClient runs the node client with spec and returns what it printed.
func runMCPClient(t *testing.T, dir string, spec map[string]any) mcpResult {
	t.Helper()
	b, err := json.Marshal(spec)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", filepath.Join(dir, "client.mjs"), string(b))
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "LOOKOUT_TEST_MAIN=1")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("the MCP client failed: %v\nstdout: %s\nstderr: %s", err, stdout.String(), stderr.String())
	}
	var res mcpResult
	if err := json.Unmarshal(stdout.Bytes(), &res); err != nil {
		t.Fatalf("the MCP client's output: %v\n%s\nstderr: %s", err, stdout.String(), stderr.String())
	}
	if len(res.Results) != len(spec["steps"].([]map[string]any)) {
		t.Fatalf("%d results for %d steps", len(res.Results), len(spec["steps"].([]map[string]any)))
	}
	t.Logf("client stderr:\n%s", stderr.String())
	return res
}

// addPolicy saves a policy with the dataset, in mode block or log.
func addPolicy(t *testing.T, url, key, datasetID, name, mode, src string) {
	t.Helper()
	body, _ := json.Marshal(map[string]string{"name": name, "source": src, "mode": mode})
	req, _ := http.NewRequest(http.MethodPost, url+"/api/v1/datasets/"+datasetID+"/policies", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusCreated {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("saving policy %s: HTTP %d: %s", name, resp.StatusCode, b)
	}
}

// onlyTrace reads the dataset's one trace and its annotations.
func onlyTrace(t *testing.T, c *client.Client, datasetID string) (client.TraceSummary, trace.Trace, []client.Annotation) {
	t.Helper()
	ctx := context.Background()
	page, err := c.Traces(ctx, datasetID, "", 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Traces) != 1 {
		t.Fatalf("%d traces in the dataset, want 1 (one client session)", len(page.Traces))
	}
	raw, err := c.Trace(ctx, page.Traces[0].ID)
	if err != nil {
		t.Fatal(err)
	}
	var tr trace.Trace
	if err := tr.UnmarshalJSON(raw); err != nil {
		t.Fatalf("the trace: %v\n%s", err, raw)
	}
	anns, err := c.Annotations(ctx, page.Traces[0].ID)
	if err != nil {
		t.Fatal(err)
	}
	return page.Traces[0], tr, anns
}

// call is a tool call of the trace, with its output when it has one.
type recordedCall struct {
	event  int
	id     string
	name   string
	args   string
	output *trace.Event
}

// toolCalls lists the trace's tool calls, each linked to its output by
// tool_call_id; it fails on an output that answers no call.
func toolCalls(t *testing.T, tr *trace.Trace) []recordedCall {
	t.Helper()
	var calls []recordedCall
	byID := map[string]int{}
	for i := range tr.Events {
		ev := &tr.Events[i]
		for _, tc := range ev.ToolCalls {
			byID[tc.ID] = len(calls)
			calls = append(calls, recordedCall{event: i, id: tc.ID, name: tc.Function.Name, args: string(tc.Function.Arguments)})
		}
		if ev.IsToolOutput() {
			j, ok := byID[ev.ToolCallID]
			if !ok {
				t.Fatalf("event %d answers tool call %q, which is not in the trace before it", i, ev.ToolCallID)
			}
			if calls[j].output != nil {
				t.Fatalf("tool call %q has two outputs", ev.ToolCallID)
			}
			calls[j].output = ev
		}
	}
	return calls
}

func jsonEqual(t *testing.T, got, want string) bool {
	t.Helper()
	var g, w any
	if err := json.Unmarshal([]byte(got), &g); err != nil {
		t.Fatalf("%q: %v", got, err)
	}
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		t.Fatal(err)
	}
	gb, _ := json.Marshal(g)
	wb, _ := json.Marshal(w)
	return bytes.Equal(gb, wb)
}

// readmeMCPArgs are the arguments of the README's Claude Desktop config,
// with this test's server, the installed filesystem server for npx's and
// root for the user's folder.
func readmeMCPArgs(t *testing.T, url, dir, root string) []string {
	t.Helper()
	var cfg struct {
		MCPServers map[string]struct {
			Command string   `json:"command"`
			Args    []string `json:"args"`
		} `json:"mcpServers"`
	}
	if err := json.Unmarshal([]byte(fencedBlock(t, readmeSection(t, "\n### MCP\n"), "json")), &cfg); err != nil {
		t.Fatalf("the README's config: %v", err)
	}
	fs := cfg.MCPServers["filesystem"]
	if fs.Command != "lookout" || len(fs.Args) == 0 || fs.Args[0] != "mcp" {
		t.Fatalf("the README's config runs %s %q", fs.Command, fs.Args)
	}
	var args []string
	for i := 0; i < len(fs.Args); i++ {
		switch a := fs.Args[i]; a {
		case "http://127.0.0.1:8000":
			args = append(args, url)
		case "npx":
			if fs.Args[i+1] != "-y" || fs.Args[i+2] != "@modelcontextprotocol/server-filesystem" {
				t.Fatalf("the README's config runs npx %q", fs.Args[i+1:])
			}
			args = append(args, "node", filepath.Join(dir, "node_modules/@modelcontextprotocol/server-filesystem/dist/index.js"))
			i += 2
		case "/Users/me/Desktop":
			args = append(args, root)
		default:
			args = append(args, a)
		}
	}
	return args
}

func TestMCPStdio(t *testing.T) {
	dir := mcpTestdata(t)
	for _, b := range cliBackends(t) {
		t.Run(b.name, func(t *testing.T) { mcpStdio(t, dir, b.db(t)) })
	}
}

func mcpStdio(t *testing.T, dir, db string) {
	url := startServer(t, db)
	c, err := client.New(url)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	d, err := c.CreateDataset(ctx, "claude-desktop", false, nil)
	if err != nil {
		t.Fatal(err)
	}
	addPolicy(t, url, "", d.ID, "no writes", "block", `raise "no writes" if:
    (call: ToolCall)
    call is tool:write_file
    "blocked" in call.function.arguments.path
`)
	addPolicy(t, url, "", d.ID, "greetings", "log", `raise "a greeting was read" if:
    (out: ToolOutput)
    "hello" in out.content
`)

	root := t.TempDir()
	if err := os.WriteFile(filepath.Join(root, "a.txt"), []byte("hello from a\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	steps := []map[string]any{
		{"op": "list"},
		{"op": "call", "name": "read_text_file", "arguments": map[string]any{"path": filepath.Join(root, "a.txt")}},
		{"op": "call", "name": "write_file", "arguments": map[string]any{"path": filepath.Join(root, "blocked.txt"), "content": "must not be written"}},
		{"op": "call", "name": "write_file", "arguments": map[string]any{"path": filepath.Join(root, "ok.txt"), "content": "written"}},
		{"op": "call", "name": "list_directory", "arguments": map[string]any{"path": root}},
		{"op": "ping"},
	}
	res := runMCPClient(t, dir, map[string]any{
		"transport": "stdio",
		"command":   os.Args[0],
		"args":      readmeMCPArgs(t, url, dir, root),
		"steps":     steps,
	})

	// What the client saw: tools listed, results passed, the write refused.
	var list struct {
		Tools []struct{ Name string } `json:"tools"`
	}
	if err := json.Unmarshal(res.Results[0].OK, &list); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tl := range list.Tools {
		names = append(names, tl.Name)
	}
	if !strings.Contains(","+strings.Join(names, ",")+",", ",write_file,") || len(names) < 10 {
		t.Errorf("tools listed: %v", names)
	}
	if got := res.text(t, 1); got != "hello from a\n" {
		t.Errorf("read_text_file: %q", got)
	}
	res.blocked(t, 2, `[Lookout] blocked by guardrail "no writes": no writes`)
	if got := res.text(t, 3); !strings.Contains(got, "Successfully wrote") {
		t.Errorf("allowed write_file: %q", got)
	}
	if got := res.text(t, 4); !strings.Contains(got, "[FILE] a.txt") || !strings.Contains(got, "[FILE] ok.txt") {
		t.Errorf("list_directory: %q", got)
	}
	if res.Server.Name != "secure-filesystem-server" {
		t.Errorf("server %q", res.Server.Name)
	}
	// The server's side: the refused write never ran, the allowed one did.
	if _, err := os.Stat(filepath.Join(root, "blocked.txt")); !os.IsNotExist(err) {
		t.Errorf("the blocked write_file ran: %v", err)
	}
	if b, err := os.ReadFile(filepath.Join(root, "ok.txt")); err != nil || string(b) != "written" {
		t.Errorf("the allowed write_file: %q, %v", b, err)
	}

	// The trace: one per session, the tools list, every call with its
	// exact arguments linked to its output, the refused one without.
	sum, tr, anns := onlyTrace(t, c, d.ID)
	var meta map[string]any
	if err := json.Unmarshal(sum.Metadata, &meta); err != nil {
		t.Fatalf("metadata %s: %v", sum.Metadata, err)
	}
	if meta["source"] != "mcp" || meta["mcp_server"] != "secure-filesystem-server" || meta["mcp_client"] != "lookout-test-client" || meta["mcp_transport"] != "stdio" {
		t.Errorf("trace metadata %s", sum.Metadata)
	}
	if len(tr.Events) == 0 || tr.Events[0].Extra.Get("tools") == nil {
		t.Fatalf("the first event is not the tools list: %s", trace.AppendEvents(nil, tr.Events[:min(1, len(tr.Events))]))
	}
	var tools []struct{ Name string }
	if err := json.Unmarshal(tr.Events[0].Extra.Get("tools"), &tools); err != nil || len(tools) != len(list.Tools) {
		t.Errorf("the recorded tools list has %d tools, the client got %d (%v)", len(tools), len(list.Tools), err)
	}
	calls := toolCalls(t, &tr)
	want := []struct {
		name, args string
		output     string // "" when refused
	}{
		{"read_text_file", fmt.Sprintf(`{"path":%q}`, filepath.Join(root, "a.txt")), "hello from a\n"},
		{"write_file", fmt.Sprintf(`{"path":%q,"content":"must not be written"}`, filepath.Join(root, "blocked.txt")), ""},
		{"write_file", fmt.Sprintf(`{"path":%q,"content":"written"}`, filepath.Join(root, "ok.txt")), "Successfully wrote"},
		{"list_directory", fmt.Sprintf(`{"path":%q}`, root), "[FILE] ok.txt"},
	}
	if len(calls) != len(want) {
		t.Fatalf("%d tool calls recorded, want %d: %s", len(calls), len(want), trace.AppendEvents(nil, tr.Events))
	}
	for i, w := range want {
		got := calls[i]
		if got.name != w.name || !jsonEqual(t, got.args, w.args) {
			t.Errorf("call %d: %s %s, want %s %s", i, got.name, got.args, w.name, w.args)
		}
		// The id is "<session>/<JSON-RPC id>": the SDK numbers requests
		// from 0 (initialize), then tools/list is 1.
		if !strings.HasPrefix(got.id, "mcp-") || !strings.HasSuffix(got.id, "/"+strconv.Itoa(i+2)) {
			t.Errorf("call %d has id %q", i, got.id)
		}
		switch {
		case w.output == "" && got.output != nil:
			t.Errorf("the refused call %d has an output: %q", i, got.output.Content.Text)
		case w.output != "" && (got.output == nil || !strings.Contains(got.output.Content.Text, w.output)):
			t.Errorf("call %d's output %+v, want it to contain %q", i, got.output, w.output)
		}
	}
	// Each violation is an annotation where it happened: the refused write
	// (block), the greeting read (log).
	var blockAt, logAt []string
	for _, a := range anns {
		switch {
		case a.Source == "analyzer" && strings.Contains(a.Content, "no writes"):
			blockAt = append(blockAt, a.Address)
		case a.Source == "analyzer" && strings.Contains(a.Content, "a greeting was read"):
			logAt = append(logAt, a.Address)
		}
	}
	blockedEvent := "messages." + strconv.Itoa(calls[1].event)
	if len(blockAt) == 0 || !strings.HasPrefix(blockAt[0], blockedEvent) {
		t.Errorf("the block violation is annotated at %q, want at %s (annotations %+v)", blockAt, blockedEvent, anns)
	}
	if len(logAt) == 0 {
		t.Errorf("the log violation is not annotated: %+v", anns)
	}
}

// TestMCPStdioSampling: server-to-client requests (sampling) and the
// answers to them pass through unchanged, with server-everything.
func TestMCPStdioSampling(t *testing.T) {
	dir := mcpTestdata(t)
	url := startServer(t, filepath.Join(t.TempDir(), "lookout.db"))
	res := runMCPClient(t, dir, map[string]any{
		"transport": "stdio",
		"command":   os.Args[0],
		"args": []string{"mcp", "--server", url, "--dataset", "everything", "--",
			"node", filepath.Join(dir, "node_modules/@modelcontextprotocol/server-everything/dist/index.js"), "stdio"},
		"steps": []map[string]any{
			{"op": "call", "name": "trigger-sampling-request", "arguments": map[string]any{"prompt": "ping pong"}},
			{"op": "call", "name": "echo", "arguments": map[string]any{"message": "hi"}},
			{"op": "resources"},
		},
	})
	if got := res.text(t, 0); !strings.Contains(got, "sampled: Resource trigger-sampling-request context: ping pong") {
		t.Errorf("sampling: %q", got)
	}
	if got := res.text(t, 1); got != "Echo: hi" {
		t.Errorf("echo: %q", got)
	}
	if res.Results[2].Error != nil || !strings.Contains(string(res.Results[2].OK), `"resources"`) {
		t.Errorf("resources/list: %+v %s", res.Results[2].Error, res.Results[2].OK)
	}
}

// startNode runs a node MCP server from testdata/mcp until the test ends,
// and waits for its line that says it listens.
func startNode(t *testing.T, dir string, env []string, ready string, args ...string) {
	t.Helper()
	cmd := exec.Command("node", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout = io.Discard
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	up := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(stderr)
		signalled := false
		for sc.Scan() {
			if !signalled && strings.Contains(sc.Text(), ready) {
				close(up)
				signalled = true
			}
		}
	}()
	select {
	case <-up:
	case <-time.After(60 * time.Second):
		t.Fatalf("%v did not start in 60 s", args)
	}
}

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// TestMCPHTTP: the same through the server's Streamable HTTP route, with
// server-everything (event streams, sessions) and a stateless server that
// answers in JSON; the Invariant headers name the server, the dataset and
// the key.
func TestMCPHTTP(t *testing.T) {
	dir := mcpTestdata(t)
	for _, b := range cliBackends(t) {
		t.Run(b.name, func(t *testing.T) { mcpHTTP(t, dir, b.db(t)) })
	}
}

func mcpHTTP(t *testing.T, dir, db string) {
	url := startServer(t, db)
	ctx := context.Background()
	// A user and a key: local mode is over, so the key must be sent.
	if code, out, errOut := runCLI(t, "correct horse battery\n", "user", "create", "--db", db, "ana"); code != 0 {
		t.Fatalf("user create: %d %s %s", code, out, errOut)
	}
	code, keyOut, errOut := runCLI(t, "", "key", "create", "--db", db, "--user", "ana", "--name", "mcp")
	if code != 0 {
		t.Fatalf("key create: %d %s", code, errOut)
	}
	key := strings.TrimSpace(keyOut)
	c, err := client.New(url, client.WithAPIKey(key))
	if err != nil {
		t.Fatal(err)
	}

	// The side effect a blocked call must not have: a fetch of this URL.
	var fetches atomic.Int32
	fetched := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fetches.Add(1)
		io.WriteString(w, "payload")
	}))
	defer fetched.Close()

	port := freePort(t)
	startNode(t, dir, []string{"PORT=" + strconv.Itoa(port)}, "listening on port",
		"node_modules/@modelcontextprotocol/server-everything/dist/index.js", "streamableHttp")

	d, err := c.CreateDataset(ctx, "mcp-http", false, nil)
	if err != nil {
		t.Fatal(err)
	}
	addPolicy(t, url, key, d.ID, "no fetching", "block", `raise "no fetching of blocked files" if:
    (call: ToolCall)
    call.function.name == "gzip-file-as-resource"
    "blocked" in call.function.arguments.name
`)
	res := runMCPClient(t, dir, map[string]any{
		"transport": "http",
		"url":       url + "/api/v1/gateway/mcp/streamable",
		"headers": map[string]string{
			"MCP-SERVER-BASE-URL":    fmt.Sprintf("http://127.0.0.1:%d", port),
			"INVARIANT-PROJECT-NAME": "mcp-http",
			"INVARIANT-API-KEY":      key,
		},
		"steps": []map[string]any{
			{"op": "list"},
			{"op": "call", "name": "echo", "arguments": map[string]any{"message": "hi there"}},
			{"op": "call", "name": "gzip-file-as-resource", "arguments": map[string]any{"name": "fine.gz", "data": fetched.URL + "/a", "outputType": "resource"}},
			{"op": "call", "name": "gzip-file-as-resource", "arguments": map[string]any{"name": "blocked.gz", "data": fetched.URL + "/b", "outputType": "resource"}},
			{"op": "call", "name": "trigger-sampling-request", "arguments": map[string]any{"prompt": "over http"}},
			{"op": "call", "name": "trigger-long-running-operation", "arguments": map[string]any{"duration": 1, "steps": 2}},
		},
	})
	if got := res.text(t, 1); got != "Echo: hi there" {
		t.Errorf("echo: %q", got)
	}
	if res.Results[2].Error != nil {
		t.Errorf("the allowed gzip call: %+v", *res.Results[2].Error)
	}
	res.blocked(t, 3, `[Lookout] blocked by guardrail "no fetching": no fetching of blocked files`)
	if got := res.text(t, 4); !strings.Contains(got, "sampled: Resource trigger-sampling-request context: over http") {
		t.Errorf("sampling: %q", got)
	}
	if got := res.text(t, 5); !strings.Contains(got, "Long running operation completed") {
		t.Errorf("long-running operation: %q", got)
	}
	// The server's side: the allowed call fetched, the blocked one did not.
	if n := fetches.Load(); n != 1 {
		t.Errorf("the server fetched %d times, want 1 (the blocked call must not fetch)", n)
	}

	sum, tr, _ := onlyTrace(t, c, d.ID)
	if !strings.Contains(string(sum.Metadata), `"mcp_transport":"streamable-http"`) || !strings.Contains(string(sum.Metadata), `"mcp_server":"mcp-servers/everything"`) {
		t.Errorf("trace metadata %s", sum.Metadata)
	}
	calls := toolCalls(t, &tr)
	wantNames := []string{"echo", "gzip-file-as-resource", "gzip-file-as-resource", "trigger-sampling-request", "trigger-long-running-operation"}
	if len(calls) != len(wantNames) {
		t.Fatalf("%d calls recorded: %s", len(calls), trace.AppendEvents(nil, tr.Events))
	}
	for i, n := range wantNames {
		if calls[i].name != n {
			t.Errorf("call %d is %s, want %s", i, calls[i].name, n)
		}
		if (calls[i].output == nil) != (i == 2) {
			t.Errorf("call %d (%s): output %v", i, n, calls[i].output)
		}
	}
	if !jsonEqual(t, calls[2].args, fmt.Sprintf(`{"name":"blocked.gz","data":%q,"outputType":"resource"}`, fetched.URL+"/b")) {
		t.Errorf("the blocked call's arguments: %s", calls[2].args)
	}
	if calls[0].output.Content.Text != "Echo: hi there" {
		t.Errorf("echo's output %q", calls[0].output.Content.Text)
	}
	// The allowed gzip answered an embedded resource: kept in metadata.
	if !strings.Contains(string(calls[1].output.Extra.Get("metadata")), `"other_content":[{"type":"resource"`) {
		t.Errorf("gzip's output metadata %s", calls[1].output.Extra.Get("metadata"))
	}

	// A stateless server answering in JSON: the proxy gives the session an
	// id of its own, so the client's calls are still one trace.
	notes := filepath.Join(t.TempDir(), "notes")
	port2 := freePort(t)
	startNode(t, dir, []string{"PORT=" + strconv.Itoa(port2), "NOTES_FILE=" + notes}, "listening", "json-server.mjs")
	d2, err := c.CreateDataset(ctx, "mcp-json", false, nil)
	if err != nil {
		t.Fatal(err)
	}
	addPolicy(t, url, key, d2.ID, "no secrets", "block", `raise "no secret notes" if:
    (call: ToolCall)
    call is tool:note
    "secret" in call.function.arguments.text
`)
	res = runMCPClient(t, dir, map[string]any{
		"transport": "http",
		"url":       url + "/api/v1/gateway/mcp/streamable",
		"headers": map[string]string{
			"Lookout-MCP-Server-URL": fmt.Sprintf("http://127.0.0.1:%d/mcp", port2),
			"Lookout-Dataset":        "mcp-json",
			"Authorization":          "Bearer " + key,
		},
		"steps": []map[string]any{
			{"op": "call", "name": "add", "arguments": map[string]any{"a": 2, "b": 40}},
			{"op": "call", "name": "note", "arguments": map[string]any{"text": "a secret"}},
			{"op": "call", "name": "note", "arguments": map[string]any{"text": "public"}},
			{"op": "ping"},
		},
	})
	if got := res.text(t, 0); got != "42" {
		t.Errorf("add: %q", got)
	}
	res.blocked(t, 1, "no secret notes")
	if got := res.text(t, 2); got != "noted" {
		t.Errorf("note: %q", got)
	}
	if !strings.HasPrefix(res.SessionID, "lookout-") {
		t.Errorf("the client's session id %q is not the proxy's", res.SessionID)
	}
	if b, err := os.ReadFile(notes); err != nil || string(b) != "public\n" {
		t.Errorf("notes written: %q, %v (the blocked note must not be)", b, err)
	}
	_, tr2, _ := onlyTrace(t, c, d2.ID)
	calls = toolCalls(t, &tr2)
	if len(calls) != 3 || calls[0].output == nil || calls[0].output.Content.Text != "42" ||
		!strings.Contains(string(calls[0].output.Extra.Get("metadata")), `"structured_content":{"sum":42}`) || calls[1].output != nil {
		t.Errorf("stateless session's trace: %s", trace.AppendEvents(nil, tr2.Events))
	}
}

// TestMCPProcess: lookout mcp's process contract, with shell commands for
// servers: only JSON-RPC on standard output, the server's standard error
// passed through, its exit status and signals propagated, its input closed
// when the client's ends.
func TestMCPProcess(t *testing.T) {
	url := startServer(t, filepath.Join(t.TempDir(), "lookout.db"))
	mcpArgs := func(script string) []string {
		return []string{"mcp", "--server", url, "--dataset", "proc", "--", "sh", "-c", script}
	}
	tests := []struct {
		name   string
		script string
		stdin  string
		code   int
		stdout string
		stderr []string
	}{
		{"exit status", "exit 3", "", 3, "", nil},
		{"stdin end closes the server's", `cat >/dev/null; echo '{"jsonrpc":"2.0","method":"bye"}'; exit 4`, `{"jsonrpc":"2.0","method":"x"}` + "\n", 4,
			`{"jsonrpc":"2.0","method":"bye"}` + "\n", nil},
		{"only JSON-RPC on stdout", `echo 'Server running'; echo '{"jsonrpc":"2.0","id":1,"result":{}}'; echo oops >&2`, "", 0,
			`{"jsonrpc":"2.0","id":1,"result":{}}` + "\n",
			[]string{"oops", `lookout mcp: server sent a message that is not valid JSON-RPC, dropped: Parse error: invalid character 'S' looking for beginning of value (at byte 1): "Server running"`}},
		{"a signal ends it", `kill -TERM $$`, "", 128 + 15, "", nil},
		{"the client's bad lines are answered", `cat >/dev/null`, "not json\n", 0,
			`{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error: invalid character 'o' in literal null (expecting 'u') (at byte 2)"}}` + "\n", nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errOut := runCLI(t, tc.stdin, mcpArgs(tc.script)...)
			if code != tc.code || out != tc.stdout {
				t.Fatalf("exit %d, want %d\nstdout %q\nwant   %q\nstderr %s", code, tc.code, out, tc.stdout, errOut)
			}
			for _, w := range tc.stderr {
				if !strings.Contains(errOut, w) {
					t.Errorf("stderr lacks %q:\n%s", w, errOut)
				}
			}
		})
	}

	// Usage errors and a server that does not start: exit 2.
	for _, args := range [][]string{
		{"mcp", "--server", url, "--", "true"},
		{"mcp", "--server", url, "--dataset", "d"},
		{"mcp", "--server", url, "--dataset", "d", "--", "/no/such/command"},
	} {
		if code, _, errOut := runCLI(t, "", args...); code != 2 {
			t.Errorf("%q: exit %d, want 2 (%s)", args, code, errOut)
		}
	}
	// Flags after the command are the command's.
	code, out, errOut := runCLI(t, "", "mcp", "--server", url, "--dataset", "d", "sh", "-c", `echo '{"jsonrpc":"2.0","method":"m"}'`)
	if code != 0 || out != `{"jsonrpc":"2.0","method":"m"}`+"\n" {
		t.Errorf("without --: exit %d, stdout %q, stderr %s", code, out, errOut)
	}
}

// TestMCPFailMode: with Lookout unreachable a tool call is refused (its
// tool not run), or let through with --fail-open.
func TestMCPFailMode(t *testing.T) {
	dead := httptest.NewServer(http.NotFoundHandler())
	deadURL := dead.URL
	dead.Close()
	// A tiny stdio server: answers every request with its method as text.
	server := `while read -r line; do id=$(echo "$line" | sed -n 's/.*"id":\([0-9]*\).*/\1/p'); [ -n "$id" ] && echo "{\"jsonrpc\":\"2.0\",\"id\":$id,\"result\":{\"content\":[{\"type\":\"text\",\"text\":\"ran\"}]}}"; done`
	call := `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"t","arguments":{}}}` + "\n"
	code, out, errOut := runCLI(t, call, "mcp", "--server", deadURL, "--dataset", "d", "--timeout", "5s", "--", "sh", "-c", server)
	if code != 0 || !strings.Contains(out, `"id":7,"error":{"code":-32011,"message":"[Lookout] the guardrails could not check the call of tool t, so it was not run: the Lookout server is unavailable: `) {
		t.Errorf("fail closed: exit %d\nstdout %s\nstderr %s", code, out, errOut)
	}
	if !strings.Contains(errOut, "does not answer now") {
		t.Errorf("no warning at start: %s", errOut)
	}
	code, out, errOut = runCLI(t, call, "mcp", "--server", deadURL, "--dataset", "d", "--fail-open", "--", "sh", "-c", server)
	if code != 0 || out != `{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":"ran"}]}}`+"\n" {
		t.Errorf("fail open: exit %d\nstdout %s\nstderr %s", code, out, errOut)
	}
	if !strings.Contains(errOut, "passed unchecked (--fail-open)") {
		t.Errorf("fail open says nothing: %s", errOut)
	}
}
