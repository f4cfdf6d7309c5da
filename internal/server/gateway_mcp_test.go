package server

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/lookout-dev/lookout/internal/store"
)

// upstreamMCP is an MCP server stand-in that records what reaches it:
// the headers the proxy lets through are the point here (real servers,
// over the real SDK, are driven end to end in cmd/lookout/mcp_test.go).
type upstreamMCP struct {
	mu       sync.Mutex
	requests []*http.Request
	bodies   []string
}

func (u *upstreamMCP) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	u.mu.Lock()
	u.requests = append(u.requests, r)
	u.bodies = append(u.bodies, string(body))
	u.mu.Unlock()
	if r.Header.Get("Mcp-Session-Id") == "gone" {
		http.Error(w, `{"jsonrpc":"2.0","id":null,"error":{"code":-32001,"message":"Session not found"}}`, http.StatusNotFound)
		return
	}
	var m struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
	}
	json.Unmarshal(body, &m)
	switch {
	case r.Method == http.MethodDelete:
		w.WriteHeader(http.StatusOK)
	case m.Method == "initialize":
		w.Header().Set("Mcp-Session-Id", "up-1")
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{"protocolVersion":"2025-06-18","capabilities":{"tools":{}},"serverInfo":{"name":"up","version":"1"}}}`, m.ID)
	case m.Method == "tools/call":
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprintf(w, "event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{\"progress\":1}}\n\n")
		fmt.Fprintf(w, "event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":%s,\"result\":{\"content\":[{\"type\":\"text\",\"text\":\"ran\"}]}}\n\n", m.ID)
	default:
		w.WriteHeader(http.StatusAccepted)
	}
}

func TestMCPRoute(t *testing.T) {
	forEachBackend(t, func(t *testing.T, st store.Store) {
		f := newFixture(t, st, Config{})
		f.addUser("alice")
		up := &upstreamMCP{}
		us := httptest.NewServer(up)
		defer us.Close()
		const path = "/api/v1/gateway/mcp/streamable"
		key := f.keys["alice"]
		initialize := `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`
		call := func(id int, name string) string {
			return fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":%q,"arguments":{"x":1}}}`, id, name)
		}
		post := func(body string, header ...string) response {
			return f.do("POST", path, "", strings.NewReader(body), append([]string{"Content-Type", "application/json",
				"Accept", "application/json, text/event-stream"}, header...)...)
		}

		// Errors of the route itself are the API's.
		for _, tc := range []struct {
			name   string
			path   string
			header []string
			status int
			msg    string
		}{
			{"no server", path, []string{"Lookout-Dataset", "d", "Invariant-Api-Key", key}, 400, "MCP-Server-Base-URL"},
			{"no dataset", path, []string{"MCP-Server-Base-URL", us.URL, "Invariant-Api-Key", key}, 400, "Lookout-Dataset"},
			{"not http", path, []string{"MCP-Server-Base-URL", "file:///etc", "Lookout-Dataset", "d", "Invariant-Api-Key", key}, 400, "want an http:// or https:// URL"},
			{"SSE transport", "/api/v1/gateway/mcp/sse", []string{"MCP-Server-Base-URL", us.URL}, 404, "Streamable HTTP transport only"},
			{"no key", path, []string{"MCP-Server-Base-URL", us.URL, "Lookout-Dataset", "d"}, 401, ""},
			{"a wrong Invariant key", path, []string{"MCP-Server-Base-URL", us.URL, "Lookout-Dataset", "d", "Invariant-Api-Key", "lk_nope"}, 401, "Invariant-API-Key"},
			{"a wrong Invariant-Authorization", path, []string{"MCP-Server-Base-URL", us.URL, "Lookout-Dataset", "d", "Invariant-Authorization", "Bearer lk_nope"}, 401, ""},
		} {
			r := f.do("POST", tc.path, "", strings.NewReader(initialize), append([]string{"Content-Type", "application/json"}, tc.header...)...)
			if r.status != tc.status || !strings.Contains(string(r.body), tc.msg) {
				t.Errorf("%s: %d %s, want %d with %q", tc.name, r.status, r.body, tc.status, tc.msg)
			}
		}
		if len(up.requests) != 0 {
			t.Fatalf("refused requests reached the server: %d", len(up.requests))
		}

		// initialize: Invariant's headers; only the transport's headers and
		// the Invariant-X-MCP-Server-* ones reach the server.
		r := post(initialize, "MCP-Server-Base-URL", us.URL+"/", "Invariant-Project-Name", "mcp-route",
			"Invariant-Api-Key", key, "Invariant-X-MCP-Server-Authorization", "Bearer upstream-token",
			"Mcp-Protocol-Version", "2025-06-18", "Cookie", "c=1")
		if r.status != 200 || r.header.Get("Mcp-Session-Id") != "up-1" || !strings.Contains(string(r.body), `"serverInfo":{"name":"up"`) {
			t.Fatalf("initialize: %d %v %s", r.status, r.header, r.body)
		}
		got := up.requests[0]
		if got.URL.Path != "/mcp/" || got.Header.Get("Authorization") != "Bearer upstream-token" || got.Header.Get("Mcp-Protocol-Version") != "2025-06-18" {
			t.Errorf("the server got %s with %v", got.URL.Path, got.Header)
		}
		for _, h := range []string{"Invariant-Api-Key", "Invariant-Project-Name", "Invariant-X-Mcp-Server-Authorization", "Cookie"} {
			if got.Header.Get(h) != "" {
				t.Errorf("the server got the client's %s header", h)
			}
		}
		if up.bodies[0] != initialize {
			t.Errorf("the server got %s", up.bodies[0])
		}

		// A blocked call never reaches the server; an allowed one is
		// relayed as the server streams it.
		var ds struct{ Datasets []struct{ ID string } }
		f.must(200, "GET", "/api/v1/datasets?name=mcp-route", "alice", "").json(t, &ds)
		if len(ds.Datasets) != 1 {
			t.Fatalf("the dataset was not created: %+v", ds)
		}
		f.must(201, "POST", "/api/v1/datasets/"+ds.Datasets[0].ID+"/policies", "alice",
			`{"name": "no danger", "mode": "block", "source": "raise \"dangerous\" if:\n    (call: ToolCall)\n    call is tool:danger\n"}`)
		session := []string{"MCP-Server-Base-URL", us.URL, "Lookout-Dataset", "mcp-route",
			"Invariant-Authorization", "Bearer " + key, "Mcp-Session-Id", "up-1"}
		n := len(up.requests)
		r = post(call(1, "danger"), session...)
		if r.status != 200 || !strings.Contains(string(r.body), `"id":1,"error":{"code":-32010,"message":"[Lookout] blocked by guardrail \"no danger\": dangerous"`) {
			t.Errorf("blocked call: %d %s", r.status, r.body)
		}
		if len(up.requests) != n {
			t.Errorf("the blocked call reached the server")
		}
		r = post(call(2, "safe"), session...)
		want := "event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{\"progress\":1}}\n\n" +
			"event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":2,\"result\":{\"content\":[{\"type\":\"text\",\"text\":\"ran\"}]}}\n\n"
		if r.status != 200 || r.header.Get("Content-Type") != "text/event-stream" || string(r.body) != want {
			t.Errorf("allowed call: %d %v\n%s", r.status, r.header, r.body)
		}
		if last := up.requests[len(up.requests)-1]; last.URL.Path != "/mcp/" || last.Header.Get("Mcp-Session-Id") != "up-1" {
			t.Errorf("the call went to %s with session %q", last.URL.Path, last.Header.Get("Mcp-Session-Id"))
		}

		// The session's trace: both calls, the allowed one's output.
		var traces struct {
			Traces []struct {
				ID         string
				EventCount int `json:"event_count"`
			}
		}
		f.must(200, "GET", "/api/v1/datasets/"+ds.Datasets[0].ID+"/traces", "alice", "").json(t, &traces)
		if len(traces.Traces) != 1 || traces.Traces[0].EventCount != 3 {
			t.Fatalf("traces %+v", traces)
		}
		tr := f.must(200, "GET", "/api/v1/traces/"+traces.Traces[0].ID, "alice", "")
		for _, w := range []string{`"name":"danger","arguments":{"x":1}`, `"name":"safe","arguments":{"x":1}`, `"role":"tool","content":"ran"`,
			`"metadata":{"server":"up"}`, `"mcp_server":"up"`, `"mcp_client":"t"`, `"address":"messages.0.tool_calls.0","content":"dangerous"`} {
			if !strings.Contains(tr.String(), w) {
				t.Errorf("the trace lacks %s:\n%s", w, tr)
			}
		}

		// The server's own errors pass as they are; an unreachable server
		// is a 502 with a JSON-RPC error.
		r = post(call(3, "safe"), "Lookout-MCP-Server-URL", us.URL+"/mcp", "Lookout-Dataset", "mcp-route", "Invariant-Api-Key", key, "Mcp-Session-Id", "gone")
		if r.status != 404 || !strings.Contains(string(r.body), "Session not found") {
			t.Errorf("the server's 404: %d %s", r.status, r.body)
		}
		if last := up.requests[len(up.requests)-1]; last.URL.Path != "/mcp" {
			t.Errorf("Lookout-MCP-Server-URL is the endpoint as it is, not %s", last.URL.Path)
		}
		dead := httptest.NewServer(http.NotFoundHandler())
		dead.Close()
		r = post(`{"jsonrpc":"2.0","id":4,"method":"ping"}`, "MCP-Server-Base-URL", dead.URL, "Lookout-Dataset", "mcp-route", "Invariant-Api-Key", key)
		if r.status != 502 || !strings.Contains(string(r.body), `"id":4,"error":{"code":-32011,"message":"[Lookout] the MCP server did not answer`) {
			t.Errorf("unreachable server: %d %s", r.status, r.body)
		}

		// DELETE ends the session at the server too.
		r = f.do("DELETE", path, "", nil, session...)
		if r.status != 200 || up.requests[len(up.requests)-1].Method != http.MethodDelete {
			t.Errorf("DELETE: %d %s", r.status, r.body)
		}
	})
}
