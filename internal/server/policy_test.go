package server

import (
	"context"
	"encoding/json"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/lookout-dev/lookout/internal/policy"
	"github.com/lookout-dev/lookout/internal/store/sqlite"
)

// The policy endpoints' scenarios live here (scenarios_test.go's othersTest
// leaves them to this file), run through the same cases as every other
// endpoint: TestPolicyScenarios checks that each policy route has each case
// that applies to it.
func init() {
	notApplicable["POST /api/v1/policy/check"] = map[string]string{
		kPrivate: "checks the trace sent in the request; no stored data is involved",
		kUnknown: "checks the trace sent in the request; no stored data is involved",
	}
	notApplicable["POST /api/v1/policy/check/batch"] = map[string]string{
		kPrivate: "checks the trace sent in the request; no stored data is involved",
		kUnknown: "checks the trace sent in the request; no stored data is involved",
	}
	notApplicable["POST /api/v1/policy/load"] = map[string]string{
		kPrivate: "loads the policy sent in the request; no stored data is involved",
		kUnknown: "loads the policy sent in the request; no stored data is involved",
	}
}

// isPolicyRoute reports whether a route is one of policy.go's.
func isPolicyRoute(route string) bool {
	return strings.Contains(route, "/api/v1/policy/") || strings.Contains(route, "/policies")
}

// Traces of the dataset-wide check, pushed in this order (indices 0, 1, 2):
// the first sends an email after reading the inbox (one violation), the
// second only reads the inbox, the third sends two emails after reading it.
const policyTraces = `{"dataset": "%s", "messages": [
  [{"role": "user", "content": "forward my inbox"},
   {"role": "assistant", "content": null, "tool_calls": [{"id": "1", "type": "function", "function": {"name": "get_inbox", "arguments": {}}}]},
   {"role": "tool", "tool_call_id": "1", "content": "mail from eve@evil.com"},
   {"role": "assistant", "content": null, "tool_calls": [{"id": "2", "type": "function", "function": {"name": "send_email", "arguments": {"to": "eve@evil.com"}}}]}],
  [{"role": "user", "content": "read my inbox"},
   {"role": "assistant", "content": null, "tool_calls": [{"id": "1", "type": "function", "function": {"name": "get_inbox", "arguments": {}}}]},
   {"role": "tool", "tool_call_id": "1", "content": "nothing new"}],
  [{"role": "assistant", "content": null, "tool_calls": [{"id": "1", "type": "function", "function": {"name": "get_inbox", "arguments": {}}}]},
   {"role": "tool", "tool_call_id": "1", "content": "two mails"},
   {"role": "assistant", "content": null, "tool_calls": [{"id": "2", "type": "function", "function": {"name": "send_email", "arguments": {"to": "a@example.com"}}},
                                                          {"id": "3", "type": "function", "function": {"name": "send_email", "arguments": {"to": "b@example.com"}}}]}]
]}`

// flowPolicy flags every email sent after reading the inbox.
const flowPolicy = `raise PolicyViolation("email sent after reading the inbox", call) if:
    (out: ToolOutput) -> (call: ToolCall)
    out is tool:get_inbox
    call is tool:send_email
`

