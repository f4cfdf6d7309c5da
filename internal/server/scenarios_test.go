package server

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"regexp"
	"strings"
	"testing"

	"github.com/lookout-dev/lookout/client"
)

// scenario is one request and what must come back.
type scenario struct {
	name   string
	method string
	path   string // {placeholders} are replaced by fixture ids
	user   string // "", "alice", "bob", or "bad" (a wrong key)
	body   string
	header []string // extra header name, value pairs
	status int
	want   []string // regexps the body must match
}

const smallLimit = 64 << 10

// TestScenarios runs every endpoint through its cases — success, bad JSON
// (the message names the place), wrong types, missing auth, another user's
// private dataset, too-large body, unknown dataset — on every backend.
func TestScenarios(t *testing.T) {
	forEachBackend(t, func(t *testing.T, st storeUnderTest) {
		f := newFixture(t, st, Config{MaxBody: smallLimit})
		f.addUser("alice")
		f.addUser("bob")
		ids := map[string]string{
			"ap":   f.createDataset("alice", "alice-private", false),
			"apub": f.createDataset("alice", "alice-public", true),
			"bp":   f.createDataset("bob", "bob-private", false),
		}
		ids["at"] = f.push("alice", `{"dataset": "alice-private", "messages": [[{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}], [{"role": "user", "content": "second"}]], "metadata": [{"name": "first"}, null], "annotations": [[{"address": "messages.0.content:0-2", "content": "greeting"}], null]}`)[0]
		ids["atpub"] = f.push("alice", `{"dataset": "alice-public", "messages": [[{"role": "user", "content": "public"}]]}`)[0]
		ids["bt"] = f.push("bob", `{"dataset": "bob-private", "messages": [[{"role": "user", "content": "bob's"}]]}`)[0]
		var ann struct{ ID string }
		f.must(201, "POST", "/api/v1/traces/"+ids["at"]+"/annotations", "alice", `{"address": "messages.1", "content": "to edit", "source": "user"}`).json(t, &ann)
		ids["aann"] = ann.ID
		var key struct{ ID string }
		f.must(201, "POST", "/api/v1/keys", "alice", `{"name": "to revoke"}`).json(t, &key)
		ids["akey"] = key.ID
		unknown := "00000000-0000-4000-8000-000000000000"
		ids["unknown"] = unknown
		big := `{"messages": [[{"role": "user", "content": "` + strings.Repeat("x", smallLimit) + `"}]]}`

		scenarios := []scenario{
			// push
			{name: "push: Invariant shape with a key", method: "POST", path: "/api/v1/push/trace", user: "alice",
				body:   `{"messages": [[{"role": "user", "content": "a"}]], "dataset": "pushed", "metadata": [{"k": 1}], "annotations": null}`,
				status: 200, want: []string{`"id":\["[^"]+"\]`, `"dataset":"pushed"`}},
			{name: "push: without a dataset", method: "POST", path: "/api/v1/push/trace", user: "alice",
				body: `{"messages": [[{"role": "user", "content": "loose"}]]}`, status: 200, want: []string{`^\{"id":\["[^"]+"\]\}`}},
			{name: "push: bad JSON names line, column and path", method: "POST", path: "/api/v1/push/trace", user: "alice",
				body:   "{\"messages\": [[{\"role\": \"user\",\n \"content\": }]]}",
				status: 400, want: []string{`"code":"invalid_json"`, `line 2, column 13 \(\$\.messages\[0\]\[0\]\.content\)`, `"details":\{"line":2,"col":13,"path":"\$\.messages\[0\]\[0\]\.content"\}`}},
			{name: "push: truncated body", method: "POST", path: "/api/v1/push/trace", user: "alice",
				body: `{"messages": [[`, status: 400, want: []string{`"invalid_json"`, `unexpected end of JSON input`}},
			{name: "push: messages of the wrong type", method: "POST", path: "/api/v1/push/trace", user: "alice",
				body: `{"messages": "hello"}`, status: 422, want: []string{`"code":"invalid"`, `\$\.messages`, `must be an array, not a string`}},
			{name: "push: event content of the wrong type", method: "POST", path: "/api/v1/push/trace", user: "alice",
				body: `{"messages": [[{"role": "user", "content": 5}]]}`, status: 422, want: []string{`\$\.messages\[0\]\[0\]\.content`}},
			{name: "push: dataset of the wrong type", method: "POST", path: "/api/v1/push/trace", user: "alice",
				body: `{"messages": [[]], "dataset": 7}`, status: 422, want: []string{`\$\.dataset`, `must be a string`}},
			{name: "push: metadata length differs", method: "POST", path: "/api/v1/push/trace", user: "alice",
				body: `{"messages": [[], []], "metadata": [{}]}`, status: 422, want: []string{`metadata has 1 entries but messages has 2`}},
			{name: "push: empty messages", method: "POST", path: "/api/v1/push/trace", user: "alice",
				body: `{"messages": []}`, status: 422, want: []string{`messages must not be empty`}},
			{name: "push: no messages", method: "POST", path: "/api/v1/push/trace", user: "alice",
				body: `{"dataset": "x"}`, status: 422, want: []string{`needs \\"messages\\"`}},
			{name: "push: unknown member", method: "POST", path: "/api/v1/push/trace", user: "alice",
				body: `{"messages": [[]], "dataset_id": "x"}`, status: 422, want: []string{`\$\.dataset_id`, `unknown member`}},
			{name: "push: annotation without address", method: "POST", path: "/api/v1/push/trace", user: "alice",
				body: `{"messages": [[]], "annotations": [[{"content": "x"}]]}`, status: 422, want: []string{`\$\.annotations\[0\]\[0\]`, `address`}},
			{name: "push: missing auth", method: "POST", path: "/api/v1/push/trace", user: "",
				body: `{"messages": [[]]}`, status: 401, want: []string{`"code":"unauthorized"`}},
			{name: "push: wrong key", method: "POST", path: "/api/v1/push/trace", user: "bad",
				body: `{"messages": [[]]}`, status: 401, want: []string{`invalid or revoked API key`}},
			{name: "push: not a Bearer header", method: "POST", path: "/api/v1/push/trace", user: "",
				header: []string{"Authorization", "Basic YTpi"}, body: `{"messages": [[]]}`, status: 401, want: []string{`Bearer`}},
			{name: "push: too large (Content-Length)", method: "POST", path: "/api/v1/push/trace", user: "alice",
				body: big, status: 413, want: []string{`"code":"body_too_large"`, `64KiB`}},
			{name: "push: dataset name of another user is a new dataset of mine", method: "POST", path: "/api/v1/push/trace", user: "alice",
				body: `{"messages": [[]], "dataset": "bob-private"}`, status: 200, want: []string{`"dataset":"bob-private"`}},
			{name: "push: cross-site browser request", method: "POST", path: "/api/v1/push/trace", user: "alice",
				header: []string{"Origin", "https://evil.example"}, body: `{"messages": [[]]}`, status: 403, want: []string{`cross-origin`}},

			// datasets
			{name: "datasets: create", method: "POST", path: "/api/v1/datasets", user: "alice",
				body: `{"name": "made", "public": false, "metadata": {"a": 1}}`, status: 201, want: []string{`"name":"made"`, `"owner":"alice"`, `"metadata":\{"a":1\}`, `"trace_count":0`}},
			{name: "datasets: create a taken name", method: "POST", path: "/api/v1/datasets", user: "alice",
				body: `{"name": "made"}`, status: 409, want: []string{`"code":"conflict"`, `made`}},
			{name: "datasets: create with bad JSON", method: "POST", path: "/api/v1/datasets", user: "alice",
				body: `{"name": "x",}`, status: 400, want: []string{`line 1, column 14`, `invalid JSON`}},
			{name: "datasets: create with a number for a name", method: "POST", path: "/api/v1/datasets", user: "alice",
				body: `{"name": 5}`, status: 422, want: []string{`\$\.name`, `must be a string, not a number`}},
			{name: "datasets: create with an empty name", method: "POST", path: "/api/v1/datasets", user: "alice",
				body: `{"name": " "}`, status: 422, want: []string{`must not be empty`}},
			{name: "datasets: create with metadata not an object", method: "POST", path: "/api/v1/datasets", user: "alice",
				body: `{"name": "m", "metadata": [1]}`, status: 422, want: []string{`\$\.metadata`}},
			{name: "datasets: create without auth", method: "POST", path: "/api/v1/datasets", user: "",
				body: `{"name": "x"}`, status: 401},
			{name: "datasets: create too large", method: "POST", path: "/api/v1/datasets", user: "alice",
				body: `{"name": "` + strings.Repeat("n", smallLimit) + `"}`, status: 413},
			{name: "datasets: a body that is not an object", method: "POST", path: "/api/v1/datasets", user: "alice",
				body: `[]`, status: 422, want: []string{`must be an object, not an array`}},
			{name: "datasets: list mine and public", method: "GET", path: "/api/v1/datasets", user: "bob",
				status: 200, want: []string{`"name":"alice-public"`, `"name":"bob-private"`}},
			{name: "datasets: list anonymously shows public only", method: "GET", path: "/api/v1/datasets", user: "",
				status: 200, want: []string{`^\{"datasets":\[\{[^\]]*"name":"alice-public"[^\]]*\]\}\n$`}},
			{name: "datasets: filter by name", method: "GET", path: "/api/v1/datasets?name=alice-private&mine=true", user: "alice",
				status: 200, want: []string{`"id":"{ap}"`}},
			{name: "datasets: get mine", method: "GET", path: "/api/v1/datasets/{ap}", user: "alice",
				status: 200, want: []string{`"id":"{ap}"`, `"trace_count":2`, `"public":false`, `"last_pushed":"`}},
			{name: "datasets: get another user's private dataset", method: "GET", path: "/api/v1/datasets/{ap}", user: "bob",
				status: 404, want: []string{`"code":"not_found"`}},
			{name: "datasets: get a private dataset anonymously", method: "GET", path: "/api/v1/datasets/{ap}", user: "",
				status: 404},
			{name: "datasets: get another user's public dataset", method: "GET", path: "/api/v1/datasets/{apub}", user: "bob",
				status: 200, want: []string{`"owner":"alice"`}},
			{name: "datasets: get an unknown dataset", method: "GET", path: "/api/v1/datasets/{unknown}", user: "alice",
				status: 404},
			{name: "datasets: get a malformed id", method: "GET", path: "/api/v1/datasets/not-an-id", user: "alice",
				status: 404},
			{name: "datasets: delete another user's private dataset", method: "DELETE", path: "/api/v1/datasets/{ap}", user: "bob",
				status: 404},
			{name: "datasets: delete another user's public dataset", method: "DELETE", path: "/api/v1/datasets/{apub}", user: "bob",
				status: 403, want: []string{`"code":"forbidden"`}},
			{name: "datasets: delete without auth", method: "DELETE", path: "/api/v1/datasets/{ap}", user: "",
				status: 401},
			{name: "datasets: delete an unknown dataset", method: "DELETE", path: "/api/v1/datasets/{unknown}", user: "alice",
				status: 404},

			// metadata
			{name: "metadata: put merges", method: "PUT", path: "/api/v1/datasets/{ap}/metadata", user: "alice",
				body: `{"a": 1, "b": {"c": 2}}`, status: 200, want: []string{`"a":1`, `"b":\{"c":2\}`}},
			{name: "metadata: put merges top-level keys", method: "PUT", path: "/api/v1/datasets/{ap}/metadata?mode=merge", user: "alice",
				body: `{"b": 3}`, status: 200, want: []string{`"a":1`, `"b":3`}},
			{name: "metadata: get", method: "GET", path: "/api/v1/datasets/{ap}/metadata", user: "alice",
				status: 200, want: []string{`"a":1`, `"b":3`}},
			{name: "metadata: put replaces", method: "PUT", path: "/api/v1/datasets/{ap}/metadata?mode=replace", user: "alice",
				body: `{"only": true}`, status: 200, want: []string{`^\{"only":true\}\n$`}},
			{name: "metadata: bad mode", method: "PUT", path: "/api/v1/datasets/{ap}/metadata?mode=append", user: "alice",
				body: `{}`, status: 400, want: []string{`mode must be merge or replace`}},
			{name: "metadata: bad JSON", method: "PUT", path: "/api/v1/datasets/{ap}/metadata", user: "alice",
				body: `{"a": tru}`, status: 400, want: []string{`\$\.a`}},
			{name: "metadata: not an object", method: "PUT", path: "/api/v1/datasets/{ap}/metadata", user: "alice",
				body: `[1, 2]`, status: 422, want: []string{`metadata must be an object, not an array`}},
			{name: "metadata: another user's private dataset", method: "GET", path: "/api/v1/datasets/{ap}/metadata", user: "bob",
				status: 404},
			{name: "metadata: put without auth", method: "PUT", path: "/api/v1/datasets/{apub}/metadata", user: "",
				body: `{}`, status: 401},
			{name: "metadata: put on another user's public dataset", method: "PUT", path: "/api/v1/datasets/{apub}/metadata", user: "bob",
				body: `{}`, status: 403},
			{name: "metadata: unknown dataset", method: "GET", path: "/api/v1/datasets/{unknown}/metadata", user: "alice",
				status: 404},

			// upload
			{name: "upload: Invariant JSONL, raw body", method: "POST", path: "/api/v1/datasets/{ap}/upload?filename=a.jsonl", user: "alice",
				body:   "{\"metadata\": {\"from\": \"upload\"}}\n[{\"role\": \"user\", \"content\": \"u1\"}]\n[{\"role\": \"user\", \"content\": \"u2\"}]\n",
				status: 201, want: []string{`"stored":2`, `"skipped":\[\]`, `"from":"upload"`}},
			{name: "upload: all-or-nothing rejects and lists every error", method: "POST", path: "/api/v1/datasets/{ap}/upload?filename=bad.jsonl", user: "alice",
				body:   "[{\"role\": \"user\", \"content\": \"ok\"}]\n[{\"role\": \"user\", \"content\": 5}]\n[{\"role\": \"user\", \"content\": \"ok\"}]\n[{\"role\": 1}]\n",
				status: 422, want: []string{`nothing stored`, `2 error\(s\)`, `"file":"bad.jsonl","line":2`, `"line":4`, `"path":"\$\[0\]\.content"`}},
			{name: "upload: nothing of the rejected upload was stored", method: "GET", path: "/api/v1/datasets/{ap}", user: "alice",
				status: 200, want: []string{`"trace_count":4`}},
			{name: "upload: skip-invalid stores the valid traces", method: "POST", path: "/api/v1/datasets/{ap}/upload?filename=bad.jsonl&mode=skip-invalid", user: "alice",
				body:   "[{\"role\": \"user\", \"content\": \"ok\"}]\n[{\"role\": \"user\", \"content\": 5}]\n[{\"role\": \"user\", \"content\": \"ok\"}]\n",
				status: 201, want: []string{`"stored":2`, `"skipped":\[\{"file":"bad.jsonl","line":2`}},
			{name: "upload: unsupported format", method: "POST", path: "/api/v1/datasets/{ap}/upload", user: "alice",
				body: `{"resourceSpans": []}`, status: 422, want: []string{`unsupported format otlp-json`}},
			{name: "upload: bad mode", method: "POST", path: "/api/v1/datasets/{ap}/upload?mode=some", user: "alice",
				body: `[]`, status: 400},
			{name: "upload: bad format", method: "POST", path: "/api/v1/datasets/{ap}/upload?format=yaml", user: "alice",
				body: `[]`, status: 400, want: []string{`unknown format`}},
			{name: "upload: without auth", method: "POST", path: "/api/v1/datasets/{ap}/upload", user: "",
				body: `[]`, status: 401},
			{name: "upload: another user's private dataset", method: "POST", path: "/api/v1/datasets/{ap}/upload", user: "bob",
				body: `[]`, status: 404},
			{name: "upload: unknown dataset", method: "POST", path: "/api/v1/datasets/{unknown}/upload", user: "alice",
				body: `[]`, status: 404},
			{name: "upload: too large", method: "POST", path: "/api/v1/datasets/{ap}/upload", user: "alice",
				body: big, status: 413},

			// traces
			{name: "traces: list", method: "GET", path: "/api/v1/datasets/{ap}/traces", user: "alice",
				status: 200, want: []string{`"id":"{at}","index":0,"name":"first","metadata":\{"name":"first"\},"event_count":2,"annotation_count":2`, `"next":""`}},
			{name: "traces: list a page", method: "GET", path: "/api/v1/datasets/{ap}/traces?limit=1", user: "alice",
				status: 200, want: []string{`^\{"traces":\[\{"id":"{at}"[^\]]*\],"next":"[^"]+"\}`}},
			{name: "traces: bad limit", method: "GET", path: "/api/v1/datasets/{ap}/traces?limit=0", user: "alice",
				status: 400, want: []string{`limit must be`}},
			{name: "traces: bad cursor", method: "GET", path: "/api/v1/datasets/{ap}/traces?cursor=%7B%7D", user: "alice",
				status: 400, want: []string{`cursor`}},
			{name: "traces: list another user's private dataset", method: "GET", path: "/api/v1/datasets/{ap}/traces", user: "bob",
				status: 404},
			{name: "traces: list a public dataset anonymously", method: "GET", path: "/api/v1/datasets/{apub}/traces", user: "",
				status: 200, want: []string{`"id":"{atpub}"`}},
			{name: "traces: list an unknown dataset", method: "GET", path: "/api/v1/datasets/{unknown}/traces", user: "alice",
				status: 404},
			{name: "traces: get canonical", method: "GET", path: "/api/v1/traces/{at}", user: "alice",
				status: 200, want: []string{`^\{"id":"{at}","name":"first","index":0,"metadata":\{"name":"first"\},"events":\[\{"role":"user","content":"hi"\},\{"role":"assistant","content":"hello"\}\],"annotations":\[\{"address":"messages.0.content:0-2","content":"greeting"\},\{"address":"messages.1","content":"to edit"\}\]\}\n$`}},
			{name: "traces: get invariant", method: "GET", path: "/api/v1/traces/{at}?format=invariant", user: "alice",
				status: 200, want: []string{`^\{"messages":\[\{"role":"user","content":"hi"\},\{"role":"assistant","content":"hello"\}\],"metadata":\{"name":"first"\},"annotations":\[`}},
			{name: "traces: bad format", method: "GET", path: "/api/v1/traces/{at}?format=xml", user: "alice",
				status: 400},
			{name: "traces: download", method: "GET", path: "/api/v1/traces/{at}/download", user: "alice",
				status: 200, want: []string{`"events"`}},
			{name: "traces: get another user's private trace", method: "GET", path: "/api/v1/traces/{at}", user: "bob",
				status: 404},
			{name: "traces: get a private trace anonymously", method: "GET", path: "/api/v1/traces/{at}", user: "",
				status: 404},
			{name: "traces: get a public trace anonymously", method: "GET", path: "/api/v1/traces/{atpub}", user: "",
				status: 200},
			{name: "traces: get an unknown trace", method: "GET", path: "/api/v1/traces/{unknown}", user: "alice",
				status: 404},
			{name: "traces: append events", method: "POST", path: "/api/v1/traces/{at}/events", user: "alice",
				body: `[{"role": "user", "content": "more"}]`, status: 200, want: []string{`"appended":1`}},
			{name: "traces: append events as an object", method: "POST", path: "/api/v1/traces/{at}/events", user: "alice",
				body: `{"events": [{"role": "assistant", "content": "and more"}]}`, status: 200},
			{name: "traces: appended events are there", method: "GET", path: "/api/v1/traces/{at}", user: "alice",
				status: 200, want: []string{`"content":"hello"\},\{"role":"user","content":"more"\},\{"role":"assistant","content":"and more"\}\]`}},
			{name: "traces: append bad JSON", method: "POST", path: "/api/v1/traces/{at}/events", user: "alice",
				body: `[{"role": "user" "content": "x"}]`, status: 400, want: []string{`\$\[0\]`, `column 18`}},
			{name: "traces: append events of the wrong type", method: "POST", path: "/api/v1/traces/{at}/events", user: "alice",
				body: `[{"role": "user", "tool_calls": {}}]`, status: 422, want: []string{`\$\[0\]\.tool_calls`}},
			{name: "traces: append nothing", method: "POST", path: "/api/v1/traces/{at}/events", user: "alice",
				body: `[]`, status: 422},
			{name: "traces: append without auth", method: "POST", path: "/api/v1/traces/{at}/events", user: "",
				body: `[]`, status: 401},
			{name: "traces: append to another user's trace", method: "POST", path: "/api/v1/traces/{at}/events", user: "bob",
				body: `[{"role": "user"}]`, status: 404},
			{name: "traces: append to another user's public trace", method: "POST", path: "/api/v1/traces/{atpub}/events", user: "bob",
				body: `[{"role": "user"}]`, status: 403},
			{name: "traces: append too large", method: "POST", path: "/api/v1/traces/{at}/events", user: "alice",
				body: big, status: 413},

			// annotations
			{name: "annotations: list", method: "GET", path: "/api/v1/traces/{at}/annotations", user: "alice",
				status: 200, want: []string{`"address":"messages.0.content:0-2","content":"greeting","source":"user","author":"alice"`}},
			{name: "annotations: create", method: "POST", path: "/api/v1/traces/{at}/annotations", user: "alice",
				body: `{"address": "messages.0", "content": "note", "source": "analyzer", "extra": {"severity": 2}}`, status: 201,
				want: []string{`"source":"analyzer"`, `"extra":\{"severity":2\}`, `"trace_id":"{at}"`}},
			{name: "annotations: create bad JSON", method: "POST", path: "/api/v1/traces/{at}/annotations", user: "alice",
				body: `{"address": "messages.0", "content": "note"`, status: 400},
			{name: "annotations: create with a number for content", method: "POST", path: "/api/v1/traces/{at}/annotations", user: "alice",
				body: `{"address": "messages.0", "content": 3}`, status: 422, want: []string{`\$\.content`}},
			{name: "annotations: create without an address", method: "POST", path: "/api/v1/traces/{at}/annotations", user: "alice",
				body: `{"content": "x"}`, status: 422, want: []string{`address`}},
			{name: "annotations: create without auth", method: "POST", path: "/api/v1/traces/{at}/annotations", user: "",
				body: `{"address": "messages.0", "content": "x"}`, status: 401},
			{name: "annotations: create on another user's private trace", method: "POST", path: "/api/v1/traces/{at}/annotations", user: "bob",
				body: `{"address": "messages.0", "content": "x"}`, status: 404},
			{name: "annotations: create on an unknown trace", method: "POST", path: "/api/v1/traces/{unknown}/annotations", user: "alice",
				body: `{"address": "messages.0", "content": "x"}`, status: 404},
			{name: "annotations: update", method: "PUT", path: "/api/v1/traces/{at}/annotations/{aann}", user: "alice",
				body: `{"content": "edited", "extra": {"k": "v"}}`, status: 200, want: []string{`"content":"edited"`, `"extra":\{"k":"v"\}`}},
			{name: "annotations: update with wrong types", method: "PUT", path: "/api/v1/traces/{at}/annotations/{aann}", user: "alice",
				body: `{"content": ["x"]}`, status: 422},
			{name: "annotations: update an unknown annotation", method: "PUT", path: "/api/v1/traces/{at}/annotations/{unknown}", user: "alice",
				body: `{"content": "x"}`, status: 404},
			{name: "annotations: update on another user's trace", method: "PUT", path: "/api/v1/traces/{at}/annotations/{aann}", user: "bob",
				body: `{"content": "x"}`, status: 404},
			{name: "annotations: replace one source", method: "PUT", path: "/api/v1/traces/{at}/annotations?source=analyzer", user: "alice",
				body: `{"annotations": [{"address": "messages.1", "content": "r1"}, {"address": "messages.2", "content": "r2"}]}`, status: 200,
				want: []string{`"content":"r1","source":"analyzer"`, `"content":"r2","source":"analyzer"`, `"content":"greeting","source":"user"`}},
			{name: "annotations: replace without a source", method: "PUT", path: "/api/v1/traces/{at}/annotations", user: "alice",
				body: `{"annotations": []}`, status: 400},
			{name: "annotations: replace with wrong types", method: "PUT", path: "/api/v1/traces/{at}/annotations?source=analyzer", user: "alice",
				body: `{"annotations": [{"address": 1, "content": "x"}]}`, status: 422, want: []string{`\$\.annotations\[0\]\.address`}},
			{name: "annotations: delete", method: "DELETE", path: "/api/v1/traces/{at}/annotations/{aann}", user: "alice",
				status: 204},
			{name: "annotations: delete again", method: "DELETE", path: "/api/v1/traces/{at}/annotations/{aann}", user: "alice",
				status: 404},
			{name: "annotations: list after the changes", method: "GET", path: "/api/v1/traces/{at}/annotations", user: "alice",
				status: 200, want: []string{`^\{"annotations":\[[^\]]*"content":"greeting"[^\]]*\]\}\n$`}},

			// keys and sessions
			{name: "keys: list shows the last four only", method: "GET", path: "/api/v1/keys", user: "alice",
				status: 200, want: []string{`"name":"to revoke","last4":"[^"]{4}"`}},
			{name: "keys: create without auth", method: "POST", path: "/api/v1/keys", user: "",
				body: `{"name": "x"}`, status: 401},
			{name: "keys: create with a bad name", method: "POST", path: "/api/v1/keys", user: "alice",
				body: `{"name": false}`, status: 422},
			{name: "keys: revoke another user's key", method: "DELETE", path: "/api/v1/keys/{akey}", user: "bob",
				status: 404},
			{name: "keys: revoke", method: "DELETE", path: "/api/v1/keys/{akey}", user: "alice",
				status: 204},
			{name: "login: wrong password", method: "POST", path: "/api/v1/login", user: "",
				body: `{"name": "alice", "password": "nope"}`, status: 401, want: []string{`wrong user name or password`}},
			{name: "login: unknown user", method: "POST", path: "/api/v1/login", user: "",
				body: `{"name": "carol", "password": "x"}`, status: 401},
			{name: "login: wrong types", method: "POST", path: "/api/v1/login", user: "",
				body: `{"name": "alice", "password": 1}`, status: 422, want: []string{`\$\.password`}},
			{name: "me: anonymous", method: "GET", path: "/api/v1/me", user: "",
				status: 200, want: []string{`"user":null`, `"local_mode":false`}},
			{name: "me: with a key", method: "GET", path: "/api/v1/me", user: "bob",
				status: 200, want: []string{`"name":"bob"`, `"via":"key"`}},

			// routing
			{name: "unknown endpoint", method: "GET", path: "/api/v1/nothing", user: "alice",
				status: 404, want: []string{`"code":"not_found"`}},
			{name: "wrong method", method: "PATCH", path: "/api/v1/datasets", user: "alice",
				status: 405, want: []string{`"code":"method_not_allowed"`}},

			// deletes last
			{name: "traces: delete another user's trace", method: "DELETE", path: "/api/v1/traces/{at}", user: "bob",
				status: 404},
			{name: "traces: delete", method: "DELETE", path: "/api/v1/traces/{at}", user: "alice",
				status: 204},
			{name: "traces: deleted trace is gone", method: "GET", path: "/api/v1/traces/{at}", user: "alice",
				status: 404},
			{name: "datasets: delete", method: "DELETE", path: "/api/v1/datasets/{ap}", user: "alice",
				status: 204},
			{name: "datasets: deleted dataset is gone", method: "GET", path: "/api/v1/datasets/{ap}", user: "alice",
				status: 404},
		}
		pairs := []string{}
		for k, v := range ids {
			pairs = append(pairs, "{"+k+"}", v)
		}
		expand := strings.NewReplacer(pairs...)
		for _, sc := range scenarios {
			t.Run(sc.name, func(t *testing.T) {
				var body io.Reader
				if sc.body != "" {
					body = strings.NewReader(sc.body)
				}
				header := append([]string{"Content-Type", "application/json"}, sc.header...)
				r := f.do(sc.method, expand.Replace(sc.path), sc.user, body, header...)
				if r.status != sc.status {
					t.Fatalf("status %d, want %d\n%s", r.status, sc.status, r.body)
				}
				checkHeaders(t, r)
				for _, re := range sc.want {
					re = expand.Replace(re)
					if !regexp.MustCompile(re).Match(r.body) {
						t.Errorf("body does not match %s:\n%s", re, r.body)
					}
				}
				if r.status >= 400 && !regexp.MustCompile(`^\{"error":\{"code":"[a-z_]+","message":"[^"]+`).Match(r.body) {
					t.Errorf("error body is not {\"error\": {\"code\", \"message\"}}: %s", r.body)
				}
			})
		}
		t.Run("revoked key is refused", func(t *testing.T) {
			// The revoked key was created through the API; make one more
			// and revoke it to see the key itself refused.
			var k struct{ ID, Key string }
			f.must(201, "POST", "/api/v1/keys", "alice", `{"name": "short-lived"}`).json(t, &k)
			f.keys["short"] = k.Key
			f.must(200, "GET", "/api/v1/me", "short", "")
			f.must(204, "DELETE", "/api/v1/keys/"+k.ID, "alice", "")
			r := f.must(401, "GET", "/api/v1/me", "short", "")
			if !strings.Contains(r.String(), "revoked") {
				t.Errorf("body %s", r)
			}
		})
		t.Run("too large chunked body", func(t *testing.T) {
			// No Content-Length: the limit bites while reading.
			for _, path := range []string{"/api/v1/push/trace", "/api/v1/datasets/" + ids["apub"] + "/upload"} {
				r := f.do("POST", path, "alice", io.MultiReader(strings.NewReader(big)), "Content-Type", "application/json")
				if r.status != 413 || !strings.Contains(r.String(), "body_too_large") {
					t.Errorf("%s: status %d: %s", path, r.status, r)
				}
			}
		})
		t.Run("multipart upload", func(t *testing.T) {
			var buf bytes.Buffer
			mw := multipart.NewWriter(&buf)
			mw.WriteField("comment", "ignored")
			fw, _ := mw.CreateFormFile("file", "multi.jsonl")
			fmt.Fprint(fw, "[{\"role\": \"user\", \"content\": \"m1\"}]\n{\"messages\": [{\"role\": \"user\", \"content\": 1}]}\n")
			mw.Close()
			r := f.do("POST", "/api/v1/datasets/"+ids["apub"]+"/upload", "alice", bytes.NewReader(buf.Bytes()), "Content-Type", mw.FormDataContentType())
			if r.status != 422 || !strings.Contains(r.String(), `"file":"multi.jsonl","line":2`) {
				t.Fatalf("status %d: %s", r.status, r)
			}
			buf.Reset()
			mw = multipart.NewWriter(&buf)
			fw, _ = mw.CreateFormFile("file", "multi.jsonl")
			fmt.Fprint(fw, "[{\"role\": \"user\", \"content\": \"m1\"}]\n")
			mw.Close()
			r = f.do("POST", "/api/v1/datasets/"+ids["apub"]+"/upload", "alice", bytes.NewReader(buf.Bytes()), "Content-Type", mw.FormDataContentType())
			if r.status != 201 || !strings.Contains(r.String(), `"stored":1`) {
				t.Fatalf("status %d: %s", r.status, r)
			}
			buf.Reset()
			mw = multipart.NewWriter(&buf)
			mw.WriteField("other", "x")
			mw.Close()
			r = f.do("POST", "/api/v1/datasets/"+ids["apub"]+"/upload", "alice", bytes.NewReader(buf.Bytes()), "Content-Type", mw.FormDataContentType())
			if r.status != 400 || !strings.Contains(r.String(), `no \"file\" part`) {
				t.Fatalf("status %d: %s", r.status, r)
			}
		})
		t.Run("upload with server-sent progress events", func(t *testing.T) {
			c, err := client.New(f.hs.URL, client.WithAPIKey(f.keys["alice"]))
			if err != nil {
				t.Fatal(err)
			}
			ctx := context.Background()
			var file strings.Builder
			for i := range 300 {
				fmt.Fprintf(&file, "[{\"role\": \"user\", \"content\": \"sse %d\"}]\n", i)
			}
			var events []client.UploadProgress
			res, err := c.Upload(ctx, ids["apub"], "sse.jsonl", strings.NewReader(file.String()), client.UploadOptions{Progress: func(p client.UploadProgress) { events = append(events, p) }})
			if err != nil {
				t.Fatal(err)
			}
			if res.Stored != 300 || len(events) < 2 || events[0].Stage != "reading" || events[len(events)-1].Stage != "storing" || events[len(events)-1].Traces != 300 {
				t.Fatalf("stored %d; events %+v", res.Stored, events)
			}
			_, err = c.Upload(ctx, ids["apub"], "sse-bad.jsonl", strings.NewReader(file.String()+"[{\"role\": 1}]\n"), client.UploadOptions{Progress: func(client.UploadProgress) {}})
			var ae *client.Error
			if !errors.As(err, &ae) || ae.Status != 422 || len(client.UploadErrors(err)) != 1 || client.UploadErrors(err)[0].Line != 301 {
				t.Fatalf("rejected upload with events: %v %+v", err, client.UploadErrors(err))
			}
		})
		t.Run("login session", func(t *testing.T) {
			r := f.must(200, "POST", "/api/v1/login", "", `{"name": "bob", "password": "bob-pw"}`)
			var cookie *http.Cookie
			for _, c := range (&http.Response{Header: r.header}).Cookies() {
				if c.Name == sessionCookie {
					cookie = c
				}
			}
			if cookie == nil || !cookie.HttpOnly || cookie.SameSite != http.SameSiteStrictMode || cookie.Path != "/" {
				t.Fatalf("session cookie %+v; Set-Cookie %q", cookie, r.header.Values("Set-Cookie"))
			}
			withCookie := func(method, path, body string) response {
				var b io.Reader
				if body != "" {
					b = strings.NewReader(body)
				}
				return f.do(method, path, "", b, "Cookie", sessionCookie+"="+cookie.Value, "Content-Type", "application/json")
			}
			if r := withCookie("GET", "/api/v1/me", ""); !strings.Contains(r.String(), `"via":"session"`) {
				t.Fatalf("me with a session: %s", r)
			}
			if r := withCookie("POST", "/api/v1/datasets", `{"name": "via-session"}`); r.status != 201 {
				t.Fatalf("write with a session: %d %s", r.status, r)
			}
			if r := withCookie("POST", "/api/v1/logout", ""); r.status != 204 {
				t.Fatalf("logout: %d %s", r.status, r)
			}
			if r := withCookie("POST", "/api/v1/datasets", `{"name": "after-logout"}`); r.status != 401 {
				t.Fatalf("write after logout: %d %s", r.status, r)
			}
		})
	})
}

// checkHeaders checks the security headers every response carries.
func checkHeaders(t *testing.T, r response) {
	t.Helper()
	for h, want := range map[string]string{
		"Content-Security-Policy": "default-src 'self'",
		"X-Content-Type-Options":  "nosniff",
		"X-Frame-Options":         "DENY",
		"Referrer-Policy":         "no-referrer",
	} {
		if got := r.header.Get(h); !strings.Contains(got, want) {
			t.Errorf("header %s = %q, want %q", h, got, want)
		}
	}
	if r.status != http.StatusNoContent && !strings.HasPrefix(r.header.Get("Content-Type"), "application/") {
		t.Errorf("Content-Type %q", r.header.Get("Content-Type"))
	}
}