// jsonStr quotes s as a JSON string.
func jsonStr(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// sseEvent is one server-sent event.
type sseEvent struct {
	name string // "" for the default event
	data string
}

func parseSSE(t *testing.T, body string) []sseEvent {
	t.Helper()
	var out []sseEvent
	for _, block := range strings.Split(strings.TrimRight(body, "\n"), "\n\n") {
		var ev sseEvent
		for _, line := range strings.Split(block, "\n") {
			switch {
			case strings.HasPrefix(line, "event: "):
				ev.name = strings.TrimPrefix(line, "event: ")
			case strings.HasPrefix(line, "data: "):
				ev.data = strings.TrimPrefix(line, "data: ")
			default:
				t.Fatalf("unexpected line %q in the event stream:\n%s", line, body)
			}
		}
		if !json.Valid([]byte(ev.data)) {
			t.Fatalf("event data is not JSON: %q", ev.data)
		}
		out = append(out, ev)
	}
	return out
}

func TestPolicyScenarios(t *testing.T) {
	forEachBackend(t, func(t *testing.T, st storeUnderTest) {
		f := newFixture(t, st, Config{MaxBody: smallLimit})
		f.addUser("alice")
		f.addUser("bob")
		ids := map[string]string{
			"ap":      f.createDataset("alice", "alice-private", false),
			"apub":    f.createDataset("alice", "alice-public", true),
			"bp":      f.createDataset("bob", "bob-private", false),
			"unknown": "00000000-0000-4000-8000-000000000000",
		}
		f.push("alice", strings.Replace(policyTraces, "%s", "alice-private", 1))
		f.push("alice", `{"dataset": "alice-public", "messages": [[{"role": "user", "content": "public"}]]}`)
		var pol struct{ ID string }
		f.must(201, "POST", "/api/v1/datasets/"+ids["ap"]+"/policies", "alice", `{"name": "flow", "source": `+jsonStr(flowPolicy)+`}`).json(t, &pol)
		ids["pol"] = pol.ID
		f.must(201, "POST", "/api/v1/datasets/"+ids["apub"]+"/policies", "alice", `{"name": "public", "source": "raise \"user spoke\" if:\n    (m: Message)\n    m.role == \"user\"\n"}`).json(t, &pol)
		ids["ppub"] = pol.ID
		f.must(201, "POST", "/api/v1/datasets/"+ids["bp"]+"/policies", "bob", `{"name": "bobs", "source": "raise \"x\" if:\n    (m: Message)\n"}`).json(t, &pol)
		ids["pbob"] = pol.ID
		big := `{"policy": "` + strings.Repeat("x", smallLimit) + `", "messages": []}`
		inboxTrace := `[{"role": "user", "content": "hi"}, {"role": "assistant", "content": null, "tool_calls": [{"id": "1", "type": "function", "function": {"name": "get_inbox", "arguments": {}}}]}]`
		inboxRule := jsonStr("raise \"read the inbox\" if:\n    (call: ToolCall)\n    call is tool:get_inbox\n")

		scenarios := []scenario{
			// POST /api/v1/policy/check
			{name: "check: a violation in Invariant's shape", kind: kSuccess, method: "POST", path: "/api/v1/policy/check", user: "alice",
				body:   `{"policy": ` + inboxRule + `, "messages": ` + inboxTrace + `}`,
				status: 200, want: []string{`^\{"errors":\[\{"args":\["read the inbox"\],"key":"\(0, \(1,\)\)","kwargs":\{\},"ranges":\["messages\.1\.tool_calls\.0"\]\}\]\}\n$`}},
			{name: "check: no violation", method: "POST", path: "/api/v1/policy/check", user: "alice",
				body: `{"policy": ` + inboxRule + `, "messages": [{"role": "user", "content": "hi"}]}`, status: 200, want: []string{`^\{"errors":\[\]\}\n$`}},
			{name: "check: parameters and character ranges", method: "POST", path: "/api/v1/policy/check", user: "alice",
				body:   `{"policy": "raise PolicyViolation(\"named\", who=input.name) if:\n    (m: Message)\n    input.name in m.content\n", "messages": [{"role": "user", "content": "I am bob"}], "parameters": {"name": "bob"}}`,
				status: 200, want: []string{`"args":\["named"\]`, `"kwargs":\{"who":"bob"\}`, `"ranges":\["messages\.0","messages\.0\.content:5-8"\]`}},
			{name: "check: a detector", method: "POST", path: "/api/v1/policy/check", user: "alice",
				body:   `{"policy": "from invariant.detectors import secrets\nraise \"secret\" if:\n    (m: Message)\n    any(secrets(m))\n", "messages": [{"role": "user", "content": "my token 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"}]}`,
				status: 200, want: []string{`"args":\["secret"\]`, `"messages\.0\.content:9-49"`}},
			{name: "check: bad JSON names the place", kind: kBadJSON, method: "POST", path: "/api/v1/policy/check", user: "alice",
				body: "{\"policy\": \"x\",\n \"messages\": [}", status: 400, want: []string{`"code":"invalid_json"`, `line 2`}},
			{name: "check: messages of the wrong type", kind: kTypes, method: "POST", path: "/api/v1/policy/check", user: "alice",
				body: `{"policy": ` + inboxRule + `, "messages": "hello"}`, status: 422, want: []string{`\$\.messages`}},
			{name: "check: policy of the wrong type", kind: kTypes, method: "POST", path: "/api/v1/policy/check", user: "alice",
				body: `{"policy": 5, "messages": []}`, status: 422, want: []string{`\$\.policy`, `must be a string`}},
			{name: "check: parameters of the wrong type", kind: kTypes, method: "POST", path: "/api/v1/policy/check", user: "alice",
				body: `{"policy": ` + inboxRule + `, "messages": [], "parameters": [1]}`, status: 422, want: []string{`\$\.parameters`}},
			{name: "check: without a policy", method: "POST", path: "/api/v1/policy/check", user: "alice",
				body: `{"messages": []}`, status: 422, want: []string{`needs \\"policy\\"`}},
			{name: "check: without messages", method: "POST", path: "/api/v1/policy/check", user: "alice",
				body: `{"policy": ` + inboxRule + `}`, status: 422, want: []string{`needs \\"messages\\"`}},
			{name: "check: unknown member", method: "POST", path: "/api/v1/policy/check", user: "alice",
				body: `{"policy": ` + inboxRule + `, "trace": []}`, status: 422, want: []string{`unknown member \\"trace\\"`}},
			{name: "check: missing auth", kind: kNoAuth, method: "POST", path: "/api/v1/policy/check", user: "",
				body: `{"policy": ` + inboxRule + `, "messages": []}`, status: 401},
			{name: "check: a wrong key", method: "POST", path: "/api/v1/policy/check", user: "bad",
				body: `{"policy": ` + inboxRule + `, "messages": []}`, status: 401},
			{name: "check: too-large body", kind: kTooLarge, method: "POST", path: "/api/v1/policy/check", user: "alice",
				body: big, status: 413},
			{name: "check: a syntax error in the policy", method: "POST", path: "/api/v1/policy/check", user: "alice",
				body:   `{"policy": "raise \"x\" if:\n    (m: Message)\n    m.role in [\"user\"\n", "messages": []}`,
				status: 422, want: []string{`"code":"invalid"`, `"message":"invalid policy: policy:3:15: \\"\[\\" is never closed"`, `"line":3,"col":15,"class":"SyntaxError"`, `   3 \|     m\.role in \[\\"user\\"\\n     \|               \^`}},
			{name: "check: an unknown type in the policy", method: "POST", path: "/api/v1/policy/check", user: "alice",
				body:   `{"policy": "raise \"x\" if:\n    (m: Mesage)\n", "messages": []}`,
				status: 422, want: []string{`"line":2,"col":6`, `"class":"NameError"`, `unknown type \\"Mesage\\"`}},
			{name: "check: a missing parameter", method: "POST", path: "/api/v1/policy/check", user: "alice",
				body:   `{"policy": "raise \"x\" if:\n    (m: Message)\n    m.content == input.expected\n", "messages": [{"role": "user", "content": "hi"}]}`,
				status: 422, want: []string{`"class":"MissingPolicyParameter"`, `"line":3`, `input\.expected`}},
			{name: "check: a detector this build lacks", method: "POST", path: "/api/v1/policy/check", user: "alice",
				body:   `{"policy": "from invariant.detectors import prompt_injection\nraise \"x\" if:\n    (m: Message)\n    prompt_injection(m)\n", "messages": [{"role": "user", "content": "hi"}]}`,
				status: 422, want: []string{`"class":"DetectorUnavailable"`, `not available in this build`}},

			// POST /api/v1/policy/check/batch (Invariant's guardrails service)
			{name: "batch: one result per policy, in order", kind: kSuccess, method: "POST", path: "/api/v1/policy/check/batch", user: "alice",
				body:   `{"policies": [` + inboxRule + `, "raise \"never\" if:\n    (m: Message)\n    m.content == \"nope\"\n"], "messages": ` + inboxTrace + `, "dataset_name": "ds"}`,
				status: 200, want: []string{`^\{"result":\[\{"errors":\[\{"args":\["read the inbox"\],"key":"\(0, \(1,\)\)","kwargs":\{\},"ranges":\["messages\.1\.tool_calls\.0"\]\}\]\},\{"errors":\[\]\}\]\}\n$`}},
			{name: "batch: a policy that does not load gets an error_message, the others their results", method: "POST", path: "/api/v1/policy/check/batch", user: "alice",
				body:   `{"policies": ["raise \"x\" if\n", ` + inboxRule + `], "messages": ` + inboxTrace + `}`,
				status: 200, want: []string{`^\{"result":\[\{"error_message":"invalid policy: policies\[0\]:1:`, `"errors":\[\]\},\{"errors":\[\{"args":\["read the inbox"\]`}},
			{name: "batch: bad JSON", kind: kBadJSON, method: "POST", path: "/api/v1/policy/check/batch", user: "alice",
				body: `{"policies": [`, status: 400, want: []string{`"invalid_json"`}},
			{name: "batch: policies of the wrong type", kind: kTypes, method: "POST", path: "/api/v1/policy/check/batch", user: "alice",
				body: `{"policies": [1], "messages": []}`, status: 422, want: []string{`\$\.policies\[0\]`}},
			{name: "batch: without policies", method: "POST", path: "/api/v1/policy/check/batch", user: "alice",
				body: `{"messages": []}`, status: 422, want: []string{`needs \\"policies\\"`}},
			{name: "batch: missing auth", kind: kNoAuth, method: "POST", path: "/api/v1/policy/check/batch", user: "",
				body: `{"policies": [], "messages": []}`, status: 401},
			{name: "batch: too-large body", kind: kTooLarge, method: "POST", path: "/api/v1/policy/check/batch", user: "alice",
				body: big, status: 413},

			// POST /api/v1/policy/load
			{name: "load: a policy that loads", kind: kSuccess, method: "POST", path: "/api/v1/policy/load", user: "alice",
				body: `{"policy": ` + inboxRule + `}`, status: 200, want: []string{`^\{"rules":1,"success":true\}\n$`}},
			{name: "load: a policy that does not", method: "POST", path: "/api/v1/policy/load", user: "alice",
				body: `{"policy": "raise \"x\" if\n"}`, status: 422, want: []string{`"class":"SyntaxError"`}},
			{name: "load: bad JSON", kind: kBadJSON, method: "POST", path: "/api/v1/policy/load", user: "alice",
				body: `{"policy": `, status: 400, want: []string{`"invalid_json"`}},
			{name: "load: wrong type", kind: kTypes, method: "POST", path: "/api/v1/policy/load", user: "alice",
				body: `{"policy": []}`, status: 422, want: []string{`\$\.policy`}},
			{name: "load: missing auth", kind: kNoAuth, method: "POST", path: "/api/v1/policy/load", user: "",
				body: `{"policy": "x"}`, status: 401},
			{name: "load: too-large body", kind: kTooLarge, method: "POST", path: "/api/v1/policy/load", user: "alice",
				body: `{"policy": "` + strings.Repeat("x", smallLimit) + `"}`, status: 413},

			// GET /api/v1/datasets/{id}/policies
			{name: "policies: list", kind: kSuccess, method: "GET", path: "/api/v1/datasets/{ap}/policies", user: "alice",
				status: 200, want: []string{`^\{"policies":\[\{"id":"{pol}","dataset_id":"{ap}","name":"flow","source":"raise PolicyViolation`, `send_email\\n","mode":"log","created_at"`}},
			{name: "policies: list a public dataset's anonymously", kind: kSuccess, method: "GET", path: "/api/v1/datasets/{apub}/policies", user: "",
				status: 200, want: []string{`"name":"public"`}},
			{name: "policies: list without auth", kind: kNoAuth, method: "GET", path: "/api/v1/datasets/{ap}/policies", user: "",
				status: 404},
			{name: "policies: list another user's", kind: kPrivate, method: "GET", path: "/api/v1/datasets/{ap}/policies", user: "bob",
				status: 404},
			{name: "policies: list an unknown dataset's", kind: kUnknown, method: "GET", path: "/api/v1/datasets/{unknown}/policies", user: "alice",
				status: 404},

			// POST /api/v1/datasets/{id}/policies
			{name: "policies: create", kind: kSuccess, method: "POST", path: "/api/v1/datasets/{ap}/policies", user: "alice",
				body: `{"name": "tools", "source": ` + inboxRule + `}`, status: 201, want: []string{`"name":"tools"`, `"dataset_id":"{ap}"`, `"id":"[0-9a-f-]{36}"`}},
			{name: "policies: create in block mode", method: "POST", path: "/api/v1/datasets/{ap}/policies", user: "alice",
				body: `{"name": "blocker", "source": ` + inboxRule + `, "mode": "block"}`, status: 201, want: []string{`"name":"blocker"`, `"mode":"block"`}},
			{name: "policies: create in log mode", method: "POST", path: "/api/v1/datasets/{ap}/policies", user: "alice",
				body: `{"name": "logger", "source": ` + inboxRule + `, "mode": "log"}`, status: 201, want: []string{`"name":"logger"`, `"mode":"log"`}},
			{name: "policies: create in an unknown mode", method: "POST", path: "/api/v1/datasets/{ap}/policies", user: "alice",
				body:   `{"name": "warner", "source": ` + inboxRule + `, "mode": "warn"}`,
				status: 422, want: []string{`"code":"invalid"`, `\$\.mode`, `mode must be \\"block\\" or \\"log\\", not \\"warn\\"`, `"line":1,"col":\d+`}},
			{name: "policies: create with a mode of the wrong type", method: "POST", path: "/api/v1/datasets/{ap}/policies", user: "alice",
				body: `{"name": "warner", "source": ` + inboxRule + `, "mode": true}`, status: 422, want: []string{`\$\.mode`}},
			{name: "policies: the refused ones are not saved", method: "GET", path: "/api/v1/datasets/{ap}/policies", user: "alice",
				status: 200, want: []string{`"name":"blocker","source":"[^"]*(\\"[^"]*)*","mode":"block"`, `"name":"logger"`}, absent: []string{`warner`}},
			{name: "policies: create a taken name", method: "POST", path: "/api/v1/datasets/{ap}/policies", user: "alice",
				body: `{"name": "tools", "source": ` + inboxRule + `}`, status: 409, want: []string{`"code":"conflict"`}},
			{name: "policies: create with a syntax error", method: "POST", path: "/api/v1/datasets/{ap}/policies", user: "alice",
				body: `{"name": "broken", "source": "raise \"x\" if\n    (m: Message)\n"}`, status: 422, want: []string{`broken:2:5: `, `"line":2,"col":5,"class":"SyntaxError"`}},
			{name: "policies: create without a source", method: "POST", path: "/api/v1/datasets/{ap}/policies", user: "alice",
				body: `{"name": "empty"}`, status: 422, want: []string{`needs \\"source\\"`}},
			{name: "policies: create without a name", method: "POST", path: "/api/v1/datasets/{ap}/policies", user: "alice",
				body: `{"source": ` + inboxRule + `}`, status: 422, want: []string{`policy name must not be empty`}},
			{name: "policies: create, bad JSON", kind: kBadJSON, method: "POST", path: "/api/v1/datasets/{ap}/policies", user: "alice",
				body: `{"name": "x", "source": }`, status: 400, want: []string{`"code":"invalid_json"`, `column 25`}},
			{name: "policies: create, wrong types", kind: kTypes, method: "POST", path: "/api/v1/datasets/{ap}/policies", user: "alice",
				body: `{"name": "x", "source": ["raise"]}`, status: 422, want: []string{`\$\.source`}},
			{name: "policies: create without auth", kind: kNoAuth, method: "POST", path: "/api/v1/datasets/{ap}/policies", user: "",
				body: `{"name": "x", "source": ` + inboxRule + `}`, status: 401},
			{name: "policies: create in another user's dataset", kind: kPrivate, method: "POST", path: "/api/v1/datasets/{ap}/policies", user: "bob",
				body: `{"name": "x", "source": ` + inboxRule + `}`, status: 404},
			{name: "policies: create in another user's public dataset", method: "POST", path: "/api/v1/datasets/{apub}/policies", user: "bob",
				body: `{"name": "x", "source": ` + inboxRule + `}`, status: 403},
			{name: "policies: create, too-large body", kind: kTooLarge, method: "POST", path: "/api/v1/datasets/{ap}/policies", user: "alice",
				body: big, status: 413},
			{name: "policies: create in an unknown dataset", kind: kUnknown, method: "POST", path: "/api/v1/datasets/{unknown}/policies", user: "alice",
				body: `{"name": "x", "source": ` + inboxRule + `}`, status: 404},

			// GET /api/v1/datasets/{id}/policies/{pid}
			{name: "policy: get", kind: kSuccess, method: "GET", path: "/api/v1/datasets/{ap}/policies/{pol}", user: "alice",
				status: 200, want: []string{`^\{"id":"{pol}","dataset_id":"{ap}","name":"flow"`, `"mode":"log"`}},
			{name: "policy: get without auth", kind: kNoAuth, method: "GET", path: "/api/v1/datasets/{ap}/policies/{pol}", user: "",
				status: 404},
			{name: "policy: get another user's private policy", kind: kPrivate, method: "GET", path: "/api/v1/datasets/{ap}/policies/{pol}", user: "bob",
				status: 404},
			{name: "policy: get an unknown policy", kind: kUnknown, method: "GET", path: "/api/v1/datasets/{ap}/policies/{unknown}", user: "alice",
				status: 404},
			{name: "policy: get through another dataset", method: "GET", path: "/api/v1/datasets/{apub}/policies/{pol}", user: "alice",
				status: 404},

			// PUT /api/v1/datasets/{id}/policies/{pid}
			{name: "policy: update", kind: kSuccess, method: "PUT", path: "/api/v1/datasets/{ap}/policies/{pol}", user: "alice",
				body: `{"source": ` + jsonStr(flowPolicy+"\n") + `}`, status: 200, want: []string{`"id":"{pol}"`, `"name":"flow"`}},
			{name: "policy: update the mode only", method: "PUT", path: "/api/v1/datasets/{ap}/policies/{pol}", user: "alice",
				body: `{"mode": "block"}`, status: 200, want: []string{`"id":"{pol}"`, `"name":"flow"`, `"source":"raise PolicyViolation`, `"mode":"block"`}},
			{name: "policy: the mode is saved", method: "GET", path: "/api/v1/datasets/{ap}/policies/{pol}", user: "alice",
				status: 200, want: []string{`"mode":"block"`}},
			{name: "policy: update the source keeps the mode", method: "PUT", path: "/api/v1/datasets/{ap}/policies/{pol}", user: "alice",
				body: `{"source": ` + jsonStr(flowPolicy) + `}`, status: 200, want: []string{`"mode":"block"`}},
			{name: "policy: update to an unknown mode", method: "PUT", path: "/api/v1/datasets/{ap}/policies/{pol}", user: "alice",
				body: `{"name": "renamed", "mode": "Block"}`, status: 422, want: []string{`\$\.mode`, `mode must be \\"block\\" or \\"log\\", not \\"Block\\"`}},
			{name: "policy: update with a mode of the wrong type", method: "PUT", path: "/api/v1/datasets/{ap}/policies/{pol}", user: "alice",
				body: `{"mode": null}`, status: 422, want: []string{`\$\.mode`}},
			{name: "policy: a refused update changes nothing", method: "GET", path: "/api/v1/datasets/{ap}/policies/{pol}", user: "alice",
				status: 200, want: []string{`"name":"flow"`, `"mode":"block"`}},
			{name: "policy: back to log", method: "PUT", path: "/api/v1/datasets/{ap}/policies/{pol}", user: "alice",
				body: `{"mode": "log"}`, status: 200, want: []string{`"mode":"log"`}},
			{name: "policy: update to a broken source", method: "PUT", path: "/api/v1/datasets/{ap}/policies/{pol}", user: "alice",
				body: `{"source": "raise \"x\" if:\n    (m: Message)\n    m.rol == 1\n"}`, status: 422, want: []string{`"line":3`, `"class":"InvariantAttributeError"`}},
			{name: "policy: rename to a taken name", method: "PUT", path: "/api/v1/datasets/{ap}/policies/{pol}", user: "alice",
				body: `{"name": "tools"}`, status: 409},
			{name: "policy: update, bad JSON", kind: kBadJSON, method: "PUT", path: "/api/v1/datasets/{ap}/policies/{pol}", user: "alice",
				body: `{"name": `, status: 400, want: []string{`"invalid_json"`}},
			{name: "policy: update, wrong types", kind: kTypes, method: "PUT", path: "/api/v1/datasets/{ap}/policies/{pol}", user: "alice",
				body: `{"name": 1}`, status: 422, want: []string{`\$\.name`}},
			{name: "policy: update without auth", kind: kNoAuth, method: "PUT", path: "/api/v1/datasets/{ap}/policies/{pol}", user: "",
				body: `{"name": "x"}`, status: 401},
			{name: "policy: update another user's", kind: kPrivate, method: "PUT", path: "/api/v1/datasets/{ap}/policies/{pol}", user: "bob",
				body: `{"name": "x"}`, status: 404},
			{name: "policy: update, too-large body", kind: kTooLarge, method: "PUT", path: "/api/v1/datasets/{ap}/policies/{pol}", user: "alice",
				body: big, status: 413},
			{name: "policy: update an unknown policy", kind: kUnknown, method: "PUT", path: "/api/v1/datasets/{ap}/policies/{unknown}", user: "alice",
				body: `{"name": "x"}`, status: 404},

			// POST /api/v1/datasets/{id}/policies/{pid}/check (the stream
			// itself is checked in TestDatasetCheck)
			{name: "dataset check: stream", kind: kSuccess, method: "POST", path: "/api/v1/datasets/{ap}/policies/{pol}/check", user: "alice",
				status: 200, want: []string{`^data: \{"metadata":\{"num_traces":3,"policy":\{"id":"{pol}","name":"flow"\}\}\}\n\n`, `event: done\ndata: \{"num_traces":3,"checked":3,"passed":1,"failed":2,"errored":0,"violations":3\}\n\n$`}},
			{name: "dataset check: bad JSON", kind: kBadJSON, method: "POST", path: "/api/v1/datasets/{ap}/policies/{pol}/check", user: "alice",
				body: `{"parameters": {`, status: 400, want: []string{`"invalid_json"`}},
			{name: "dataset check: parameters of the wrong type", kind: kTypes, method: "POST", path: "/api/v1/datasets/{ap}/policies/{pol}/check", user: "alice",
				body: `{"parameters": "x"}`, status: 422, want: []string{`\$\.parameters`}},
			{name: "dataset check: without auth", kind: kNoAuth, method: "POST", path: "/api/v1/datasets/{ap}/policies/{pol}/check", user: "",
				status: 401},
			{name: "dataset check: another user's dataset", kind: kPrivate, method: "POST", path: "/api/v1/datasets/{ap}/policies/{pol}/check", user: "bob",
				status: 404},
			{name: "dataset check: another user's public dataset", method: "POST", path: "/api/v1/datasets/{apub}/policies/{ppub}/check", user: "bob",
				status: 403},
			{name: "dataset check: too-large body", kind: kTooLarge, method: "POST", path: "/api/v1/datasets/{ap}/policies/{pol}/check", user: "alice",
				body: big, status: 413},
			{name: "dataset check: unknown policy", kind: kUnknown, method: "POST", path: "/api/v1/datasets/{ap}/policies/{unknown}/check", user: "alice",
				status: 404},
			{name: "dataset check: another dataset's policy", method: "POST", path: "/api/v1/datasets/{ap}/policies/{pbob}/check", user: "alice",
				status: 404},

			// DELETE /api/v1/datasets/{id}/policies/{pid}, last
			{name: "policy: delete without auth", kind: kNoAuth, method: "DELETE", path: "/api/v1/datasets/{ap}/policies/{pol}", user: "",
				status: 401},
			{name: "policy: delete another user's", kind: kPrivate, method: "DELETE", path: "/api/v1/datasets/{ap}/policies/{pol}", user: "bob",
				status: 404},
			{name: "policy: delete an unknown policy", kind: kUnknown, method: "DELETE", path: "/api/v1/datasets/{ap}/policies/{unknown}", user: "alice",
				status: 404},
			{name: "policy: delete", kind: kSuccess, method: "DELETE", path: "/api/v1/datasets/{ap}/policies/{pol}", user: "alice",
				status: 204},
			{name: "policy: deleted policy is gone", method: "GET", path: "/api/v1/datasets/{ap}/policies/{pol}", user: "alice",
				status: 404},
		}
		pairs := []string{}
		for k, v := range ids {
			pairs = append(pairs, "{"+k+"}", v)
		}
		expand := strings.NewReplacer(pairs...)
		checkAreaCoverage(t, f.srv, scenarios, expand, isPolicyRoute, 9)
		if !slices.Contains(f.srv.patterns, "POST /api/v1/policy/check") {
			t.Error("POST /api/v1/policy/check is not registered")
		}
		runScenarios(t, f, scenarios, expand)
	})
}

func httptestRequest(method, path string) *http.Request {
	r, _ := http.NewRequest(method, "http://localhost"+path, nil)
	return r
}

// annotationsOf lists a trace's annotations through the API.
func annotationsOf(t *testing.T, f *fixture, user, traceID string) []annotationJSON {
	t.Helper()
	var out struct{ Annotations []annotationJSON }
	f.must(200, "GET", "/api/v1/traces/"+traceID+"/annotations", user, "").json(t, &out)
	return out.Annotations
}

// runCheck runs a dataset-wide check and returns its events.
func runCheck(t *testing.T, f *fixture, dataset, policyID, body string) []sseEvent {
	t.Helper()
	r := f.must(200, "POST", "/api/v1/datasets/"+dataset+"/policies/"+policyID+"/check", "alice", body)
	if ct := r.header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("Content-Type %q", ct)
	}
	return parseSSE(t, string(r.body))
}

// TestDatasetCheck checks a dataset with a saved policy: the events of the
// stream, and the annotations it leaves on the traces (and replaces on the
// next run) while other annotations stay as they were.
func TestDatasetCheck(t *testing.T) {
	forEachBackend(t, func(t *testing.T, st storeUnderTest) {
		f := newFixture(t, st, Config{})
		f.addUser("alice")
		ds := f.createDataset("alice", "mail", false)
		tids := f.push("alice", strings.Replace(policyTraces, "%s", "mail", 1))
		if len(tids) != 3 {
			t.Fatalf("pushed %d traces", len(tids))
		}
		// A user's annotation, and another policy's results, that the
		// check must leave alone.
		var userAnn annotationJSON
		f.must(201, "POST", "/api/v1/traces/"+tids[0]+"/annotations", "alice", `{"address": "messages.0", "content": "mine", "source": "user"}`).json(t, &userAnn)
		var other, flow policyJSON
		f.must(201, "POST", "/api/v1/datasets/"+ds+"/policies", "alice", `{"name": "user-messages", "source": "raise \"a user message\" if:\n    (m: Message)\n    m.role == \"user\"\n"}`).json(t, &other)
		f.must(201, "POST", "/api/v1/datasets/"+ds+"/policies", "alice", `{"name": "flow", "source": `+jsonStr(flowPolicy)+`}`).json(t, &flow)
		runCheck(t, f, ds, other.ID, "")
		otherBefore := annotationsOf(t, f, "alice", tids[0])

		events := runCheck(t, f, ds, flow.ID, "")
		if len(events) != 5 {
			t.Fatalf("%d events, want metadata, 3 traces, done: %+v", len(events), events)
		}
		var meta struct {
			Metadata struct {
				NumTraces int `json:"num_traces"`
			} `json:"metadata"`
		}
		json.Unmarshal([]byte(events[0].data), &meta)
		if events[0].name != "" || meta.Metadata.NumTraces != 3 {
			t.Errorf("first event %+v", events[0])
		}
		type result struct {
			Index   int64  `json:"index"`
			TraceID string `json:"trace_id"`
			Status  string `json:"status"`
			Errors  []struct {
				Key    string   `json:"key"`
				Args   []any    `json:"args"`
				Ranges []string `json:"ranges"`
			} `json:"errors"`
		}
		var results []result
		for _, ev := range events[1:4] {
			var r result
			if err := json.Unmarshal([]byte(ev.data), &r); err != nil || ev.name != "" {
				t.Fatalf("event %+v: %v", ev, err)
			}
			results = append(results, r)
		}
		wantStatus := []string{"failed", "passed", "failed"}
		wantErrors := []int{1, 0, 2}
		for i, r := range results {
			if r.Index != int64(i) || r.TraceID != tids[i] || r.Status != wantStatus[i] || len(r.Errors) != wantErrors[i] {
				t.Errorf("trace %d: %+v", i, r)
			}
		}
		if e := results[0].Errors[0]; e.Key != "(0, (3, 2))" || e.Args[0] != "email sent after reading the inbox" ||
			strings.Join(e.Ranges, " ") != "messages.2 messages.3.tool_calls.0" {
			t.Errorf("trace 0's violation: %+v", e)
		}
		if events[4].name != "done" || events[4].data != `{"num_traces":3,"checked":3,"passed":1,"failed":2,"errored":0,"violations":3}` {
			t.Errorf("last event %+v", events[4])
		}

		// The violations show up on the traces: one annotation per range.
		flowAnns := func(traceID string) []annotationJSON {
			var out []annotationJSON
			for _, a := range annotationsOf(t, f, "alice", traceID) {
				var extra map[string]any
				json.Unmarshal(a.Extra, &extra)
				if a.Source == "analyzer" && extra["policy_id"] == flow.ID {
					out = append(out, a)
				}
			}
			return out
		}
		got := flowAnns(tids[0])
		if len(got) != 2 || got[0].Address != "messages.2" || got[1].Address != "messages.3.tool_calls.0" ||
			got[0].Content != "email sent after reading the inbox" || got[0].Author != "" {
			t.Fatalf("trace 0's analyzer annotations: %+v", got)
		}
		var extra map[string]any
		json.Unmarshal(got[0].Extra, &extra)
		if extra["policy_name"] != "flow" || extra["key"] != "(0, (3, 2))" {
			t.Errorf("extra %s", got[0].Extra)
		}
		if n := len(flowAnns(tids[1])); n != 0 {
			t.Errorf("trace 1 has %d annotations of the policy, want 0", n)
		}
		if n := len(flowAnns(tids[2])); n != 4 {
			t.Errorf("trace 2 has %d annotations of the policy, want 4 (two violations, two ranges each)", n)
		}
		// The trace itself carries them too (GET /traces/{id}).
		r := f.must(200, "GET", "/api/v1/traces/"+tids[0], "alice", "")
		if !strings.Contains(r.String(), `"email sent after reading the inbox"`) {
			t.Errorf("the trace does not carry its annotations: %s", r)
		}

		// Checking again with a changed policy replaces that policy's
		// results, and only those.
		f.must(200, "PUT", "/api/v1/datasets/"+ds+"/policies/"+flow.ID, "alice",
			`{"source": `+jsonStr(strings.Replace(flowPolicy, "email sent", "mail sent", 1))+`}`)
		events = runCheck(t, f, ds, flow.ID, "{}")
		if events[len(events)-1].name != "done" {
			t.Fatalf("second run: %+v", events)
		}
		got = flowAnns(tids[0])
		if len(got) != 2 || got[0].Content != "mail sent after reading the inbox" {
			t.Errorf("after the second run: %+v", got)
		}
		after := annotationsOf(t, f, "alice", tids[0])
		for _, a := range otherBefore {
			var ex map[string]any
			json.Unmarshal(a.Extra, &ex)
			if ex["policy_id"] == flow.ID {
				continue
			}
			if !slices.ContainsFunc(after, func(b annotationJSON) bool {
				return b.ID == a.ID && b.Content == a.Content && b.Address == a.Address
			}) {
				t.Errorf("annotation %+v changed or went away", a)
			}
		}
		if !slices.ContainsFunc(after, func(b annotationJSON) bool { return b.ID == userAnn.ID }) {
			t.Errorf("the user's annotation went away")
		}
		if len(after) != len(otherBefore)+2 {
			t.Errorf("%d annotations after, %d before (+2 of the flow policy expected)", len(after), len(otherBefore))
		}

		// A policy that fails on the traces: one error event per trace,
		// and the earlier results stay.
		var needs policyJSON
		f.must(201, "POST", "/api/v1/datasets/"+ds+"/policies", "alice", `{"name": "needs-input", "source": "raise \"x\" if:\n    (m: Message)\n    m.content == input.expected\n"}`).json(t, &needs)
		events = runCheck(t, f, ds, needs.ID, "")
		for _, ev := range events[1:4] {
			if !strings.Contains(ev.data, `"status":"error"`) || !strings.Contains(ev.data, `"class":"MissingPolicyParameter"`) {
				t.Errorf("event %s", ev.data)
			}
		}
		if events[4].data != `{"num_traces":3,"checked":3,"passed":0,"failed":0,"errored":3,"violations":0}` {
			t.Errorf("done %s", events[4].data)
		}
		// ... and with the parameter it runs.
		events = runCheck(t, f, ds, needs.ID, `{"parameters": {"expected": "read my inbox"}}`)
		if events[4].data != `{"num_traces":3,"checked":3,"passed":2,"failed":1,"errored":0,"violations":1}` {
			t.Errorf("done with parameters %s", events[4].data)
		}
	})
}

// TestPolicyBudget checks that the server bounds every check: a runaway rule
// ends with a BudgetExceeded error instead of holding the server.
func TestPolicyBudget(t *testing.T) {
	saved := checkLimits
	t.Cleanup(func() { checkLimits = saved })
	checkLimits = policy.Limits{Steps: 200_000}
	st, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "lookout.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	f := newFixture(t, st, Config{})
	f.addUser("alice")
	var msgs []string
	for i := range 40 {
		msgs = append(msgs, `{"role": "user", "content": "m`+strings.Repeat("x", i)+`"}`)
	}
	// Four variables over 40 messages: 2.5 million assignments.
	body := `{"policy": "raise \"x\" if:\n    (a: Message)\n    (b: Message)\n    (c: Message)\n    (d: Message)\n    a.content + b.content + c.content + d.content == \"never\"\n", "messages": [` + strings.Join(msgs, ",") + `]}`
	r := f.must(422, "POST", "/api/v1/policy/check", "alice", body)
	if !strings.Contains(r.String(), `"class":"BudgetExceeded"`) || !strings.Contains(r.String(), "200000 steps") {
		t.Errorf("runaway rule: %s", r)
	}
	// The same rule over 3 messages stays within the budget.
	body = strings.Replace(body, strings.Join(msgs, ","), strings.Join(msgs[:3], ","), 1)
	f.must(200, "POST", "/api/v1/policy/check", "alice", body)
	if saved.Steps <= 0 || saved.Time <= 0 {
		t.Errorf("the server's default limits %+v must bound both steps and time", saved)
	}
}
